"""@kapi.dpjit's host code compiled by Numba against the same host code in CPython (dpjit's
fallback), and against Numba @njit(parallel=True) for the whole function: a relaxation with
a sequential loop of --steps rounds around two prange loops, plus scalar host work per round
(--host-work iterations of integer arithmetic). Results are checked against each other
before timing; times are medians of --reps calls.

    python3 bench/dpjit_host.py [--device cpu|gpu] [--n 4096] [--steps 200]
                                [--host-work 2000] [--reps 5]
"""

import argparse

import numba
import numpy as np
from timing import median_time

import kapi


def relax(a, b, steps, work):
    n = a.shape[0]
    h = 0
    for _ in range(steps):
        for i in numba.prange(1, n - 1):
            b[i] = (a[i - 1] + a[i + 1]) * 0.5
        for i in numba.prange(1, n - 1):
            a[i] = b[i]
        for k in range(work):  # scalar host work between the loops
            h = (h * 31 + k) % 1000003
    return h


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--host-work", type=int, default=2000)
    p.add_argument("--reps", type=int, default=5)
    o = p.parse_args()
    dev = kapi.devices(o.device)[0]
    dt = np.float64 if dev.has_aspect_fp64 else np.float32
    h = np.zeros(o.n, dt)
    h[0], h[-1] = 1.0, -1.0

    f = kapi.dpjit(relax)
    a, b = kapi.asarray(h, device=dev), kapi.asarray(h, device=dev)
    args = (o.steps, o.host_work)
    want = numba.njit(parallel=True)(relax)
    ha, hb = h.copy(), h.copy()
    assert f(a, b, *args) == want(ha, hb, *args)
    np.testing.assert_allclose(a.asnumpy(), ha, rtol=1e-5)
    python_host = f._compile()  # the same host function, run by CPython (the fallback path)
    assert python_host(a, b, *args) == want(ha, hb, *args)

    t_njit = median_time(f, o.reps, a, b, *args)
    t_py = median_time(python_host, o.reps, a, b, *args)
    t_numba = median_time(want, o.reps, ha, hb, *args)
    launches = 2 * o.steps
    per = t_njit / launches * 1e6
    print(f"dpjit host code, {dev.name}: n={o.n}, {o.steps} rounds, {o.host_work} host iters")
    print(f"  dpjit, host compiled (njit): {t_njit * 1e3:9.2f} ms  ({per:.1f} us/launch)")
    print(
        f"  dpjit, host in CPython:      {t_py * 1e3:9.2f} ms  ({t_py / t_njit:.2f}x the compiled)"
    )
    print(f"  Numba njit(parallel=True):   {t_numba * 1e3:9.2f} ms  (NumPy arrays, host)")


if __name__ == "__main__":
    main()
