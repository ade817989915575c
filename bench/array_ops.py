"""An elementwise chain of 4 operators on a large float32 array, `(x * a + y) * x - b`, and
`sum`, on kapi arrays beside CuPy (on a GPU) or NumPy and Numba (on the CPU device).

kapi rows: `kapi.fuse` (one traced kernel), the plain operators, which are lazy (one kernel
per expression: once with a new result array, once into `out=`), and the operators run one
at a time (KAPI_LAZY=0's behaviour: 4 kernels and 3 temporaries). On a GPU the comparison is
CuPy's fused `ElementwiseKernel` of the same expression and `cupy.sum`, with the data made
by CuPy on the device and copied into kapi arrays there (NumPy checks every variant on a
small size only: the host is far too slow for 2^28 elements). On the CPU device: NumPy and
Numba's `@vectorize(target="parallel")` of the same scalar function.

Every result is checked before it is timed: at full size against CuPy (GPU) or NumPy (CPU),
and each kapi variant at 2^16 against NumPy. Times are medians over batches of calls with
one wait each; GB/s counts the bytes of x, y and the output (12 n), for sum the bytes read
(4 n).

    python3 bench/array_ops.py [--device gpu|cpu] [--log2n 28] [--reps N]

Defaults: 2^28 elements on a GPU, 2^24 on the CPU driver.
"""

import argparse
import time

import numpy as np
from timing import median_batch

import kapi
from kapi._numeric import lazy as _lazy

A, B = np.float32(1.5), np.float32(0.25)


@kapi.fuse
def chain(x, y, a, b):
    return (x * a + y) * x - b


def lazy_new(x, y):
    r = (x * A + y) * x - B  # pending: one expression
    return _lazy.realize(r)  # run it now (what reading r would do), so the timing counts it


def lazy_out(x, y, out):
    return np.subtract((x * A + y) * x, B, out=out)  # the pending operands fuse into out


def eager(x, y):
    _lazy.ENABLED = False  # as KAPI_LAZY=0: each operator its own kernel
    try:
        return (x * A + y) * x - B
    finally:
        _lazy.ENABLED = True


def report(name, sec, nbytes, ref=None):
    ratio = f"  {ref / sec:5.2f}x of the reference" if ref else ""
    print(f"  {name:40s} {sec * 1e3:9.3f} ms  {nbytes / sec / 1e9:8.1f} GB/s{ratio}")


def kapi_variants(x, y, out):
    return {
        "kapi.fuse (one kernel)": lambda: chain(x, y, A, B, out=out),
        "kapi lazy operators, new array": lambda: lazy_new(x, y),
        "kapi lazy operators, out=": lambda: lazy_out(x, y, out),
        "kapi operators one by one (4 kernels)": lambda: eager(x, y),
    }


def check_small(dev):
    """Every kapi variant against NumPy on 2^16 elements."""
    rng = np.random.default_rng(1)
    hx, hy = rng.random(1 << 16, dtype=np.float32), rng.random(1 << 16, dtype=np.float32)
    want = (hx * A + hy) * hx - B
    x, y = kapi.asarray(hx, device=dev), kapi.asarray(hy, device=dev)
    out = kapi.empty(1 << 16, np.float32, device=dev)
    for name, fn in kapi_variants(x, y, out).items():
        if not np.allclose(fn().asnumpy(), want, rtol=1e-5, atol=1e-6):
            raise SystemExit(f"{name}: result differs from NumPy's")
    if not np.isclose(float(x.sum()), hx.sum(dtype=np.float64), rtol=1e-4):
        raise SystemExit("kapi sum differs from NumPy's")


