"""kapi arrays as dask.array chunks (map_blocks with a kernel and a kapi.fuse'd expression,
reductions through Dask's tree on the device), pickling between workers, and
kapi.dask.LocalCluster's workers pinned one per device (here the CPU device, twice)."""

import math
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

# Dask is in requirements.txt (make test installs it); a machine without it says so here.
dask = pytest.importorskip("dask", reason="Dask is not installed (requirements.txt has it)")
import dask.array as da  # noqa: E402
from dask.array.dispatch import concatenate_lookup  # noqa: E402

import kapi  # noqa: E402
import kapi.dask  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def cpu():
    cpus = kapi.devices("cpu")
    if not cpus:
        pytest.skip("needs kapi's CPU device")
    return cpus[0]


@kapi.kernel
def _twice(item, x, out):
    i = item.get_id(0)
    out[i] = 2.0 * x[i]


def twice(chunk):
    out = kapi.empty_like(chunk)
    kapi.call_kernel(_twice, kapi.Range(chunk.size), chunk, out)
    return out


@kapi.fuse
def poly(a, b):
    return a * b + 1.0


def test_chunks_stay_kapi_arrays_through_map_blocks_and_tree_reductions(cpu):
    n = 10_000
    host = np.linspace(0.0, 1.0, n)
    x = da.from_array(host, chunks=1024).map_blocks(kapi.asarray, dtype=host.dtype)
    y = x.map_blocks(twice, dtype=host.dtype)
    z = da.map_blocks(poly, x, y, dtype=host.dtype)
    with dask.config.set(scheduler="sync"):
        assert all(isinstance(c, kapi.Array) for c in dask.compute(*z.to_delayed().ravel()))
        total = z.sum(split_every=3).compute()  # a tree of three levels
        peak = z.max().compute()
        whole = z.compute()  # assembled on the device by kapi.concatenate
    assert isinstance(total, kapi.Array) and isinstance(whole, kapi.Array)
    want = host * 2 * host + 1
    assert math.isclose(float(total), float(want.sum()), rel_tol=1e-12)
    assert float(peak) == float(want.max())
    np.testing.assert_allclose(whole.asnumpy(), want, rtol=1e-15)


def test_concatenate_is_registered_and_runs_on_the_device(cpu):
    assert concatenate_lookup.dispatch(kapi.Array) is kapi.concatenate
    a = kapi.asarray(np.arange(6.0).reshape(2, 3), device=cpu)
    b = kapi.asarray(np.arange(4, dtype=np.int32).reshape(2, 2), device=cpu)
    c = kapi.concatenate([a, b], axis=1)
    assert c.device == cpu and c.dtype == np.float64
    np.testing.assert_array_equal(c.asnumpy(), np.concatenate([a.asnumpy(), b.asnumpy()], 1))
    with pytest.raises(ValueError, match="differ off axis 0"):
        kapi.concatenate([a, b])


def test_arrays_pickle_by_their_data(cpu):
    a = kapi.asarray(np.arange(12, dtype=np.int16).reshape(3, 4), device=cpu).T
    b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, kapi.Array) and b.shape == (4, 3) and b.dtype == np.int16
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


def test_worker_pinning_environment(cpu):
    assert kapi.dask._worker_env(cpu) == {"KAPI_DEFAULT_DEVICE": cpu.filter_string}
    with pytest.raises(ValueError, match="processes=True"):
        kapi.dask.LocalCluster(devices=[cpu], processes=False)


def test_local_cluster_sample_one_worker_per_device():
    """The sample: a distributed LocalCluster, two workers pinned to the CPU device."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "samples", "distributed", "dask_arrays.py"),
            "--n",
            "200000",
            "--devices",
            "cpu,cpu",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "OK" in r.stdout and "['level_zero:cpu:0', 'level_zero:cpu:0']" in r.stdout
