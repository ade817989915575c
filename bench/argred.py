"""argmax / argmin beside max and kapi.reduce("max") of float32, with the shapes of
kapi/_numeric/reduce.py's kernels switched in one process, beside CuPy (GPUs, same process)
or a STREAM triad kernel on the same device (kapi's CPU device).

Variants (each sets module attributes of kapi._numeric.reduce, then clears its generated
sources and recorded plans, so the next call generates and records its kernels again):
  pairs      argmin/argmax fold (value, index) pairs element by element (the scheme before;
             KAPI_REDUCE_ARG=pairs); on the CPU driver a block is searched whenever it improves
  pairs4     GPUs: four (value, index) pairs per work-item (KAPI_REDUCE_ARG_UNROLL=1)
  blocks     the default: values folded as max/min do, the index found once per step/block
  blocks8    GPUs: blocks with 8 loads per step (and max/min/sum with 8 accumulators)
  keys       GPUs: one int64 key per element (ordered value bits, index), folded by max
  groupsN    GPUs: max and argmax with at most N work-groups per row (default 1024; 4096
             before, the run that chose it)
  uUgN       GPUs: blocks with U loads per step and at most N work-groups per row
  cpugN      CPU driver: blocks, N work-groups per core (4 by default) for every reduction

Every result is checked against NumPy (NaN, ties and -0.0 cases on a small array too, for
each variant) before it is timed; a variant that fails is reported (FAILED) and left out.
Times: the median over rounds of the median of batches; the rounds alternate kapi's variants
and the peer, so that other load moves them alike.

    python3 bench/argred.py [--device gpu|cpu] [--log2n 27] [--rounds 5] [--variants ...]
"""

import argparse
import statistics

import numpy as np
from timing import median_batch

import kapi
from kapi._numeric import reduce as R

DEFAULTS = {
    "ARG_SCHEME": R.ARG_SCHEME,
    "ARG_UNROLL": R.ARG_UNROLL,
    "_UNROLL": R._UNROLL,
    "_GPU_ROW_GROUPS": R._GPU_ROW_GROUPS,
    "_CPU_GROUPS_PER_UNIT": R._CPU_GROUPS_PER_UNIT,
}


def use(variant: str) -> None:
    """Switches reduce.py to a variant (see the module's docstring)."""
    attrs = dict(DEFAULTS)
    if variant == "pairs":
        attrs.update(ARG_SCHEME="pairs", ARG_UNROLL=False)
    elif variant == "pairs4":
        attrs.update(ARG_SCHEME="pairs", ARG_UNROLL=True)
    elif variant == "blocks":
        attrs.update(ARG_SCHEME="blocks")
    elif variant == "blocks8":
        attrs.update(ARG_SCHEME="blocks", _UNROLL=8)
    elif variant == "keys":
        attrs.update(ARG_SCHEME="keys")
    elif variant.startswith("groups"):
        attrs.update(ARG_SCHEME="blocks", _GPU_ROW_GROUPS=int(variant[6:]))
    elif variant.startswith("cpug"):  # cpug16: CPU driver, 16 work-groups per core (4)
        attrs.update(ARG_SCHEME="blocks", _CPU_GROUPS_PER_UNIT=int(variant[4:]))
    elif variant.startswith("u") and "g" in variant:  # u8g2048: both
        u, g = variant[1:].split("g")
        attrs.update(ARG_SCHEME="blocks", _UNROLL=int(u), _GPU_ROW_GROUPS=int(g))
    else:
        raise SystemExit(f"unknown variant {variant!r}")
    for k, v in attrs.items():
        setattr(R, k, v)
    R._src_for.cache_clear()
    R._PLANS.clear()


