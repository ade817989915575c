"""Barrier kernels against NumPy on every device. On the CPU device they run as regions between
barriers (one work-item loop per region, finalise_host_regions.c); kernels spinning on an atomic
load run on fibers, which must let the work-item they wait for progress."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import devices_or_skip, scan

import kapi
from kapi import kernel_api as kapi_api

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]
CPU = [d for d in DEVICES if ":cpu:" in d.filter_string]
TILE = 16


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


@kapi.kernel
def tiled_matmul(nditem, a, b, c, sa, sb):
    i = nditem.get_global_id(0)
    j = nditem.get_global_id(1)
    li = nditem.get_local_id(0)
    lj = nditem.get_local_id(1)
    n = a.shape[1]
    acc = np.float32(0)
    for t in range(n // TILE):
        sa[li, lj] = a[i, t * TILE + lj]
        sb[li, lj] = b[t * TILE + li, j]
        kapi_api.group_barrier(nditem.get_group())
        for k in range(TILE):
            acc += sa[li, k] * sb[k, lj]
        kapi_api.group_barrier(nditem.get_group())
    c[i, j] = acc


def test_tiled_matmul(dev):
    rng = np.random.default_rng(1)
    n = 64
    ha = rng.random((n, n), dtype=np.float32)
    hb = rng.random((n, n), dtype=np.float32)
    a, b = kapi.asarray(ha, device=dev), kapi.asarray(hb, device=dev)
    c = kapi.zeros((n, n), dtype="f4", device=dev)
    sa = kapi_api.LocalAccessor((TILE, TILE), np.float32)
    sb = kapi_api.LocalAccessor((TILE, TILE), np.float32)
    kapi.call_kernel(tiled_matmul, kapi.NdRange((n, n), (TILE, TILE)), a, b, c, sa, sb)
    np.testing.assert_allclose(c.asnumpy(), ha @ hb, rtol=1e-5)


@kapi.kernel
def tree_reduce(nditem, a, out, slm):
    lid = nditem.get_local_id(0)
    slm[lid] = a[nditem.get_global_id(0)]
    kapi_api.group_barrier(nditem.get_group())
    stride = nditem.get_local_range(0) // 2
    while stride > 0:
        if lid < stride:
            slm[lid] += slm[lid + stride]
        kapi_api.group_barrier(nditem.get_group())
        stride //= 2
    if lid == 0:
        out[nditem.get_group().get_group_id(0)] = slm[0]


@pytest.mark.parametrize("wg", [1, 8, 64, 256])
def test_tree_reduction_many_groups(dev, wg):
    n = wg * 97  # many groups: the CPU pool runs several at once, each with its own storage
    h = (np.arange(n) % 29).astype(np.float64)
    a = kapi.asarray(h, device=dev)
    out = kapi.zeros(n // wg, dtype="f8", device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.float64)
    kapi.call_kernel(tree_reduce, kapi.NdRange((n,), (wg,)), a, out, slm)
    np.testing.assert_array_equal(out.asnumpy(), h.reshape(-1, wg).sum(axis=1))


def check_local_scan(dev, wg, groups, period):
    """The per-group scan of `groups` groups of wg over a repeating ramp, against NumPy."""
    n = wg * groups
    h = np.arange(n, dtype=np.int32) % period - period // 2
    a = kapi.asarray(h, device=dev)
    out = kapi.zeros(n, dtype="i4", device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.int32)
    kapi.call_kernel(scan, kapi.NdRange((n,), (wg,)), a, out, slm)
    np.testing.assert_array_equal(out.asnumpy(), np.cumsum(h.reshape(-1, wg), axis=1).ravel())


@pytest.mark.parametrize("wg", [7, 13, 32, 100])  # sizes not multiples of any vector width
def test_local_scan(dev, wg):
    check_local_scan(dev, wg, groups=11, period=17)


@pytest.mark.parametrize("wg", [48, 64, 256, 1024])  # rows of whole AVX-512 vectors, not one
def test_local_scan_rows_of_vectors(dev, wg):
    # On AVX-512 hosts these one-row groups take the nests whose rows are loops over vectors
    check_local_scan(dev, wg, groups=9, period=23)


@kapi.kernel
def scan2d(nditem, a, out, slm):
    # The scan over a 2-D group's work-items in row-major order of their local ids.
    li, lj = nditem.get_local_id(0), nditem.get_local_id(1)
    i, j = nditem.get_global_id(0), nditem.get_global_id(1)
    nj = nditem.get_local_range(1)
    n = nditem.get_local_range(0) * nj
    lid = li * nj + lj
    v = a[i, j]
    slm[lid] = v
    kapi_api.group_barrier(nditem.get_group())
    d = 1
    while d < n:
        if lid >= d:
            v += slm[lid - d]
        kapi_api.group_barrier(nditem.get_group())
        slm[lid] = v
        kapi_api.group_barrier(nditem.get_group())
        d *= 2
    out[i, j] = v


@pytest.mark.parametrize("local", [(1, 64), (64, 1), (2, 32), (32, 2), (3, 16), (16, 3)])
def test_local_scan_2d_groups(dev, local):
    # One row of 64 (either way round: one of them is the driver's x) takes the rows of
    # vectors; rows of 32 or 16 in groups of several rows take the nests with y and z loops.
    shape = (local[0] * 3, local[1] * 2)
    h = (np.arange(shape[0] * shape[1], dtype=np.int32) % 19 - 9).reshape(shape)
    a = kapi.asarray(h, device=dev)
    out = kapi.zeros(shape, dtype="i4", device=dev)
    slm = kapi_api.LocalAccessor((local[0] * local[1],), np.int32)
    kapi.call_kernel(scan2d, kapi.NdRange(shape, local), a, out, slm)
    g = h.reshape(3, local[0], 2, local[1]).transpose(0, 2, 1, 3).reshape(6, -1)
    want = np.cumsum(g, axis=1).reshape(3, 2, local[0], local[1]).transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(out.asnumpy(), want.reshape(shape))


@kapi.kernel
def private_across(nditem, a, out, slm):
    # A private array and scalars written before barriers and read after them.
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    p = kapi_api.PrivateArray(4, np.float32)
    for k in range(4):
        p[k] = a[gid] * (k + 1)
    x = a[gid] + np.float32(1)
    slm[lid] = x
    kapi_api.group_barrier(nditem.get_group())
    nb = slm[(lid + 1) % nditem.get_local_range(0)]
    kapi_api.group_barrier(nditem.get_group())
    slm[lid] = p[3]
    kapi_api.group_barrier(nditem.get_group())
    out[gid] = p[0] + p[1] + x * 10 + nb * 100 + slm[(lid + 2) % nditem.get_local_range(0)] * 1000


def test_values_and_private_arrays_across_barriers(dev):
    wg, n = 12, 48
    h = np.arange(n, dtype=np.float32) % 5
    a = kapi.asarray(h, device=dev)
    out = kapi.zeros(n, dtype="f4", device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.float32)
    kapi.call_kernel(private_across, kapi.NdRange((n,), (wg,)), a, out, slm)
    g = h.reshape(-1, wg)
    want = g * 3 + (g + 1) * 10 + (np.roll(g, -1, axis=1) + 1) * 100
    want += np.roll(g, -2, axis=1) * 4 * 1000
    np.testing.assert_allclose(out.asnumpy(), want.ravel(), rtol=1e-6)


@kapi.kernel
def reverse3d(nditem, a, out, slm):
    # 3-D groups: every work-item reads the element of its mirror in the group.
    i, j, k = nditem.get_global_id(0), nditem.get_global_id(1), nditem.get_global_id(2)
    li, lj, lk = nditem.get_local_id(0), nditem.get_local_id(1), nditem.get_local_id(2)
    ni, nj, nk = nditem.get_local_range(0), nditem.get_local_range(1), nditem.get_local_range(2)
    slm[li, lj, lk] = a[i, j, k]
    kapi_api.group_barrier(nditem.get_group())
    out[i, j, k] = slm[ni - 1 - li, nj - 1 - lj, nk - 1 - lk]


@pytest.mark.parametrize("local", [(2, 3, 5), (4, 4, 4), (1, 1, 3)])
def test_3d_groups(dev, local):
    shape = (local[0] * 2, local[1] * 3, local[2] * 2)
    h = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    a = kapi.asarray(h, device=dev)
    out = kapi.zeros(shape, dtype="i8", device=dev)
    slm = kapi_api.LocalAccessor(local, np.int64)
    kapi.call_kernel(reverse3d, kapi.NdRange(shape, local), a, out, slm)
    want = h.copy()
    for gi in range(2):
        for gj in range(3):
            for gk in range(2):
                s = np.s_[
                    gi * local[0] : (gi + 1) * local[0],
                    gj * local[1] : (gj + 1) * local[1],
                    gk * local[2] : (gk + 1) * local[2],
                ]
                want[s] = h[s][::-1, ::-1, ::-1]
    np.testing.assert_array_equal(out.asnumpy(), want)


@kapi.kernel
def uniform_branch_barrier(nditem, a, out, slm, flag):
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    if flag > 0:  # uniform over the group: the barrier is taken by all or none
        slm[lid] = a[gid]
        kapi_api.group_barrier(nditem.get_group())
        out[gid] = slm[nditem.get_local_range(0) - 1 - lid]
    else:
        out[gid] = a[gid]


def test_barrier_in_uniform_branch(dev):
    wg, n = 10, 40
    h = np.arange(n, dtype=np.int32)
    a = kapi.asarray(h, device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.int32)
    for flag in (1, 0):
        out = kapi.zeros(n, dtype="i4", device=dev)
        kapi.call_kernel(uniform_branch_barrier, kapi.NdRange((n,), (wg,)), a, out, slm, flag)
        want = h.reshape(-1, wg)[:, ::-1].ravel() if flag else h
        np.testing.assert_array_equal(out.asnumpy(), want)


@kapi.kernel
def guarded_tail(nditem, a, out, slm, limit):
    # After the barrier only work-items below `limit` (any value) do anything: the CPU device
    # runs that region's loop only up to `limit`.
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    slm[lid] = a[gid]
    kapi_api.group_barrier(nditem.get_group())
    if lid < limit:
        out[gid] = slm[nditem.get_local_range(0) - 1 - lid] + 1


@pytest.mark.parametrize("wg", [1, 6, 32])
def test_region_guarded_by_a_bound(dev, wg):
    n = wg * 5
    h = np.arange(n, dtype=np.int64) * 3
    a = kapi.asarray(h, device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.int64)
    for limit in (-3, 0, 1, wg // 2, wg, wg + 7):
        out = kapi.full(n, -1, dtype="i8", device=dev)
        kapi.call_kernel(guarded_tail, kapi.NdRange((n,), (wg,)), a, out, slm, limit)
        want = h.reshape(-1, wg)[:, ::-1] + 1
        want[:, max(limit, 0) :] = -1
        np.testing.assert_array_equal(out.asnumpy(), want.ravel(), err_msg=f"limit {limit}")


@kapi.device_func
def shift_through_local(nditem, slm, v, by):
    # A barrier in a device function (inlined into the kernel, then split like the kernel's).
    lid = nditem.get_local_id(0)
    n = nditem.get_local_range(0)
    slm[lid] = v
    kapi_api.group_barrier(nditem.get_group())
    r = slm[(lid + by) % n]
    kapi_api.group_barrier(nditem.get_group())
    return r


@kapi.kernel
def rotate_passes(nditem, a, out, slm, passes):
    # Nested loops with barriers; `acc` and `v` are loop-carried across them.
    gid = nditem.get_global_id(0)
    v = a[gid]
    acc = v * 0
    for p in range(passes):
        for by in range(1, 3):
            v = shift_through_local(nditem, slm, v, by)
            acc += v * (p + 1)
    out[gid] = acc


def test_barriers_in_device_functions_and_nested_loops(dev):
    wg, n, passes = 9, 36, 3
    h = np.arange(n, dtype=np.int64) ** 2
    a = kapi.asarray(h, device=dev)
    out = kapi.zeros(n, dtype="i8", device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.int64)
    kapi.call_kernel(rotate_passes, kapi.NdRange((n,), (wg,)), a, out, slm, passes)
    g = h.reshape(-1, wg)
    v, acc = g.copy(), np.zeros_like(g)
    for p in range(passes):
        for by in range(1, 3):
            v = np.roll(v, -by, axis=1)
            acc += v * (p + 1)
    np.testing.assert_array_equal(out.asnumpy(), acc.ravel())


@kapi.kernel
def local_histogram(nditem, x, bins, lbins):
    # Atomics on local memory between barriers, then one work-item per bin publishes.
    lid = nditem.get_local_id(0)
    nb = lbins.shape[0]
    if lid < nb:
        lbins[lid] = 0
    kapi_api.group_barrier(nditem.get_group())
    kapi_api.AtomicRef(lbins, x[nditem.get_global_id(0)] % nb).fetch_add(np.int32(1))
    kapi_api.group_barrier(nditem.get_group())
    if lid < nb:
        kapi_api.AtomicRef(bins, lid).fetch_add(lbins[lid])


@pytest.mark.parametrize("local", [(16,), (5, 3), (2, 3, 4)])
def test_local_atomics_between_barriers_2d_3d(dev, local):
    shape = tuple(d * 3 for d in local)
    h = (np.arange(int(np.prod(shape)), dtype=np.int32) * 7) % 23
    x = kapi.asarray(h.reshape(shape) if len(shape) > 1 else h, device=dev)
    bins = kapi.zeros(8, dtype="i4", device=dev)
    lbins = kapi_api.LocalAccessor((8,), np.int32)
    flat = kapi.asarray(h, device=dev)
    kernel = local_histogram if len(shape) == 1 else local_histogram_nd
    arg = flat if len(shape) == 1 else x
    kapi.call_kernel(kernel, kapi.NdRange(shape, local), arg, bins, lbins)
    np.testing.assert_array_equal(bins.asnumpy(), np.bincount(h % 8, minlength=8))


@kapi.kernel
def local_histogram_nd(nditem, x, bins, lbins):
    lid = nditem.get_local_linear_id()
    nb = lbins.shape[0]
    if lid < nb:
        lbins[lid] = 0
    kapi_api.group_barrier(nditem.get_group())
    if x.ndim == 2:
        v = x[nditem.get_global_id(0), nditem.get_global_id(1)]
    else:
        v = x[nditem.get_global_id(0), nditem.get_global_id(1), nditem.get_global_id(2)]
    kapi_api.AtomicRef(lbins, v % nb).fetch_add(np.int32(1))
    kapi_api.group_barrier(nditem.get_group())
    if lid < nb:
        kapi_api.AtomicRef(bins, lid).fetch_add(lbins[lid])


SPIN = """
import sys
import numpy as np
import kapi
from kapi import kernel_api as K

