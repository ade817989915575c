"""The CPU device's reductions beside Numba's parallel reductions, in ONE process, round by
round (the GPU machine's 16 Xeon cores move 20-40% between processes): each round times, in
an order rotated every round, a triad sample on kapi's CPU device (bench/primitives.py's
Triad), `x.sum()` and `x.max()` on it, and the same three in Numba (`@njit(parallel=True)`,
`prange` loops over NumPy arrays of the same size: the strongest CPU peer a Python user has
for these; NumPy's own are one thread). Prints each one's median and its bandwidth against
the best kapi triad sample and against Numba's triad (4 bytes an element for a reduction, 12
for a triad), so that "0.8x the triad" can be read against what a peer reaches on the same
machine in the same minutes. Every result is checked first.

    PYTHONPATH=$PWD python bench/reduce_peer.py [--log2n 24] [--rounds 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numba
import numpy as np
from numba import njit, prange
from primitives import Triad
from timing import median_batch

import kapi


@njit(parallel=True, fastmath=True)
def nb_sum(x):
    s = np.float32(0)
    for i in prange(x.size):
        s += x[i]
    return s


@njit(parallel=True)
def nb_max(x):
    m = x[0]
    for i in prange(x.size):
        m = max(m, x[i])
    return m


@njit(parallel=True)
def nb_triad(a, b, c, s):
    for i in prange(a.size):
        a[i] = b[i] + s * c[i]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    n = 1 << args.log2n
    dev = next(d for d in kapi.devices() if d.device_type == "cpu")
    h = np.random.default_rng(1).random(n, dtype=np.float32)
    x = kapi.asarray(h, device=dev)
    triad = Triad(dev, n)
    a, b, c = np.zeros(n, np.float32), np.ones(n, np.float32), np.ones(n, np.float32)
    sync = dev.default_queue.wait

    def nsync():
        pass

    assert abs(float(x.sum()) - float(h.sum(dtype=np.float64))) < 1e-3 * n
    assert float(x.max()) == float(h.max()) == float(nb_max(h))
    assert abs(float(nb_sum(h)) - float(h.sum(dtype=np.float64))) < 1e-3 * n
    nb_triad(a, b, c, np.float32(3))
    assert (a == 4).all()
    cases = {
        "kapi x.sum()": (lambda: x.sum(), sync, 4),
        "kapi x.max()": (lambda: x.max(), sync, 4),
        "numba sum": (lambda: nb_sum(h), nsync, 4),
        "numba max": (lambda: nb_max(h), nsync, 4),
        "numba triad": (lambda: nb_triad(a, b, c, np.float32(3)), nsync, 12),
    }
    times = {k: [] for k in cases}
    names = list(cases) + ["kapi triad"]
    t0 = time.perf_counter()
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            if name == "kapi triad":
                triad.sample()
                continue
            fn, s, _ = cases[name]
            times[name].append(median_batch(fn, s, 3, 5, 0.05))
    best = triad.bw()
    nbt = [12 * n / t for t in times["numba triad"]]
    print(
        f"{dev.name}, {dev.max_compute_units} compute units; 2^{args.log2n} float32, "
        f"{args.rounds} rounds; numba {numba.__version__} ({numba.threading_layer()} "
        f"layer, {numba.get_num_threads()} threads); kapi triad {triad.describe()}; numba "
        f"triad best {max(nbt) / 1e9:.1f} GB/s, median {statistics.median(nbt) / 1e9:.1f}"
    )
    for name, (_, _, per) in cases.items():
        t = statistics.median(times[name])
        bw = per * n / t
        print(
            f"  {name:14s} median {t * 1e3:7.3f} ms [{min(times[name]) * 1e3:.3f}-"
            f"{max(times[name]) * 1e3:.3f}]  {bw / 1e9:7.1f} GB/s  {bw / best:5.2f} x best kapi "
            f"triad  {bw / max(nbt):5.2f} x best numba triad"
        )
    print(f"({time.perf_counter() - t0:.0f} s)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
