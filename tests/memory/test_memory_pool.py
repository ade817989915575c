"""kapi's caching memory pool (kapi/_memory/pool.py): freed arrays' memory is reused by the next
array of its size class on its device, results of operators and reductions allocate nothing
in steady state, memory a pending launch uses is not reused before the launch completes, an
out-of-memory allocation frees the cache and retries, and KAPI_MEMORY_POOL=0 disables it."""

import gc
import os
import subprocess
import sys

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi._memory import pool as _memory

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@pytest.fixture
def pool():
    p = kapi.get_default_memory_pool()
    if p is None:
        pytest.fail("the pool is disabled in this process (KAPI_MEMORY_POOL=0 in the environment)")
    return p


def _quiesce():
    """Frees earlier tests' arrays held only by reference cycles, then waits for every device's
    queue: the pool counts every device's blocks, and an earlier test's asynchronous calls on
    another device give theirs back when they complete. The caller's counts hold while the
    garbage collector stays off (the `no_gc` fixture): a collection in the middle frees such
    arrays at a random point (seen in whole-suite runs on the GPU machine)."""
    gc.collect()
    for d in kapi.devices():
        d.default_queue.wait()


@pytest.fixture
def no_gc():
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_size_classes():
    assert _memory._size_class(0) == 512 and _memory._size_class(1) == 512
    assert _memory._size_class(512) == 512 and _memory._size_class(513) == 1024
    assert _memory._size_class(1 << 30) == 1 << 30
    big = _memory._size_class((1 << 30) + 1)
    assert (1 << 30) < big <= (1 << 30) * 17 // 16


@pytest.mark.parametrize("usm_type", ["device", "shared", "host"])
def test_freed_block_is_reused(dev, pool, usm_type):
    a = kapi.empty(1000, dtype=np.float32, device=dev, usm_type=usm_type)
    ptr, used = a._ptr, pool.used_bytes()
    assert type(a._owner) is _memory.Block and a._owner.nbytes == 4096
    free = pool.free_bytes()
    del a
    assert pool.used_bytes() == used - 4096 and pool.free_bytes() == free + 4096
    b = kapi.empty(1020, dtype=np.float32, device=dev, usm_type=usm_type)  # same class
    assert b._ptr == ptr and pool.used_bytes() == used and pool.free_bytes() == free
    b[:] = np.arange(1020, dtype=np.float32)
    np.testing.assert_array_equal(b.asnumpy(), np.arange(1020, dtype=np.float32))
    c = kapi.empty(1000, dtype=np.float32, device=dev, usm_type=usm_type)  # b still alive
    assert c._ptr != ptr
    assert pool.total_bytes() == pool.used_bytes() + pool.free_bytes()


@pytest.mark.parametrize("chunked", [True, False], ids=["cpu-scheme", "gpu-scheme"])
def test_results_allocate_nothing_in_steady_state(dev, pool, monkeypatch, chunked):
    """Also with reductions whose first pass is asynchronous: their partials go back to the
    pool once the second pass is done, not when the queue next prunes its events."""
    from kapi._numeric import reduce as _reduce

    monkeypatch.setattr(_reduce, "_chunked", lambda x: chunked)
    calls = []
    real = _memory.MemoryPool._allocate

    def counted(self, key):
        calls.append(key)
        return real(self, key)

    monkeypatch.setattr(_memory.MemoryPool, "_allocate", counted)
    h = np.random.default_rng(0).uniform(-1, 1, (64, 300)).astype(np.float32)
    x = kapi.asarray(h, device=dev)
    from kapi._numeric import replay as _replay

    warm = _replay._IN_FLIGHT + 2  # replayed calls may hold their arrays that long (async GPUs)
    for k in range(40):  # more than the 32 events a queue keeps before pruning
        if k == warm:
            x.sycl_queue.wait()
            calls.clear()  # warm: every size class used below has been freed once
        y = np.exp(x * 2 - 1)  # a new result array each time
        s = y.sum(axis=1)  # partials, results
        m = x.max()
        np.testing.assert_allclose(y.asnumpy(), np.exp(h * 2 - 1), rtol=1e-6)
        np.testing.assert_allclose(s.asnumpy(), np.exp(h * 2 - 1).sum(axis=1), rtol=1e-5)
        assert float(m) == h.max()
        del y, s, m
    assert calls == []


def test_base_leaves_the_pool(dev, pool):
    """Array.base hands out the Buffer, which may outlive every array: it is then freed, not
    cached (no later array may share memory the caller still holds)."""
    a = kapi.empty(3000, dtype=np.int64, device=dev)
    ptr, used, size = a._ptr, pool.used_bytes(), a._owner.nbytes
    buf = a.base
    assert type(buf) is not _memory.Block and buf is a.base and buf.ptr == ptr
    assert pool.used_bytes() == used - size
    free = pool.free_bytes()
    del a
    assert pool.free_bytes() == free and pool.used_bytes() == used - size
    b = kapi.empty(3000, dtype=np.int64, device=dev)
    assert b._ptr != ptr
    del buf


