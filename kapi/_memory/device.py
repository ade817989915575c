"""Devices and queues: kapi.devices(), kapi.Device(filter), kapi.Queue, the default device.

Devices come from the runtime (every Level Zero driver it loaded). Filter strings follow
dpctl's `backend:device_type:ordinal` form, each part optional: "cpu", "gpu:1",
"level_zero:gpu:0", "cuda:0", "1". The ordinal counts the devices matching the other parts.
"""

from __future__ import annotations

import functools
import os

from .. import _native
from .._errors import DeviceNotFoundError

_TYPE_NAMES = {1: "gpu", 2: "cpu", 3: "fpga", 4: "mca", 5: "vpu"}
_DEVICE_TYPES = frozenset(_TYPE_NAMES.values()) | {"accelerator"}
# Backend of a device by its driver; "level_zero" is every driver that is not CUDA-backed.
_DRIVER_BACKEND = {"kapi-cuda": "cuda"}
# Backend tokens of filter strings that match every device: each kapi device is a Level Zero
# device, so "level_zero:gpu:0" (common in numba-dpex code) finds an NVIDIA GPU too; the
# others are dpctl spellings that code written for it may carry.
_ANY_BACKEND = frozenset({"level_zero", "ze", "opencl", "sycl", "host"})
# DLPack device type per backend/driver (kDLCPU=1, kDLCUDA=2, kDLOneAPI=14).
_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_ONEAPI = 1, 2, 14


class Device:
    """A device of one Level Zero driver. `Device()` is the default device."""

    __slots__ = ("_index", "_info", "_default_queue", "__weakref__")

    def __new__(cls, filter_string=None):
        if isinstance(filter_string, Device):
            return filter_string
        if filter_string is None:
            return default_device()
        if not isinstance(filter_string, str):
            raise TypeError(
                f"Device takes a filter string such as 'cpu', 'gpu:0' or 'cuda:0', not "
                f"{type(filter_string).__name__}"
            )
        return _select(filter_string)

    @classmethod
    def _make(cls, index: int, info: dict) -> Device:
        self = object.__new__(cls)
        self._index = index
        self._info = info
        self._default_queue = None
        return self

    # -- identity and properties ---------------------------------------------------------

    @property
    def index(self) -> int:
        return self._index

    @property
    def name(self) -> str:
        return self._info["name"]

    @property
    def device_type(self) -> str:
        return _TYPE_NAMES.get(self._info["type"], "unknown")

    @property
    def driver_name(self) -> str:
        return self._info["driver_name"]

    @property
    def backend(self) -> str:
        return _DRIVER_BACKEND.get(self.driver_name, "level_zero")

    @property
    def vendor(self) -> str:
        return self._info["vendor_name"]

    @property
    def is_cpu(self) -> bool:
        return self.device_type == "cpu"

    @property
    def is_gpu(self) -> bool:
        return self.device_type == "gpu"

    @property
    def has_aspect_fp64(self) -> bool:
        return bool(self._info["fp64"])

    @property
    def has_aspect_fp16(self) -> bool:
        return bool(self._info["fp16"])

    @property
    def has_aspect_atomic64(self) -> bool:
        return True

    @property
    def max_work_group_size(self) -> int:
        return self._info["max_work_group_size"]

    @property
    def max_work_item_sizes(self) -> tuple:
        return tuple(self._info["max_group_size"])

    @property
    def max_compute_units(self) -> int:
        return self._info["compute_units"]

    @property
    def local_mem_size(self) -> int:
        return self._info["local_mem_size"]

    @property
    def global_mem_size(self) -> int:
        return self._info["global_mem_size"]

    @property
    def sub_group_sizes(self) -> tuple:
        return tuple(self._info["sub_group_sizes"])

    @property
    def info(self) -> dict:
        """Every property the driver reports, as a dict (a copy)."""
        return dict(self._info)

    @property
    def filter_string(self) -> str:
        """A filter string selecting exactly this device: backend:type:ordinal. "level_zero"
        matches every device, so its ordinal counts all devices of the type; "cuda" counts the
        CUDA driver's."""
        same = [
            d
            for d in devices()
            if d.device_type == self.device_type and (self.backend != "cuda" or d.backend == "cuda")
        ]
        return f"{self.backend}:{self.device_type}:{same.index(self)}"

    @property
    def dlpack_device_type(self) -> int:
        if self.backend == "cuda":
            return _DLPACK_CUDA
        if self.is_cpu:
            return _DLPACK_CPU
        return _DLPACK_ONEAPI

    @property
    def host_accessible(self) -> bool:
        """True when all of this device's memory is host memory (kapi's CPU driver)."""
        return self.is_cpu

    @property
    def default_queue(self) -> Queue:
        q = self._default_queue
        if q is None:
            q = self._default_queue = Queue._wrap(self, _native.ext().RtQueue(self._index, 0))
        return q

    def can_access_peer(self, peer) -> bool:
        """True when copies between this device's memory and peer's go directly from one to
        the other (peer access over NVLink or PCIe, enabled by kapi on first use); False when
        they are staged through host memory (no peer access, or devices of two drivers)."""
        peer = Device(peer)
        return bool(_native.ext().rt_can_access_peer(self._index, peer._index))

    # numba-dpex / dpctl spelling
    @property
    def sycl_device(self) -> Device:
        return self

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other._index == self._index

    def __hash__(self) -> int:
        return hash(("kapi.Device", self._index))

    def __repr__(self) -> str:
        return f"<kapi.Device {self.filter_string} '{self.name}' ({self.driver_name})>"

    def __reduce__(self):
        return (Device, (self.filter_string,))


