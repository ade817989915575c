"""Parallel primitives on kapi arrays (issue 13 item 4) beside NumPy on the host and, where
CuPy imports (the GPU machine), CuPy in the same run: kapi.sort / argsort of uint32 (target
on the H100/H200: sort of 2^27 uint32 at least 0.5x cupy.sort), kapi.cumsum of float32,
kapi.reduce, and kapi.random (uniform and normal float32) beside cupy.random / np.random.

Every result is checked against NumPy before it is timed. Times are medians over batches of
calls with one wait each. Rates are in millions of elements per second (Melem/s); on a GPU
NumPy runs on at most 2^22 elements (the host would take too long on more), so compare its
rate, not its time. "x cupy" is CuPy's time over kapi's (above 1: kapi is faster).

On kapi's CPU device NumPy runs on all n elements ("x np" is NumPy's time over kapi's), and a
STREAM triad kernel (a = b + s * c, float32, 12 bytes per element) on the same device gives
the bandwidth the reductions (4 bytes per element read) and scans (8: read and written) are
compared with ("x triad": their bytes per second over the triad's). The triad is timed before
each section and its median taken, so that other load on the machine moves both alike.

    python3 bench/primitives.py [--device gpu|cpu] [--log2n 27] [--reps N] [--no-sort]
                                [--only sort,argsort,cumsum,reduce,random] [--batches N]
                                [--sort-dtypes uint32,float32] [--no-np-argsort]
                                [--variant NAME:VAR=VALUE[+VAR=VALUE...] ...] [--rounds N]

--no-sort leaves out sort and argsort (cumsum, reduce and random only); --only runs just the
sections named ("sort" and "argsort" both mean the sort section). --sort-dtypes: the key
dtypes of the sort section (float32: uniform [0, 1), whose few exponents skew the top digit);
--no-np-argsort leaves out np.argsort's timing (seconds for 2^24 keys; argsort's results are
still checked against it).
--variant runs the whole script once per variant (and --rounds times over, variants in
turn), each in its own process with the environment variables given (KAPI_* switches read at
import), so that one run shows before and after side by side; "default" names no change.

Defaults: 2^27 elements on a GPU, 2^22 on the CPU driver. Finishes in well under 2 minutes.
"""

import argparse

import numpy as np
import plotting
from timing import median_batch

import kapi

RATIOS = plotting.Ratios()  # kapi's rows against each peer, for --json / --plot


def line(name, sec, n, ref_sec=None, ref_name="", bw=None, record=True):
    """bw: (bytes per element, the triad's bytes per second): the bandwidth and its ratio.
    record=False: the ratio is printed only (not one against a peer for --json)."""
    ratio = f"   {ref_sec / sec:6.2f} x {ref_name}" if ref_sec else ""
    mine = record and not name.startswith(("cupy", "np"))
    if ref_sec and mine:
        RATIOS.add(name, "CuPy" if ref_name.startswith("cupy") else "NumPy", ref_sec / sec)
    if bw:
        rate = bw[0] * n / sec
        ratio += f"   {rate / 1e9:7.2f} GB/s {rate / bw[1]:5.2f} x triad"
        if mine:
            RATIOS.add(name, "triad's bandwidth", rate / bw[1])
    print(f"  {name:36s} {sec * 1e3:10.3f} ms {n / sec / 1e6:10.1f} Melem/s{ratio}")


@kapi.kernel
def triad(item, a, b, c, s):
    i = item.get_id(0)
    a[i] = b[i] + s * c[i]


class Triad:
    """The STREAM triad on the device, timed on demand; bw() the best of its samples.

    Each sample: launches back to back for warm_s seconds (the cores, their clocks and the
    memory's busy: after a pause of host work a 16-core Xeon measured two thirds of this
    triad's bandwidth in single calls), then the median of `batches` batches of `reps`
    launches and one wait each. The same triad for bench/primitives.py and bench/argred.py,
    and the best sample as the denominator: the bandwidth the device shows it can reach, so
    that load from elsewhere during one sample does not flatter the ratios."""

    def __init__(self, dev, n, reps=3, batches=5, warm_s=0.05):
        self.n, self.samples = n, []
        self.sync = dev.default_queue.wait
        self.reps, self.batches, self.warm_s = reps, batches, warm_s
        self.a, self.b, self.c = (kapi.ones(n, dtype=np.float32, device=dev) for _ in range(3))

    def sample(self):
        args = (self.a, self.b, self.c, np.float32(3))

        def launch():
            kapi.call_kernel(triad, kapi.Range(self.n), *args)

        t = median_batch(launch, self.sync, self.reps, self.batches, self.warm_s)
        self.samples.append(12 * self.n / t)
        return self.samples[-1]

    def bw(self):
        return max(self.samples)

    def describe(self):
        s = sorted(self.samples)
        return (
            f"{self.bw() / 1e9:.2f} GB/s (best of {len(s)} samples; median "
            f"{s[len(s) // 2] / 1e9:.2f}, worst {s[0] / 1e9:.2f})"
        )