def check_small(dev, variant):
    """NumPy's answers on arrays built to catch the corner cases: NaN (first wins), ties
    across blocks and work-groups (first index wins), -0.0 beside 0.0, all equal, ints."""
    n = 3 * 65536 + 17
    cases = []
    h = np.zeros(n, np.float32)
    h[[70001, 130000]] = 3.0
    h[[5, 190000]] = -3.0
    cases.append(h)
    h = h.copy()
    h[[100000, 150000]] = np.nan
    cases.append(h)
    z = np.zeros(n, np.float32)
    z[: n // 2] = -0.0
    cases.append(z)
    cases.append(np.full(n, -np.inf, np.float32))
    cases.append(np.random.default_rng(3).integers(-50, 50, n).astype(np.int32))
    cases.append(np.random.default_rng(4).random(n))  # float64
    for h in cases:
        x = kapi.asarray(h, device=dev)
        for op in ("argmax", "argmin"):
            got, want = int(getattr(x, op)()), int(getattr(h, op)())
            if got != want:
                raise SystemExit(f"{variant}: {op} of {h.dtype} gives {got}, NumPy {want}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None, help="kapi filter string (default device if none)")
    ap.add_argument("--log2n", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default=None, help="comma-separated (see the docstring)")
    args = ap.parse_args()
    dev = kapi.Device(args.device) if args.device else kapi.default_device()
    gpu = dev.is_gpu
    n = 1 << (args.log2n or (27 if gpu else 24))
    gpu_variants = "pairs pairs4 blocks blocks8 keys groups2048 groups4096 groups8192"
    gpu_variants += " u8g2048 u8g8192"
    variants = (args.variants or (gpu_variants if gpu else "pairs blocks")).replace(",", " ")
    variants = variants.split()
    print(f"device: {dev.name}, {dev.max_compute_units} compute units; n = {n} float32")
    rng = np.random.default_rng(0)
    h = rng.random(n, dtype=np.float32)
    h[n // 2 + 1] = 2.0  # the answers away from the ends
    h[n // 3 + 5] = -1.0
    x = kapi.asarray(h, device=dev)
    sync = dev.default_queue.wait
    reps, batches = (10, 5) if gpu else (3, 3)
    cp = None
    if gpu:
        try:
            import cupy as cp
        except ImportError:
            print("  (cupy does not import: no CuPy comparison)")
    tri = None
    if not gpu:
        from primitives import Triad

        tri = Triad(dev, n, lambda fn: median_batch(fn, sync, reps, batches))

    rows = {
        "x.argmax()": (lambda: x.argmax(), "argmax"),
        "x.argmin()": (lambda: x.argmin(), "argmin"),
        "x.max()": (lambda: x.max(), "max"),
        'kapi.reduce("max")': (lambda: kapi.reduce("max", x), "max"),
    }
    want = {"argmax": int(h.argmax()), "argmin": int(h.argmin()), "max": float(h.max())}
    failed = []
    for v in variants:
        use(v)
        try:
            check_small(dev, v)
            for name, (fn, op) in rows.items():
                got = fn()
                got = float(got) if op == "max" else int(got)
                if got != want[op]:
                    raise SystemExit(f"{v}: {name} gives {got}, NumPy {want[op]}")
        except (Exception, SystemExit) as e:  # the other variants are still timed
            print(f"FAILED: variant {v}: {type(e).__name__}: {e}")
            failed.append(v)
    variants = [v for v in variants if v not in failed]
    print(f"checked against NumPy: {', '.join(variants)}")

    times = {(v, r): [] for v in variants for r in rows}
    peer = {r: [] for r in rows}
    tri_bw = []
    cx = cp.asarray(h) if cp is not None else None
    csync = cp.cuda.Device().synchronize if cp is not None else None
    for _ in range(args.rounds):
        if tri:
            tri_bw.append(tri.sample())
        for v in variants:
            use(v)
            for r, (fn, _op) in rows.items():
                fn()  # records the plan
                times[v, r].append(median_batch(fn, sync, reps, batches))
        if cp is not None:
            for r, (_fn, op) in rows.items():
                peer[r].append(median_batch(getattr(cx, op), csync, reps, batches))
    use("blocks")

    def med(a):
        return statistics.median(a)

    tb = med(tri_bw) if tri_bw else None
    if tb:
        print(f"triad of float32 on the device: {tb / 1e9:.2f} GB/s (median of {len(tri_bw)})")
    for r in rows:
        print(r)
        pt = med(peer[r]) if cp is not None else None
        if pt:
            print(f"  {'cupy ' + rows[r][1]:34s} {pt * 1e3:8.3f} ms")
        for v in variants:
            t = med(times[v, r])
            spread = f"[{min(times[v, r]) * 1e3:.3f}-{max(times[v, r]) * 1e3:.3f}]"
            extra = ""
            if pt:
                extra += f"   {pt / t:5.2f} x cupy"
            if tb:
                extra += f"   {4 * n / t / 1e9:7.2f} GB/s {4 * n / t / tb:5.2f} x triad"
            print(f"  kapi {v:29s} {t * 1e3:8.3f} ms {spread:>17s}{extra}")


if __name__ == "__main__":
    main()