class Queue:
    """An in-order queue on one device. `Queue(device)` makes a new queue of its own;
    `device.default_queue` is the device's shared queue (the one arrays use by default)."""

    __slots__ = ("_device", "_native", "__weakref__")

    def __init__(self, device=None):
        dev = Device(device)
        self._device = dev
        self._native = _native.ext().RtQueue(dev.index, 1)

    @classmethod
    def _wrap(cls, device: Device, native) -> Queue:
        self = object.__new__(cls)
        self._device = device
        self._native = native
        return self

    @property
    def device(self) -> Device:
        return self._device

    sycl_device = device

    def wait(self) -> None:
        """Blocks until every command submitted to this queue has completed."""
        self._native.synchronize()

    synchronize = wait

    def __repr__(self) -> str:
        return f"<kapi.Queue on {self._device.filter_string}>"


@functools.cache
def _all_devices() -> tuple[Device, ...]:
    ext = _native.ext()
    ext.rt_init()
    return tuple(Device._make(i, ext.rt_device_info(i)) for i in range(ext.rt_device_count()))


def devices(device_type: str | None = None) -> list[Device]:
    """Every device of every loaded driver, optionally only those of one type ("cpu", "gpu")."""
    devs = list(_all_devices())
    if device_type is not None:
        devs = [d for d in devs if d.device_type == device_type]
    return devs


def _parse_filter(text: str):
    backend = dtype = None
    ordinal = None
    parts = [p.strip().lower() for p in text.split(":")]
    if not 1 <= len(parts) <= 3 or any(not p for p in parts):
        raise DeviceNotFoundError(f"malformed device filter string {text!r}")
    for p in parts:
        if p.isdigit():
            if ordinal is not None:
                raise DeviceNotFoundError(f"two ordinals in device filter string {text!r}")
            ordinal = int(p)
        elif p in _DEVICE_TYPES and dtype is None and ordinal is None:
            dtype = "gpu" if p == "accelerator" else p
        elif dtype is None and ordinal is None and backend is None:
            backend = "*" if p in _ANY_BACKEND else p
        else:
            raise DeviceNotFoundError(f"malformed device filter string {text!r}")
    return backend, dtype, ordinal


def _matches(d: Device, backend, dtype) -> bool:
    if dtype is not None and d.device_type != dtype:
        return False
    if backend not in (None, "*") and backend not in (d.backend, d.driver_name):
        return False
    return True


def _select(text: str) -> Device:
    backend, dtype, ordinal = _parse_filter(text)
    found = [d for d in devices() if _matches(d, backend, dtype)]
    k = ordinal or 0
    if k < len(found):
        return found[k]
    have = ", ".join(f"{d.filter_string} ({d.name})" for d in devices()) or "none"
    raise DeviceNotFoundError(f"no device matches {text!r}; available devices: {have}")


def default_device() -> Device:
    """KAPI_DEFAULT_DEVICE if set, else the first GPU, else the first CPU."""
    env = os.environ.get("KAPI_DEFAULT_DEVICE")
    if env:
        try:
            return _select(env)
        except DeviceNotFoundError as e:
            raise DeviceNotFoundError(f"KAPI_DEFAULT_DEVICE={env!r}: {e}") from None
    devs = devices()
    for kind in ("gpu", "cpu"):
        for d in devs:
            if d.device_type == kind:
                return d
    if devs:
        return devs[0]
    raise DeviceNotFoundError(
        f"no kapi device found (drivers tried: {_native.ext().rt_driver_list() or 'none'})"
    )


# Where MPI launchers put a process's rank among those on its machine: Open MPI, MPICH and Intel
# MPI (Hydra), MVAPICH, Slurm, Cray PALS, and torchrun-style launchers.
_LOCAL_RANK_VARS = (
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "SLURM_LOCALID",
    "PALS_LOCAL_RANKID",
    "LOCAL_RANK",
)


def local_rank(comm=None) -> int:
    """This process's rank among the processes of its machine: from an mpi4py communicator
    (split by shared memory) when given, else from the launcher's environment, else 0."""
    if comm is not None:
        from mpi4py import MPI

        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            return node.Get_rank()
        finally:
            node.Free()
    for name in _LOCAL_RANK_VARS:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def device_for_local_rank(comm=None, device_type: str = "gpu") -> Device:
    """One device per process on a machine: the local rank's GPU (modulo the number of GPUs),
    or, on a machine without devices of device_type, the default device, which the ranks then
    share. Call it once at start-up and pass the device to array constructors, or set it as
    the process's default with KAPI_DEFAULT_DEVICE before the first array."""
    devs = devices(device_type)
    if not devs:
        return default_device()
    return devs[local_rank(comm) % len(devs)]


def as_queue(device=None, queue=None) -> Queue:
    """The queue for device=/queue= keywords (dpctl's sycl_queue= is accepted by callers)."""
    if queue is not None:
        if not isinstance(queue, Queue):
            raise TypeError(f"queue must be a kapi.Queue, not {type(queue).__name__}")
        if device is not None and Device(device) != queue.device:
            raise ValueError(f"device={device!r} and queue={queue!r} disagree; give one of them")
        return queue
    return Device(device).default_queue
