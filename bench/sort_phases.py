"""Where kapi.sort / kapi.argsort of 2^N keys spend their time on kapi's CPU device: every
kernel the sort launches through compiled_call_kernel (which waits for it) timed by name, the
reductions (kapi.reduce, waited for) as "reduce", the rest (the host, the scans' launches of
their own) as "other"; medians over repeats, each result checked against NumPy first. For
machines without perf (the GPU machine's Xeon):

    KAPI_DRIVERS=cpu python3 bench/sort_phases.py [--log2n 24] [--repeat 7]
"""

import argparse
import statistics
import time
from collections import defaultdict

import numpy as np

import kapi
from kapi._kernel import launch as _launch


def _name(k):
    f = getattr(k, "py_func", None)
    return getattr(f, "__name__", None) or getattr(k, "__name__", None) or type(k).__name__


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    dev = kapi.Device("cpu")
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    keys = {
        "uint32": rng.integers(0, 2**32, n, dtype=np.uint32),
        "float32": rng.random(n, dtype=np.float32),
    }
    orig = _launch.compiled_call_kernel
    spent = defaultdict(float)

    def timed(kern, rng_, *a):
        t0 = time.perf_counter()
        r = orig(kern, rng_, *a)
        spent[_name(kern)] += time.perf_counter() - t0
        return r

    _launch.compiled_call_kernel = timed  # sort_radix imports it at each call
    # the reductions (the bits that vary) by name too: sort_radix calls P.reduce
    from kapi._numeric import primitives as _prims

    orig_reduce = _prims.reduce

    def timed_reduce(*a, **kw):
        t0 = time.perf_counter()
        r = orig_reduce(*a, **kw)
        spent["reduce"] += time.perf_counter() - t0
        return r

    _prims.reduce = timed_reduce
    print(f"device: {dev.name}, {dev.max_compute_units} compute units; n = 2^{args.log2n}")
    for dt, h in keys.items():
        x = kapi.asarray(h, device=dev)
        if not np.array_equal(kapi.sort(x).asnumpy(), np.sort(h)):
            raise SystemExit(f"kapi.sort of {dt} differs from np.sort")
        if not np.array_equal(kapi.argsort(x).asnumpy(), np.argsort(h, kind="stable")):
            raise SystemExit(f"kapi.argsort of {dt} differs from np.argsort")
        for what in ("sort", "argsort"):
            f = getattr(kapi, what)
            f(x)
            per, total = defaultdict(list), []
            for _ in range(args.repeat):
                spent.clear()
                t0 = time.perf_counter()
                f(x)
                dev.default_queue.wait()
                total.append(time.perf_counter() - t0)
                for k, v in spent.items():
                    per[k].append(v)
                per["other"].append(total[-1] - sum(spent.values()))
            med = statistics.median(total) * 1e3
            parts = ", ".join(
                f"{k} {statistics.median(v) * 1e3:.2f}"
                for k, v in sorted(per.items(), key=lambda kv: -statistics.median(kv[1]))
            )
            print(f"{what} {dt}: {med:.2f} ms = {parts} (ms, medians)")


if __name__ == "__main__":
    main()