@kapi.kernel
def handshake(item, flag, out):
    i = item.get_id(0)
    if i == 0:
        ref = K.AtomicRef(flag, index=0)
        while ref.load() == 0:   # waits for work-item 1, which runs after it on the CPU
            pass
        K.atomic_fence(K.MemoryOrder.ACQUIRE, K.MemoryScope.DEVICE)
        out[0] = out[1] + 1
    else:
        out[1] = 41
        K.atomic_fence(K.MemoryOrder.RELEASE, K.MemoryScope.DEVICE)
        ref = K.AtomicRef(flag, index=0)
        ref.store(1)

dev = kapi.devices()[int(sys.argv[1])]
flag = kapi.zeros(1, dtype="i8", device=dev)
out = kapi.zeros(2, dtype="i4", device=dev)
kapi.call_kernel(handshake, kapi.Range(2), flag, out)
print(out.asnumpy().tolist())
"""


def run_script(src, *args, env=None):
    here = os.path.dirname(os.path.abspath(__file__))  # scripts import this module's kernels
    path = os.pathsep.join([os.getcwd(), here, os.path.abspath(os.path.join(here, "..", ".."))])
    e = dict(os.environ, PYTHONPATH=path, **(env or {}))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(src), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=e,
    )


@pytest.mark.parametrize("index", range(len(DEVICES)), ids=ids)
def test_spin_on_atomic_load_makes_progress(index):
    # In a subprocess with a timeout: without forward progress the launch never returns.
    r = run_script(SPIN, str(index))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[42, 41]"


SCHEMES = """
import numpy as np
import kapi
from kapi import kernel_api as K
import test_barrier_regions as T

