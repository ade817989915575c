"""Reductions along an axis on the CPU device (`x.sum(axis=1)`, `x.max(axis=0)`, ...) beside
NumPy on the same arrays, and beside the settings before in the same process.

Rows along memory (axis=-1 of a C array) and rows across memory (axis=0), float32, for shapes
from many short rows to a few long ones. Variants (kapi/_numeric/reduce.py's switches, set
between calls; each call's plan is recorded again):
  now     the defaults (groups of 16 work-items, 16 a core): the rows of a reduction
          together get as many work-items as one long
          row (_CPU_ROWS_SHARE), a short chunk as many accumulators as fit (_CPU_SHORT_CAP),
          rows across memory read in place by the CPU column kernel (_CPU_COLS)
  before  each row as many work-items as one long row (at least a group of 64; groups of 64
          work-items, 4 a core), the accumulators by dtype alone, rows across memory reduced
          from a transposed copy
  rows    `now` without the column kernel (what the rows' changes alone give)
  nosolo  `now` with a group of one work-item a row where each row is one work-item's, and
          its group reductions (_CPU_SOLO off: as before the solo rows)
  soloR   `now` with R rows a work-group where each row is one work-item's (_CPU_SOLO_ROWS;
          the default is 64): solo16, solo32, solo128
  prev    `now` with both of the two above as before (nosolo and colsel together)
  colsel  `now` with the column kernel's argmin/argmax element by element (_CPU_COLS_ARG_BLOCK
          0: as before its blocks)

Every result is checked against NumPy before it is timed. Times: the median over rounds of the
median of batches (kapi: launches back to back and one wait, as bench/argred.py); the rounds
alternate the variants and NumPy, so that other load moves them alike.

    python3 bench/axis_reduce.py [--rounds 5] [--variants now,before] [--quick]
        [--shapes 1048576x16,65536x256] [--json F --plot bench/plots/axis_reduce_cpu.png]
"""

import argparse
import statistics
import time

import numpy as np
from plotting import Ratios, add_args
from timing import median_batch

import kapi
from kapi._numeric import reduce as R
from kapi._numeric import replay as _replay

NOW = dict(_CPU_WG=R._CPU_WG, _CPU_GROUPS_PER_UNIT=R._CPU_GROUPS_PER_UNIT)
NOW.update(_CPU_ARG_GROUPS_PER_UNIT=R._CPU_ARG_GROUPS_PER_UNIT)
NOW.update(_CPU_SOLO=R._CPU_SOLO, _CPU_SOLO_ROWS=R._CPU_SOLO_ROWS)
NOW.update(_CPU_COLS_ARG_BLOCK=R._CPU_COLS_ARG_BLOCK)
BEFORE = dict(_CPU_WG=64, _CPU_GROUPS_PER_UNIT=4, _CPU_ARG_GROUPS_PER_UNIT=4, _CPU_SOLO=False)
BEFORE.update(_CPU_COLS_ARG_BLOCK=0)
VARIANTS = {
    "now": dict(NOW, _CPU_ROWS_SHARE=True, _CPU_SHORT_CAP=True, _CPU_COLS=True),
    "before": dict(BEFORE, _CPU_ROWS_SHARE=False, _CPU_SHORT_CAP=False, _CPU_COLS=False),
    "rows": dict(NOW, _CPU_ROWS_SHARE=True, _CPU_SHORT_CAP=True, _CPU_COLS=False),
    "nosolo": dict(NOW, _CPU_ROWS_SHARE=True, _CPU_SHORT_CAP=True, _CPU_COLS=True, _CPU_SOLO=False),
}
VARIANTS["colsel"] = dict(VARIANTS["now"], _CPU_COLS_ARG_BLOCK=0)
VARIANTS["prev"] = dict(VARIANTS["colsel"], _CPU_SOLO=False)
for _r in (16, 32, 128):
    VARIANTS[f"solo{_r}"] = dict(VARIANTS["now"], _CPU_SOLO_ROWS=_r)

