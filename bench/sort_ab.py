"""The CPU device's sort and argsort settings side by side in ONE process, round by round, with
np.sort in the same rounds (the issue's measure: kapi.argsort of 2^24 keys at 4x np.sort on
the GPU machine's 16 Xeon cores, whose processes differ by 20-40%, more than the settings do).
Each round times every setting (the median of a few batches) and np.sort, in turn, the order
rotated each round; the result is every setting's median over the rounds, its ratio to
np.sort's median, and its speed over the first setting's within each round (median over the
rounds). Every setting's answer is checked against NumPy's stable argsort first.

    PYTHONPATH=$PWD python bench/sort_ab.py [--log2n 24] [--rounds 9] [--dtypes uint32,float32]
        [--op argsort] --setting plain:CPU_WIDE_WC=0 --setting wc:CPU_WIDE_WC=1

A setting is NAME:ATTR=VALUE+ATTR=VALUE..., attributes of kapi._numeric.sort_radix (its
switches, read at import) set in this process between the timings; VALUE is a Python literal.
"""

from __future__ import annotations

import ast
import time

import numpy as np
from timing import median_batch

import kapi
from kapi._numeric import sort_radix as _radix


def parse(text: str) -> tuple[str, dict]:
    name, _, rest = text.partition(":")
    values = {}
    for item in filter(None, rest.split("+")):
        attr, _, v = item.partition("=")
        if not hasattr(_radix, attr):
            raise SystemExit(f"sort_radix has no switch {attr!r}")
        values[attr] = ast.literal_eval(v)
    return name, values


def keys(dt: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    if dt == "float32":
        return rng.random(n, dtype=np.float32)  # uniform [0, 1): skewed exponents
    return rng.integers(0, np.iinfo(dt).max, n, dtype=dt, endpoint=True)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--dtypes", default="uint32,float32")
    ap.add_argument("--op", choices=("argsort", "sort"), default="argsort")
    ap.add_argument("--setting", action="append", required=True)
    args = ap.parse_args()
    settings = [parse(s) for s in args.setting]
    defaults = {a: getattr(_radix, a) for _, vals in settings for a in vals}
    n = 1 << args.log2n
    dev = kapi.Device("cpu")
    sync = dev.default_queue.wait
    op = getattr(kapi, args.op)
    print(f"{dev.name}, {dev.max_compute_units} compute units; {args.op} of 2^{args.log2n} keys")
    for dt in args.dtypes.split(","):
        h = keys(dt, n)
        x = kapi.asarray(h, device=dev)
        want = np.argsort(h, kind="stable") if args.op == "argsort" else np.sort(h)

        def use(vals):
            for a, v in defaults.items():
                setattr(_radix, a, vals.get(a, v))

        for name, vals in settings:  # checked (and compiled) first
            use(vals)
            if not np.array_equal(op(x).asnumpy(), want):
                raise SystemExit(f"{name}: {args.op} of {dt} differs from NumPy's")
        times = {name: [] for name, _ in settings}
        nps = []
        for r in range(args.rounds):
            k = r % len(settings)
            for name, vals in settings[k:] + settings[:k]:
                use(vals)
                times[name].append(median_batch(lambda x=x: op(x), sync, 1, 5))
            t0 = time.perf_counter()
            np.sort(h)
            nps.append(time.perf_counter() - t0)
        use({})
        npm = float(np.median(nps))
        print(f" {dt}: np.sort median {npm * 1e3:.1f} ms over {args.rounds} rounds")
        base = times[settings[0][0]]
        for name, _ in settings:
            t = sorted(times[name])
            m = t[len(t) // 2]
            rel = float(np.median([b / a for a, b in zip(times[name], base, strict=True)]))
            print(
                f"  {name:14s} median {m * 1e3:7.2f} ms [{t[0] * 1e3:.2f}-{t[-1] * 1e3:.2f}]"
                f"  {npm / m:4.2f}x np.sort  {rel:4.2f}x {settings[0][0]}'s speed (by round)",
                flush=True,
            )


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