dev = [d for d in kapi.devices() if ":cpu:" in d.filter_string][0]
a = kapi.zeros((32, 32), dtype="f4", device=dev)
c = kapi.zeros((32, 32), dtype="f4", device=dev)
s = K.LocalAccessor((16, 16), np.float32)
v = kapi.zeros(32, dtype="i4", device=dev)
try:  # built for a CPU this host may not be (KAPI_HOST_CPU): only the listing matters
    kapi.call_kernel(T.tiled_matmul, kapi.NdRange((32, 32), (16, 16)), a, a, c, s, s)
except kapi.KapiError:
    pass
try:
    kapi.call_kernel(T.scan, kapi.NdRange((32,), (8,)), v, v, K.LocalAccessor((8,), np.int32))
except kapi.KapiError:
    pass
"""


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_schemes_regions_for_barriers_fibers_for_spins():
    env = {"KAPI_DUMP": "host"}
    # the listing for a fixed AVX-512 target, whatever this host's CPU or the run's target
    r = run_script(SCHEMES, env={**env, "KAPI_HOST_CPU": "skylake-avx512"})
    assert r.returncode == 0, r.stderr
    ir = r.stderr
    assert ir.count('"kapi-scheme"="regions"') >= 2 and "fiber" not in ir
    # the region loops of the matmul vectorise across work-items
    assert "x float>" in ir
    cpu = DEVICES.index(CPU[0])
    r = run_script(SPIN, str(cpu), env=env)
    assert r.returncode == 0, r.stderr
    assert '"kapi-scheme"="fibers"' in r.stderr and "__kapi_host_fiber_run" in r.stderr
    assert "__kapi_host_yield" in r.stderr


VECTOR_ROWS = """
import numpy as np
import kapi
from kapi import kernel_api as K
import test_barrier_regions as T

