"""Cold start and the disk cache: fresh-process timings of kapi beside Numba's own disk caches.

    .venv/bin/python bench/cold_start.py [--runs N] [--device cpu] [--device cuda:0] [--cpu-time]

Every figure comes from a new Python process (medians over --runs processes):
  import       `import kapi` (or `import numba`)
  cold first   the first call of a kernel, empty disk cache (a fresh KAPI_CACHE_DIR)
  warm first   the first call in a new process whose disk cache already holds the kernel
  second       the second call of the same kernel in that process
  warm - second, the target of issue 11: at most 10 ms
  cold process total   from before `import kapi` to the end of the cold first call (NumPy,
               arrays and whatever kapi imports lazily included)
Bytecode is cached (see bytecode_cache) and every series starts with an unmeasured run.
kapi's kernel is saxpy on device arrays (n = 2^20, compiled at its first call_kernel); Numba's is
the same loop under @njit(cache=True) on NumPy arrays, and, where numba-cuda imports and a GPU
is there, under @cuda.jit(cache=True) on device arrays. Numba's "cold" runs get a fresh
NUMBA_CACHE_DIR. Each process reports whether Numba was imported (a kapi warm hit must not).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KAPI_CHILD = r"""
import sys, time, json
t0 = time.perf_counter()
import kapi
t1 = time.perf_counter()
import numpy as np

@kapi.kernel
def saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]

dev = kapi.Device(sys.argv[1])
n = 1 << 20
x = kapi.ones(n, dtype="f4", device=dev)
y = kapi.ones(n, dtype="f4", device=dev)
r = kapi.Range(n)
a = np.float32(2)
t2 = time.perf_counter()
kapi.call_kernel(saxpy, r, a, x, y)
t3 = time.perf_counter()
kapi.call_kernel(saxpy, r, a, x, y)
t4 = time.perf_counter()
assert float(y.asnumpy()[7]) == 5.0
print(json.dumps({"import": t1 - t0, "first": t3 - t2, "second": t4 - t3, "total": t3 - t0,
                  "numba": "numba" in sys.modules}))
"""

NUMBA_CHILD = r"""
import sys, time, json
t0 = time.perf_counter()
import numba
t1 = time.perf_counter()
import numpy as np

@numba.njit(cache=True)
def saxpy(a, x, y):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]

n = 1 << 20
x = np.ones(n, np.float32)
y = np.ones(n, np.float32)
a = np.float32(2)
t2 = time.perf_counter()
saxpy(a, x, y)
t3 = time.perf_counter()
saxpy(a, x, y)
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first": t3 - t2, "second": t4 - t3, "total": t3 - t0,
                  "numba": True}))
"""

NUMBA_CUDA_CHILD = r"""
import sys, time, json
t0 = time.perf_counter()
import numpy as np
if not hasattr(np, "row_stack"):  # numba-cuda 0.30 still uses what NumPy 2.5 removed
    np.row_stack = np.vstack
from numba import cuda
t1 = time.perf_counter()

@cuda.jit(cache=True)
def saxpy(a, x, y):
    i = cuda.grid(1)
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]

n = 1 << 20
x = cuda.to_device(np.ones(n, np.float32))
y = cuda.to_device(np.ones(n, np.float32))
a = np.float32(2)
cuda.synchronize()
t2 = time.perf_counter()
saxpy[n // 256, 256](a, x, y)
cuda.synchronize()
t3 = time.perf_counter()
saxpy[n // 256, 256](a, x, y)
cuda.synchronize()
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first": t3 - t2, "second": t4 - t3, "total": t3 - t0,
                  "numba": True}))
