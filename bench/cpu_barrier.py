"""Barrier kernels on kapi's CPU driver (the region scheme), side by side in one run:

- tiled matmul (LocalAccessor tiles, two group_barriers per tile) against Numba
  @njit(parallel=True) naive matmul, same size and dtype (target >= 1.0x);
- a work-group tree reduction in local memory against the bandwidth of kapi's own triad
  (bytes read per second vs bytes moved per second; target >= 0.8x);
- a local-memory (Hillis-Steele) inclusive scan per group, in GB/s.

Every result is checked against NumPy before timing; times are medians of --repeat runs (the
triad, reduction and scan timed in turn, sample by sample, so that load on a shared machine
hits their ratios less).

    .venv/bin/python bench/cpu_barrier.py [--n 512] [--tile 16] [--elems 16777216] [--wg 256]
        [--prefetch 0,2,4] [--skip-matmul] [--copy]

`--prefetch` compares the reduction compiled with each listed KAPI_HOST_PREFETCH value (cache
lines per group that each tree step prefetches of the next batch's input; `P:L` also sets
KAPI_HOST_PREFETCH_LOCALITY to L, `P:aA` KAPI_HOST_PREFETCH_AHEAD to A, `P:fF`
KAPI_HOST_PREFETCH_FIRST to F, in any combination: `auto:a2:f0`), in one process: each
variant is its own kernel, timed in turn with the triad and the scan, which run between any
two reductions as without it. `--copy` adds the reduction's copy into local memory alone (its
first and last regions), the floor of its time.
"""

import argparse
import os
import statistics
import time
import types

import numba
import numpy as np
from cpu_tree_steps import copy_only  # bench/ is on sys.path as the script's folder
from timing import median_time

import kapi
from kapi import kernel_api as K

TILE = 16  # also the LocalAccessor shape; --tile must match (it is a compile-time constant)


@kapi.kernel
def tiled_matmul(nditem, a, b, c, ta, tb):
    # bench/gpu.py's k_matmul: dimension 0 runs along rows of c, as numba-cuda's threadIdx.x
    row = nditem.get_global_id(1)
    col = nditem.get_global_id(0)
    lr = nditem.get_local_id(1)
    lc = nditem.get_local_id(0)
    n = a.shape[1]
    acc = c.dtype.type(0.0)
    for t0 in range(0, n, TILE):
        ta[lr, lc] = a[row, t0 + lc]
        tb[lr, lc] = b[t0 + lr, col]
        K.group_barrier(nditem.get_group())
        for k in range(TILE):
            acc += ta[lr, k] * tb[k, lc]
        K.group_barrier(nditem.get_group())
    c[row, col] = acc


@numba.njit(parallel=True)
def matmul_numba(a, b, c):
    # naive, in the loop order that vectorises (i, k, j): the fast reference
    for i in numba.prange(a.shape[0]):
        for j in range(b.shape[1]):
            c[i, j] = 0
        for k in range(a.shape[1]):
            x = a[i, k]
            for j in range(b.shape[1]):
                c[i, j] += x * b[k, j]


@numba.njit(parallel=True)
def matmul_numba_ijk(a, b, c):
    # naive, dot-product order (i, j, k)
    for i in numba.prange(a.shape[0]):
        for j in range(b.shape[1]):
            acc = np.float32(0)
            for k in range(a.shape[1]):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc


@kapi.kernel
def triad(item, a, b, c, s):
    i = item.get_id(0)
    a[i] = b[i] + s * c[i]


def tree_reduce_py(nditem, a, out, slm):
    lid = nditem.get_local_id(0)
    slm[lid] = a[nditem.get_global_id(0)]
    K.group_barrier(nditem.get_group())
    stride = nditem.get_local_range(0) // 2
    while stride > 0:
        if lid < stride:
            slm[lid] += slm[lid + stride]
        K.group_barrier(nditem.get_group())
        stride //= 2
    if lid == 0:
        out[nditem.get_group().get_group_id(0)] = slm[0]


tree_reduce = kapi.kernel(tree_reduce_py)


PREFETCH_ENV = (
    "KAPI_HOST_PREFETCH",
    "KAPI_HOST_PREFETCH_LOCALITY",
    "KAPI_HOST_PREFETCH_AHEAD",
    "KAPI_HOST_PREFETCH_FIRST",
)