def stable_order(h, idx):
    """Whether idx is np.argsort(h, kind="stable") for h without NaNs (the one permutation
    that orders h, equal keys by index), checked in O(n) rather than by argsorting again."""
    n = h.size
    if (
        idx.dtype != np.int64
        or idx.shape != (n,)
        or idx.min(initial=0) < 0
        or idx.max(initial=0) >= n
    ):
        return False
    if not np.all(np.bincount(idx, minlength=n) == 1):
        return False
    s = h[idx]
    up, eq = s[1:] > s[:-1], s[1:] == s[:-1]
    return bool(np.all(up | (eq & (idx[1:] > idx[:-1]))))


def sort_rows(dev, hk, nh, n, cp, time_k, time_c, time_h, np_argsort=True):
    """Sort and argsort of hk's dtype beside CuPy (if cp) and NumPy (on the CPU device,
    NumPy's time over kapi's: "x np.sort"; argsort also over np.sort's and kapi.sort's)."""
    k = kapi.asarray(hk, device=dev)
    if not np.array_equal(kapi.sort(k).asnumpy(), np.sort(hk)):
        raise SystemExit("kapi.sort differs from np.sort")
    if not stable_order(hk[:nh], kapi.argsort(k[:nh]).asnumpy()):
        raise SystemExit("kapi.argsort differs from np.argsort(kind='stable')")
    what = "random, 32 bits" if hk.dtype.kind == "u" else "uniform [0, 1)"
    tag = "" if hk.dtype.kind == "u" else f" {hk.dtype}"
    print(f"sort of {hk.dtype} ({what}: 4 radix passes)")
    t_sort = time_k(lambda: kapi.sort(k))
    c_sort = None
    if cp is not None:
        ck = cp.asarray(hk)
        c_sort = time_c(lambda: cp.sort(ck))
    line(f"kapi.sort{tag}", t_sort, n, c_sort, "cupy.sort")
    if c_sort:
        line("cupy.sort", c_sort, n)
    t_np = time_h(lambda: np.sort(hk[:nh]))
    line("np.sort (host)", t_np, nh)
    if nh == n and cp is None:
        line(f"kapi.sort{tag}", t_sort, n, t_np, "np.sort")
    t_arg = time_k(lambda: kapi.argsort(k))
    c_arg = time_c(lambda: cp.argsort(ck)) if cp is not None else None
    line(f"kapi.argsort{tag}", t_arg, n, c_arg, "cupy.argsort")
    if c_arg:
        line("cupy.argsort", c_arg, n)
    if np_argsort:
        t = time_h(lambda: np.argsort(hk[:nh], kind="stable"))
        line("np.argsort(kind='stable') (host)", t, nh)
    if nh == n and cp is None:
        if np_argsort:
            line(f"kapi.argsort{tag}", t_arg, n, t, "np.argsort")
        line(f"kapi.argsort{tag}", t_arg, n, t_np, "np.sort", record=False)
        line(f"kapi.argsort{tag}", t_arg, n, t_sort, "kapi.sort", record=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None, help="kapi filter string (default device if none)")
    ap.add_argument("--log2n", type=int, default=None)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--no-sort", action="store_true", help="leave out sort and argsort")
    ap.add_argument("--only", default=None, help="sections to run: sort,cumsum,reduce,random")
    ap.add_argument("--batches", type=int, default=None, help="timed batches (median taken)")
    ap.add_argument("--sort-dtypes", default="uint32", help="the sort section's key dtypes")
    ap.add_argument("--no-np-argsort", action="store_true", help="np.argsort left untimed")
    ap.add_argument("--variant", action="append", default=[], help="NAME:VAR=VALUE[+VAR=VALUE]")
    ap.add_argument("--rounds", type=int, default=1, help="times over the variants")
    plotting.add_args(ap)
    args = ap.parse_args()
    if args.variant:
        return run_variants(args)
    try:
        run(args)
    finally:
        RATIOS.write(args, f"kapi's primitives against their peers ({args.device or 'default'})")