dev = [d for d in kapi.devices() if ":cpu:" in d.filter_string][0]
a = kapi.zeros((32, 32), dtype="f4", device=dev)
c = kapi.zeros((32, 32), dtype="f4", device=dev)
s = K.LocalAccessor((16, 16), np.float32)
try:  # built for a CPU this host may not be: only the listing matters
    kapi.call_kernel(T.tiled_matmul, kapi.NdRange((32, 32), (16, 16)), a, a, c, s, s)
except kapi.KapiError:
    pass
"""


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_rows_of_one_vector_get_their_own_nests():
    # On AVX-512 and AVX2 a barrier kernel that is not batched (the matmul saves `acc` per
    # work-item) gets region nests for rows of 16 work-items (one vector, or two of AVX2),
    # taken when the group's rows are that long (test_tiled_matmul runs them on such a host);
    # on SSE4.2 it does not.
    def rows(cpu):
        r = run_script(VECTOR_ROWS, env={"KAPI_DUMP": "host", "KAPI_HOST_CPU": cpu})
        assert r.returncode == 0, r.stderr[-3000:]
        found = {
            ln.split('"kapi-vector-rows"="')[1].split('"')[0]
            for ln in r.stderr.splitlines()
            if '"kapi-vector-rows"' in ln
        }  # a host that cannot run the target lists the module at each attempt to build it
        assert len(found) == 1, found
        return found.pop()

    assert rows("skylake-avx512") == "16"
    assert rows("haswell") == "16"
    assert rows("x86-64-v2") == "0"


SCAN_ONLY = """
import numpy as np
import kapi
from kapi import kernel_api as K
import test_barrier_regions as T

dev = [d for d in kapi.devices() if ":cpu:" in d.filter_string][0]
v = kapi.zeros(512, dtype="i4", device=dev)
try:  # built for a CPU this host may not be: only the listing matters
    kapi.call_kernel(T.scan, kapi.NdRange((512,), (256,)), v, v, K.LocalAccessor((256,), np.int32))
except kapi.KapiError:
    pass
