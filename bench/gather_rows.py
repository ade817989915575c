"""Rows read across work-items (`s += x[i, k]` for k < D, work-item i) on the CPU device under two
values of one build setting, for several row lengths D. By default the setting is
KAPI_HOST_SCALAR_GATHERS (0: a spacing without a window gathers; unset: scalar loads); the
windows are KAPI_HOST_WINDOW_GATHERS's. Each value is a renamed copy of the kernel built under it
(the settings are read when a kernel is built), timed in turn with the other, sample by sample;
medians.

    [KAPI_HOST_CPU=haswell] python bench/gather_rows.py [--rows 3,5,8,16,64] [--log2n 20]
        [--repeat 101] [--windows 8] [--compare VAR=A,B] [--dtype float32]

--windows sets KAPI_HOST_WINDOW_GATHERS for both values (default: the driver's own set);
--compare names the setting and its two values (`-` for unset), e.g.
KAPI_HOST_AVX2_GATHERS=0,- or KAPI_HOST_WINDOW_GATHERS=2,8. Without KAPI_HOST_CPU the host's
CPU decides.
"""

import argparse
import os
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("KAPI_CACHE", "0")

import numpy as np  # noqa: E402
from kernels import row_sums  # noqa: E402

import kapi  # noqa: E402


def built(setting):
    name = f"row_sums_{setting}"
    code = row_sums.__code__.replace(co_name=name, co_qualname=name)
    return kapi.kernel(types.FunctionType(code, row_sums.__globals__, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="3,5,8,16,64")
    ap.add_argument("--log2n", type=int, default=20, help="elements of x in all (2^N)")
    ap.add_argument("--repeat", type=int, default=101)
    ap.add_argument("--windows", default=None)
    ap.add_argument("--compare", default="KAPI_HOST_SCALAR_GATHERS=0,-")
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    var, values = args.compare.split("=", 1)
    a, b = values.split(",")
    dt = np.dtype(args.dtype)
    if args.windows:
        os.environ["KAPI_HOST_WINDOW_GATHERS"] = args.windows
    dev = kapi.Device("cpu")
    print(f"{dev.name}; KAPI_HOST_CPU={os.environ.get('KAPI_HOST_CPU', 'host')}; {dt}; medians ms")
    print(f"{var}: {a} -> {b}")
    print(f"{'D':>4} {a + ' ms':>9} {b + ' ms':>9} {'speed':>8}")
    for d in (int(v) for v in args.rows.split(",")):
        rows = (1 << args.log2n) // d
        h = np.random.default_rng(d).random((rows, d)).astype(dt)
        x, want = kapi.asarray(h, device=dev), h.sum(1)
        runs = {}
        for setting, value in (("0", a), ("1", b)):
            if value == "-":
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
            k, out = built(setting), kapi.zeros(rows, dtype=dt, device=dev)
            kapi.call_kernel(k, kapi.Range(rows), x, out)  # built now, under the setting
            if not np.allclose(out.asnumpy(), want, rtol=1e-4):
                raise SystemExit(f"D={d}, {var}={value}: wrong sums")
            runs[setting] = (k, out, [])
        for rep in range(args.repeat):
            for setting in ("0", "1") if rep % 2 else ("1", "0"):
                k, out, t = runs[setting]
                t0 = time.perf_counter()
                kapi.call_kernel(k, kapi.Range(rows), x, out)
                t.append(time.perf_counter() - t0)
        off, on = (statistics.median(runs[s][2]) * 1e3 for s in ("0", "1"))
        print(f"{d:>4} {off:>9.3f} {on:>9.3f} {off / on:>7.2f}x")


if __name__ == "__main__":
    main()
