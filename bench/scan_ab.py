"""The CPU device's scan schemes side by side in ONE process, round by round (the GPU machine's
16 Xeon cores move 20-40% between processes, more than the schemes differ): each round times
every scheme (a batch of calls, the median of a few) and a triad sample, in turn, the order
rotated each round; the result is every scheme's median over the rounds, its ratio to the
median and to the best triad sample, and its ratio to the first scheme within each round
(median over the rounds). Every scheme's result is checked against NumPy first.

    PYTHONPATH=$PWD python bench/scan_ab.py [--log2n 24] [--rounds 11] [--schemes vec,chain]

Schemes: "vec" (two launches: blocks folded, then scanned), "chain" (one launch, a chunk's
carry found by look-back right after its fold); a suffix "-sN" sets the blocks a chunk
(KAPI_SCAN_CPU_STREAMS), "-cK" the chunk's KiB (KAPI_SCAN_CPU_CHUNK), "-nt" / "-t" streaming
stores on / off (KAPI_SCAN_CPU_STREAMING; without either, "auto": by the output's size). The scan
module's switches are set in this process between the timings (its plans cleared each time).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from primitives import Triad
from timing import median_batch

import kapi
from kapi._numeric import replay as _replay
from kapi._numeric import scan as _scan

DEFAULTS = {
    "SCAN_CPU": _scan.SCAN_CPU,
    "SCAN_VEC_STREAMS": _scan.SCAN_VEC_STREAMS,
    "SCAN_CHAIN_BYTES": _scan.SCAN_CHAIN_BYTES,
    "SCAN_STREAMING": _scan.SCAN_STREAMING,
}


def settings(name: str) -> dict:
    base, *mods = name.split("-")
    if base not in ("vec", "chain"):
        raise SystemExit(f"unknown scheme {name!r}")
    s = dict(DEFAULTS, SCAN_CPU=base)
    for m in mods:
        if m[0] == "s":
            s["SCAN_VEC_STREAMS"] = int(m[1:])
        elif m[0] == "c":
            s["SCAN_CHAIN_BYTES"] = int(m[1:]) * 1024
        elif m in ("nt", "t"):
            s["SCAN_STREAMING"] = "1" if m == "nt" else "0"
        else:
            raise SystemExit(f"unknown suffix {m!r} in {name!r}")
    return s


def use(name: str) -> None:
    for k, v in settings(name).items():
        setattr(_scan, k, v)
    _replay.clear_plans()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--schemes", default="vec,chain,chain-s4")
    args = ap.parse_args()
    names = args.schemes.split(",")
    n = 1 << args.log2n
    dev = kapi.Device("cpu")
    h = np.random.default_rng(1).random(n, dtype=np.float32)
    x = kapi.asarray(h, device=dev)
    want = np.cumsum(h, dtype=np.float64)
    for name in names:  # checked (and compiled) first
        use(name)
        got = kapi.cumsum(x).asnumpy()
        if not np.allclose(got, want, rtol=1e-3, atol=1e-2 * n**0.5):
            raise SystemExit(f"{name}: cumsum differs from NumPy's")
    tri = Triad(dev, n)
    sync = dev.default_queue.wait
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            use(name)
            kapi.cumsum(x)  # (the plan recorded)
            times[name].append(median_batch(lambda: kapi.cumsum(x), sync, 3, 5, 0.02))
        tri.sample()
    use(names[0])
    best, med = tri.bw(), sorted(tri.samples)[len(tri.samples) // 2]
    print(
        f"{dev.name}, {dev.max_compute_units} compute units; cumsum of 2^{args.log2n} float32, "
        f"{args.rounds} rounds; triad best {best / 1e9:.1f} GB/s, median {med / 1e9:.1f}"
    )
    base = times[names[0]]
    for name in names:
        t = sorted(times[name])
        m = t[len(t) // 2]
        rel = sorted(b / a for a, b in zip(times[name], base, strict=True))
        rate = 8 * n / m
        print(
            f"  {name:12s} median {m * 1e3:7.3f} ms  [{t[0] * 1e3:.3f}-{t[-1] * 1e3:.3f}]  "
            f"{rate / 1e9:6.1f} GB/s  {rate / best:4.2f} x best triad  {rate / med:4.2f} x median"
            f"  {rel[len(rel) // 2]:4.2f}x {names[0]}'s speed (round by round)"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
