"""What one fuzz case costs (issue 12): CPU seconds per case of each step of tools/fuzz/kfuzz.py
on the same kernels: generating them, the reference interpreter (ksim), the Numba oracle it
replaced, and kapi (front end, compile, launch) on each device. CPU time, so a loaded machine
moves it less than wall time; the rate is 1 / (generate + ksim + kapi on every device), plus
the Numba oracle on one kernel in --check-every.

    PYTHONPATH=. python3 bench/fuzz_rate.py [--kernels 12] [--cases 8] [--seed 3]
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools", "fuzz"))
os.environ.setdefault("KAPI_CACHE", "0")

import kfuzz  # noqa: E402

import kapi  # noqa: E402


def cpu(fn, *args):
    t0 = time.process_time()
    fn(*args)
    return time.process_time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=12)
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--check-every", type=int, default=50)
    a = ap.parse_args()
    devs = kapi.devices()
    # warm-up: Numba's typing of min/max compiles once per type pair; kapi's first compile
    warm = kfuzz.random_program(kfuzz.kernel_rng(a.seed, 10**6), a.cases)
    kfuzz.run_sim(warm)
    kfuzz.run_oracle(warm)
    for d in devs:
        kfuzz.run_kapi(warm, d)
    t = {"generate": 0.0, "ksim": 0.0, "numba oracle": 0.0}
    t.update({f"kapi {d.filter_string}": 0.0 for d in devs})
    for n in range(a.kernels):
        t0 = time.process_time()
        p = kfuzz.random_program(kfuzz.kernel_rng(a.seed, n), a.cases)
        t["generate"] += time.process_time() - t0
        t["ksim"] += cpu(kfuzz.run_sim, p)
        t["numba oracle"] += cpu(kfuzz.run_oracle, p)
        k = kfuzz.make_kernel(p)
        for d in devs:  # the first device pays the front end, as in kfuzz
            t[f"kapi {d.filter_string}"] += cpu(kfuzz.run_kapi, p, d, k)
        kfuzz.forget_kernel(k)
    ncases = a.kernels * a.cases
    print(f"{a.kernels} kernels of {a.cases} cases, CPU ms per case:")
    for name, v in t.items():
        print(f"  {name:28s} {1000 * v / ncases:8.1f}")
    kapi_s = sum(v for k_, v in t.items() if k_.startswith("kapi"))
    new = t["generate"] + t["ksim"] + kapi_s + t["numba oracle"] / a.check_every
    old = t["generate"] + t["numba oracle"] + kapi_s
    print(
        f"cases/s per core: with ksim {ncases / new:.2f}, Numba oracle on every case "
        f"{ncases / old:.2f} ({old / new:.1f}x)"
    )


if __name__ == "__main__":
    main()