# (shape, axis): rows along memory first, then across memory
CASES = [
    ((1 << 20, 16), 1),
    ((65536, 256), 1),
    ((4096, 4096), 1),
    ((256, 65536), 1),
    ((1 << 20, 16), 0),
    ((2048, 2048), 0),
    ((4096, 4096), 0),
    ((16, 1 << 20), 0),
    ((32, 1 << 19), 0),
    ((64, 1 << 18), 0),
    ((128, 1 << 17), 0),
    ((256, 1 << 16), 0),
    ((512, 1 << 15), 0),
    ((256, 256, 64), (0, 1)),
]
QUICK = [((65536, 256), 1), ((2048, 2048), 0), ((16, 1 << 18), 0)]


def use(variant: str) -> None:
    for k, v in VARIANTS[variant].items():
        setattr(R, k, v)
    R._src_for.cache_clear()
    _replay.clear_plans()


def check(got, want, op):
    got = np.asarray(got)
    if op == "sum":
        return np.allclose(got, want, rtol=1e-3, atol=1e-2)
    return np.array_equal(got, want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default="now,before")
    ap.add_argument("--ops", default="sum,max,argmax")
    ap.add_argument("--quick", action="store_true", help="three small cases (a smoke run)")
    ap.add_argument("--shapes", default="", help="only these shapes (comma-separated RxC)")
    add_args(ap)
    args = ap.parse_args()
    dev = kapi.Device(args.device)
    sync = dev.default_queue.wait
    variants = args.variants.split(",")
    ops = args.ops.split(",")
    print(f"device: {dev.name}, {dev.max_compute_units} compute units; float32")
    rng = np.random.default_rng(0)
    cases = []
    only = set(args.shapes.split(",")) if args.shapes else None
    for shape, axis in QUICK if args.quick else CASES:
        if only and "x".join(map(str, shape)) not in only:
            continue
        h = rng.random(shape, dtype=np.float32)
        for op in ops:
            if op.startswith("arg") and not isinstance(axis, int):
                continue
            cases.append((shape, axis, op, h, kapi.asarray(h, device=dev)))
    for v in variants:  # every variant's results against NumPy's, before any timing
        use(v)
        for shape, axis, op, h, x in cases:
            if not check(getattr(x, op)(axis=axis).asnumpy(), getattr(h, op)(axis=axis), op):
                raise SystemExit(f"{v}: {shape} {op}(axis={axis}) differs from NumPy")
    print(f"checked against NumPy: {', '.join(variants)}")

    times = {}
    for _ in range(args.rounds):
        for v in variants:
            use(v)
            for shape, axis, op, _h, x in cases:

                def f(x=x, op=op, axis=axis):
                    return getattr(x, op)(axis=axis)

                f()  # records the plan
                times.setdefault((shape, axis, op, v), []).append(median_batch(f, sync, 3, 3, 0.02))
        for shape, axis, op, h, _x in cases:
            g = getattr(h, op)
            times.setdefault((shape, axis, op, "numpy"), []).append(
                median_batch(lambda g=g, axis=axis: g(axis=axis), lambda: None, 1, 3)
            )
    use("now")

    ratios = Ratios()
    med = statistics.median
    print(f"ms, median of {args.rounds} rounds; x np: NumPy's time / kapi's (> 1: kapi faster)")
    for shape, axis, op, _h, _x in cases:
        tn = med(times[shape, axis, op, "numpy"])
        name = f"{op} {'x'.join(map(str, shape))} axis={axis}"
        cols = [f"numpy {tn * 1e3:8.3f}"]
        for v in variants:
            t = med(times[shape, axis, op, v])
            cols.append(f"{v} {t * 1e3:8.3f} ({tn / t:5.2f}x np)")
            ratios.add(name, f"NumPy / kapi {v}", tn / t)
        if "before" in variants and variants[0] != "before":
            t0 = med(times[shape, axis, op, variants[0]])
            cols.append(f"{variants[0]}/before {med(times[shape, axis, op, 'before']) / t0:5.2f}x")
        print(f"  {name:32s} " + "  ".join(cols))
    title = f"kapi CPU device, reductions along an axis, float32 ({time.strftime('%F')})"
    ratios.write(args, title)


if __name__ == "__main__":
    main()
