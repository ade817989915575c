"""Compile time from a Python kernel function to SPIR-V bytes (issue 2's target: saxpy < 100 ms).

Times pyfront (Numba bytecode analysis + type inference -> KIR) and the C compiler (KIR ->
LLVM IR -> O2 -> SPIR-V -> validation) separately and together, excluding imports. Each
sample compiles a fresh copy of the function, so no cache of ours or Numba's is hit.

    .venv/bin/python bench/compile_time.py [--repeat N]
"""

import argparse
import statistics
import time
import types

from kernels import pairwise_distance, saxpy

import pyfront
from kapi._lib import _kapi

CASES = {
    "saxpy f32": (saxpy, ["f32", "array(f32,1,C,global)", "array(f32,1,C,global)"], 1),
    "pairwise f64": (pairwise_distance, ["array(f64,2,C,global)", "array(f64,2,C,global)"], 2),
}


def fresh(fn):
    """A new function object with the same code, so nothing cached by identity is reused."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__)


def time_case(fn, argtypes, ndim, repeat):
    front, back = [], []
    for _ in range(repeat):
        f = fresh(fn)
        t0 = time.perf_counter()
        mod = pyfront.compile_kernel(f, argtypes, index=("item", ndim))
        t1 = time.perf_counter()
        _kapi.compile_kir(mod.text, 2)
        t2 = time.perf_counter()
        front.append(t1 - t0)
        back.append(t2 - t1)
    total = [a + b for a, b in zip(front, back, strict=True)]
    return statistics.median(front), statistics.median(back), statistics.median(total)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    for fn, argtypes, ndim in CASES.values():  # warm-up: first-use costs of Numba and LLVM
        time_case(fn, argtypes, ndim, 1)
    print(f"{'kernel':<14} {'pyfront ms':>11} {'compiler ms':>12} {'total ms':>9}")
    for name, (fn, argtypes, ndim) in CASES.items():
        f, b, t = time_case(fn, argtypes, ndim, args.repeat)
        print(f"{name:<14} {f * 1e3:11.2f} {b * 1e3:12.2f} {t * 1e3:9.2f}")


if __name__ == "__main__":
    main()
