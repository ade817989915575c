"""The CPU device's elementwise kernels with and without streaming stores for their outputs
(kapi/_numeric/ufunc.py's STREAMING, KAPI_ELEMENTWISE_CPU_STREAMING), in ONE process, round by
round (the GPU machine's 16 Xeon cores move 20-40% between processes), the order of the two
alternating: a single operation (`a + b`, a triad's traffic), a chain whose next step reads
the output just written (`y = a + b; z = y * c`: the case where an output left out of the
caches costs its reader), and a unary map (`np.sqrt(a)`: a copy's traffic). Each result is
checked against NumPy first; prints each case's medians and the ratio, round by round.

    PYTHONPATH=$PWD python bench/elementwise_ab.py [--log2n 24] [--rounds 9]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from timing import median_batch

import kapi
from kapi._numeric import replay as _replay
from kapi._numeric import ufunc as _uf


def use(setting: str) -> None:
    _uf.STREAMING = setting
    _uf._LAUNCH_PLANS.clear()
    _replay.clear_plans()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    n = 1 << args.log2n
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
    for s in ("0", "1"):
        use(s)
        for fn, want in cases.values():
            np.testing.assert_allclose(fn().asnumpy(), want, rtol=1e-6)
    times = {(name, s): [] for name in cases for s in ("0", "1")}
    t0 = time.perf_counter()
    for r in range(args.rounds):
        for s in ("0", "1") if r % 2 == 0 else ("1", "0"):
            use(s)
            for name, (fn, _) in cases.items():
                times[(name, s)].append(median_batch(fn, sync, 3, 5, 0.05))
    print(
        f"{dev.name}, {dev.max_compute_units} compute units; 2^{args.log2n} float32, "
        f"{args.rounds} rounds; ms, medians (plain stores / streaming stores)"
    )
    for name in cases:
        p, q = times[(name, "0")], times[(name, "1")]
        ratio = statistics.median(x / y for x, y in zip(p, q, strict=True))
        print(
            f"  {name:26s} plain {statistics.median(p) * 1e3:7.3f}  streaming "
            f"{statistics.median(q) * 1e3:7.3f}  {ratio:5.2f}x (round by round)"
        )
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
