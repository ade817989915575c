"""pyfront stays lean: a warm saxpy compile takes a few milliseconds (budget for the whole
Python -> SPIR-V path is 100 ms; this guards pyfront's share with a wide margin)."""

import statistics
import subprocess
import sys
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


def test_branches_and_loops_do_not_import_numba_typed_containers():
    # Numba's bytecode front end types `bool` (every branch) and `range` (every loop) as
    # globals; its typeof of a class imports numba.typed's containers first (~25 ms once per
    # process, a sixth of a small kernel's first build), which pyfront's typing skips for
    # Python's own classes. A fresh process, so nothing else imported them before.
    code = """
import sys
import pyfront

def k(item, a, n):
    i = item.get_id(0)
    s = a[i]
    for j in range(n):
        if s > 1.0:
            s = s * 0.5
    a[i] = bool(s > 0.25) + s

pyfront.compile_kernel(k, ["array(f32,1,C,global)", "i64"], index=("item", 1))
print(sorted(m for m in sys.modules if m.startswith("numba.typed.")))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "[]", r.stdout
