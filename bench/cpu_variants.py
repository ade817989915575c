"""kapi's CPU device under several settings of the CPU driver, side by side in one process, with
no other runtime needed (bench/opencl_cpu.py does the same beside Intel's OpenCL CPU runtime):
each kernel of bench/cpu_cases.py is compiled once per variant (a renamed copy, so its SPIR-V
and native module are its own, built under that variant's environment), every variant's results
must equal the first column's bit for bit, and NumPy's where the case has a reference; then the
variants' launches alternate sample by sample and the medians are printed.

    python bench/cpu_variants.py [--repeat 9] [--only local-scan-i32,...] [--scale S]
        --variant before:KAPI_HOST_UNROLL=1 [--variant NAME:VAR=VALUE[,VAR=VALUE]]

The first column (`on`) is the environment as given; KAPI_CACHE=0 unless set. Each variant's
build time (the first launch, compile included) is printed too.
"""

import argparse
import os
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # this tree's kapi
os.environ.setdefault("KAPI_CACHE", "0")

import numpy as np  # noqa: E402
from cpu_cases import cases  # noqa: E402

import kapi  # noqa: E402


def renamed(fn, suffix):
    name = f"{fn.__name__}_{suffix}"
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    g = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    g.__qualname__ = name
    return g


def numpy_reference(case):
    """The case's expected outputs by NumPy, {argument index: array}, or {} (no reference)."""
    a = case.args
    if case.name == "pairwise-f32":
        d = a[0][:, None, :] - a[0][None, :, :]
        return {1: np.sqrt((d * d).sum(-1)).T}
    if case.name in ("matmul-f32", "matmul-naive-f32"):
        return {2: a[0] @ a[1]}
    if case.name == "local-scan-i32":
        wg = case.space.local_range[0]
        return {1: np.cumsum(a[0].reshape(-1, wg), axis=1, dtype=np.int32).reshape(-1)}
    if case.name == "rowsum-f32":
        return {1: a[0].sum(1)}
    return {}


class Runner:
    def __init__(self, case, env, suffix):
        fn = getattr(case.fn, "py_func", case.fn)
        self.kernel = kapi.kernel(renamed(fn, suffix))
        self.case, self.env = case, env
        self.args = [kapi.asarray(x) if isinstance(x, np.ndarray) else x for x in case.args]

    def launch(self):
        kapi.call_kernel(self.kernel, self.case.space, *self.args)

    def first(self):
        saved = {v: os.environ.get(v) for v in self.env}
        os.environ.update(self.env)
        try:
            t0 = time.perf_counter()
            self.launch()
            self.build_s = time.perf_counter() - t0
        finally:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old
        return [self.args[i].asnumpy() for i in self.case.outputs]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--scale", type=float, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument("--variant", action="append", default=[], help="NAME:VAR=VALUE[,VAR=VALUE]")
    a = ap.parse_args()
    variants = {"on": {}}
    for spec in a.variant:
        name, _, assigns = spec.partition(":")
        variants[name] = dict(kv.split("=", 1) for kv in assigns.split(",") if kv)
    print(f"{os.cpu_count()} cores; kapi: {kapi.Device('cpu')}; repeat {a.repeat}, medians")
    head = f"{'kernel':<18} {'size':<24}"
    for v in variants:
        head += f" {v + ' ms':>11} {v + ' build ms':>15}"
    print(head, flush=True)
    ratios = {v: [] for v in variants}
    for case in cases(a.scale, set(filter(None, a.only.split(",")))):
        runners, outs = [], []
        for j, env in enumerate(variants.values()):
            r = Runner(case, env, f"v{j}")
            outs.append(r.first())
            runners.append(r)
        for v, got in zip(variants, outs, strict=True):
            for x, y in zip(outs[0], got, strict=True):
                if not np.array_equal(x, y, equal_nan=True):
                    sys.exit(f"{case.name}: variant {v} differs from the first column")
        for i, want in numpy_reference(case).items():
            got = outs[0][case.outputs.index(i)]
            tol = max(case.rtol, 1e-5) if got.dtype.kind == "f" else 0
            if not np.allclose(got, want, rtol=tol, atol=max(case.atol, tol)):
                sys.exit(f"{case.name}: kapi differs from NumPy")
        for r in runners:
            r.launch()
        times = [[] for _ in runners]
        for rep in range(a.repeat):
            k = rep % len(runners)
            for j in list(range(k, len(runners))) + list(range(k)):
                t0 = time.perf_counter()
                runners[j].launch()
                times[j].append(time.perf_counter() - t0)
        med = [statistics.median(t) for t in times]
        line = f"{case.name:<18} {case.size:<24}"
        for m, r, v in zip(med, runners, variants, strict=True):
            line += f" {m * 1e3:11.3f} {r.build_s * 1e3:15.0f}"
            ratios[v].append(med[0] / m)
        print(line, flush=True)
    for v in list(variants)[1:]:
        gm = float(np.exp(np.mean(np.log(ratios[v]))))
        print(f"geometric mean of on ms / {v} ms: {gm:.3f} (> 1: on slower)")


if __name__ == "__main__":
    main()
