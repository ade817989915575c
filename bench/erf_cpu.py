"""erf and erfc on kapi's CPU device: the driver's formulas (KAPI_HOST_ERF=ir) against glibc's
libmvec vector versions (KAPI_HOST_ERF=libm), each kernel built under its setting (a renamed
copy per variant, so each has its own SPIR-V and native module) and launched alternately.

    python bench/erf_cpu.py [--repeat 9] [--n 22] [--cpu haswell]

One kernel `out[i] = erf(x[i])` (or erfc) over 2^n elements in [-3, 3) (erfc: [-3, 10)), float32
and float64. Prints medians of the wall and process CPU time per launch and the ratio
libm / ir (> 1: the formulas are faster). --cpu sets KAPI_HOST_CPU (the JIT's target) for all.
Run with KAPI_CACHE=0 after rebuilding the compiler library (the native-binary cache keys on
the driver version and KAPI_HOST_* settings, not on the compiler's build).
"""

import argparse
import math
import os
import time
import types

import numpy as np

import kapi


def erf_kernel(item, x, out):
    i = item.get_id(0)
    out[i] = math.erf(x[i])


def erfc_kernel(item, x, out):
    i = item.get_id(0)
    out[i] = math.erfc(x[i])


def renamed(fn, name):
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    g = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    g.__qualname__ = name
    return kapi.kernel(g)


def built(fn, name, setting, x, out):
    """The kernel, built on its first launch under KAPI_HOST_ERF=setting."""
    k = renamed(fn, f"{fn.__name__}_{name}_{setting}")
    old = os.environ.get("KAPI_HOST_ERF")
    os.environ["KAPI_HOST_ERF"] = setting
    try:
        kapi.call_kernel(k, kapi.Range(x.size), x, out)
    finally:
        if old is None:
            del os.environ["KAPI_HOST_ERF"]
        else:
            os.environ["KAPI_HOST_ERF"] = old
    return k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--n", type=int, default=22)
    ap.add_argument("--cpu", default=None)
    args = ap.parse_args()
    if args.cpu:
        os.environ["KAPI_HOST_CPU"] = args.cpu
    n = 1 << args.n
    rng = np.random.default_rng(0)
    print(f"2^{args.n} elements, repeat {args.repeat}, medians; target {args.cpu or 'host'}")
    cols = ("ir ms", "libm ms", "ratio", "ir cpu", "libm cpu", "ratio")
    print(f"{'kernel':14} " + " ".join(f"{h:>8}" for h in cols))
    for fn, hi in ((erf_kernel, 3.0), (erfc_kernel, 10.0)):
        for dt in (np.float32, np.float64):
            x = kapi.asarray(rng.uniform(-3, hi, n).astype(dt), device="cpu")
            out = kapi.empty(n, dtype=dt, device="cpu")
            name = np.dtype(dt).name
            ks = {s: built(fn, name, s, x, out) for s in ("ir", "libm")}
            wall = {s: [] for s in ks}
            cpu = {s: [] for s in ks}
            for _ in range(args.repeat):
                for s, k in ks.items():
                    c0, t0 = time.process_time(), time.perf_counter()
                    kapi.call_kernel(k, kapi.Range(n), x, out)
                    wall[s].append(time.perf_counter() - t0)
                    cpu[s].append(time.process_time() - c0)
            w = {s: 1e3 * float(np.median(v)) for s, v in wall.items()}
            c = {s: 1e3 * float(np.median(v)) for s, v in cpu.items()}
            label = f"{fn.__name__[:-7]} {name}"
            print(
                f"{label:14} {w['ir']:8.2f} {w['libm']:8.2f} {w['libm'] / w['ir']:7.2f}x"
                f" {c['ir']:8.2f} {c['libm']:8.2f} {c['libm'] / c['ir']:7.2f}x"
            )


if __name__ == "__main__":
    main()