def test_pending_launch_keeps_its_block(dev, pool):
    """A block an asynchronous launch writes returns to the pool only once the launch is
    known complete: an array allocated meanwhile never gets it."""

    @kapi.kernel
    def slow_fill(it, out, reps):
        i = it.get_id(0)
        v = np.float64(0)
        for r in range(reps):
            v += r * 1e-9
        out[i] = v + i

    n = 1 << 14
    out = kapi.empty(n, dtype=np.float64, device=dev)
    ptr = out._ptr
    _, ev = kapi.call_kernel_async(slow_fill, kapi.Range(n), (), out, 2000)
    used = pool.used_bytes()
    del out  # only the pending launch holds it now
    assert pool.used_bytes() == used  # still in use
    other = kapi.empty(n, dtype=np.float64, device=dev)
    assert other._ptr != ptr
    other.fill(-1.0)
    ev.wait()
    np.testing.assert_array_equal(other.asnumpy(), np.full(n, -1.0))  # not written over
    again = kapi.empty(n, dtype=np.float64, device=dev)
    assert again._ptr == ptr  # back in the pool after completion
    want = np.arange(n) + sum(r * 1e-9 for r in range(2000))
    np.testing.assert_allclose(again.asnumpy(), want, rtol=1e-12)  # the launch's writes


def test_out_of_memory_frees_the_cache_and_retries(dev, pool, monkeypatch):
    keep = kapi.empty(5000, dtype=np.float32, device=dev)
    del keep  # one cached block on dev
    assert pool.free_bytes() > 0
    ext = _memory._native.ext()
    tries = []

    class FullDevice:
        """The runtime as seen when the device is full until the cache is freed."""

        def Buffer(self, device, kind, nbytes):  # noqa: N802 - the runtime's name
            tries.append(pool.free_bytes())
            if len(tries) == 1:
                raise kapi.OutOfDeviceMemoryError("out of device memory (simulated)")
            return ext.Buffer(device, kind, nbytes)

    monkeypatch.setattr(_memory._native, "ext", FullDevice)
    a = kapi.empty(123457, dtype=np.float32, device=dev)  # a size class not cached
    assert len(tries) == 2 and tries[0] > 0
    assert tries[1] == sum(  # the retry came after this device's cache was freed
        k[2] * len(v) for k, v in pool._free.items() if k[0] != dev.index
    )
    monkeypatch.undo()
    a.fill(2.0)
    assert float(a.sum()) == 246914.0


def test_out_of_memory_raises_when_nothing_is_left(dev, pool):
    used = pool.used_bytes()
    with pytest.raises(kapi.OutOfDeviceMemoryError):
        kapi.empty(1 << 61, dtype=np.uint8, device=dev)
    assert pool.used_bytes() == used


def test_free_all_blocks(dev, pool):
    a = kapi.zeros((300, 300), device=dev)
    del a
    assert pool.n_free_blocks() > 0
    pool.free_all_blocks()
    assert pool.n_free_blocks() == 0 and pool.free_bytes() == 0
    assert pool.total_bytes() == pool.used_bytes()


def test_disabled_pool():
    code = (
        "import numpy as np, kapi\n"
        "from kapi import _native\n"
        "assert kapi.get_default_memory_pool() is None\n"
        "a = kapi.asarray(np.arange(10.0))\n"
        "assert type(a._owner) is _native.ext().Buffer\n"
        "b = a * 2 + 1\n"
        "assert float(b.sum()) == 100.0 and float((a + 0).max()) == 9.0\n"
        "print('ok')\n"
    )
    env = dict(os.environ, KAPI_MEMORY_POOL="0", PYTHONPATH=os.getcwd())
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize("chunked", [True, False], ids=["cpu-scheme", "gpu-scheme"])
def test_reduction_partials_return_at_once(dev, pool, monkeypatch, chunked, no_gc):
    """A reduction's partials go back to the pool without a host read: the recording call's
    when it returns; replayed calls (kapi/_numeric/replay.py, which do not wait) hold theirs while
    at
    most _IN_FLIGHT later calls are queued, and none once the queue has been waited for."""
    from kapi._memory import pool as _memory
    from kapi._numeric import reduce as _reduce
    from kapi._numeric import replay as _replay

    monkeypatch.setattr(_reduce, "_chunked", lambda x: chunked)
    x = kapi.asarray(np.ones(1 << 16, np.float32), device=dev)
    assert _reduce._groups(x, x.size)[0] > 1  # two passes
    # The first reduction of a queue also makes the library's constants (the unused index
    # array, kept for good): made here, so the counts below hold whatever ran before in this
    # process; the plan is dropped, so the next call is recorded again.
    assert float(x.sum()) == 65536.0
    _replay.clear_plans()
    _quiesce()  # earlier tests' replayed calls give their arrays back (async GPUs)
    used = pool.used_bytes()
    r = x.sum()  # the general path, recorded
    assert pool.used_bytes() == used + r._owner.nbytes  # only the result's block
    del r
    assert pool.used_bytes() == used
    (plan,) = [p for p in _reduce._PLANS.values() if p is not None]
    per_call = sum(_memory._size_class(n) for _, _, n in plan.bufs)
    assert len(plan.bufs) == 2  # partials and result
    for _ in range(3 * _replay._IN_FLIGHT):
        r = x.sum()
        assert pool.used_bytes() <= used + (_replay._IN_FLIGHT + 1) * per_call
        del r
    x.sycl_queue.wait()
    assert pool.used_bytes() == used
    assert float(x.sum()) == 65536.0


def test_threads_share_the_pool(dev, pool):
    """Threads allocating and releasing at once never get the same live block twice, and the
    pool's counts come back to where they were."""
    import threading

    _quiesce()
    used = pool.used_bytes()
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        live = []
        try:
            for _ in range(300):
                live.append(kapi.empty(int(rng.integers(1, 3000)), np.float32, device=dev))
                if len(live) > 8:
                    live.pop(int(rng.integers(0, len(live))))
            ptrs = [a._ptr for a in live]
            assert len(set(ptrs)) == len(ptrs)
            live.clear()
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    held = [kapi.empty(100, np.float32, device=dev) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len({a._ptr for a in held}) == 3
    del held
    assert pool.used_bytes() == used
