"""Where the CPU device's 5-point stencil (bench/cpu_cases.py "stencil-f32") loses time against
Numba parallel: the same kernels and peers as bench/numba_cpu.py, each timed three ways in one
process, at one or more sizes:

- alt: kapi and Numba alternating call by call, as bench/numba_cpu.py times them (each kapi
  call finds the pool's workers asleep after Numba's call, and Numba's data in the caches);
  with variants, a Numba call before each kapi runner's;
- hot: each runner called back to back (the pool's workers still polling, the runner's own
  data in the caches);
- gap: each call after GAP ms of sleep (every thread asleep, the data still cached).

Every output is checked against NumPy (the stencil) and against Numba's before timing; figures
are medians of REPEAT calls (the fastest in brackets); ratio = Numba ms / kapi ms (> 1: kapi
faster).

    python3 bench/stencil_probe.py [--only stencil-f32,...] [--scales=-2,0,2] [--repeat 15]
                                   [--gap-ms 2] [--label NAME] [--variant NAME:VAR=VALUE,...]

--variant adds kapi runners built under other settings (bench/numba_cpu.py's --variant), timed
in the same rotation; each prints a line of its own against the same Numba figures.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numba_cpu  # noqa: E402  (sets OMP_WAIT_POLICY=passive unless given, imports Numba)
import numpy as np  # noqa: E402
from cpu_cases import cases, parse_variants  # noqa: E402

import kapi  # noqa: E402


def stencil_numpy(a):
    out = np.zeros_like(a)
    out[1:-1, 1:-1] = np.float32(0.2) * (
        a[1:-1, 1:-1] + a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]
    )
    return out


def times(runners, repeat, mode, gap_s):
    """Each runner's call times (s) under mode."""
    for r in runners:
        r.launch()
    if mode == "alt":  # runners[0] (Numba) before each of the others in turn
        wall = [[] for _ in runners]
        for rep in range(repeat):
            for j in range(1, len(runners)):
                for i in (0, 1 + (rep + j) % (len(runners) - 1)):
                    t0 = time.perf_counter()
                    runners[i].launch()
                    wall[i].append(time.perf_counter() - t0)
        return wall
    out = []
    for r in runners:
        r.launch()
        wall = []
        for _ in range(repeat):
            if mode == "gap":
                time.sleep(gap_s)
            t0 = time.perf_counter()
            r.launch()
            wall.append(time.perf_counter() - t0)
        out.append(wall)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="stencil-f32")
    ap.add_argument("--scales", default="0")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--gap-ms", type=float, default=2.0)
    ap.add_argument("--modes", default="alt,hot,gap")
    ap.add_argument("--label", default=os.environ.get("PROBE_LABEL", "default"))
    ap.add_argument("--variant", action="append", default=[])
    args = ap.parse_args()
    variants = parse_variants(args.variant)
    cpu = kapi.Device("cpu")
    knobs = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("KAPI_CPU"))
    print(f"== {args.label}: {os.cpu_count()} cores, {knobs or 'defaults'}", flush=True)
    for scale in (float(s) for s in args.scales.split(",")):
        for case in cases(scale, set(args.only.split(","))):
            mine, theirs = numba_cpu.KapiRunner(case, cpu), numba_cpu.NumbaRunner(case)
            mine.launch()
            theirs.launch()
            numba_cpu.agree(case, mine, theirs)
            kapis = [(args.label, mine)]
            for j, (name, env) in enumerate(variants.items()):
                r = numba_cpu.KapiRunner(case, cpu, env, f"v{j}")
                r.first()
                numba_cpu.agree(case, r, theirs)
                kapis.append((f"{args.label}+{name}", r))
            if case.name == "stencil-f32":
                want = stencil_numpy(case.args[0])
                for name, r in kapis:
                    if not np.allclose(r.output(1), want, rtol=1e-6, atol=1e-6):
                        raise SystemExit(f"{name}: kapi's stencil differs from NumPy's")
            runners = [theirs] + [r for _, r in kapis]
            for mode in args.modes.split(","):
                w = times(runners, args.repeat, mode, args.gap_ms / 1e3)
                t = [statistics.median(x) for x in w]
                for (name, _), wk, tk in zip(kapis, w[1:], t[1:], strict=True):
                    print(
                        f"{name:<12} {case.name:<12} {case.size:<18} {mode:<4} "
                        f"kapi {tk * 1e3:8.3f} ms  Numba {t[0] * 1e3:8.3f} ms  "
                        f"{t[0] / tk:5.2f}x  (fastest {min(wk) * 1e3:.3f} / "
                        f"{min(w[0]) * 1e3:.3f} ms)",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
