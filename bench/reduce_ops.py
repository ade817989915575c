"""Reductions of kapi arrays and new result arrays from the memory pool, beside CuPy (on a
GPU) or NumPy (on the CPU device).

Rows: `x.sum()`, `x.max()`, `x.argmax()` of n float32; `X.sum(axis=1)` (rows along memory)
and `X.sum(axis=0)` (rows across memory: the GPU column kernel) of X = x seen as a square
(2^(log2n/2) rows) matrix; and the lazy chain `(x * a + y) * x - b` into a new result array
each call (what kapi's memory pool makes cheap; run once more with KAPI_MEMORY_POOL=0 to see
the cost of an allocation per result) and into `out=`. Every result is checked against the
reference before it is timed. Times are medians over batches of calls with one wait each;
GB/s counts the bytes read (and written, for the chain).

    python3 bench/reduce_ops.py [--device gpu|cpu] [--log2n 28] [--reps N]
    KAPI_MEMORY_POOL=0 python3 bench/reduce_ops.py ...   # the pool off
    python3 bench/reduce_ops.py --overhead [--device cpu]

Defaults: 2^28 elements on a GPU, 2^22 on the CPU driver. --overhead times the host path
instead: each call on a 16-element float32 array (the kernel's own time is then nothing),
microseconds per call, beside a bare `kapi.call_kernel` of a one-line kernel.
"""

import argparse
import time

import numpy as np
from timing import median_batch

import kapi
import kapi.random
from kapi._numeric import lazy as _lazy

A, B = np.float32(1.5), np.float32(0.25)


def report(name, sec, nbytes, ref=None):
    ratio = f"  {ref / sec:5.2f}x of the reference" if ref else ""
    print(f"  {name:34s} {sec * 1e3:9.3f} ms  {nbytes / sec / 1e9:8.1f} GB/s{ratio}")


@kapi.kernel
def _touch(item, a):
    i = item.get_id(0)
    a[i] = a[i] + np.float32(1)


def overhead(dev, reps):
    """Microseconds per call of the array library's host path, on 16 elements."""
    h = np.arange(16, dtype=np.float32)
    x = kapi.asarray(h, device=dev)
    X = kapi.asarray(h.reshape(4, 4), device=dev)
    b = kapi.asarray(h > 7, device=dev)
    rng = kapi.Range(16)
    sync = dev.default_queue.wait
    print(f"device: {dev.name}; host cost per call on 16 float32 (median of batches of {reps})")
    cases = [
        ("kapi.call_kernel (bare launch)", lambda: kapi.call_kernel(_touch, rng, x)),
        ("x.sum()", lambda: x.sum()),
        ("x.max()", lambda: x.max()),
        ("x.argmax()", lambda: x.argmax()),
        ("x.mean()", lambda: x.mean()),
        ("b.any()", lambda: b.any()),
        ("X.sum(axis=1)", lambda: X.sum(axis=1)),
        ("X.sum(axis=0)", lambda: X.sum(axis=0)),
        ("X.argmin(axis=0)", lambda: X.argmin(axis=0)),
        ("float(x.sum())", lambda: float(x.sum())),
        ("kapi.cumsum(x)", lambda: kapi.cumsum(x)),
        ("(x * a + x) * x - b, new array", lambda: _lazy.realize((x * A + x) * x - B)),
        ("kapi.random uniform(16)", lambda: gen.random(16, dtype=np.float32)),
        ("kapi.random normal(16)", lambda: gen.standard_normal(16, dtype=np.float32)),
    ]
    gen = kapi.random.default_rng(0, device=dev)
    for name, f in cases:
        print(f"  {name:34s} {median_batch(f, sync, reps) * 1e6:9.2f} us")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None, help="kapi filter string (default device if none)")
    ap.add_argument("--log2n", type=int, default=None)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--overhead", action="store_true", help="host cost per call, 16 elements")
    args = ap.parse_args()
    t0 = time.perf_counter()
    dev = kapi.Device(args.device) if args.device else kapi.default_device()
    if args.overhead:
        overhead(dev, args.reps or 2000)
        return
    log2n = args.log2n or (28 if dev.is_gpu else 22)
    n, side = 1 << log2n, 1 << (log2n // 2)
    reps = args.reps or (20 if dev.is_gpu else 3)
    sync = dev.default_queue.wait
    pool = kapi.get_default_memory_pool()
    print(f"device: {dev.name}; n = 2^{log2n} float32; memory pool {'on' if pool else 'off'}")
    cp = None
    if dev.is_gpu:
        try:
            import cupy as cp
        except ImportError:
            print("  (cupy does not import: NumPy on the host is the reference)")
    if cp is not None:
        cx = cp.random.default_rng(0).random(n, dtype=cp.float32)
        cy = cp.random.default_rng(1).random(n, dtype=cp.float32)
        x, y = kapi.empty(n, np.float32, device=dev), kapi.empty(n, np.float32, device=dev)
        x[...] = kapi.asarray(cx)  # memory kapi owns (see bench/array_ops.py)
        y[...] = kapi.asarray(cy)
        ref, rsync, rname = cp, cp.cuda.Device().synchronize, "CuPy"
        rx, ry = cx, cy
    else:
        rng = np.random.default_rng(0)
        rx, ry = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        x, y = kapi.asarray(rx, device=dev), kapi.asarray(ry, device=dev)
        ref, rsync, rname = np, (lambda: None), "NumPy"
    X, RX = x.reshape(side, n // side), rx.reshape(side, n // side)
    out = kapi.empty(n, np.float32, device=dev)

    def host(a):
        return a.get() if cp is not None and isinstance(a, cp.ndarray) else np.asarray(a)

    cases = [
        ("x.sum()", lambda: x.sum(), lambda: rx.sum(), 4 * n),
        ("x.max()", lambda: x.max(), lambda: rx.max(), 4 * n),
        ("x.argmax()", lambda: x.argmax(), lambda: rx.argmax(), 4 * n),
        ("X.sum(axis=1)", lambda: X.sum(axis=1), lambda: RX.sum(axis=1), 4 * n),
        ("X.sum(axis=0)", lambda: X.sum(axis=0), lambda: RX.sum(axis=0), 4 * n),
        (
            "chain, new array",
            lambda: _lazy.realize((x * A + y) * x - B),
            lambda: (rx * A + ry) * rx - B,
            12 * n,
        ),
        (
            "chain, out=",
            lambda: np.subtract((x * A + y) * x, B, out=out),
            lambda: (rx * A + ry) * rx - B,
            12 * n,
        ),
    ]
    print(f"{'':2s}{'case':34s} {'kapi':>12s}   then {rname}")
    for name, kf, rf, nbytes in cases:
        got, want = kf().asnumpy(), host(rf())
        if not np.allclose(got, want, rtol=1e-3, atol=1e-5):
            raise SystemExit(f"{name}: kapi's result differs from {rname}'s")
        rt = median_batch(rf, rsync, reps)
        report(f"kapi {name}", median_batch(kf, sync, reps), nbytes, rt)
        report(f"{rname} {name}", rt, nbytes)
    if pool is not None:
        used, cached = pool.used_bytes() / 2**20, pool.free_bytes() / 2**20
        print(f"pool: {used:.1f} MiB used, {cached:.1f} MiB cached")
    del ref
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
