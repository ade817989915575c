"""prange reductions in @kapi.dpjit against Numba @njit(parallel=True): a dot product with a
max and a count in one loop (three reductions, 16 bytes read per iteration). The results are
checked against each other before timing; times are medians of --reps calls (each call
includes its launch, the partials' copy to the host and the host combine).

    python3 bench/dpjit_reduce.py [--device cpu|gpu] [--log2n 24] [--reps 20]
"""

import argparse

import numba
import numpy as np
from timing import median_time

import kapi


def dot_max_count(a, b):
    s = 0.0
    hi = -np.inf
    c = 0
    for i in numba.prange(a.shape[0]):
        s += a[i] * b[i]
        hi = max(hi, a[i] - b[i])
        if a[i] > b[i]:
            c += 1
    return s, hi, c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--reps", type=int, default=20)
    opt = ap.parse_args()
    n = 1 << opt.log2n
    rng = np.random.default_rng(0)
    ha = rng.integers(0, 100, n).astype(np.float64)  # integer values: exact sums in any order
    hb = rng.integers(0, 100, n).astype(np.float64)
    a, b = kapi.asarray(ha, device=opt.device), kapi.asarray(hb, device=opt.device)
    nj = numba.njit(parallel=True)(dot_max_count)
    dj = kapi.dpjit(dot_max_count)
    want, got = nj(ha, hb), dj(a, b)
    assert got == want, (got, want)
    t_numba = median_time(nj, opt.reps, ha, hb)
    t_kapi = median_time(dj, opt.reps, a, b)
    gbs = 16 * n / 1e9
    print(f"dpjit reductions n=2^{opt.log2n} on {a.device}")
    print(f"  numba njit(parallel=True) CPU: {t_numba * 1e3:8.3f} ms  {gbs / t_numba:7.1f} GB/s")
    print(f"  kapi dpjit                   : {t_kapi * 1e3:8.3f} ms  {gbs / t_kapi:7.1f} GB/s")
    print(f"  kapi / numba speed: {t_numba / t_kapi:.2f}x")


if __name__ == "__main__":
    main()
