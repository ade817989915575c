"""An elementwise chain of 4 operators on a large float32 array, `(x * a + y) * x - b`, as
kapi.fuse (one kernel), as plain kapi operators (one kernel and one temporary per operator),
beside NumPy on the host and, where CuPy imports (the GPU machine), CuPy's fused
ElementwiseKernel of the same expression; then `sum` beside NumPy / `cupy.sum`.

Each result is checked against NumPy before it is timed. Times are medians over batches of
calls with one wait each; GB/s counts the bytes of x, y and the output (12 n), for sum
the bytes read (4 n).

    python3 bench/array_ops.py [--device gpu|cpu] [--log2n 28] [--reps N]

Defaults: 2^28 elements on a GPU, 2^24 on the CPU driver.
"""

import argparse

import numpy as np
from timing import median_batch

import kapi

A, B = np.float32(1.5), np.float32(0.25)


@kapi.fuse
def chain(x, y, a, b):
    return (x * a + y) * x - b


def report(name, sec, nbytes):
    print(f"  {name:34s} {sec * 1e3:9.3f} ms  {nbytes / sec / 1e9:8.1f} GB/s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None, help="kapi filter string (default device if none)")
    ap.add_argument("--log2n", type=int, default=None)
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args()
    dev = kapi.Device(args.device) if args.device else kapi.default_device()
    log2n = args.log2n or (28 if dev.is_gpu else 24)
    n = 1 << log2n
    reps = args.reps or (20 if dev.is_gpu else 3)
    rng = np.random.default_rng(0)
    hx = rng.random(n, dtype=np.float32)
    hy = rng.random(n, dtype=np.float32)
    want = (hx * A + hy) * hx - B
    x, y = kapi.asarray(hx, device=dev), kapi.asarray(hy, device=dev)
    out = kapi.empty(n, np.float32, device=dev)
    sync = dev.default_queue.wait
    print(f"device: {dev.name}; n = 2^{log2n} float32; (x * a + y) * x - b")

    chain(x, y, A, B, out=out)
    if not np.allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6):
        raise SystemExit("kapi.fuse result differs from NumPy's")
    report(
        "kapi.fuse (one kernel)",
        median_batch(lambda: chain(x, y, A, B, out=out), sync, reps),
        12 * n,
    )
    if not np.allclose(((x * A + y) * x - B).asnumpy(), want, rtol=1e-5, atol=1e-6):
        raise SystemExit("kapi operators' result differs from NumPy's")
    report(
        "kapi operators (4 kernels)", median_batch(lambda: (x * A + y) * x - B, sync, reps), 12 * n
    )
    report("NumPy (host)", median_batch(lambda: (hx * A + hy) * hx - B, lambda: None, reps), 12 * n)

    cp = None
    if dev.is_gpu:
        try:
            import cupy as cp
        except ImportError:
            print("  (cupy does not import: no CuPy comparison)")
    if cp is not None:
        ek = cp.ElementwiseKernel(
            "float32 x, float32 y, float32 a, float32 b", "float32 z", "z = (x * a + y) * x - b"
        )
        cx, cy = cp.asarray(hx), cp.asarray(hy)
        cz = cp.empty_like(cx)
        ek(cx, cy, A, B, cz)
        if not np.allclose(cp.asnumpy(cz), want, rtol=1e-5, atol=1e-6):
            raise SystemExit("CuPy's result differs from NumPy's")
        csync = cp.cuda.Device().synchronize
        report(
            "CuPy ElementwiseKernel",
            median_batch(lambda: ek(cx, cy, A, B, cz), csync, reps),
            12 * n,
        )

    print(f"sum of 2^{log2n} float32 (GB/s counts the 4 n bytes read)")
    total = float(hx.sum(dtype=np.float64))
    if not np.isclose(float(x.sum()), total, rtol=1e-3):
        raise SystemExit("kapi sum differs from NumPy's")
    report("kapi x.sum()", median_batch(lambda: x.sum(), sync, reps), 4 * n)
    report("NumPy sum (host)", median_batch(lambda: hx.sum(), lambda: None, reps), 4 * n)
    if cp is not None:
        report("cupy.sum", median_batch(lambda: cx.sum(), csync, reps), 4 * n)


if __name__ == "__main__":
    main()
