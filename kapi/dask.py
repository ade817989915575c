"""kapi arrays in Dask: kapi arrays as the chunks of a dask.array, and a distributed
LocalCluster with one worker process per device, each pinned to its device.

Importing this module registers kapi.Array with dask.array's dispatch (concatenate, so that
reductions combine their partial results and results are assembled on the device). Chunks
move between workers by pickling (through host memory) and arrive on the receiving worker's
device. The workers of `LocalCluster` import this module at start-up.

    import dask.array as da, kapi, kapi.dask
    with kapi.dask.LocalCluster() as cluster, distributed.Client(cluster):
        x = da.random.random((1 << 24,), chunks=1 << 22).map_blocks(kapi.asarray)
        total = float(x.map_blocks(lambda c: c * 2).sum().compute())
"""

from __future__ import annotations

import copy
import os

import distributed
from dask.array.dispatch import concatenate_lookup

from ._memory.array import Array
from ._memory.device import Device, default_device, devices
from ._numeric.npcompat import concatenate

concatenate_lookup.register(Array, concatenate)


def _worker_env(dev: Device) -> dict:
    """What pins a worker process to dev: the default device, and for a CUDA GPU that GPU
    alone (CUDA_VISIBLE_DEVICES, as dask-cuda does), so the worker makes no context on others."""
    if dev.backend != "cuda":
        return {"KAPI_DEFAULT_DEVICE": dev.filter_string}
    cuda = [d for d in devices("gpu") if d.backend == "cuda"]
    ordinal = cuda.index(dev)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    ids = [v.strip() for v in visible.split(",") if v.strip()] if visible else []
    physical = ids[ordinal] if ordinal < len(ids) else str(ordinal)
    return {"CUDA_VISIBLE_DEVICES": physical, "KAPI_DEFAULT_DEVICE": "cuda:gpu:0"}


class LocalCluster(distributed.LocalCluster):
    """distributed.LocalCluster with one worker process per device, each pinned to it: on
    every GPU by default (kapi.devices("gpu")), else on the default device. `devices` takes
    kapi.Device objects or filter strings; a device named twice gets two workers. Workers run
    one thread each (threads_per_worker), so a worker's launches go to its device in order.
    Other keywords go to distributed.LocalCluster."""

    def __init__(self, devices=None, *, threads_per_worker: int = 1, **kwargs):
        if devices is None:
            devices = [d for d in _gpus()] or [default_device()]
        self.kapi_devices = [Device(d) for d in devices]
        if not self.kapi_devices:
            raise ValueError("kapi.dask.LocalCluster needs at least one device")
        if kwargs.pop("processes", True) is not True:
            raise ValueError(
                "kapi.dask.LocalCluster pins each worker process to its device: processes=True"
            )
        preload = list(kwargs.pop("preload", ()) or ())
        kwargs["preload"] = [*preload, "kapi.dask"]
        super().__init__(
            n_workers=len(self.kapi_devices),
            threads_per_worker=threads_per_worker,
            processes=True,
            **kwargs,
        )

    def new_worker_spec(self):
        """The next worker: the first device without one, with its pinning environment."""
        taken = set(self.worker_spec)
        name = next(i for i in range(len(self.kapi_devices) + len(taken) + 1) if i not in taken)
        if name >= len(self.kapi_devices):
            raise ValueError(
                f"kapi.dask.LocalCluster has {len(self.kapi_devices)} devices: one worker each"
            )
        spec = copy.deepcopy(self.new_spec)
        options = spec.setdefault("options", {})
        env = dict(options.get("env") or {})
        env.update(_worker_env(self.kapi_devices[name]))
        options["env"] = env
        return {name: spec}


def _gpus() -> list[Device]:
    return devices("gpu")


def worker_device() -> Device:
    """The device of the Dask worker this runs on (its default device)."""
    return default_device()
