"""kapi's CPU device against Intel's OpenCL CPU runtime on the same SPIR-V (the runtime
numba-dpex 0.23 runs on): each kernel is written once in Python (bench/kernels.py,
bench/cpu_barrier.py), compiled by kapi, and its SPIR-V module is built by both kapi's CPU
driver and Intel's runtime (clCreateProgramWithIL, through pyopencl; tools/opencl_ref.py maps
kapi's kernel ABI to OpenCL arguments). Both launch with the same global and local sizes
(Range kernels: each runtime picks its own group size) on copies of the same data; the
results must agree before anything is timed.

A sample is one launch and its wait (kapi: call_kernel, which returns when the kernel is
done; OpenCL: enqueue and finish); kapi and Intel alternate sample by sample (who goes first
alternates too), so load on a shared machine hits both alike. Figures are medians of
--repeat samples; ratio = Intel time / kapi time (> 1: kapi faster). The cpu ratio is the same
for the CPU time of the process per launch (kapi's and Intel's worker threads included), which
other processes' load moves less than wall time.

    make bench-opencl            # .venv-ocl, the environment of `make test-opencl`
    .venv-ocl/bin/python bench/opencl_cpu.py [--repeat 15] [--only black-scholes-f64,...]
        [--scale S] [--plot bench/plots/opencl_cpu.png] [--json FILE]
        [--variant NAME:VAR=VALUE[,VAR=VALUE]]

--scale S multiplies the element counts by 2**S. --variant adds a kapi column: each kernel
compiled again under the given environment (a renamed copy, so its SPIR-V and native module
are its own), for before/after comparisons of the CPU driver's settings in one run.
"""

import argparse
import json
import os
import platform
import re
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
os.environ.setdefault("KAPI_CACHE", "0")  # native code built now, under this environment

from opencl_ref import (  # noqa: E402
    OpenCLKernel,
    compiled,
    intel_cpu_context,
    use_intel_cpu_runtime,
)

LIBINTELOCL = use_intel_cpu_runtime()  # before pyopencl's first platform query

import numpy as np  # noqa: E402
from cpu_cases import cases, parse_variants, renamed, with_env  # noqa: E402

import kapi  # noqa: E402


class KapiRunner:
    """A case's kernel on kapi's CPU device, its arrays copied there; compiled (and, for a
    variant, built by the driver) under `env` on the first launch."""

    def __init__(self, case, cpu, env=None, suffix=None):
        fn = getattr(case.fn, "py_func", case.fn)  # a function or a @kapi.kernel
        self.kernel = kapi.kernel(renamed(fn, suffix) if suffix else fn)
        self.case, self.env = case, env or {}
        self.args = [
            kapi.asarray(a, device=cpu) if isinstance(a, np.ndarray) else a for a in case.args
        ]

    def launch(self):
        kapi.call_kernel(self.kernel, self.case.space, *self.args)

    def first(self):
        with_env(self.env, self.launch)
        return [self.args[i].asnumpy() for i in self.case.outputs]


