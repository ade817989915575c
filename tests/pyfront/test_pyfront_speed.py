"""pyfront stays lean: a warm saxpy compile takes a few milliseconds (budget for the whole
Python -> SPIR-V path is 100 ms; this guards pyfront's share with a wide margin)."""

import statistics
import time

import pyfront


def _saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def test_warm_saxpy_compile_is_fast():
    args = ["f32", "array(f32,1,C,global)", "array(f32,1,C,global)"]
    for _ in range(3):
        pyfront.compile_kernel(_saxpy, args, index=("item", 1))
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        pyfront.compile_kernel(_saxpy, args, index=("item", 1))
        times.append(time.perf_counter() - t0)
    assert statistics.median(times) < 0.05, f"median {statistics.median(times) * 1e3:.1f} ms"