def prefetch_env(spec):
    """The environment of a --prefetch spec: `P[:L][:aA][:fF]`, P lines per region (or auto),
    L the locality, A the batches ahead, F the first region that prefetches."""
    parts = spec.split(":")
    env = dict.fromkeys(PREFETCH_ENV)
    env["KAPI_HOST_PREFETCH"] = parts[0]
    for p in parts[1:]:
        if p.startswith("a"):
            env["KAPI_HOST_PREFETCH_AHEAD"] = p[1:]
        elif p.startswith("f"):
            env["KAPI_HOST_PREFETCH_FIRST"] = p[1:]
        else:
            env["KAPI_HOST_PREFETCH_LOCALITY"] = p
    return env


def tree_reduce_variant(spec):
    """The reduction compiled with the prefetch settings of `spec` (prefetch_env): a kernel of
    its own name, so its SPIR-V and module differ from the others', built on its first call
    (timing warms it up) under the environment set here."""
    tag = "".join(c if c.isalnum() else "_" for c in spec)
    name = f"tree_reduce_pf{tag}"
    code = tree_reduce_py.__code__.replace(co_name=name)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=name)
    fn = types.FunctionType(code, tree_reduce_py.__globals__, name)
    fn.__qualname__ = name
    k = kapi.kernel(fn)

    def build(nd, *args):
        saved = {v: os.environ.get(v) for v in PREFETCH_ENV}
        for v, val in prefetch_env(spec).items():
            if val is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = val
        try:
            kapi.call_kernel(k, nd, *args)
        finally:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old

    return k, build


# the reduction's first and last regions alone: its copy into local memory is its floor
copy_in = copy_only


@kapi.kernel
def scan(nditem, a, out, slm):
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    v = a[gid]
    slm[lid] = v
    K.group_barrier(nditem.get_group())
    d = 1
    while d < nditem.get_local_range(0):
        if lid >= d:
            v += slm[lid - d]
        K.group_barrier(nditem.get_group())
        slm[lid] = v
        K.group_barrier(nditem.get_group())
        d *= 2
    out[gid] = v


