"""Where a fresh process's time goes: `import kapi` by module and a cold first call by function.

    .venv/bin/python bench/startup_profile.py [--device cpu] [--device cuda:0] [--top 25]

Complements bench/cold_start.py (which gives the medians): this prints, for one fresh process
each, the slowest imports of `import kapi` and of the names a program then uses (-X importtime,
second run so bytecode is cached; `import kapi` itself imports nothing since issue 11)
and the cumulative cProfile of the first call_kernel with an empty disk cache.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from cold_start import bytecode_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# `import kapi` and the names a program uses before its first launch (each imports its module)
FIRST_USE = "import kapi; kapi.Device; kapi.ones; kapi.kernel; kapi.Range; kapi.call_kernel"

CHILD = r"""
import cProfile, pstats, sys, time
t0 = time.perf_counter()
import kapi
t1 = time.perf_counter()
import numpy as np
t1n = time.perf_counter()

@kapi.kernel
def saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]

dev = kapi.Device(sys.argv[1])
x = kapi.ones(1 << 20, dtype="f4", device=dev)
y = kapi.ones(1 << 20, dtype="f4", device=dev)
t2 = time.perf_counter()
prof = cProfile.Profile()
prof.enable()
kapi.call_kernel(saxpy, kapi.Range(1 << 20), np.float32(2), x, y)
prof.disable()
t3 = time.perf_counter()
print(f"import kapi {1e3 * (t1 - t0):.1f} ms; numpy {1e3 * (t1n - t1):.1f} ms; "
      f"arrays {1e3 * (t2 - t1n):.1f} ms; "
      f"cold first call {1e3 * (t3 - t2):.1f} ms (profiled)")
pstats.Stats(prof).sort_stats("cumulative").print_stats(int(sys.argv[2]))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", action="append")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    bytecode_cache(env)  # without it, PYTHONDONTWRITEBYTECODE=1 hosts compile every source
    for _ in range(2):  # the second run has bytecode caches
        r = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", FIRST_USE],
            env=env,
            capture_output=True,
            text=True,
        )
    rows, seen_kapi = [], False
    for line in r.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            seen_kapi = seen_kapi or parts[2].strip() == "kapi"
            if seen_kapi:  # not the interpreter's own start-up imports
                rows.append((int(parts[1]), int(parts[0].split(":")[1]), parts[2].rstrip()))
    rows.sort(reverse=True)
    print(f"== {FIRST_USE}\n   cumulative us | self us | module")
    for cum, own, name in rows[: args.top]:
        print(f"{cum:10d} | {own:8d} | {name}")
    for dev in args.device or ["cpu"]:
        with tempfile.TemporaryDirectory() as cache:
            env["KAPI_CACHE_DIR"] = cache
            print(f"== cold first call on {dev}", flush=True)
            subprocess.run([sys.executable, "-c", CHILD, dev, str(args.top)], env=env, check=False)


if __name__ == "__main__":
    main()
