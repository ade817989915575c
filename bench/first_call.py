"""The first call of some bench kernels on the CPU device: compile (pyfront, the compiler, the
CPU driver's finaliser) and one small run, the cost a user meets once per kernel and the test
suite meets per kernel. Run it with KAPI_CACHE=0 (nothing read back from the disk cache), once
per tree to compare:

    KAPI_CACHE=0 PYTHONPATH=TREE python bench/first_call.py TREE
"""

import sys
import time

import numpy as np

sys.path.insert(0, sys.argv[1] + "/bench" if len(sys.argv) > 1 else ".")
import cpu_barrier  # noqa: E402
import kernels  # noqa: E402

import kapi  # noqa: E402
from kapi import kernel_api as K  # noqa: E402

N = 256


def first(fn, space, *args):
    k = kapi.kernel(getattr(fn, "py_func", fn))
    t0 = time.perf_counter()
    kapi.call_kernel(k, space, *args)
    return time.perf_counter() - t0


def main():
    a = kapi.asarray(np.random.rand(N, N).astype(np.float32))
    c = kapi.zeros((N, N), dtype=np.float32)
    v = kapi.asarray(np.random.rand(N * N).astype(np.float32))
    w = kapi.zeros(N * N, dtype=np.float32)
    pts = kapi.asarray(np.random.rand(N, 3).astype(np.float32))
    tile = K.LocalAccessor((16, 16), np.float32)
    res = {
        "pairwise": first(kernels.pairwise_distance, kapi.Range(N, N), pts, c),
        "matmul_naive": first(kernels.matmul_naive, kapi.Range(N, N), a, a, c),
        "tiled": first(
            cpu_barrier.tiled_matmul,
            kapi.NdRange((N, N), (16, 16)),
            a,
            a,
            c,
            tile,
            K.LocalAccessor((16, 16), np.float32),
        ),
        "mandelbrot": first(
            kernels.mandelbrot,
            kapi.Range(N, N),
            c,
            np.float32(-2),
            np.float32(-1.25),
            np.float32(0.01),
            256,
        ),
        "black_scholes": first(
            kernels.black_scholes,
            kapi.Range(N * N),
            v,
            v,
            v,
            np.float32(0.1),
            np.float32(0.2),
            w,
            w,
        ),
        "tree": first(
            cpu_barrier.tree_reduce,
            kapi.NdRange((N * N,), (256,)),
            v,
            kapi.zeros(N * N // 256, dtype=np.float32),
            K.LocalAccessor((256,), np.float32),
        ),
    }
    print(
        " ".join(f"{k}={s * 1e3:.0f}ms" for k, s in res.items()),
        f"total={sum(res.values()) * 1e3:.0f}ms",
    )


if __name__ == "__main__":
    main()
