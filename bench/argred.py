"""argmax / argmin beside max and kapi.reduce("max") of float32, with the shapes of
kapi/_numeric/reduce.py's kernels switched in one process, beside CuPy (GPUs, same process)
or a STREAM triad kernel on the same device (kapi's CPU device).

Variants (each sets module attributes of kapi._numeric.reduce, then clears its generated
sources and recorded plans, so the next call generates and records its kernels again):
  pairs      argmin/argmax fold (value, index) pairs element by element (the scheme before;
             KAPI_REDUCE_ARG=pairs); on the CPU driver a block is searched whenever it improves
  pairs4     GPUs: four (value, index) pairs per work-item (KAPI_REDUCE_ARG_UNROLL=1)
  blocks     the default: values folded as max/min do, the index found once per step/block
  cpubefore  CPU driver: the settings before (KAPI_REDUCE_CPU=before): 64 bytes of
             accumulators (16 of float32) for min/max/argmin/argmax, 4 for float sums,
             argmin/argmax folding each block's accumulators into one value (_block_arg_once)
  cpulanes   CPU driver: the settings now (the default): 128 bytes of accumulators (32 of
             float32), as many (at least 16) for float sums, argmin/argmax keeping each
             lane's extreme and block (_block_arg_lanes)
  cpublock   CPU driver: the accumulators now, argmin/argmax as before (_block_arg_once)
  keys       GPUs: one int64 key per element (ordered value bits, index), folded by max
  groupsN    GPUs: max and argmax with at most N work-groups per row (default 1024; 4096
             before, the run that chose it)
  uUgN       GPUs: blocks with U loads per step and at most N work-groups per row
  cpugN      CPU driver: blocks, N work-groups per core (4 by default) for every reduction
  cpuagN     CPU driver: N work-groups per core for argmin/argmax only
  cpudefer   CPU driver: lanes, each work-item giving its block and the group's first
             work-item searching the earliest one (_CPU_ARG_DEFER)
  cpulanes1  CPU driver: the lanes settings with one read stream and chunks of n // T + 1 (the
             settings before KAPI_REDUCE_CPU_STREAMS=2)
  cpuround   CPU driver: lanes, every chunk a whole number of the loop's steps (ceil(n / T)
             rounded up; n // T + 1 before), one read stream (_CPU_CHUNK_ROUND)
  cpusN      CPU driver: cpuround with N read streams per work-item (_CPU_STREAMS = N;
             KAPI_REDUCE_CPU_STREAMS) but argmin/argmax; cpusNgM: also M work-groups per core
  cpuwWgG    CPU driver: the defaults with W work-items a group (64) and G groups per core (4):
             cpuw16g16 (the default since the twenty-second session; cpuw64g4 before) keeps
             each work-item's chunk (and its streams) but hands the cores pieces a quarter
             the size, so the launch's last piece ends sooner
  cpuas2     CPU driver: cpus2 with argmin/argmax in 2 streams too (_CPU_ARG_STREAMS)
  cpuargs2   CPU driver: the defaults with argmin/argmax in 2 streams (_CPU_ARG_STREAMS = 2)
  cpufsN     CPU driver: the defaults with N accumulators for float sums and products
             (_CPU_FSUM_ACC alone; by default 128 bytes' worth, at least 16: 32 of float32)
  cpuone     CPU driver: the defaults in one launch, the last work-group folding the groups'
             partials (_CPU_ONE_LAUNCH, the default now) instead of a second launch;
             cpuoneN: with N read streams
  cputwo     CPU driver: the defaults before one launch, the auto stream count and float sums
             by bytes: a second launch folds the partials, two read streams, 16 accumulators
             for float sums (cputwoN: N streams)

Every variant but cputwo runs in one launch (the default since the nineteenth session's
measurements; the earlier rows of bench/RESULTS.md ran two).

Every result is checked against NumPy (NaN, ties and -0.0 cases on a small array too, for
each variant) before it is timed; a variant that fails is reported (FAILED) and left out.
Times: the median over rounds of the median of batches; the rounds alternate kapi's variants
and the peer, so that other load moves them alike.

    python3 bench/argred.py [--device gpu|cpu] [--log2n 27] [--rounds 5] [--variants ...]
    KAPI_CPU_THREADS=1 python3 bench/argred.py --device cpu --log2n 20 --cpu-time
        (one core's CPU time on data in its caches: what the kernels cost, without memory's
        limit or other load on the machine)
"""

