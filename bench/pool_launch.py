"""What a launch on the CPU device costs against the number of pool threads: per-call times of
a triad kernel at sizes from 2^10 (run on the caller) to 2^24 (memory-bound), a triad after an
idle gap (the workers asleep), and x.max() / x.argmax() of 2^24 float32, each in a fresh
process with KAPI_CPU_THREADS set to the thread count (the pool's participants, the caller
included), every variant in every round, the variants alternating, so one run shows before
and after. Every result is checked against NumPy before it is timed.

Variants: `--variant NAME:VAR=VALUE[,VAR=VALUE]` (repeatable); "after" (no variables) is always
run. E.g. `--variant before:KAPI_CPU_POOL=0`.

Per-call time: median over batches of CALLS calls and one wait; "gap": each call alone after
GAP_US of sleep (the pool's workers gone to sleep), median of the calls. Times in us.

    python3 bench/pool_launch.py [--threads 1,2] [--rounds 3] [--variant before:KAPI_CPU_POOL=0]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SIZES = (10, 14, 17, 20, 24)  # log2 of the triad's items
GAP_US = 2000

CHILD = r"""
import json, statistics, sys, time
import numpy as np
import kapi

@kapi.kernel
def triad(item, a, b, c, s):
    i = item.get_id(0)
    a[i] = b[i] + s * c[i]

dev = kapi.Device("cpu")
sync = dev.default_queue.wait
out = {}

def per_call(fn, calls, batches=9):
    fn(); sync()
    per = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        per.append((time.perf_counter() - t0) / calls)
    return statistics.median(per) * 1e6

