"""Atomics on local memory (AtomicRef(..., address_space=AddressSpace.LOCAL)): every work-item of
a group adds to the same counters and keeps the value it saw, so a lost or doubled update
shows as a repeated or missing old value; a local histogram adds into many counters, some hit
by several work-items at once. On kapi's CPU device, integer add and subtract on local memory
are plain (unlocked) instructions, since a work-group runs on one thread: these tests also
run with more threads than cores and groups side by side (KAPI_CPU_SHARE), where sharing a
local buffer between groups, or splitting a group, would lose updates."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi import kernel_api as K

DEVICES = devices_or_skip()
WG = 64
GROUPS = 24


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@kapi.kernel
def count_up_down(nd, old_add, old_sub, final, counters):
    lid = nd.get_local_id(0)
    gid = nd.get_global_id(0)
    g = nd.get_group()
    t = old_add.dtype.type
    if lid == 0:
        counters[0] = t(0)
        counters[1] = t(0)
    K.group_barrier(g)
    space = K.AddressSpace.LOCAL
    old_add[gid] = K.AtomicRef(counters, 0, address_space=space).fetch_add(t(lid + 1))
    old_sub[gid] = K.AtomicRef(counters, 1, address_space=space).fetch_sub(t(2))
    K.group_barrier(g)
    if lid == 0:
        grp = g.get_group_id(0)
        final[grp, 0] = counters[0]
        final[grp, 1] = counters[1]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
def test_every_update_seen_once(dev, dtype):
    n = WG * GROUPS
    old_add = kapi.zeros(n, dtype=dtype, device=dev)
    old_sub = kapi.zeros(n, dtype=dtype, device=dev)
    final = kapi.zeros((GROUPS, 2), dtype=dtype, device=dev)
    counters = K.LocalAccessor((2,), dtype)
    kapi.call_kernel(count_up_down, kapi.NdRange((n,), (WG,)), old_add, old_sub, final, counters)
    adds = old_add.asnumpy().reshape(GROUPS, WG).tolist()
    subs = old_sub.asnumpy().reshape(GROUPS, WG).tolist()
    fin = final.asnumpy().tolist()
    total = WG * (WG + 1) // 2
    wrap = 1 << (8 * np.dtype(dtype).itemsize)  # unsigned counters wrap below zero
    for grp in range(GROUPS):
        # the old values of the subtractions are 0, -2, -4, ... in some order
        assert sorted(-v % wrap for v in subs[grp]) == [2 * k for k in range(WG)]
        # each addition saw a distinct running total below the group's sum
        assert len(set(adds[grp])) == WG and min(adds[grp]) == 0 and max(adds[grp]) < total
        assert fin[grp][0] == total and fin[grp][1] % wrap == -2 * WG % wrap


@kapi.kernel
def local_histogram(nd, data, bins, local):
    g = nd.get_group()
    lid = nd.get_local_id(0)
    for b in range(lid, bins.shape[0], nd.get_local_range(0)):
        local[b] = 0
    K.group_barrier(g)
    one = bins.dtype.type(1)
    K.AtomicRef(local, data[nd.get_global_id(0)], address_space=K.AddressSpace.LOCAL).fetch_add(one)
    K.group_barrier(g)
    for b in range(lid, bins.shape[0], nd.get_local_range(0)):
        K.AtomicRef(bins, b).fetch_add(local[b])


@pytest.mark.parametrize("nbins", [1, 7, 256])
def test_local_histogram(dev, nbins):
    n = WG * GROUPS
    data = np.random.default_rng(nbins).integers(0, nbins, n, dtype=np.int32)
    bins = kapi.zeros(nbins, dtype=np.int32, device=dev)
    kapi.call_kernel(
        local_histogram,
        kapi.NdRange((n,), (WG,)),
        kapi.asarray(data, device=dev),
        bins,
        K.LocalAccessor((nbins,), np.int32),
    )
    np.testing.assert_array_equal(bins.asnumpy(), np.bincount(data, minlength=nbins))


CPU = [d for d in DEVICES if d.device_type == "cpu"]

SHARED = """
import numpy as np, kapi
from kapi import kernel_api as K
import test_local_atomics as T
n = T.WG * 400
data = np.random.default_rng(3).integers(0, 5, n, dtype=np.int32)
bins = kapi.zeros(5, dtype=np.int32, device="cpu")
for _ in range(20):
    kapi.call_kernel(T.local_histogram, kapi.NdRange((n,), (T.WG,)), kapi.asarray(data,
                     device="cpu"), bins, K.LocalAccessor((5,), np.int32))
assert np.array_equal(bins.asnumpy(), 20 * np.bincount(data, minlength=5)), bins.asnumpy()
print("ok")
"""


def _run(src, env):
    here = os.path.dirname(os.path.abspath(__file__))
    tests = os.path.dirname(here)  # kapi_testing
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([here, tests, os.getcwd()]), **env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(src)],
        capture_output=True,
        text=True,
        timeout=120,
        env=e,
    )


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_groups_side_by_side_lose_no_update():
    r = _run(SHARED, {"KAPI_CPU_THREADS": "8", "KAPI_CPU_SHARE": "1", "KAPI_DRIVERS": "cpu"})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_local_adds_are_unlocked_global_ones_atomic():
    """The host code of the histogram: the local additions are the plain `xadd` (inline
    assembly, the same text on every x86-64 target), the global ones LLVM atomics."""
    src = SHARED.replace("range(20)", "range(1)").replace("20 *", "1 *")
    r = _run(src, {"KAPI_DUMP": "host", "KAPI_CACHE": "0", "KAPI_DRIVERS": "cpu"})
    assert r.returncode == 0, r.stderr
    assert 'asm sideeffect "xaddl $0, ($2)"' in r.stderr
    assert "atomicrmw add i32 addrspace(1)*" in r.stderr
    assert "atomicrmw add i32 addrspace(3)*" not in r.stderr