import argparse
import statistics
import time

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
    "_CPU_WG": R._CPU_WG,
    "_CPU_ARG_GROUPS_PER_UNIT": R._CPU_ARG_GROUPS_PER_UNIT,
    "_CPU_ARG_DEFER": R._CPU_ARG_DEFER,
    "CPU_ARG": R.CPU_ARG,
    "_CPU_UNROLL_BYTES": R._CPU_UNROLL_BYTES,
    "_CPU_MAX_ACC": R._CPU_MAX_ACC,
    "_CPU_FSUM_ACC": R._CPU_FSUM_ACC,
    "_CPU_FSUM_BY_BYTES": R._CPU_FSUM_BY_BYTES,
    "_ARG_BLOCK_UNROLLS": R._ARG_BLOCK_UNROLLS,
    "_CPU_STREAMS": R._CPU_STREAMS,
    "_CPU_CHUNK_ROUND": R._CPU_CHUNK_ROUND,
    "_CPU_ARG_STREAMS": R._CPU_ARG_STREAMS,
    "_CPU_ONE_LAUNCH": R._CPU_ONE_LAUNCH,
}
CPU_BEFORE = R.CPU_SETTINGS["before"]  # the CPU driver's settings before (KAPI_REDUCE_CPU)
CPU_NOW = R.CPU_SETTINGS["lanes"]


