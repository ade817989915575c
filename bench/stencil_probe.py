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

--extras adds, for the stencil, runners that test where the arrays lie and the group shape:
kapi with its arrays allocated under KAPI_CPU_MEM_COLOR=1 (each huge allocation at another
offset modulo 4 KiB: "color", the default), =0 (every one on a 2 MiB boundary: "no-color", as
before), with the output moved 64 or 4096 bytes on from that ("out+64", "out+4096": apart
modulo 4 KiB, or only modulo 2 MiB), and under KAPI_CPU_MEM_HUGE=0 (small pages), Numba with both
arrays on 2 MiB boundaries as kapi's are ("numba-2m") and with the output 1088 bytes further
modulo 4 KiB ("numba-1088"), and the kernel as an NdRange kernel with given work-group shapes
("nd-XxY"; --shapes, dividing n-2). Each runner's arrays are listed first: their offset from a
2 MiB boundary, the transparent huge pages of the mapping holding their middle, page faults.
"""

import argparse
import os
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numba_cpu  # noqa: E402  (sets OMP_WAIT_POLICY=passive unless given, imports Numba)
import numpy as np  # noqa: E402
from cpu_cases import cases, parse_variants, with_env  # noqa: E402

import kapi  # noqa: E402

MIB2 = 2 << 20


def stencil5_nd(nd, a, out):
    # bench/kernels.py's stencil5 as an NdRange kernel, for chosen work-group shapes
    f = a.dtype.type
    c = nd.get_global_id(0) + 1
    r = nd.get_global_id(1) + 1
    out[r, c] = f(0.2) * (a[r, c] + a[r - 1, c] + a[r + 1, c] + a[r, c - 1] + a[r, c + 1])


def placed(x, offset):
    """A copy of x starting `offset` bytes past a 2 MiB boundary."""
    buf = np.empty(x.nbytes + MIB2 + offset, np.uint8)
    start = (-buf.ctypes.data) % MIB2 + offset
    y = buf[start : start + x.nbytes].view(x.dtype).reshape(x.shape)
    y[...] = x
    return y


class PlacedNumba(numba_cpu.NumbaRunner):
    """Numba's peer on copies of the arrays at chosen offsets from 2 MiB boundaries."""

    def __init__(self, case, offsets):
        super().__init__(case)
        self.args = [placed(a, o) for a, o in zip(self.args, offsets, strict=True)]


class ShiftedKapi(numba_cpu.KapiRunner):
    """kapi's runner with both arrays allocated on 2 MiB boundaries (KAPI_CPU_MEM_COLOR=0) and
    the output moved `shift` bytes on, a view into a larger allocation."""

    def __init__(self, case, cpu, shift):
        with_env({"KAPI_CPU_MEM_COLOR": "0"}, lambda: super(ShiftedKapi, self).__init__(case, cpu))
        out = self.args[1]
        n = shift // out.dtype.itemsize
        big = with_env(
            {"KAPI_CPU_MEM_COLOR": "0"},
            lambda: kapi.zeros(out.size + n, dtype=out.dtype, device=cpu),
        )
        self.args[1] = big[n : n + out.size].reshape(out.shape)


class NdKapi:
    """The stencil as an NdRange kernel with work-groups of `local` (x, y)."""

    def __init__(self, case, cpu, local):
        self.kernel = kapi.kernel(stencil5_nd)
        g = tuple(case.space)
        self.space = kapi.NdRange(g, local)
        self.args = [kapi.asarray(a, device=cpu) for a in case.args]

    def launch(self):
        kapi.call_kernel(self.kernel, self.space, *self.args)

    def output(self, i):
        return self.args[i].asnumpy()


def address(x):
    """The address of a kapi or NumPy array's first element."""
    if isinstance(x, np.ndarray):
        return x.ctypes.data
    return x.__sycl_usm_array_interface__["data"][0]


def huge_share(addr):
    """kB of transparent huge pages / kB of the mapping holding addr (/proc/self/smaps)."""
    try:
        with open("/proc/self/smaps") as f:
            inside = False
            size = 0
            for line in f:
                head = line.split()[0]
                if "-" in head and not head.endswith(":"):
                    lo, hi = (int(v, 16) for v in head.split("-"))
                    inside = lo <= addr < hi
                elif inside and head == "Size:":
                    size = int(line.split()[1])
                elif inside and head == "AnonHugePages:":
                    return f"{int(line.split()[1]) // 1024}/{size // 1024} MiB huge"
    except OSError:
        pass
    return "?"


def placement(runner):
    """Where a runner's arrays lie: offset in their 2 MiB page and huge-page coverage."""
    out = []
    for x in runner.args:
        if hasattr(x, "shape") and len(x.shape) == 2:
            a = address(x)
            out.append(f"{a % MIB2:#x} ({huge_share(a + x.nbytes // 2)})")
    return ", ".join(out)


def faults_per_call(runner, calls=5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        runner.launch()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


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
    ap.add_argument("--extras", action="store_true")
    ap.add_argument("--shapes", default="1023x1,682x1,62x11")
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
            others = []  # (name, runner) with their own Numba figures: Numba peers
            if case.name == "stencil-f32" and args.extras:
                for name, env in (
                    ("color", {"KAPI_CPU_MEM_COLOR": "1"}),
                    ("no-color", {"KAPI_CPU_MEM_COLOR": "0"}),
                    ("small-pages", {"KAPI_CPU_MEM_HUGE": "0"}),
                ):
                    kapis.append(
                        (name, with_env(env, lambda: numba_cpu.KapiRunner(case, cpu)))  # noqa: B023
                    )
                for shift in (64, 4096):
                    kapis.append((f"out+{shift}", ShiftedKapi(case, cpu, shift)))
                n2 = tuple(case.space)[0]
                for shape in filter(None, args.shapes.split(",")):
                    lx, ly = (int(v) for v in shape.split("x"))
                    if n2 % lx == 0 and n2 % ly == 0:
                        kapis.append((f"nd-{shape}", NdKapi(case, cpu, (lx, ly))))
                others = [
                    ("numba-2m", PlacedNumba(case, (0, 0))),
                    ("numba-1088", PlacedNumba(case, (0, 1088))),
                ]
            if case.name == "stencil-f32":
                want = stencil_numpy(case.args[0])
                for name, r in kapis + others:
                    r.launch()
                    if not np.allclose(r.output(1), want, rtol=1e-6, atol=1e-6):
                        raise SystemExit(f"{name}: the stencil differs from NumPy's")
            if case.name == "stencil-f32":
                for name, r in [("numba", theirs), *kapis, *others]:
                    print(
                        f"{name:<12} {case.size:<18} arrays at {placement(r)}; "
                        f"{faults_per_call(r):.1f} page faults per call",
                        flush=True,
                    )
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
                if others:  # Numba's placed peers against kapi's default, the same way
                    w = times([mine] + [r for _, r in others], args.repeat, mode, args.gap_ms / 1e3)
                    t = [statistics.median(x) for x in w]
                    for (name, _), tk in zip(others, t[1:], strict=True):
                        print(
                            f"{name:<12} {case.name:<12} {case.size:<18} {mode:<4} "
                            f"kapi {t[0] * 1e3:8.3f} ms  Numba {tk * 1e3:8.3f} ms  "
                            f"{tk / t[0]:5.2f}x  (Numba's arrays placed)",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