def gpu_data(dev, n):
    import cupy as cp

    cx = cp.random.default_rng(0).random(n, dtype=cp.float32)
    cy = cp.random.default_rng(1).random(n, dtype=cp.float32)
    x, y = kapi.empty(n, np.float32, device=dev), kapi.empty(n, np.float32, device=dev)
    # copies on the device into memory kapi owns (an array wrapping CuPy's memory would be
    # memory kapi cannot watch, which its operators read eagerly)
    x[...] = kapi.asarray(cx)
    y[...] = kapi.asarray(cy)
    return cp, cx, cy, x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None, help="kapi filter string (default device if none)")
    ap.add_argument("--log2n", type=int, default=None)
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args()
    t_start = time.perf_counter()
    dev = kapi.Device(args.device) if args.device else kapi.default_device()
    log2n = args.log2n or (28 if dev.is_gpu else 24)
    n = 1 << log2n
    reps = args.reps or (20 if dev.is_gpu else 3)
    sync = dev.default_queue.wait
    print(f"device: {dev.name}; n = 2^{log2n} float32; (x * a + y) * x - b")
    check_small(dev)

    cp = None
    if dev.is_gpu:
        try:
            cp, cx, cy, x, y = gpu_data(dev, n)
        except ImportError:
            print("  (cupy does not import: no CuPy comparison)")
    if cp is None:
        rng = np.random.default_rng(0)
        hx, hy = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        x, y = kapi.asarray(hx, device=dev), kapi.asarray(hy, device=dev)
    out = kapi.empty(n, np.float32, device=dev)

    ref_t, ref_name = None, None
    if cp is not None:
        ek = cp.ElementwiseKernel(
            "float32 x, float32 y, float32 a, float32 b", "float32 z", "z = (x * a + y) * x - b"
        )
        cz = cp.empty_like(cx)
        ek(cx, cy, A, B, cz)
        csync = cp.cuda.Device().synchronize
        ref_t = median_batch(lambda: ek(cx, cy, A, B, cz), csync, reps)
        ref_name = "CuPy ElementwiseKernel"

        def same(a):
            return bool(cp.allclose(cp.asarray(a), cz, rtol=1e-5, atol=1e-6))
    else:
        want = (hx * A + hy) * hx - B
        ref_t = median_batch(lambda: (hx * A + hy) * hx - B, lambda: None, reps)
        ref_name = "NumPy (host, one thread)"

        def same(a):
            return np.allclose(a.asnumpy(), want, rtol=1e-5, atol=1e-6)

    print(f"reference: {ref_name}")
    for name, fn in kapi_variants(x, y, out).items():
        if not same(fn()):
            raise SystemExit(f"{name}: result differs from the reference's")
        report(name, median_batch(fn, sync, reps), 12 * n, ref_t)
    report(ref_name, ref_t, 12 * n)
    if cp is None:
        try:
            import numba
        except ImportError:
            numba = None
            print("  (numba does not import: no @vectorize comparison)")
        if numba is not None:

            @numba.vectorize(["float32(float32, float32, float32, float32)"], target="parallel")
            def nchain(x, y, a, b):
                return (x * a + y) * x - b

            if not np.allclose(nchain(hx, hy, A, B), want, rtol=1e-5, atol=1e-6):
                raise SystemExit("Numba's result differs from NumPy's")
            report(
                "Numba @vectorize(target='parallel')",
                median_batch(lambda: nchain(hx, hy, A, B), lambda: None, reps),
                12 * n,
            )

    print(f"sum of 2^{log2n} float32 (GB/s counts the 4 n bytes read)")
    if cp is not None:
        total = float(cx.sum(dtype=cp.float64))
        sum_ref = median_batch(lambda: cx.sum(), csync, reps)
        sum_name = "cupy.sum"
    else:
        total = float(hx.sum(dtype=np.float64))
        sum_ref = median_batch(lambda: hx.sum(), lambda: None, reps)
        sum_name = "NumPy sum (host, one thread)"
    if not np.isclose(float(x.sum()), total, rtol=1e-3):
        raise SystemExit("kapi sum differs from the reference's")
    report("kapi x.sum()", median_batch(lambda: x.sum(), sync, reps), 4 * n, sum_ref)
    report(sum_name, sum_ref, 4 * n)
    print(f"total {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