def median_times(fns, repeat):
    """Medians of `fns` timed in turn, sample by sample, so that a change of load on a shared
    machine hits each alike (their ratios are what the benchmark reports)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) for ts in times]


def row(name, t, other_name, other, ratio):
    print(f"{name:<34} {t:>10} | {other_name:<30} {other:>10} | {ratio:>6.3f}x")


def bench_matmul(cpu, n, repeat):
    rng = np.random.default_rng(0)
    ha = rng.random((n, n), dtype=np.float32)
    hb = rng.random((n, n), dtype=np.float32)
    ref = ha @ hb
    a, b = kapi.asarray(ha, device=cpu), kapi.asarray(hb, device=cpu)
    c = kapi.empty((n, n), dtype="f4", device=cpu)
    sa = K.LocalAccessor((TILE, TILE), np.float32)
    sb = K.LocalAccessor((TILE, TILE), np.float32)
    nd = kapi.NdRange((n, n), (TILE, TILE))
    nc = np.empty((n, n), dtype=np.float32)

    def run_kapi():
        kapi.call_kernel(tiled_matmul, nd, a, b, c, sa, sb)

    run_kapi()
    assert np.allclose(c.asnumpy(), ref, rtol=1e-4), "kapi matmul wrong"
    tk = median_time(run_kapi, repeat)
    for name, fn in (
        ("numba parallel naive ikj", matmul_numba),
        ("numba parallel naive ijk", matmul_numba_ijk),
    ):
        fn(ha, hb, nc)
        assert np.allclose(nc, ref, rtol=1e-4), "numba matmul wrong"
        tn = median_time(lambda fn=fn: fn(ha, hb, nc), repeat)
        row(
            f"tiled matmul {n}x{n} f32 {TILE}x{TILE}",
            f"{tk * 1e3:.2f} ms",
            name,
            f"{tn * 1e3:.2f} ms",
            tn / tk,
        )


def bench_reduce_scan(cpu, elems, wg, repeat, prefetch=(), copy=False):
    rng = np.random.default_rng(1)
    h = rng.random(elems, dtype=np.float32)
    a = kapi.asarray(h, device=cpu)
    b, c = kapi.asarray(h, device=cpu), kapi.asarray(h, device=cpu)
    t_out = kapi.empty(elems, dtype="f4", device=cpu)
    r_out = kapi.empty(elems // wg, dtype="f4", device=cpu)
    slm = K.LocalAccessor((wg,), np.float32)
    nd = kapi.NdRange((elems,), (wg,))

    hi = rng.integers(-5, 5, elems, dtype=np.int32)
    ai = kapi.asarray(hi, device=cpu)
    s_out = kapi.empty(elems, dtype="i4", device=cpu)
    slm_i = K.LocalAccessor((wg,), np.int32)

    def run_scan():
        kapi.call_kernel(scan, nd, ai, s_out, slm_i)

    def run_triad():
        kapi.call_kernel(triad, kapi.Range(elems), t_out, b, c, np.float32(3))

    def run_reduce():
        kapi.call_kernel(tree_reduce, nd, a, r_out, slm)

    run_triad()
    run_reduce()
    np.testing.assert_allclose(t_out.asnumpy(), h + 3 * h, rtol=1e-6)
    np.testing.assert_allclose(r_out.asnumpy(), h.reshape(-1, wg).sum(axis=1), rtol=1e-4)
    run_scan()
    want = np.cumsum(hi.reshape(-1, wg), axis=1, dtype=np.int32).ravel()
    np.testing.assert_array_equal(s_out.asnumpy(), want)
    variants = []
    for spec in prefetch:
        k, build = tree_reduce_variant(spec)
        build(nd, a, r_out, slm)
        np.testing.assert_allclose(r_out.asnumpy(), h.reshape(-1, wg).sum(axis=1), rtol=1e-4)
        variants.append((spec, lambda k=k: kapi.call_kernel(k, nd, a, r_out, slm)))
    if copy:
        kapi.call_kernel(copy_in, nd, a, r_out, slm)
        np.testing.assert_array_equal(r_out.asnumpy(), h.reshape(-1, wg)[:, 0])
        variants.append(("copy", lambda: kapi.call_kernel(copy_in, nd, a, r_out, slm)))
    # each reduction between a triad and a scan, which push its input out of the caches
    fns = [run_triad, run_reduce, run_scan]
    for _, fn in variants:
        fns += [run_triad, fn, run_scan]
    meds = median_times(fns, repeat)
    tt = statistics.median(meds[0::3])
    ts = statistics.median(meds[2::3])
    bw_triad = 3 * 4 * elems / tt / 1e9
    for name, tr in [(f"tree reduction f32 wg {wg}", meds[1])] + [
        (
            f"copy into local memory wg {wg}"
            if spec == "copy"
            else f"tree reduction f32 wg {wg}, prefetch {spec}",
            meds[4 + 3 * i],
        )
        for i, (spec, _) in enumerate(variants)
    ]:
        bw_reduce = 4 * elems / tr / 1e9
        row(
            name,
            f"{bw_reduce:.2f} GB/s",
            "kapi triad f32",
            f"{bw_triad:.2f} GB/s",
            bw_reduce / bw_triad,
        )

    bw_scan = 2 * 4 * elems / ts / 1e9
    row(
        f"local scan i32 wg {wg} ({int(np.log2(wg))} steps)",
        f"{bw_scan:.2f} GB/s",
        "kapi triad f32",
        f"{bw_triad:.2f} GB/s",
        bw_scan / bw_triad,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--elems", type=int, default=1 << 24)
    ap.add_argument("--wg", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument(
        "--prefetch", default="", help="KAPI_HOST_PREFETCH values to compare, P[:L],..."
    )
    ap.add_argument("--skip-matmul", action="store_true")
    ap.add_argument(
        "--copy", action="store_true", help="also time the reduction's copy into local memory alone"
    )
    args = ap.parse_args()
    cpu = kapi.Device("cpu")
    print(f"{cpu}, {os.cpu_count()} cores, numba threads {numba.get_num_threads()}")
    print(f"{'kapi (region scheme)':<34} {'':>10} | {'reference':<30} {'':>10} | ratio")
    if not args.skip_matmul:
        bench_matmul(cpu, args.n, args.repeat)
    prefetch = [v for v in args.prefetch.split(",") if v]
    bench_reduce_scan(cpu, args.elems, args.wg, args.repeat, prefetch, args.copy)


if __name__ == "__main__":
    main()