rng = np.random.default_rng(1)
for log2n in SIZES:
    n = 1 << log2n
    hb, hc = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    a = kapi.empty(n, dtype=np.float32, device=dev)
    b, c = kapi.asarray(hb, device=dev), kapi.asarray(hc, device=dev)
    s = np.float32(3)
    go = lambda: kapi.call_kernel(triad, kapi.Range(n), a, b, c, s)
    go(); sync()
    assert np.allclose(a.asnumpy(), hb + s * hc), "triad differs from NumPy"
    for _ in range(20):  # the launch site learns its cost
        go()
    calls = max(3, min(2000, (1 << 24) // n))
    out[f"triad 2^{log2n}"] = per_call(go, calls)
    if log2n == 17:
        gaps = []
        for _ in range(41):
            time.sleep(GAP_US * 1e-6)
            t0 = time.perf_counter()
            go(); sync()
            gaps.append((time.perf_counter() - t0) * 1e6)
        out[f"triad 2^{log2n} after {GAP_US} us idle"] = statistics.median(gaps)
    del a, b, c

n = 1 << 24
hx = rng.random(n, dtype=np.float32)
hx[n // 2 + 3] = 2.0
x = kapi.asarray(hx, device=dev)
assert float(x.max()) == hx.max() and int(x.argmax()) == int(hx.argmax()), "max/argmax differ"
out["x.max() 2^24 (batches of 5)"] = per_call(lambda: x.max(), 5)
out["x.argmax() 2^24 (batches of 5)"] = per_call(lambda: x.argmax(), 5)
out["x.max() 2^24 (single calls)"] = per_call(lambda: x.max(), 1, 25)
print("RESULT " + json.dumps(out))
"""


# One case alone with KAPI_CPU_POOL_STATS=1: the pool's own account of its shared launches.
STATS_CHILD = r"""
import sys
import numpy as np
import kapi

@kapi.kernel
def triad(item, a, b, c, s):
    i = item.get_id(0)
    a[i] = b[i] + s * c[i]

dev = kapi.Device("cpu")
case = sys.argv[1]
n = 1 << (17 if case == "triad" else 24)
x = kapi.asarray(np.random.default_rng(2).random(n, dtype=np.float32), device=dev)
a, c = kapi.empty_like(x), kapi.empty_like(x)
for _ in range(300 if case == "triad" else 40):
    if case == "triad":
        kapi.call_kernel(triad, kapi.Range(n), a, x, c, np.float32(3))
    else:
        x.max()
    dev.default_queue.wait()
"""


def stats_child(threads: int, env_extra: dict, case: str) -> str:
    env = dict(
        os.environ,
        KAPI_DRIVERS="cpu",
        KAPI_CPU_THREADS=str(threads),
        KAPI_CPU_POOL_STATS="1",
        **env_extra,
    )
    r = subprocess.run(
        [sys.executable, "-c", STATS_CHILD, case],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    got = [ln for ln in r.stderr.splitlines() if ln.startswith("kapi-cpu-pool:")]
    return got[-1][len("kapi-cpu-pool: ") :] if got else f"(no figures; rc {r.returncode})"


def child(threads: int, env_extra: dict) -> dict:
    env = dict(os.environ, KAPI_DRIVERS="cpu", KAPI_CPU_THREADS=str(threads), **env_extra)
    code = f"SIZES = {SIZES!r}\nGAP_US = {GAP_US}\n" + CHILD
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    for ln in r.stdout.splitlines():
        if ln.startswith("RESULT "):
            return json.loads(ln[7:])
    raise SystemExit(f"child ({threads} threads, {env_extra}) failed:\n{r.stdout}\n{r.stderr}")


def parse_variant(spec: str) -> tuple:
    name, _, assigns = spec.partition(":")
    env = dict(a.split("=", 1) for a in assigns.split(",") if a)
    return name, env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default=None, help="thread counts (default 1,2,4,..,cores)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variant", action="append", default=[], help="NAME:VAR=VALUE[,...]")
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--stats",
        action="store_true",
        help="then the pool's own account (KAPI_CPU_POOL_STATS=1) of x.max() and a 2^17 triad "
        "at the most threads",
    )
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    if args.threads:
        counts = [int(t) for t in args.threads.split(",")]
    else:
        counts = sorted({1 << i for i in range(cores.bit_length()) if 1 << i <= cores} | {cores})
    variants = [parse_variant(v) for v in args.variant] + [("after", {})]
    res = {}  # (variant, threads) -> {case: [samples]}
    t0 = time.time()
    for rnd in range(args.rounds):
        for t in counts:
            for name, env in variants if rnd % 2 == 0 else variants[::-1]:
                got = child(t, env)
                # each process's figures as they come, so a run cut short still shows some
                short = ", ".join(f"{c.split(' (')[0]} {us:.1f}" for c, us in got.items())
                print(f"round {rnd} threads {t} {name}: {short}", flush=True)
                for case, us in got.items():
                    res.setdefault((name, t), {}).setdefault(case, []).append(us)
    print(
        f"{cores} CPUs ({os.uname().machine}), load average {os.getloadavg()[0]:.1f}; "
        f"{args.rounds} rounds in {time.time() - t0:.0f} s; us per call, median of the rounds"
    )
    cases = list(next(iter(res.values())).keys())
    names = [v[0] for v in variants]
    head = f"{'case':40s} {'threads':>7s} " + " ".join(f"{n:>10s}" for n in names)
    if len(names) > 1:
        head += "   " + " ".join(f"{n}/{names[-1]:>6s}" for n in names[:-1])
    print(head)
    table = {}
    for case in cases:
        for t in counts:
            meds = [statistics.median(res[(n, t)][case]) for n in names]
            row = f"{case:40s} {t:7d} " + " ".join(f"{m:10.1f}" for m in meds)
            if len(names) > 1:
                row += "   " + " ".join(f"{m / meds[-1]:10.2f}x" for m in meds[:-1])
            print(row)
            table[f"{case} | {t}"] = dict(zip(names, meds, strict=True))
    if args.stats:
        print("the pool's account of its shared launches (KAPI_CPU_POOL_STATS=1):")
        for case in ("max", "triad"):
            for t in counts[-1:]:  # the most threads
                for name, env in variants:
                    what = "x.max() 2^24" if case == "max" else "triad 2^17"
                    print(f"  {what}, {t} threads, {name}: {stats_child(t, env, case)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