def run_variants(args):
    """This script once per variant and round, each in a process of its own (the switches
    are read at import), its output labelled with the variant."""
    import os
    import subprocess
    import sys

    argv, skip = [], False
    for a in sys.argv[1:]:  # the command line without --variant / --rounds / --json / --plot
        if skip:
            skip = False
            continue
        if a in ("--variant", "--rounds", "--json", "--plot"):
            skip = True
            continue
        if a.startswith(("--variant=", "--rounds=", "--json=", "--plot=")):
            continue
        argv.append(a)
    bad = 0
    for r in range(args.rounds):
        for v in args.variant:
            name, _, sets = v.partition(":")
            env = dict(os.environ)
            for kv in filter(None, sets.split("+")):
                key, eq, val = kv.partition("=")
                if not eq:
                    raise SystemExit(f"--variant {v!r}: {kv!r} is not VAR=VALUE")
                env[key] = val
            print(f"=== variant {name} ({sets or 'no change'}), round {r + 1}", flush=True)
            rc = subprocess.call([sys.executable, __file__, *argv], env=env)
            bad += rc != 0
    if bad:
        raise SystemExit(f"{bad} variant run(s) failed")


def run(args):
    only = set(args.only.split(",")) if args.only else {"sort", "cumsum", "reduce", "random"}
    if "argsort" in only:
        only.add("sort")
    if args.no_sort:
        only.discard("sort")
    dev = kapi.Device(args.device) if args.device else kapi.default_device()
    log2n = args.log2n or (27 if dev.is_gpu else 22)
    n = 1 << log2n
    cpu = dev.device_type == "cpu"
    nh = n if cpu else min(n, 1 << 22)  # NumPy's size
    # the CPU device: batches of 3 calls after 50 ms of calls back to back (Triad's docstring),
    # as the triad is timed
    reps = args.reps or (5 if dev.is_gpu else 3)
    warm_s = 0.0 if dev.is_gpu else 0.05
    batches = args.batches or (5 if dev.is_gpu else 3)
    sync = dev.default_queue.wait
    rng = np.random.default_rng(0)
    hk = rng.integers(0, 2**32, n, dtype=np.uint32)
    hf = rng.random(n, dtype=np.float32)
    from kapi._numeric import scan as _scan
    from kapi._numeric import sort_radix as _radix

    kinds = [_radix._scatter_kind(dev), _radix._scatter_kind(dev, True), _scan._scan_kind(dev)]
    # "serial": sequential within each block; the blocks run on every core
    kinds = [k + " blocks" if k == "serial" else k for k in kinds]
    print(
        f"device: {dev.name}, {dev.max_compute_units} compute units; n = 2^{log2n} (NumPy: "
        f"2^{nh.bit_length() - 1}); radix scatter: {kinds[0]} (argsort: {kinds[1]}), "
        f"scan: {kinds[2]}"
    )

    cp = None
    if dev.is_gpu:
        try:
            import cupy as cp
        except ImportError:
            print("  (cupy does not import: no CuPy comparison)")
    csync = cp.cuda.Device().synchronize if cp is not None else None

    def time_k(fn):
        return median_batch(fn, sync, reps, batches, warm_s)

    def time_c(fn):
        return median_batch(fn, csync, reps, batches)

    def time_h(fn):
        return median_batch(fn, lambda: None, 1, max(3, args.batches or 3))

    # sort / argsort of uint32 (and float32: --sort-dtypes)
    if "sort" in only:
        for sdt in args.sort_dtypes.split(","):
            if sdt not in ("uint32", "float32"):
                raise SystemExit(f"--sort-dtypes takes uint32 and float32, not {sdt!r}")
            keys = hk if sdt == "uint32" else hf
            sort_rows(dev, keys, nh, n, cp, time_k, time_c, time_h, not args.no_np_argsort)

    # cumsum and reduce of float32
    tri = Triad(dev, n) if cpu else None

    def bw(nbytes):
        return (nbytes, tri.bw()) if tri else None

    f = kapi.asarray(hf, device=dev)
    if "cumsum" in only:
        got = kapi.cumsum(f).asnumpy()
        want = np.cumsum(hf, dtype=np.float64)
        if not np.allclose(got, want, rtol=1e-3, atol=1e-3 * n**0.5):
            raise SystemExit("kapi.cumsum differs from np.cumsum")
        if tri:
            print(f"triad of float32 on the device: {tri.sample() / 1e9:.2f} GB/s")
        print("cumsum of float32")
        t = time_k(lambda: kapi.cumsum(f))
        c = None
        if cp is not None:
            cf = cp.asarray(hf)
            c = time_c(lambda: cp.cumsum(cf))
        th = time_h(lambda: np.cumsum(hf[:nh]))
        line(
            "kapi.cumsum", t, n, c or (th if nh == n else None), "cupy.cumsum" if c else "np", bw(8)
        )
        if c:
            line("cupy.cumsum", c, n)
        line("np.cumsum (host)", th, nh, bw=bw(8) if nh == n else None)
    if "reduce" in only:
        hmax = hf.copy()
        hmax[n // 2 + 1] = 2.0  # argmax's answer away from the ends
        fm = kapi.asarray(hmax, device=dev)
        checks = [
            ("max", float(kapi.reduce("max", fm)), hmax.max()),
            ("min", float(kapi.reduce("min", fm)), hmax.min()),
            ("add", float(kapi.reduce("add", fm)), hmax.sum(dtype=np.float64)),
            ("argmax", int(fm.argmax()), int(hmax.argmax())),
            ("argmin", int(fm.argmin()), int(hmax.argmin())),
        ]
        for name, got, want in checks:
            if not np.isclose(got, want, rtol=1e-4):
                raise SystemExit(f"kapi {name} of float32 gives {got}, NumPy {want}")
        if tri:
            tri.sample()
        print("reductions of float32")
        cfm = cp.asarray(hmax) if cp is not None else None
        rows = [
            ('kapi.reduce("max")', lambda: kapi.reduce("max", fm), "max", lambda: hmax.max()),
            ('kapi.reduce("min")', lambda: kapi.reduce("min", fm), "min", lambda: hmax.min()),
            ('kapi.reduce("add")', lambda: kapi.reduce("add", fm), "sum", lambda: hmax.sum()),
            ("x.max()", lambda: fm.max(), "max", lambda: hmax.max()),
            ("x.sum()", lambda: fm.sum(), "sum", lambda: hmax.sum()),
            ("x.argmax()", lambda: fm.argmax(), "argmax", lambda: hmax.argmax()),
            ("x.argmin()", lambda: fm.argmin(), "argmin", lambda: hmax.argmin()),
        ]
        for name, fn, cname, hfn in rows:
            t = time_k(fn)
            c = time_c(lambda cname=cname: getattr(cfm, cname)()) if cp is not None else None
            th = time_h(hfn) if nh == n else None
            line(name, t, n, c or th, f"cupy {cname}" if c else f"np.{cname}", bw(4))
        if nh == n:
            for name, hfn in (
                ("np.max", hmax.max),
                ("np.sum", hmax.sum),
                ("np.argmax", hmax.argmax),
            ):
                line(f"{name} (host)", time_h(hfn), n, bw=bw(4))
        else:
            line("np.max (host)", time_h(lambda: hmax[:nh].max()), nh)
        if tri:
            tri.sample()
            print(f"triad: {tri.describe()}")
    if "random" not in only:
        return

    # random float32
    g = kapi.random.default_rng(1, device=dev)
    u = g.random(n, dtype=np.float32).asnumpy()
    if not (0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 1e-3):
        raise SystemExit("kapi.random uniform numbers look wrong")
    print("random float32: uniform [0, 1), standard normal")
    t = time_k(lambda: g.random(n, dtype=np.float32))
    cg = cp.random.default_rng(1) if cp is not None else None
    c = time_c(lambda: cg.random(n, dtype=cp.float32)) if cp is not None else None
    line("kapi Generator.random", t, n, c, "cupy")
    if c:
        line("cupy Generator.random", c, n)
    hg = np.random.default_rng(1)
    line("np.random Generator.random (host)", time_h(lambda: hg.random(nh, dtype=np.float32)), nh)
    t = time_k(lambda: g.standard_normal(n, dtype=np.float32))
    c = time_c(lambda: cg.standard_normal(n, dtype=cp.float32)) if cp is not None else None
    line("kapi Generator.standard_normal", t, n, c, "cupy")
    if c:
        line("cupy Generator.standard_normal", c, n)
    line(
        "np.random standard_normal (host)",
        time_h(lambda: hg.standard_normal(nh, dtype=np.float32)),
        nh,
    )


if __name__ == "__main__":
    main()
