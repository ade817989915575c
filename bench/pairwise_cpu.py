"""Pairwise distance on kapi's CPU driver against Numba @njit(parallel=True) with prange, in
one run (issue 3's target: >= 1.0x). Both use all cores and the same algorithm; each result
is checked against NumPy before timing. Prints medians and the ratio per dtype.

    .venv/bin/python bench/pairwise_cpu.py [--n N] [--d D] [--repeat R]
"""

import argparse
import math
import os

import kernels
import numba
import numpy as np
from timing import median_time

import kapi

pairwise_kapi = kapi.kernel(kernels.pairwise_distance)


@numba.njit(parallel=True, fastmath=False)
def pairwise_numba(data, dist):
    n = data.shape[0]
    for j in numba.prange(n):
        for i in range(n):
            d = data.dtype.type(0.0)
            for k in range(data.shape[1]):
                t = data[i, k] - data[j, k]
                d += t * t
            dist[j, i] = math.sqrt(d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    cpu = kapi.Device("cpu")
    print(f"{cpu}, {os.cpu_count()} cores, numba threads {numba.get_num_threads()}")
    for dtype in (np.float32, np.float64):
        data = np.random.default_rng(0).random((args.n, args.d)).astype(dtype)
        ref = np.sqrt(((data[None, :, :] - data[:, None, :]) ** 2).sum(-1))
        kd = kapi.asarray(data, device=cpu)
        kdist = kapi.empty((args.n, args.n), dtype=dtype, device=cpu)
        ndist = np.empty((args.n, args.n), dtype=dtype)
        rng = kapi.Range(args.n, args.n)

        def run_kapi(kd=kd, kdist=kdist, rng=rng):
            kapi.call_kernel(pairwise_kapi, rng, kd, kdist)

        def run_numba(data=data, ndist=ndist):
            pairwise_numba(data, ndist)

        run_kapi()
        run_numba()
        tol = 1e-4 if dtype == np.float32 else 1e-10
        assert np.allclose(kdist.asnumpy(), ref, atol=tol), "kapi result wrong"
        assert np.allclose(ndist, ref, atol=tol), "numba result wrong"
        t_kapi = median_time(run_kapi, args.repeat)
        t_numba = median_time(run_numba, args.repeat)
        print(
            f"pairwise {args.n}x{args.d} {np.dtype(dtype).name}: kapi {t_kapi * 1e3:8.2f} ms  "
            f"numba parallel {t_numba * 1e3:8.2f} ms  ratio {t_numba / t_kapi:5.2f}x"
        )


if __name__ == "__main__":
    main()
