"""kapi on an NVIDIA GPU, side by side with numba-cuda and CuPy in one run (issue 5).

Every kernel is checked against a reference before it is timed. Times are medians over
batches: a batch submits REPS launches back to back and waits once, so the same host-side
method times kapi, numba-cuda and CuPy; with data far larger than L2 the single wait is <1%.

    python3 bench/gpu.py [--quick] [--only saxpy,pairwise,black-scholes,matmul,launch,first-call]

KAPI_CUDA_COARSEN=0 turns the CUDA driver's coarsened entries off (the one-work-item-per-thread
baseline); a power of two from 32 to 1024 sets their block size.

Prints one table; bench/RESULTS.md records what it printed on the H200.
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import textwrap

import numpy as np

np.row_stack = getattr(np, "row_stack", np.vstack)  # numba-cuda 0.30 on numpy 2.5 (TOOLCHAIN)

import cupy as cp  # noqa: E402
import kernels  # noqa: E402
import plotting  # noqa: E402
from numba import cuda  # noqa: E402
from timing import median_batch  # noqa: E402

import kapi  # noqa: E402
from kapi import kernel_api as kapi_api  # noqa: E402

ROWS = []


def report(name, kapi_value, peer_name, peer_value, unit, higher_is_better=True):
    ratio = kapi_value / peer_value if higher_is_better else peer_value / kapi_value
    ROWS.append((name, kapi_value, peer_name, peer_value, unit, ratio))
    print(
        f"{name:<34} kapi {kapi_value:10.2f} {unit:<6} {peer_name:<16} {peer_value:10.2f}"
        f"  ratio {ratio:5.2f}x",
        flush=True,
    )


def event_timed(launch, reps, batches=7):
    """Seconds per launch from CUDA events around each batch (numba-cuda's stream): checks
    that host-timed batches, the method used for every peer, measure device time."""
    launch()
    per = []
    for _ in range(batches):
        start, stop = cuda.event(), cuda.event()
        start.record()
        for _ in range(reps):
            launch()
        stop.record()
        stop.synchronize()
        per.append(cuda.event_elapsed_time(start, stop) / 1e3 / reps)
    return statistics.median(per)


# ---------------------------------------------------------------- kernels: kapi (numba-dpex API)
k_saxpy = kapi.kernel(kernels.saxpy)


@kapi.kernel
def k_empty(item, a, b, c):
    pass


k_pairwise = kapi.kernel(kernels.pairwise_distance)


@kapi.kernel
def k_black_scholes(item, price, strike, t, rate, vol, call, put):
    i = item.get_id(0)
    p = price[i]
    s = strike[i]
    tt = t[i]
    a = math.log(p / s)
    b = tt * -rate
    z = tt * vol * vol * 2.0
    c = 0.25 * z
    y = 1.0 / math.sqrt(z)
    w1 = (a - b + c) * y
    w2 = (a - b - c) * y
    d1 = 0.5 + 0.5 * math.erf(w1)
    d2 = 0.5 + 0.5 * math.erf(w2)
    se = math.exp(b) * s
    r = p * d1 - se * d2
    call[i] = r
    put[i] = r - p + se


TILE = 16


@kapi.kernel
def k_matmul(nd_item, a, b, c, ta, tb):
    row = nd_item.get_global_id(1)
    col = nd_item.get_global_id(0)
    lr = nd_item.get_local_id(1)
    lc = nd_item.get_local_id(0)
    n = a.shape[1]
    acc = c.dtype.type(0.0)
    for t0 in range(0, n, TILE):
        ta[lr, lc] = a[row, t0 + lc]
        tb[lr, lc] = b[t0 + lr, col]
        kapi_api.group_barrier(nd_item.get_group())
        for k in range(TILE):
            acc += ta[lr, k] * tb[k, lc]
        kapi_api.group_barrier(nd_item.get_group())
    c[row, col] = acc


# ---------------------------------------------------------------- kernels: numba-cuda
@cuda.jit
def c_saxpy(a, x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = a * x[i] + y[i]


@cuda.jit
def c_empty(a, b, c):
    pass


@cuda.jit
def c_pairwise(data, dist):
    i, j = cuda.grid(2)
    n = data.shape[0]
    if i < n and j < n:
        d = data.dtype.type(0.0)
        for k in range(data.shape[1]):
            t = data[i, k] - data[j, k]
            d += t * t
        dist[j, i] = math.sqrt(d)


@cuda.jit
def c_black_scholes(price, strike, t, rate, vol, call, put):
    i = cuda.grid(1)
    if i < price.size:
        p = price[i]
        s = strike[i]
        tt = t[i]
        a = math.log(p / s)
        b = tt * -rate
        z = tt * vol * vol * 2.0
        c = 0.25 * z
        y = 1.0 / math.sqrt(z)
        w1 = (a - b + c) * y
        w2 = (a - b - c) * y
        d1 = 0.5 + 0.5 * math.erf(w1)
        d2 = 0.5 + 0.5 * math.erf(w2)
        se = math.exp(b) * s
        r = p * d1 - se * d2
        call[i] = r
        put[i] = r - p + se


@cuda.jit
def c_matmul(a, b, c):
    ta = cuda.shared.array((TILE, TILE), np.float32)
    tb = cuda.shared.array((TILE, TILE), np.float32)
    col, row = cuda.grid(2)
    lc = cuda.threadIdx.x
    lr = cuda.threadIdx.y
    n = a.shape[1]
    acc = np.float32(0.0)
    for t0 in range(0, n, TILE):
        ta[lr, lc] = a[row, t0 + lc]
        tb[lr, lc] = b[t0 + lr, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += ta[lr, k] * tb[k, lc]
        cuda.syncthreads()
    c[row, col] = acc


# ---------------------------------------------------------------- helpers
def gpu():
    return kapi.Device("gpu")


def to_kapi(x):
    return kapi.asarray(x, device=gpu())


def kapi_sync_of(event_holder):
    def sync():
        if event_holder:
            kapi.wait_all(event_holder)
            event_holder.clear()

    return sync


def kapi_launcher(kern, rng, *args):
    events = []

    def launch():
        _, ev = kapi.call_kernel_async(kern, rng, (), *args)
        events[:] = [ev]

    return launch, kapi_sync_of(events)


# ---------------------------------------------------------------- benchmarks
def bench_saxpy(n, reps):
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    a = np.float32(2.0)
    kx, ky = to_kapi(x), to_kapi(y)
    kapi.call_kernel(k_saxpy, kapi.Range(n), a, kx, ky)
    assert np.allclose(ky.asnumpy(), a * x + y, rtol=1e-6), "kapi saxpy wrong"
    cx, cy = cuda.to_device(x), cuda.to_device(y)
    threads = 256
    blocks = (n + threads - 1) // threads
    c_saxpy[blocks, threads](a, cx, cy)
    cuda.synchronize()
    assert np.allclose(cy.copy_to_host(), a * x + y, rtol=1e-6), "numba-cuda saxpy wrong"
    ga, gb = cp.asarray(x), cp.empty_like(cp.asarray(x))

    bytes_moved = 3 * 4 * n
    launch, sync = kapi_launcher(k_saxpy, kapi.Range(n), a, kx, ky)
    t_kapi = median_batch(launch, sync, reps)
    t_numba = median_batch(lambda: c_saxpy[blocks, threads](a, cx, cy), cuda.synchronize, reps)
    t_copy = median_batch(lambda: cp.copyto(gb, ga), cp.cuda.Device().synchronize, reps)
    t_events = event_timed(lambda: c_saxpy[blocks, threads](a, cx, cy), reps)
    print(
        f"{'method check: numba-cuda saxpy':<34} host batches {t_numba * 1e3:.4f} ms, "
        f"CUDA events {t_events * 1e3:.4f} ms per launch",
        flush=True,
    )
    kapi_gbs = bytes_moved / t_kapi / 1e9
    report("saxpy f32 GB/s", kapi_gbs, "numba-cuda", bytes_moved / t_numba / 1e9, "GB/s")
    report("saxpy vs device copy GB/s", kapi_gbs, "CuPy copy", 2 * 4 * n / t_copy / 1e9, "GB/s")


def bench_pairwise(n, d, reps):
    data = np.random.rand(n, d).astype(np.float32)
    ref = np.sqrt(((data[None, :, :] - data[:, None, :]) ** 2).sum(-1))
    kd, kdist = to_kapi(data), kapi.empty((n, n), dtype=np.float32, device=gpu())
    kapi.call_kernel(k_pairwise, kapi.Range(n, n), kd, kdist)
    assert np.allclose(kdist.asnumpy(), ref, atol=1e-4), "kapi pairwise wrong"
    cd, cdist = cuda.to_device(data), cuda.device_array((n, n), np.float32)
    grid = ((n + 15) // 16, (n + 15) // 16)
    c_pairwise[grid, (16, 16)](cd, cdist)
    cuda.synchronize()
    assert np.allclose(cdist.copy_to_host(), ref, atol=1e-4), "numba-cuda pairwise wrong"
    launch, sync = kapi_launcher(k_pairwise, kapi.Range(n, n), kd, kdist)
    t_kapi = median_batch(launch, sync, reps)
    t_numba = median_batch(lambda: c_pairwise[grid, (16, 16)](cd, cdist), cuda.synchronize, reps)
    report(f"pairwise {n}x{d} f32 ms", t_kapi * 1e3, "numba-cuda", t_numba * 1e3, "ms", False)


def bench_black_scholes(n, reps):
    rng = np.random.default_rng(0)
    price = rng.uniform(10, 50, n)
    strike = rng.uniform(10, 50, n)
    t = rng.uniform(1, 2, n)
    rate, vol = 0.1, 0.2
    ins = [price, strike, t]
    kin = [to_kapi(v) for v in ins]
    kcall, kput = (kapi.empty(n, dtype=np.float64, device=gpu()) for _ in range(2))
    kapi.call_kernel(k_black_scholes, kapi.Range(n), *kin, rate, vol, kcall, kput)
    cin = [cuda.to_device(v) for v in ins]
    ccall, cput = cuda.device_array(n), cuda.device_array(n)
    blocks = (n + 255) // 256
    c_black_scholes[blocks, 256](*cin, rate, vol, ccall, cput)
    cuda.synchronize()
    assert np.allclose(kcall.asnumpy(), ccall.copy_to_host(), rtol=1e-9, atol=1e-9)
    assert np.allclose(kput.asnumpy(), cput.copy_to_host(), rtol=1e-9, atol=1e-9)
    launch, sync = kapi_launcher(k_black_scholes, kapi.Range(n), *kin, rate, vol, kcall, kput)
    t_kapi = median_batch(launch, sync, reps)
    t_numba = median_batch(
        lambda: c_black_scholes[blocks, 256](*cin, rate, vol, ccall, cput), cuda.synchronize, reps
    )
    report(f"black-scholes {n} f64 ms", t_kapi * 1e3, "numba-cuda", t_numba * 1e3, "ms", False)


def bench_matmul(n, reps):
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    ref = a @ b
    ka, kb = to_kapi(a), to_kapi(b)
    kc = kapi.empty((n, n), dtype=np.float32, device=gpu())
    ta = kapi_api.LocalAccessor((TILE, TILE), np.float32)
    tb = kapi_api.LocalAccessor((TILE, TILE), np.float32)
    rng = kapi.NdRange(kapi.Range(n, n), kapi.Range(TILE, TILE))
    kapi.call_kernel(k_matmul, rng, ka, kb, kc, ta, tb)
    assert np.allclose(kc.asnumpy(), ref, rtol=1e-3, atol=1e-2), "kapi matmul wrong"
    ca, cb, cc = cuda.to_device(a), cuda.to_device(b), cuda.device_array((n, n), np.float32)
    grid = (n // TILE, n // TILE)
    c_matmul[grid, (TILE, TILE)](ca, cb, cc)
    cuda.synchronize()
    assert np.allclose(cc.copy_to_host(), ref, rtol=1e-3, atol=1e-2), "numba-cuda matmul wrong"
    launch, sync = kapi_launcher(k_matmul, rng, ka, kb, kc, ta, tb)
    t_kapi = median_batch(launch, sync, reps)
    t_numba = median_batch(lambda: c_matmul[grid, (TILE, TILE)](ca, cb, cc), cuda.synchronize, reps)
    report(f"tiled matmul {n} f32 ms", t_kapi * 1e3, "numba-cuda", t_numba * 1e3, "ms", False)


def bench_launch(reps):
    """Host time per submission of an empty kernel with three array arguments."""
    ka = [kapi.empty(1024, dtype=np.float32, device=gpu()) for _ in range(3)]
    ca = [cuda.device_array(1024, np.float32) for _ in range(3)]
    raw = cp.RawKernel(r'extern "C" __global__ void e(float*a,float*b,float*c){}', "e")
    ga = [cp.empty(1024, cp.float32) for _ in range(3)]
    launch, sync = kapi_launcher(k_empty, kapi.Range(1024), *ka)
    t_kapi = median_batch(launch, sync, reps)
    t_sync = median_batch(lambda: kapi.call_kernel(k_empty, kapi.Range(1024), *ka), lambda: 0, reps)
    t_numba = median_batch(lambda: c_empty[4, 256](*ca), cuda.synchronize, reps)
    t_raw = median_batch(lambda: raw((4,), (256,), tuple(ga)), cp.cuda.Device().synchronize, reps)
    report("empty launch async us", t_kapi * 1e6, "numba-cuda", t_numba * 1e6, "us", False)
    report("empty launch async us", t_kapi * 1e6, "CuPy RawKernel", t_raw * 1e6, "us", False)
    print(f"{'empty call_kernel (sync) us':<34} kapi {t_sync * 1e6:10.2f}", flush=True)


FIRST_CALL = {
    "kapi": """
        import time, numpy as np
        t0 = time.perf_counter()
        import kapi
        t1 = time.perf_counter()
        @kapi.kernel
        def f(item, a, x, y):
            i = item.get_id(0)
            y[i] = a * x[i] + y[i] + 1.0
        x = kapi.asarray(np.ones(1 << 20, np.float32), device="gpu")
        y = kapi.asarray(np.ones(1 << 20, np.float32), device="gpu")
        t2 = time.perf_counter()
        kapi.call_kernel(f, kapi.Range(1 << 20), np.float32(2), x, y)
        t3 = time.perf_counter()
        assert float(y.asnumpy()[7]) == 4.0
        print(t3 - t2, t3 - t2 + t1 - t0)
    """,
    "numba-cuda": """
        import time, numpy as np
        np.row_stack = getattr(np, "row_stack", np.vstack)
        t0 = time.perf_counter()
        from numba import cuda
        t1 = time.perf_counter()
        @cuda.jit
        def f(a, x, y):
            i = cuda.grid(1)
            if i < x.size:
                y[i] = a * x[i] + y[i] + 1.0
        x = cuda.to_device(np.ones(1 << 20, np.float32))
        y = cuda.to_device(np.ones(1 << 20, np.float32))
        cuda.synchronize()
        t2 = time.perf_counter()
        f[(1 << 20) // 256, 256](np.float32(2), x, y)
        cuda.synchronize()
        t3 = time.perf_counter()
        assert float(y.copy_to_host()[7]) == 4.0
        print(t3 - t2, t3 - t2 + t1 - t0)
    """,
}


def bench_first_call():
    res = {}
    for name, src in FIRST_CALL.items():
        out = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(src)],
            capture_output=True,
            text=True,
            env=os.environ,
            check=True,
        ).stdout.split()
        res[name] = (float(out[0]), float(out[1]))
    report(
        "first call (new kernel) s", res["kapi"][0], "numba-cuda", res["numba-cuda"][0], "s", False
    )
    report(
        "first call incl. import s", res["kapi"][1], "numba-cuda", res["numba-cuda"][1], "s", False
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    ap.add_argument("--only", default="", help="comma-separated benchmark names (default: all)")
    ap.add_argument("--json", default="", help="write the ratios here (bench/plotting.py)")
    ap.add_argument("--plot", default="", help="a PNG of the ratios, where matplotlib imports")
    args = ap.parse_args()
    q = args.quick
    print("device:", gpu(), flush=True)
    steps = {
        "saxpy": lambda: bench_saxpy(1 << (20 if q else 28), 5 if q else 20),
        "pairwise": lambda: bench_pairwise(1024 if q else 8192, 3, 5 if q else 10),
        "black-scholes": lambda: bench_black_scholes(1 << (16 if q else 25), 5 if q else 10),
        "matmul": lambda: bench_matmul(256 if q else 4096, 3 if q else 5),
        "launch": lambda: bench_launch(200 if q else 2000),
        "first-call": bench_first_call,
    }
    chosen = [s for s in args.only.split(",") if s] or list(steps)
    failed = 0
    for step in (steps[name] for name in chosen):
        try:
            step()
        except Exception as e:  # keep going: one broken benchmark must not hide the others
            failed += 1
            print(f"FAILED: {type(e).__name__}: {e}", flush=True)
    print(f"\n{len(ROWS)} comparisons, {failed} benchmark(s) failed")
    if args.json or args.plot:
        rows = [(name, {f"vs {peer}": ratio}) for name, _, peer, _, _, ratio in ROWS]
        title = f"kapi vs numba-cuda and CuPy on {gpu().name} (medians)"
        plotting.write_results(rows, args.json, args.plot, title)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