"""


def scan_host_ir(extra, cpu="skylake-avx512"):
    """The scan's host IR (KAPI_DUMP=host) with the settings `extra`, for a fixed AVX-512 target
    (cpu=None: this host's CPU)."""
    env = {"KAPI_DUMP": "host", "KAPI_CACHE": "0"}
    if cpu:
        env["KAPI_HOST_CPU"] = cpu
    r = run_script(SCAN_ONLY, env=dict(env, **extra))
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stderr


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_region_loops_are_not_peeled():
    # The scan's first step (d = 1 after the split) reads `lid >= 1`: LLVM's full-unroll pass
    # would peel work-item 0 off that region's loop, giving the loop a new id that the
    # accesses' parallel mark no longer names, and the loop then stayed scalar. Region loops
    # of kernels that are not batched are marked not to unroll, which keeps them whole;
    # KAPI_HOST_REGION_UNROLL=1 restores the old marks.
    def host_ir(extra):
        ir = scan_host_ir(extra)
        assert '"kapi-batches"="no"' in ir
        return ir

    ir = host_ir({})
    assert "llvm.loop.peeled.count" not in ir
    assert "x i32>" in ir  # the steps vectorise
    assert "llvm.loop.peeled.count" in host_ir({"KAPI_HOST_REGION_UNROLL": "1"})


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_region_copies_stay_loops():
    # The scan's `slm[lid] = v` and `out[gid] = v` copy a slot row by row: vector loops, not a
    # memcpy call per row (KAPI_HOST_REGION_MEMCPY=1 allows the calls, as before).
    host_ir = scan_host_ir
    assert "@llvm.memcpy" not in host_ir({})
    # the nests whose rows are loops over vectors have no row-long loop to call memcpy for
    assert "@llvm.memcpy" in host_ir({"KAPI_HOST_REGION_MEMCPY": "1", "KAPI_HOST_VECTOR_ROWS": "0"})


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_rows_of_vectors_get_their_own_nests():
    # The scan's groups of one row of 256 work-items (a multiple of AVX-512's 16 lanes, not
    # one vector) get, per region, a nest without y and z loops whose row is a loop over its
    # vectors (`wi.xv`), each a work-item loop of 16; KAPI_HOST_VECTOR_ROWS=0: none.
    host_ir = scan_host_ir
    assert "%wi.xv" in host_ir({})
    assert "%wi.xv" not in host_ir({"KAPI_HOST_VECTOR_ROWS": "0"})


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_unbatched_group_loops_do_not_unroll(monkeypatch):
    # The scan is not batched: the driver gives its run function one group per call, so its
    # group loops are marked not to unroll (LLVM unrolled each region's four times plus a
    # remainder: a larger build). KAPI_HOST_ONE_GROUP=0 unrolls them, as before; `2` counts
    # them to a constant 1 (no count read from the call).
    def host_ir(extra):  # for this host's CPU: LLVM's unrolling depends on its model
        ir = scan_host_ir(extra, cpu=None)
        assert '"kapi-batches"="no"' in ir
        return ir

    monkeypatch.delenv("KAPI_HOST_ONE_GROUP", raising=False)  # the default: marked
    marked, unrolled, const = (
        host_ir(e) for e in ({}, {"KAPI_HOST_ONE_GROUP": "0"}, {"KAPI_HOST_ONE_GROUP": "2"})
    )
    remainder = re.compile(r"^grp[.0-9]*\.epil", re.M)  # the unroller's remainder loop
    assert not remainder.search(marked)
    if remainder.search(unrolled):  # LLVM unrolls them for this CPU (it does for Zen 4)
        assert marked.count("\n") < unrolled.count("\n")
    assert "kapi.count" in marked and "kapi.count" not in const


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_kernel_accesses_miss_the_slots():
    # The scan's loads and stores of a, out and slm are marked `!noalias` every slot scope
    # (KAPI_DUMP=host: "kapi-slot-noalias"), so its copy region `slm[lid] = v` no longer
    # stores v back into the slot it loaded it from: fewer vector stores than with
    # KAPI_HOST_SLOT_NOALIAS=0 in the nest of rows of vectors. The general nest's loops are not
    # run-time unrolled after vectorising (KAPI_HOST_UNROLL), and may then store nothing back
    # either way; unrolled (KAPI_HOST_UNROLL=1, as before) the unmarked copies store back.
    def host_ir(extra):
        ir = scan_host_ir(extra)
        marked = re.findall(r'"kapi-slot-noalias"="(\d+)"', ir)
        assert len(marked) == 1, marked
        return int(marked[0]), ir.count("store <16 x i32>")

    for rows, fewer in (
        ({}, True),
        ({"KAPI_HOST_VECTOR_ROWS": "0"}, False),
        ({"KAPI_HOST_UNROLL": "1"}, True),
        ({"KAPI_HOST_UNROLL": "1", "KAPI_HOST_VECTOR_ROWS": "0"}, True),
    ):
        marked, stores = host_ir(rows)
        unmarked, before = host_ir(dict(rows, KAPI_HOST_SLOT_NOALIAS="0"))
        assert marked >= 4 and unmarked == 0  # a[gid], slm[lid] (twice), slm[lid - d], out[gid]
        assert 0 < stores < before if fewer else 0 < stores <= before, (rows, stores, before)


@kapi.kernel
def carried_pair(nditem, a, out, slm, passes):
    # Two values carried round a loop with two barriers: `x` and `s` cross the first barrier,
    # `s` (updated between them) and `x` the second; `x` takes `s`'s old value at the loop's
    # end, so the phi of `x` must not share `s`'s slot (both cross every barrier), while `s`,
    # carried as the matmul's `acc`, may share its update's.
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    n = nditem.get_local_range(0)
    x = a[gid]
    s = a[gid] * 2
    for _ in range(passes):
        slm[lid] = x
        kapi_api.group_barrier(nditem.get_group())
        t = slm[(lid + 1) % n]
        s = s + t
        kapi_api.group_barrier(nditem.get_group())
        x = s - x
    out[gid] = x * 100 + s


def carried_pair_reference(h, wg, passes):
    x = h.reshape(-1, wg).astype(np.int64)
    s = x * 2
    for _ in range(passes):
        t = np.roll(x, -1, axis=1)
        s = s + t
        x = s - x
    return (x * 100 + s).ravel()


@pytest.mark.parametrize("wg", [16, 24, 64])
def test_values_carried_round_a_loop_with_barriers(dev, wg):
    n = wg * 5
    h = (np.arange(n) % 23 - 11).astype(np.int64)
    a = kapi.asarray(h, device=dev)
    out = kapi.zeros(n, dtype="i8", device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.int64)
    for passes in (0, 1, 3):
        kapi.call_kernel(carried_pair, kapi.NdRange((n,), (wg,)), a, out, slm, passes)
        np.testing.assert_array_equal(out.asnumpy(), carried_pair_reference(h, wg, passes))


SHARED = """
import numpy as np
import kapi
from kapi import kernel_api as K
import test_barrier_regions as T

dev = [d for d in kapi.devices() if ":cpu:" in d.filter_string][0]
h = np.arange(96, dtype=np.int64) % 23 - 11
out = kapi.zeros(96, dtype="i8", device=dev)
s = K.LocalAccessor((16, 16), np.float32)
a = kapi.asarray(np.ones((32, 32), np.float32), device=dev)
c = kapi.zeros((32, 32), dtype="f4", device=dev)
kapi.call_kernel(T.tiled_matmul, kapi.NdRange((32, 32), (16, 16)), a, a, c, s, s)
kapi.call_kernel(T.carried_pair, kapi.NdRange((96,), (16,)), kapi.asarray(h, device=dev), out,
                 K.LocalAccessor((16,), np.int64), 3)
print(int(c.asnumpy()[0, 0]), out.asnumpy().tolist() == T.carried_pair_reference(h, 16, 3).tolist())
"""


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_loop_carried_value_shares_its_slot():
    # The tiled matmul's `acc` crosses the loop's first barrier as the loop's phi and its
    # second as the sum; they share a slot, so the tile copy no longer copies it between
    # two (KAPI_HOST_SLOT_SHARE=0: each its own). The pair kernel's `x` and `s` both cross
    # every barrier: only `s` and its update share.
    def shared(extra):
        env = {"KAPI_DUMP": "host", "KAPI_CACHE": "0"}
        r = run_script(SHARED, env=dict(env, **extra))
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stdout.split() == ["32", "True"]
        return re.findall(r'"kapi-shared-slots"="(\d+)"', r.stderr)

    assert shared({}) == ["1", "1"]
    assert shared({"KAPI_HOST_SLOT_SHARE": "0"}) == ["0", "0"]


# ---- Batches of groups (CPU: lockstep kernels without per-work-item slots get several
# groups per run call, region by region; values the same in every group of a batch are saved
# once per batch, values that differ per group once per group) ----


@kapi.kernel
def weighted_group_sums(nditem, a, wts, out, s1, s2):
    # Tree reduction over a 1-, 2- or 3-D group (linear local id), with two local buffers and
    # a value loaded per group (`w`: the same in the group, different between groups) that is
    # live across every barrier.
    lx = nditem.get_local_id(0)
    ly = nditem.get_local_id(1)
    lz = nditem.get_local_id(2)
    nx = nditem.get_local_range(0)
    ny = nditem.get_local_range(1)
    n = nx * ny * nditem.get_local_range(2)
    lid = (lz * ny + ly) * nx + lx
    g = nditem.get_group()
    g0 = g.get_group_id(0)
    g1 = g.get_group_id(1)
    g2 = g.get_group_id(2)
    w = wts[g2, g1, g0]
    s1[lid] = a[nditem.get_global_id(2), nditem.get_global_id(1), nditem.get_global_id(0)]
    s2[lid] = w * 2
    kapi_api.group_barrier(g)
    stride = n // 2
    while stride > 0:
        if lid < stride:
            s1[lid] += s1[lid + stride]
        kapi_api.group_barrier(g)
        stride //= 2
    if lid == 0:
        out[g2, g1, g0] = s1[0] * w + s2[n - 1]


BATCH_SHAPES = [
    ((1, 1, 1), (256, 1, 1)),
    ((37, 1, 1), (64, 1, 1)),  # 37 groups: batches of 64 work-item groups do not divide it
    ((19, 3, 1), (8, 4, 1)),  # 2-D: a batch never crosses a row of groups
    ((5, 3, 2), (4, 2, 2)),  # 3-D
    ((97, 1, 1), (1, 1, 1)),
    # groups of one row in a 3-D range: the flat loop nest (no y, z loops), while the
    # same kernel's other launches here take the full one
    ((6, 4, 2), (32, 1, 1)),
    ((3, 5, 2), (1, 8, 1)),  # rows of one work-item: the full nest, x loops of one
]


@pytest.mark.parametrize("groups, local", BATCH_SHAPES)
def test_batched_groups_local_memory_and_group_values(dev, groups, local):
    rng = np.random.default_rng(7)
    shape = tuple(g * w for g, w in zip(groups, local, strict=True))[::-1]  # (z, y, x)
    ha = rng.integers(0, 9, shape).astype(np.int64)
    hw = rng.integers(1, 5, groups[::-1]).astype(np.int64)
    a, wts = kapi.asarray(ha, device=dev), kapi.asarray(hw, device=dev)
    out = kapi.zeros(groups[::-1], dtype="i8", device=dev)
    n = local[0] * local[1] * local[2]
    s1 = kapi_api.LocalAccessor((n,), np.int64)
    s2 = kapi_api.LocalAccessor((n + 3,), np.int64)  # another size: its own offset per group
    kapi.call_kernel(weighted_group_sums, kapi.NdRange(shape[::-1], local), a, wts, out, s1, s2)
    lz, ly, lx = local[::-1]
    gz, gy, gx = groups[::-1]
    sums = ha.reshape(gz, lz, gy, ly, gx, lx).sum(axis=(1, 3, 5))
    np.testing.assert_array_equal(out.asnumpy(), sums * hw + 2 * hw)


@kapi.kernel
def barriers_by_group(nditem, out, tmp):
    # How many barriers a group meets depends on its id: the groups of a batch would not run
    # in lockstep, so the CPU device never batches it (each group is still uniform).
    lid = nditem.get_local_id(0)
    g = nditem.get_group()
    tmp[lid] = lid
    for _ in range(g.get_group_id(0) % 3):
        kapi_api.group_barrier(g)
        if lid == 0:
            tmp[0] += 10
    kapi_api.group_barrier(g)
    out[nditem.get_global_id(0)] = tmp[0] + tmp[lid]


def test_groups_meeting_different_barriers(dev):
    wg, groups = 8, 41
    out = kapi.zeros(wg * groups, dtype="i8", device=dev)
    kapi.call_kernel(
        barriers_by_group,
        kapi.NdRange((wg * groups,), (wg,)),
        out,
        kapi_api.LocalAccessor((wg,), np.int64),
    )
    g, lid = np.divmod(np.arange(wg * groups), wg)
    want = 10 * (g % 3) + np.where(lid == 0, 10 * (g % 3), lid)
    np.testing.assert_array_equal(out.asnumpy(), want)


BATCHES = """
import numpy as np
import kapi
from kapi import kernel_api as K
import test_barrier_regions as T

dev = [d for d in kapi.devices() if ":cpu:" in d.filter_string][0]
for name in ("tree_reduce", "scan", "barriers_by_group"):
    f = kapi.zeros(64, dtype="f8" if name == "tree_reduce" else "i8", device=dev)
    args = (f, f) if name != "barriers_by_group" else (f,)
    t = np.float64 if name == "tree_reduce" else np.int64
    kapi.call_kernel(getattr(T, name), kapi.NdRange((64,), (8,)), *args, K.LocalAccessor((8,), t))
"""


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_batches_only_lockstep_kernels_without_per_work_item_slots():
    r = run_script(BATCHES, env={"KAPI_DUMP": "host", "KAPI_CACHE": "0"})
    assert r.returncode == 0, r.stderr
    runs = [
        line
        for line in r.stderr.splitlines()
        if line.startswith("attributes #") and "kapi-scheme" in line
    ]
    # tree_reduce: lockstep, nothing per work-item; scan: `v` per work-item; barriers_by_group:
    # the number of barriers depends on the group's id
    assert ['"kapi-batches"="yes"' in a for a in runs] == [True, False, False], runs


@kapi.kernel
def mirror(nditem, a, out, slm):
    # Nothing is saved across the barrier (ids are recomputed): no scratch storage at all.
    lid = nditem.get_local_id(0)
    slm[lid] = a[nditem.get_global_id(0)]
    kapi_api.group_barrier(nditem.get_group())
    out[nditem.get_global_id(0)] = slm[nditem.get_local_range(0) - 1 - lid]


FIRST = """
import numpy as np
import kapi
from kapi import kernel_api as K
import test_barrier_regions as T

dev = [d for d in kapi.devices() if ":cpu:" in d.filter_string][0]
h = np.arange(64 * 64, dtype=np.int32)
out = kapi.zeros(h.size, dtype="i4", device=dev)
a = kapi.asarray(h, device=dev)
kapi.call_kernel(T.mirror, kapi.NdRange((h.size,), (64,)), a, out, K.LocalAccessor((64,), np.int32))
print(int((out.asnumpy() == h.reshape(-1, 64)[:, ::-1].ravel()).all()))
"""


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_barrier_kernel_saving_nothing_on_fresh_threads():
    # The first barrier kernel of a process, on threads that never had scratch storage, with
    # nothing to store in it (it once took a NULL for "out of memory").
    r = run_script(FIRST)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1"


@kapi.kernel
def wide_values(nditem, a, out32, out64, slm):
    # Numba types int32 * int32 as int64. Only u's low 32 bits reach memory (slm, out32), so
    # the CPU device saves it across the barriers in 32 bits (in a loop LLVM cannot narrow it
    # itself); w is stored whole and compared, so it keeps 64. Both exceed 32 bits here.
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    n = nditem.get_local_range(0)
    x = a[gid]
    u = x * 100003 + 7
    w = x * 3000000000
    for _ in range(3):
        slm[lid] = u
        kapi_api.group_barrier(nditem.get_group())
        u = u * 65537 - slm[(lid + 1) % n]
        kapi_api.group_barrier(nditem.get_group())
    if w > 0:
        w += 1
    out32[gid] = u
    out64[gid] = w


@pytest.mark.parametrize("wg", [5, 64])
def test_wide_integers_across_barriers(dev, wg):
    n = wg * 9
    h = (np.arange(n, dtype=np.int64) * 7919 % 200001 - 100000).astype(np.int32)
    a = kapi.asarray(h, device=dev)
    out32 = kapi.zeros(n, dtype="i4", device=dev)
    out64 = kapi.zeros(n, dtype="i8", device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.int32)
    kapi.call_kernel(wide_values, kapi.NdRange((n,), (wg,)), a, out32, out64, slm)
    x = h.astype(np.int64).reshape(-1, wg)
    u = x * 100003 + 7
    for _ in range(3):
        u = u * 65537 - np.roll(u.astype(np.int32), -1, axis=1)  # int64 arithmetic wraps
    w = x * 3000000000
    np.testing.assert_array_equal(out32.asnumpy(), u.astype(np.int32).ravel())
    np.testing.assert_array_equal(out64.asnumpy(), np.where(w > 0, w + 1, w).ravel())


SAVES32 = """
import numpy as np
import kapi
from kapi import kernel_api as K
import test_barrier_regions as T

dev = [d for d in kapi.devices() if ":cpu:" in d.filter_string][0]
a = kapi.zeros(64, dtype="i4", device=dev)
o32, o64 = kapi.zeros(64, dtype="i4", device=dev), kapi.zeros(64, dtype="i8", device=dev)
s32 = K.LocalAccessor((8,), np.int32)
kapi.call_kernel(T.scan, kapi.NdRange((64,), (8,)), a, o32, s32)
kapi.call_kernel(T.wide_values, kapi.NdRange((64,), (8,)), a, o32, o64, s32)
"""


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_saves_int64_values_whose_high_bits_are_dropped_in_32_bits():
    r = run_script(SAVES32, env={"KAPI_DUMP": "host", "KAPI_CACHE": "0"})
    assert r.returncode == 0, r.stderr
    runs = [
        line
        for line in r.stderr.splitlines()
        if line.startswith("attributes #") and "kapi-scheme" in line
    ]
    saves32 = [int(a.split('"kapi-saves32"="')[1].split('"')[0]) for a in runs]
    # the scan's running sum `v`; wide_values' u, on both sides of the barriers (w, compared
    # and stored whole, keeps 64 bits: test_wide_integers_across_barriers fails otherwise)
    assert saves32[0] == 1 and saves32[1] >= 1, runs


@kapi.kernel
def strided_stores_around_a_conditional_one(nditem, out, s):
    i = nditem.get_global_id(0)
    lid = nditem.get_local_id(0)
    kapi_api.group_barrier(nditem.get_group())
    out[i * 4 + 2] = 3
    out[i * 4 + 0] = 1
    out[i * 4 + 3] = 7
    if lid & 3:
        out[i * 4 + 0] = s
    out[i * 4 + 2] = -1
    out[i * 4 + 1] = 1


def test_strided_stores_keep_their_order_around_a_conditional_store(dev):
    # Found by the fuzzer: the CPU device's region loop (marked parallel) joined the four
    # strided stores into one interleaved store placed after the conditional one, so every
    # out[4i] read 1 (compiler/src/optimise.c).
    out = kapi.zeros(256, dtype="i8", device=dev)
    kapi.call_kernel(strided_stores_around_a_conditional_one, kapi.NdRange((64,), (16,)), out, -18)
    want = np.tile(np.array([1, 1, -1, 7], np.int64), (64, 1))
    want[np.arange(64) % 16 % 4 != 0, 0] = -18
    np.testing.assert_array_equal(out.asnumpy().reshape(64, 4), want)


def gather_sums(nditem, a, idx, scale, out, slm):
    # Region 0 reads through an index array (the index's address follows the work-item; the
    # gathered element's depends on a load) and at gid // scale (a division by a run-time
    # value, which a prefetch's address copy must not contain): the CPU device prefetches
    # what it can copy of the next batch's addresses, and results never change.
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    slm[lid] = a[idx[gid]] + a[gid // scale]
    kapi_api.group_barrier(nditem.get_group())
    stride = nditem.get_local_range(0) // 2
    while stride > 0:
        if lid < stride:
            slm[lid] += slm[lid + stride]
        kapi_api.group_barrier(nditem.get_group())
        stride //= 2
    if lid == 0:
        out[nditem.get_group().get_group_id(0)] = slm[0]


def check_gather_sums(dev, wg, groups):
    n = wg * groups
    rng = np.random.default_rng(3)
    h = rng.integers(0, 50, n).astype(np.float32)
    hi = rng.permutation(n).astype(np.int64)
    a, idx = kapi.asarray(h, device=dev), kapi.asarray(hi, device=dev)
    out = kapi.zeros(groups, dtype="f4", device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.float32)
    kapi.call_kernel(gather_sums, kapi.NdRange((n,), (wg,)), a, idx, 3, out, slm)
    want = (h[hi] + h[np.arange(n) // 3]).reshape(-1, wg).sum(axis=1)
    np.testing.assert_array_equal(out.asnumpy(), want)


def test_gather_in_the_first_region(dev):
    check_gather_sums(dev, 256, 41)


PREFETCH = """
import numpy as np
import kapi
import test_barrier_regions as T

dev = [d for d in kapi.devices() if ":cpu:" in d.filter_string][0]
for wg in (1, 8, 64, 256, 1024):
    T.test_tree_reduction_many_groups(dev, wg)
for groups, local in T.BATCH_SHAPES:
    T.test_batched_groups_local_memory_and_group_values(dev, groups, local)
T.check_gather_sums(dev, 256, 41)
T.check_gather_sums(dev, 64, 300)
print("ok")
"""


def prefetched_loads(dump):
    """{kernel: {"kapi-prefetch" of each module it was compiled into}} from KAPI_DUMP=host."""
    out = {}
    for ir in dump.split("; ---- kapi cpu driver: host LLVM IR ----")[1:]:
        names = re.findall(r"define i32 @(\w+)\.kapi\.run\(.*\) .*#(\d+)", ir)
        for name, group in names:
            attrs = re.search(rf"^attributes #{group} = {{(.*)}}$", ir, re.M).group(1)
            n = re.search(r'"kapi-prefetch"="(\d+)"', attrs)
            out.setdefault(name, set()).add(int(n.group(1)) if n else None)
    return out


@pytest.mark.skipif(not CPU, reason="no CPU device")
@pytest.mark.parametrize("lines", ["1", "2", "5"])
def test_cpu_prefetching_the_next_batch_changes_no_result(lines):
    # KAPI_HOST_PREFETCH=N prefetches N lines per group in every later region whatever the
    # launch's size (auto leaves launches under 16 MiB alone): every batched shape of this
    # file, with the prefetches in, and the host IR says which kernels got them.
    r = run_script(
        PREFETCH, env={"KAPI_HOST_PREFETCH": lines, "KAPI_CACHE": "0", "KAPI_DUMP": "host"}
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok"
    assert prefetched_loads(r.stderr) == {
        "tree_reduce": {1},
        "weighted_group_sums": {1},
        "gather_sums": {1},
    }
    assert "call void @llvm.prefetch" in r.stderr


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_cpu_no_prefetching_when_off():
    r = run_script(
        PREFETCH, env={"KAPI_HOST_PREFETCH": "0", "KAPI_CACHE": "0", "KAPI_DUMP": "host"}
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert prefetched_loads(r.stderr) == {
        "tree_reduce": {0},
        "weighted_group_sums": {0},
        "gather_sums": {0},
    }
    assert "@llvm.prefetch" not in r.stderr


def prefetch_calls(dump, kernel):
    """The llvm.prefetch calls in the run entry of `kernel`'s modules: {site: [arguments of
    each call]}. A site is the block the finaliser put its prefetching loop in ("pf", "pf88"):
    how often LLVM then copies it (runtime unrolling makes "pf.1" and "pf.epil" on some
    targets, none on others) depends on the CPU the JIT targets, the sites do not."""
    sites = {}
    for ir in dump.split("; ---- kapi cpu driver: host LLVM IR ----")[1:]:
        if not re.search(rf"define i32 @{kernel}\.kapi\.run\(", ir):
            continue
        block = None
        for line in ir.splitlines():
            label = re.match(r"([\w.$-]+):", line)
            block = label.group(1) if label else block
            call = re.search(r"call void @llvm\.prefetch\.p0i8\((.*)\)", line)
            if call:
                sites.setdefault(block.split(".")[0], []).append(call.group(1))
    return sites


PREFETCH_PLACES = {
    # env: (batches ahead, the copy region prefetches, locality)
    "default": ({}, (2, True, 2)),
    "later regions, L1": (
        {"KAPI_HOST_PREFETCH_FIRST": "1", "KAPI_HOST_PREFETCH_LOCALITY": "3"},
        (2, False, 3),
    ),
    "next batch": ({"KAPI_HOST_PREFETCH_AHEAD": "1"}, (1, True, 2)),
}


@pytest.mark.skipif(not CPU, reason="no CPU device")
@pytest.mark.parametrize("place", list(PREFETCH_PLACES))
def test_cpu_prefetch_placement_changes_no_result(place):
    # Where the prefetches go (which batch, whether the copy region issues some, the cache
    # level) changes no result of any batched shape, and the host IR shows each choice: the
    # copy region's prefetching nest is one more call site, the locality llvm.prefetch's third
    # argument, the batch ahead a multiple of the batch's group count in the address.
    more, (ahead, copy, locality) = PREFETCH_PLACES[place]
    env = {
        "KAPI_HOST_PREFETCH": "2",
        "KAPI_CACHE": "0",
        "KAPI_DUMP": "host",
        "KAPI_HOST_PREFETCH_AHEAD": "",
        "KAPI_HOST_PREFETCH_FIRST": "",
        "KAPI_HOST_PREFETCH_LOCALITY": "",
    }
    r = run_script(PREFETCH, env=dict(env, **more))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok"
    sites = prefetch_calls(r.stderr, "tree_reduce")
    # one site per region that prefetches: the tree's step and its final store, and the copy
    assert len(sites) == 2 + copy, sites
    calls = [c for cs in sites.values() for c in cs]
    assert all(c.endswith(f"i32 0, i32 {locality}, i32 1") for c in calls), calls
    shifted = re.findall(r"%\S+ = shl i64 %kapi\.count, 1", r.stderr)
    assert bool(shifted) == (ahead == 2)


@pytest.mark.skipif(not CPU, reason="no CPU device")
@pytest.mark.parametrize("wg", [256, 1024])
def test_cpu_tree_reduction_large_enough_to_prefetch(wg):
    # 16 MiB of input: the default (auto) prefetching runs
    n = 1 << 22
    h = (np.arange(n) % 29).astype(np.float32)
    a = kapi.asarray(h, device=CPU[0])
    out = kapi.zeros(n // wg, dtype="f4", device=CPU[0])
    slm = kapi_api.LocalAccessor((wg,), np.float32)
    kapi.call_kernel(tree_reduce, kapi.NdRange((n,), (wg,)), a, out, slm)
    np.testing.assert_array_equal(out.asnumpy(), h.reshape(-1, wg).sum(axis=1))
