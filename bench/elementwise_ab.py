"""The CPU device's elementwise kernels with their results written by plain and by streaming
stores (the CPU driver's streaming entries, KAPI_CPU_STREAMING=0 / 1, read when a kernel object
is created: so one process per setting), processes of the two settings alternating, each timing
every case (the median of a few batches): a single operation (`a + b`, a triad's traffic), a
chain whose next step reads the output just written (`y = a + b; z = y * c`: the case where an
output left out of the caches costs its reader), and a unary map (`np.sqrt(a)`: a copy's
traffic). Each result is checked against NumPy first; prints each case's medians over the
processes and the ratio, pair by pair. (Until 2026-11-29 kapi's elementwise kernels had a
streaming switch of their own, timed in one process by this script.)

    PYTHONPATH=$PWD python bench/elementwise_ab.py [--log2n 24] [--rounds 9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from timing import median_batch

import kapi


def child(log2n: int) -> None:
    """Times every case under this process's KAPI_CPU_STREAMING; prints {case: seconds}."""
    n = 1 << log2n
    dev = next(d for d in kapi.devices() if d.device_type == "cpu")
    rng = np.random.default_rng(3)
    hs = [rng.random(n, dtype=np.float32) for _ in range(3)]
    a, b, c = (kapi.asarray(h, device=dev) for h in hs)
    sync = dev.default_queue.wait

    def run(x):
        _ = x._ptr  # a pending (lazy) result is computed when its memory is asked for
        return x

    def chain():
        y = run(a + b)  # computed: the next kernel reads it from memory
        return run(y * c)

    cases = {
        "a + b": (lambda: run(a + b), hs[0] + hs[1]),
        "(a + b) * c, two kernels": (chain, (hs[0] + hs[1]) * hs[2]),
        "np.sqrt(a)": (lambda: run(np.sqrt(a)), np.sqrt(hs[0])),
    }
    times = {}
    for name, (fn, want) in cases.items():
        np.testing.assert_allclose(fn().asnumpy(), want, rtol=1e-6)
        times[name] = median_batch(fn, sync, 3, 5, 0.05)
    print(json.dumps({"device": f"{dev.name}, {dev.max_compute_units} compute units", **times}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.log2n)
    t0 = time.perf_counter()
    runs = {"0": [], "1": []}
    for r in range(args.rounds):
        for s in ("0", "1") if r % 2 == 0 else ("1", "0"):
            env = dict(os.environ, KAPI_CPU_STREAMING=s)
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--log2n", str(args.log2n)],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            runs[s].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(
        f"{runs['0'][0]['device']}; 2^{args.log2n} float32, {args.rounds} processes a setting;"
        " ms, medians (plain stores / streaming stores)"
    )
    for name in runs["0"][0]:
        if name == "device":
            continue
        p, q = [x[name] for x in runs["0"]], [x[name] for x in runs["1"]]
        ratio = statistics.median(x / y for x, y in zip(p, q, strict=True))
        print(
            f"  {name:26s} plain {statistics.median(p) * 1e3:7.3f}  streaming "
            f"{statistics.median(q) * 1e3:7.3f}  {ratio:5.2f}x (pair by pair)"
        )
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