def use(variant: str) -> None:
    """Switches reduce.py to a variant (see the module's docstring)."""
    attrs = dict(DEFAULTS)
    if variant == "pairs":
        attrs.update(ARG_SCHEME="pairs", ARG_UNROLL=False)
    elif variant == "pairs4":
        attrs.update(ARG_SCHEME="pairs", ARG_UNROLL=True)
    elif variant == "blocks":
        attrs.update(ARG_SCHEME="blocks")
    elif variant == "cpubefore":
        attrs.update(ARG_SCHEME="blocks", **CPU_BEFORE)
        attrs.update(_CPU_STREAMS=1, _CPU_CHUNK_ROUND=False)
    elif variant == "cpublock":
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(CPU_ARG="block", _ARG_BLOCK_UNROLLS=8)
    elif variant == "cpulanes":
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
    elif variant == "keys":
        attrs.update(ARG_SCHEME="keys")
    elif variant.startswith("groups"):
        attrs.update(ARG_SCHEME="blocks", _GPU_ROW_GROUPS=int(variant[6:]))
    elif variant == "cpudefer":  # CPU driver: lanes, the block searched once per group
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(_CPU_ARG_DEFER=True)
    elif variant == "cpulanes1":  # the lanes settings with one stream, chunks as before
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(_CPU_STREAMS=1, _CPU_CHUNK_ROUND=False)
    elif variant == "cpuround":
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(_CPU_STREAMS=1, _CPU_CHUNK_ROUND=True)
    elif variant.startswith("cputwo"):  # the partials' second launch, 2 (or N) streams
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(
            _CPU_ONE_LAUNCH=False, _CPU_STREAMS=int(variant[6:] or 2), _CPU_CHUNK_ROUND=True
        )
        attrs.update(_CPU_FSUM_BY_BYTES=False)
    elif variant.startswith("cpuone"):  # the defaults, the partials folded by the last group
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(_CPU_ONE_LAUNCH=True)
        if variant[6:]:  # cpuone4: with 4 read streams
            attrs.update(_CPU_STREAMS=int(variant[6:]), _CPU_CHUNK_ROUND=True)
    elif variant == "cpuas2":  # argmin/argmax with 2 streams too (the others 2)
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(_CPU_STREAMS=2, _CPU_ARG_STREAMS=2, _CPU_CHUNK_ROUND=True)
    elif variant == "cpuargs2":  # the defaults, argmin/argmax in 2 streams (the rest as is)
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(_CPU_ARG_STREAMS=2)
    elif variant.startswith("cpufs"):  # cpufs32: float sums with 32 accumulators (16)
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(_CPU_FSUM_ACC=int(variant[5:]), _CPU_FSUM_BY_BYTES=False)
    elif variant.startswith("cpuw"):  # cpuw16g16: 16 work-items a group, 16 groups per core
        w, _, g = variant[4:].partition("g")
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(_CPU_WG=int(w), _CPU_GROUPS_PER_UNIT=int(g), _CPU_ARG_GROUPS_PER_UNIT=int(g))
    elif variant.startswith("cpus"):  # cpus2: 2 read streams per work-item; cpus2g8: 8 groups
        s_, _, g = variant[4:].partition("g")
        attrs.update(ARG_SCHEME="blocks", **CPU_NOW)
        attrs.update(_CPU_STREAMS=int(s_), _CPU_CHUNK_ROUND=True)
        if g:
            attrs.update(_CPU_GROUPS_PER_UNIT=int(g), _CPU_ARG_GROUPS_PER_UNIT=int(g))
    elif variant.startswith("cpuag"):  # cpuag2: argmin/argmax with 2 work-groups per core (4)
        attrs.update(ARG_SCHEME="blocks", _CPU_ARG_GROUPS_PER_UNIT=int(variant[5:]))
    elif variant.startswith("cpug"):  # cpug16: CPU driver, 16 work-groups per core (4)
        n = int(variant[4:])
        attrs.update(ARG_SCHEME="blocks", _CPU_GROUPS_PER_UNIT=n, _CPU_ARG_GROUPS_PER_UNIT=n)
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
    ap.add_argument(
        "--rows", default=None, help="comma-separated ops of the rows to time (argmax,sum,...)"
    )
    ap.add_argument(
        "--no-check-small",
        action="store_true",
        help="skip the corner-case arrays' checks (the timed rows are still checked)",
    )
    ap.add_argument(
        "--cpu-time",
        action="store_true",
        help="the calling thread's CPU time (with KAPI_CPU_THREADS=1: a loaded machine's "
        "other work left out; no triad)",
    )
    args = ap.parse_args()
    dev = kapi.Device(args.device) if args.device else kapi.default_device()
    gpu = dev.is_gpu
    n = 1 << (args.log2n or (27 if gpu else 24))
    gpu_variants = "pairs pairs4 blocks blocks8 keys groups2048 groups4096 groups8192"
    gpu_variants += " u8g2048 u8g8192"
    variants = (args.variants or (gpu_variants if gpu else "cpubefore cpulanes")).replace(",", " ")
    variants = variants.split()
    print(f"device: {dev.name}, {dev.max_compute_units} compute units; n = {n} float32")
    rng = np.random.default_rng(0)
    h = rng.random(n, dtype=np.float32)
    h[n // 2 + 1] = 2.0  # the answers away from the ends
    h[n // 3 + 5] = -1.0
    x = kapi.asarray(h, device=dev)
    sync = dev.default_queue.wait
    reps, batches = (10, 5) if gpu else (3, 3)
    if args.cpu_time:
        reps, batches = 20, 5
    warm_s = 0.0 if gpu else 0.05  # the CPU device: 50 ms of calls first (primitives.Triad)
    cp = None
    if gpu:
        try:
            import cupy as cp
        except ImportError:
            print("  (cupy does not import: no CuPy comparison)")
    clock = time.thread_time if args.cpu_time else time.perf_counter
    tri = tri1 = None
    if not gpu and not args.cpu_time:
        from primitives import Triad

        tri = Triad(dev, n)
        # primitives.py's timing before: single calls, one call first, after a pause (there:
        # NumPy's rows on the host), to show what it measured
        tri1 = Triad(dev, n, reps=1, batches=3, warm_s=0.0)

    rows = {
        "x.argmax()": (lambda: x.argmax(), "argmax"),
        "x.argmin()": (lambda: x.argmin(), "argmin"),
        "x.max()": (lambda: x.max(), "max"),
        "x.min()": (lambda: x.min(), "min"),
        'kapi.reduce("max")': (lambda: kapi.reduce("max", x), "max"),
        "x.sum()": (lambda: x.sum(), "sum"),
        'kapi.reduce("add")': (lambda: kapi.reduce("add", x), "sum"),
    }
    if args.rows:
        keep = set(args.rows.split(","))
        rows = {name: r for name, r in rows.items() if r[1] in keep}
    want = {"argmax": int(h.argmax()), "argmin": int(h.argmin()), "max": float(h.max())}
    want["min"] = float(h.min())
    want["sum"] = float(h.sum(dtype=np.float64))
    failed = []
    for v in variants:
        use(v)
        try:
            if not args.no_check_small:
                check_small(dev, v)
            for name, (fn, op) in rows.items():
                got = fn()
                got = float(got) if op in ("max", "min", "sum") else int(got)
                if got != want[op] and not (op == "sum" and np.isclose(got, want[op], 1e-5)):
                    raise SystemExit(f"{v}: {name} gives {got}, NumPy {want[op]}")
        except (Exception, SystemExit) as e:  # the other variants are still timed
            print(f"FAILED: variant {v}: {type(e).__name__}: {e}")
            failed.append(v)
    variants = [v for v in variants if v not in failed]
    print(f"checked against NumPy: {', '.join(variants)}")

    times = {(v, r): [] for v in variants for r in rows}
    peer = {r: [] for r in rows}
    cx = cp.asarray(h) if cp is not None else None
    csync = cp.cuda.Device().synchronize if cp is not None else None
    for _ in range(args.rounds):
        if tri:
            tri.sample()
            time.sleep(0.02)
            tri1.sample()
        for v in variants:
            use(v)
            for r, (fn, _op) in rows.items():
                fn()  # records the plan
                times[v, r].append(median_batch(fn, sync, reps, batches, warm_s, clock))
        if cp is not None:
            for r, (_fn, op) in rows.items():
                peer[r].append(median_batch(getattr(cx, op), csync, reps, batches))
    use("blocks")

    def med(a):
        return statistics.median(a)

    tb = tri.bw() if tri else None
    if tb:
        print(f"triad of float32 on the device: {tri.describe()}")
        print(f"  single calls after a 20 ms pause (the timing before): {tri1.describe()}")
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