class IntelRunner:
    def __init__(self, case, ctx, queue, ck):
        self.queue = queue
        self.global_size, self.local_size = case.opencl_sizes()
        self.k = OpenCLKernel(ctx, ck).bind(
            [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
        )
        self.case = case

    def launch(self):
        self.k.launch(self.queue, self.global_size, self.local_size)
        self.queue.finish()

    def first(self):
        self.launch()
        return [self.k.read(self.queue, i) for i in self.case.outputs]


def agree(case, mine, theirs):
    """kapi's outputs against Intel's: case.check(args, kapi, intel), else allclose."""
    for i, a, b in zip(case.outputs, mine, theirs, strict=True):
        if case.check is not None:
            if not case.check(case.args, a, b):
                raise SystemExit(f"{case.name}: argument {i}: kapi and Intel disagree")
        elif not np.allclose(a, b, rtol=case.rtol, atol=case.atol):
            bad = np.argwhere(~np.isclose(a, b, rtol=case.rtol, atol=case.atol))[:3]
            raise SystemExit(
                f"{case.name}: argument {i} differs (kapi vs Intel) at "
                f"{bad.tolist()}: {a[tuple(bad.T)]} vs {b[tuple(bad.T)]}"
            )


def cpu_seconds():
    """CPU time of the whole process (every thread: kapi's pool and Intel's TBB workers)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(runners, repeat):
    """Medians of the runners' launches, sample by sample in turn, the order rotating: wall
    seconds, and the process's CPU seconds per launch (less moved by other processes' load)."""
    for r in runners:
        r.launch()
    wall = [[] for _ in runners]
    cpu = [[] for _ in runners]
    for rep in range(repeat):
        k = rep % len(runners)
        for j in list(range(k, len(runners))) + list(range(k)):
            c0, t0 = cpu_seconds(), time.perf_counter()
            runners[j].launch()
            wall[j].append(time.perf_counter() - t0)
            cpu[j].append(cpu_seconds() - c0)
    return [statistics.median(t) for t in wall], [statistics.median(c) for c in cpu]


def machine(ctx):
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in open("/proc/cpuinfo")
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    flags = open("/proc/cpuinfo").read()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    dev = ctx.devices[0]
    return (
        f"{model}, {os.cpu_count()} cores, {isa}; load {os.getloadavg()[0]:.1f}; "
        f"Intel: {dev.name.strip()} ({dev.platform.version.strip()}, driver "
        f"{dev.driver_version}); kapi: {kapi.Device('cpu')}"
    )


def plot(rows, variants, path):
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["kernel"] for r in rows]
    series = [
        ("kapi, wall time", [r["ratio"] for r in rows]),
        ("kapi, CPU time", [r["cpu_ratio"] for r in rows]),
    ]
    for v in variants:
        series.append((f"kapi {v}, wall time", [r["variants"][v]["ratio"] for r in rows]))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) * len(series) + 1.5))
    h = 0.8 / len(series)
    y = np.arange(len(rows))
    for j, (label, vals) in enumerate(series):
        bars = ax.barh(y + j * h, vals, h, label=label)
        ax.bar_label(bars, [f"{v:.2f}x" for v in vals], padding=3, fontsize=8)
    ax.axvline(1.0, color="k", lw=1, ls="--")
    ax.set_xscale("log")  # 0.5x and 2x equally far from parity
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_yticks(y + h * (len(series) - 1) / 2, names)
    ax.invert_yaxis()
    ax.set_xlabel("Intel OpenCL CPU runtime's time / kapi's time (> 1: kapi faster)")
    ax.set_title("kapi CPU driver vs Intel's OpenCL CPU runtime, same SPIR-V (medians)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--scale", type=float, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--plot", default=os.path.join(HERE, "plots", "opencl_cpu.png"))
    ap.add_argument("--json", default="")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME:VAR=VALUE[,VAR=VALUE]: kapi again under that environment",
    )
    args = ap.parse_args()
    variants = parse_variants(args.variant)

    ctx, queue = intel_cpu_context()
    cpu = kapi.Device("cpu")
    print(machine(ctx))
    print(
        f"repeat {args.repeat}, medians; ratio = Intel ms / kapi ms (> 1: kapi faster); "
        "cpu ratio: the same for the process's CPU time per launch"
    )
    head = (
        f"{'kernel':<18} {'size':<26} {'kapi ms':>9} {'Intel ms':>9} {'ratio':>7} {'cpu ratio':>9}"
    )
    for v in variants:
        head += f" {v + ' ms':>12} {'ratio':>7} {'cpu ratio':>9}"
    print(head + "   Intel vector width, rate kapi / Intel", flush=True)
    rows = []
    for case in cases(args.scale, set(filter(None, args.only.split(",")))):
        mine = KapiRunner(case, cpu)
        got = mine.first()
        intel = IntelRunner(case, ctx, queue, compiled(mine.kernel))
        # Intel's first results, kept: a kernel that updates its output in place (a histogram)
        # would read twice the counts from a second launch
        theirs = intel.first()
        agree(case, got, theirs)
        extra = []
        for j, env in enumerate(variants.values()):
            r = KapiRunner(case, cpu, env, f"v{j}")
            agree(case, r.first(), theirs)
            extra.append(r)
        t, c = timed([mine, intel, *extra], args.repeat)
        row = {
            "kernel": case.name,
            "size": case.size,
            "kapi_ms": t[0] * 1e3,
            "intel_ms": t[1] * 1e3,
            "ratio": t[1] / t[0],
            "kapi_cpu_ms": c[0] * 1e3,
            "intel_cpu_ms": c[1] * 1e3,
            "cpu_ratio": c[1] / c[0],
            "variants": {},
        }
        line = (
            f"{case.name:<18} {case.size:<26} {t[0] * 1e3:9.3f} {t[1] * 1e3:9.3f} "
            f"{t[1] / t[0]:6.2f}x {c[1] / c[0]:8.2f}x"
        )
        for v, tv, cv in zip(variants, t[2:], c[2:], strict=True):
            row["variants"][v] = {"kapi_ms": tv * 1e3, "ratio": t[1] / tv, "cpu_ratio": c[1] / cv}
            line += f" {tv * 1e3:12.3f} {t[1] / tv:6.2f}x {c[1] / cv:8.2f}x"
        width = re.search(r"vectorized \((\d+)\)", intel.k.build_log)
        line += f"   Intel {'x' + width.group(1) if width else 'scalar'}"
        if case.work:
            line += f", {case.work / t[0] / 1e9:.1f} / {case.work / t[1] / 1e9:.1f} {case.unit}"
        print(line, flush=True)
        rows.append(row)
    if len(rows) > 1:
        gm = float(np.exp(np.mean(np.log([r["ratio"] for r in rows]))))
        gc = float(np.exp(np.mean(np.log([r["cpu_ratio"] for r in rows]))))
        print(f"geometric mean of the ratios: {gm:.2f}x (cpu {gc:.2f}x)")
    if args.plot:
        plot(rows, list(variants), args.plot)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(ctx), "repeat": args.repeat, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
