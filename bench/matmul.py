"""matmul of square float32 matrices: kapi.array_api.matmul beside its peer on the same
hardware, in the same process.

On kapi's CPU device the arrays are host memory and matmul hands them, in place, to the BLAS
NumPy links: the peer is np.matmul on NumPy arrays, both on the same cores. On an NVIDIA GPU
kapi loads cuBLAS at run time (kapi/_numeric/array_api/cublas.py); the peer is cupy.matmul on
CuPy arrays of the same data (CuPy also calls cuBLAS). The kapi kernel that runs where cuBLAS
is missing is timed too (--kernel). Every result is checked against the peer's before it is
timed. Times are medians over batches of calls with one wait each; TFLOP/s counts 2 n^3.

    python3 bench/matmul.py [--device cpu|cuda] [--n 4096] [--reps N] [--kernel]
                            [--json FILE] [--plot PNG]

Defaults: n = 4096 on a GPU, 2048 on the CPU device.
"""

import argparse

import numpy as np
import plotting
from timing import median_batch

import kapi.array_api as xp
from kapi._numeric.array_api import cublas
from kapi._numeric.array_api import linear_algebra as la


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kernel", action="store_true", help="also time kapi's tiled kernel")
    plotting.add_args(ap)
    args = ap.parse_args()
    ratios = plotting.Ratios()
    dev = xp.asarray([0], device=args.device).device
    gpu = dev.backend == "cuda"
    n = args.n or (4096 if gpu else 2048)
    rng = np.random.default_rng(0)
    ha = rng.standard_normal((n, n), dtype=np.float32)
    hb = rng.standard_normal((n, n), dtype=np.float32)
    a, b = xp.asarray(ha, device=dev), xp.asarray(hb, device=dev)
    flops = 2.0 * n**3
    print(f"matmul float32 {n}x{n} @ {n}x{n} on {dev.filter_string} ({dev.name})")

    def kapi_mm():
        return xp.matmul(a, b)

    if gpu:
        import cupy as cp

        ca, cb = cp.asarray(ha), cp.asarray(hb)
        ref = cp.matmul(ca, cb)
        cp.cuda.Device().synchronize()
        print(
            f"  cuBLAS loaded by kapi: {cublas.available()} {cublas._vendor.why_not('libcublas')}"
        )
        got = kapi_mm().asnumpy()
        np.testing.assert_allclose(got, cp.asnumpy(ref), rtol=2e-3, atol=2e-2 * np.sqrt(n))
        t_peer = median_batch(lambda: cp.matmul(ca, cb), cp.cuda.Device().synchronize, args.reps)
        peer = "cupy.matmul"
    else:
        ref = np.matmul(ha, hb)
        np.testing.assert_allclose(kapi_mm().asnumpy(), ref, rtol=2e-3, atol=2e-2 * np.sqrt(n))
        t_peer = median_batch(lambda: np.matmul(ha, hb), lambda: None, args.reps)
        peer = "np.matmul"
    sync = a.sycl_queue.wait
    t_kapi = median_batch(kapi_mm, sync, args.reps)
    print(f"  {peer:28s} {t_peer * 1e3:9.3f} ms  {flops / t_peer / 1e12:7.2f} TFLOP/s")
    print(f"  {'kapi.array_api.matmul':28s} {t_kapi * 1e3:9.3f} ms  "
          f"{flops / t_kapi / 1e12:7.2f} TFLOP/s  {t_peer / t_kapi:5.2f}x of {peer}")  # fmt: skip
    ratios.add(f"matmul float32 {n}^2", peer, t_peer / t_kapi)
    if args.kernel:
        out = xp.empty((1, n, n), dtype=xp.float32, device=dev)
        a3, b3 = a.reshape((1, n, n)), b.reshape((1, n, n))

        def kern():
            la._matmul_kernel(a3, b3, out)

        kern()
        np.testing.assert_allclose(out.asnumpy()[0], kapi_mm().asnumpy(), rtol=2e-3,
                                   atol=2e-2 * np.sqrt(n))  # fmt: skip
        t_k = median_batch(kern, sync, max(1, args.reps // 2), batches=3)
        print(f"  {'kapi tiled kernel (fallback)':28s} {t_k * 1e3:9.3f} ms  "
              f"{flops / t_k / 1e12:7.2f} TFLOP/s  {t_peer / t_k:5.2f}x of {peer}")  # fmt: skip
        ratios.add(f"matmul float32 {n}^2, kapi's tiled kernel", peer, t_peer / t_k)
    ratios.write(args, f"kapi's matmul against {peer} ({dev.name})")


if __name__ == "__main__":
    main()