"""


def child(code_path: str, args: list[str], env: dict) -> dict:
    r = subprocess.run(
        [sys.executable, code_path, *args], env=env, capture_output=True, text=True, timeout=600
    )
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed")
    return json.loads(r.stdout.strip().splitlines()[-1])


def series(code_path, args, env, runs, cache_var, warm: bool) -> list[dict]:
    """`runs` fresh processes; each cold run gets an empty cache directory, the warm runs
    share one that a first (unmeasured) process filled."""
    out = []
    with tempfile.TemporaryDirectory(prefix="kapi-cold-") as shared:
        child(code_path, args, dict(env, **{cache_var: shared}))  # bytecode caches filled
        if warm:
            child(code_path, args, dict(env, **{cache_var: shared}))
        for _ in range(runs):
            if warm:
                out.append(child(code_path, args, dict(env, **{cache_var: shared})))
            else:
                with tempfile.TemporaryDirectory(prefix="kapi-cold-") as d:
                    out.append(child(code_path, args, dict(env, **{cache_var: d})))
    return out


def med(rows, key) -> float:
    return statistics.median(r[key] for r in rows) * 1e3


def report(name, cold, warm) -> None:
    w_first, w_second = med(warm, "first"), med(warm, "second")
    numba = "yes" if any(r["numba"] for r in warm) else "no"
    print(
        f"| {name} | {med(cold + warm, 'import'):.1f} | {med(cold, 'first'):.1f} | "
        f"{w_first:.2f} | {w_second:.3f} | {w_first - w_second:.2f} | {numba} | "
        f"{med(cold, 'total'):.1f} |",
        flush=True,
    )


def bytecode_cache(env) -> None:
    """Fresh processes must find compiled bytecode, as an installed kapi has it: where
    PYTHONDONTWRITEBYTECODE is set (the dev box sets it) or the tree's __pycache__ is not
    writable, every process would compile kapi's and pyfront's sources again (~40 ms here;
    136 ms in the GPU host's profile). Bytecode goes to a private folder
    (PYTHONPYCACHEPREFIX) that the unmeasured first run of each series fills."""
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault(
        "PYTHONPYCACHEPREFIX",
        os.path.join(tempfile.gettempdir(), f"kapi-bench-pycache-{os.getuid()}"),
    )


def numba_cuda_usable(env) -> bool:
    probe = (
        "import numpy as np; np.row_stack = getattr(np, 'row_stack', np.vstack); "
        "from numba import cuda; import sys; sys.exit(0 if cuda.is_available() else 1)"
    )
    try:
        return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                              timeout=120).returncode == 0  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=7, help="fresh processes per figure (7)")
    p.add_argument("--device", action="append", help="kapi device filters (default: all)")
    p.add_argument(
        "--cpu-time",
        action="store_true",
        help="process CPU time (time.process_time, threads included) instead of wall time:\n"
        "steadier on a loaded machine; blind to waiting (GPU work, I/O)",
    )
    a = p.parse_args()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("KAPI_CACHE", "KAPI_DEBUG", "NUMBA_DISABLE_JIT"):
        env.pop(k, None)
    bytecode_cache(env)
    if a.device:
        devs = a.device
    else:
        listing = subprocess.run(
            [sys.executable, "-c", "import kapi; print(' '.join(d.filter_string for d in "
             "kapi.devices()))"], env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        devs = listing.stdout.split()
    clock = "process CPU time" if a.cpu_time else "wall time"
    print(
        f"fresh-process medians over {a.runs} runs (ms, {clock}); python {sys.version.split()[0]}"
    )
    print()
    print("| what | import | cold first call | warm first call | second call | warm - second "
          "| Numba imported on a warm run | cold process total |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="kapi-bench-") as d:
        paths = {}
        for name, code in (
            ("kapi", KAPI_CHILD),
            ("numba", NUMBA_CHILD),
            ("cuda", NUMBA_CUDA_CHILD),
        ):
            paths[name] = os.path.join(d, f"cold_{name}.py")
            with open(paths[name], "w") as f:
                f.write(
                    code.replace("time.perf_counter()", "time.process_time()")
                    if a.cpu_time
                    else code
                )
        for dev in devs:
            cold = series(paths["kapi"], [dev], env, a.runs, "KAPI_CACHE_DIR", warm=False)
            warm = series(paths["kapi"], [dev], env, a.runs, "KAPI_CACHE_DIR", warm=True)
            report(f"kapi on {dev}", cold, warm)
        cold = series(paths["numba"], [], env, a.runs, "NUMBA_CACHE_DIR", warm=False)
        warm = series(paths["numba"], [], env, a.runs, "NUMBA_CACHE_DIR", warm=True)
        report("Numba @njit(cache=True), CPU", cold, warm)
        if any(dv.startswith("cuda") for dv in devs) and numba_cuda_usable(env):
            cold = series(paths["cuda"], [], env, a.runs, "NUMBA_CACHE_DIR", warm=False)
            warm = series(paths["cuda"], [], env, a.runs, "NUMBA_CACHE_DIR", warm=True)
            report("numba-cuda @cuda.jit(cache=True)", cold, warm)
        else:
            print(
                "| numba-cuda @cuda.jit(cache=True) | not run: no numba-cuda or no GPU | | | | | |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
