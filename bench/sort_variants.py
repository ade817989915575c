"""kapi.sort's radix scatter variants (issue 13: sort of 2^27 uint32 at least 0.5x cupy.sort),
each in its own process, so that one that faults (CUDA device lost) cannot hide the others.

    python3 bench/sort_variants.py [--device gpu] [--log2n 27] [--variants ballot:8,shuffle]
                                   [--sanitize default,ballot:8] [--sanitize-log2n 14]

A variant is KIND[:KEYS[:MAXREG[:PREFETCH]]] with KIND one of kapi/_numeric/sort_radix.py's KINDS
(KAPI_SORT_SCATTER) or "default" (the device's own choice), KEYS the keys per work-item of a
ballot chunk or a onesweep tile (KAPI_SORT_KEYS_PER_ITEM; empty: the default), MAXREG the
ballot or onesweep kernel's register cap per work-item (KAPI_SORT_MAXREG: @kapi.kernel's
max_registers, 0 for none) and PREFETCH 0 or 1 (KAPI_SORT_PREFETCH: the ballot scatter loads
the next chunk's keys during this one); e.g. ballot:8:64, ballot::80, ballot:8::0. Onesweep
variants take two more fields, KIND:KEYS:::LOOKBACK:ORDER (KAPI_SORT_LOOKBACK: status words per
look-back step; KAPI_SORT_LOOKBACK_ORDER: relaxed or acquire), e.g. onesweep:16:::8:relaxed,
and a seventh, MATCH (KAPI_SORT_MATCH: how the ranking of both kinds finds a key's equal digits
in its batch, "ballot" or "atomic"), e.g. ballot:16:::::atomic. Any variant may end in
+NAME=VALUE parts, each setting KAPI_SORT_NAME (e.g. default+LEAN=0: the kernels without the
lean indices and loads, kapi/_numeric/sort_kernels.py's SORT_LEAN; +V32=0: argsort's onesweep
passes with int64 values throughout, sort_radix.py's SORT_V32; +NARROW=0: the onesweep pass's
places in 64 bits, SORT_NARROW; +ARGSORT_IN_PLACE=0: argsort copies unsigned keys first;
+FIXED_GROUP=1: the kernels declare their one work-group size, SORT_FIXED_GROUP; +OR_ALL=1:
the atomic match without a branch, SORT_OR_ALL; +KEYS_UNROLL=4: the keys pass loads 4 keys per
turn, SORT_KEYS_UNROLL; +ARGSORT_ITEMS=N, +ARGSORT_MAXREG=N: argsort's onesweep keys per
work-item and register cap; +EARLY=1 or 2: the onesweep tile's digit counts published before
its ranking (2: its look-back too), SORT_EARLY; +RANK_LOCAL=1: the onesweep ranks in local
memory, SORT_RANK_LOCAL; +PERSIST=N: N persistent onesweep groups per SM (keys alone), each
loading its next tile's keys while it finishes this one, SORT_PERSIST; +KEYS_ASYNC=1: the
keys pass launched without a wait, SORT_KEYS_ASYNC; +HIST_COPIES=N: the keys pass's digit
counts in N copies per group, SORT_HIST_COPIES; +UNTRIED=1: KEYS
may also be 12, 20 or 24, which kapi refuses since 24 lost the device on an H200).
"cupy" times cupy.sort and cupy.argsort on the same data. First, where compute-sanitizer
exists, a small sort and argsort of each --sanitize variant runs under its memcheck (then
synccheck and racecheck for the first one). Then each variant sorts 2^log2n random uint32 (seed
0): kapi.sort is checked against np.sort of the whole array, kapi.argsort against
np.argsort(kind="stable") of 2^22 of them, and both are timed (medians over batches, as
bench/primitives.py). The table gives ms per call and the ratio to cupy.sort (above 1: kapi is
faster; the target is 0.8), and argsort's to cupy.argsort likewise.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = "default,onesweep,ballot,cupy"


TRIM = 0  # --trim: keys left off the end (a partial last tile)


def _data(log2n, distinct=0):
    """2^log2n - TRIM random uint32 (seed 0); with distinct, drawn from that many values."""
    rng = np.random.default_rng(0)
    if not distinct:
        h = rng.integers(0, 2**32, 1 << log2n, dtype=np.uint32)
    else:
        values = rng.integers(0, 2**32, distinct, dtype=np.uint32)
        h = values[rng.integers(0, distinct, 1 << log2n)]
    return h[: h.size - TRIM]


def _ref_path(log2n, distinct=0):
    name = f"kapi_sort_ref_{log2n}_{distinct}_{TRIM}.npy"
    return os.path.join(os.environ.get("TMPDIR", "/tmp"), name)


def _sorted(h, log2n, distinct=0):
    """np.sort(h): above 2^22 from the file the parent process wrote (once for all variants)."""
    return np.load(_ref_path(log2n, distinct)) if log2n > 22 else np.sort(h)


def worker(args):
    """One variant, in this process (its environment names it): prints one RESULT line."""
    from timing import median_batch

    h = _data(args.log2n, args.distinct)
    nh = min(h.size, (1 << 22) - TRIM)  # with TRIM, a partial last tile here too
    out = {"variant": args.name}
    if args.name == "cupy":
        import cupy as cp

        c = cp.asarray(h)
        sync = cp.cuda.Device().synchronize
        ok = bool((cp.sort(c).get() == _sorted(h, args.log2n, args.distinct)).all())
        out["sort_ms"] = 1e3 * median_batch(lambda: cp.sort(c), sync, args.reps, 5)
        out["argsort_ms"] = 1e3 * median_batch(lambda: cp.argsort(c), sync, args.reps, 5)
        out["check"] = "ok" if ok else "WRONG"
        print("RESULT " + json.dumps(out), flush=True)
        return
    import kapi
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    if os.environ.get("KAPI_SORT_UNTRIED") == "1":  # +UNTRIED=1: also 12, 20, 24 keys per item
        _radix._RANK_ITEMS_OK += ("12", "20", "24")
    dev = kapi.Device(args.device) if args.device else kapi.default_device()
    out["kind"] = _radix._scatter_kind(dev)
    if _radix._scatter_kind(dev, True) != out["kind"]:
        out["kind"] += f" (argsort: {_radix._scatter_kind(dev, True)})"
    ranked = out["kind"].split()[0] in ("ballot", "onesweep")
    one = out["kind"].startswith("onesweep")  # the sort's kind (argsort's may differ)
    out["keys_per_item"] = _radix._rank_items(one) if ranked else ""
    out["max_registers"] = (_radix._rank_max_registers(one) or 0) if ranked else ""
    out["prefetch"] = int(_radix._rank_prefetch()) if out["kind"].startswith("ballot") else ""
    lb = _sort_kernels._os_lookback() if "onesweep" in out["kind"] else ("", "")
    out["lookback"] = f"{lb[0]} {lb[1]}".strip()
    out["match"] = _sort_kernels._rank_match() if ranked else ""
    out["lean"] = int(_sort_kernels.SORT_LEAN)
    # argsort's int32 values, the onesweep pass's narrow places, argsort reading keys in place
    out["v32"] = f"{int(_radix.SORT_V32)} {int(_sort_kernels.SORT_NARROW)} "
    out["v32"] += str(int(_radix.ARGSORT_IN_PLACE))
    out["v32"] += f" fixed={int(_radix.SORT_FIXED_GROUP)} or_all={int(_sort_kernels.SORT_OR_ALL)}"
    out["v32"] += f" unroll={_sort_kernels.SORT_KEYS_UNROLL}"
    out["v32"] += (
        f" early={_sort_kernels.SORT_EARLY} rank_local={int(_sort_kernels._ranks_local())}"
    )
    out["v32"] += f" persist={_sort_kernels.SORT_PERSIST} async={int(_radix.SORT_KEYS_ASYNC)}"
    out["v32"] += f" copies={_sort_kernels.SORT_HIST_COPIES}"
    if "onesweep" in out["kind"]:  # argsort's onesweep tiles: keys per work-item, register cap
        out["v32"] += f" a_items={_radix._os_items_values()}"
        out["v32"] += f" a_maxreg={_radix._rank_max_registers(True, True) or 0}"
    k = kapi.asarray(h, device=dev)
    t0 = time.perf_counter()
    s = kapi.sort(k).asnumpy()
    out["first_call_s"] = round(time.perf_counter() - t0, 2)
    want = _sorted(h, args.log2n, args.distinct)
    bad = []
    if not np.array_equal(s, want):
        bad.append(f"sort: {int((s != want).sum())} of {s.size} differ")
    got = kapi.argsort(k[:nh]).asnumpy()
    if not np.array_equal(got, np.argsort(h[:nh], kind="stable")):
        bad.append("argsort differs from np.argsort(kind='stable')")
    if not np.array_equal(k[:nh].asnumpy(), h[:nh]):
        bad.append("argsort changed its input")
    out["check"] = "; ".join(bad) or "ok"
    if not args.check_only:
        sync = dev.default_queue.wait
        out["sort_ms"] = 1e3 * median_batch(lambda: kapi.sort(k), sync, args.reps, 5)
        out["argsort_ms"] = 1e3 * median_batch(lambda: kapi.argsort(k), sync, args.reps, 5)
    print("RESULT " + json.dumps(out), flush=True)
    if bad:
        sys.exit(1)


def _env(variant):
    variant, *extra = variant.split("+")
    kind, _, rest = variant.partition(":")
    keys, _, rest = rest.partition(":")
    maxreg, _, rest = rest.partition(":")
    prefetch, _, rest = rest.partition(":")
    lookback, _, rest = rest.partition(":")
    order, _, match = rest.partition(":")
    env = dict(os.environ)
    names = (
        "KEYS_PER_ITEM",
        "SCATTER",
        "MAXREG",
        "PREFETCH",
        "LOOKBACK",
        "LOOKBACK_ORDER",
        "LEAN",
        "V32",
        "ONESWEEP_KEYS",
        "NARROW",
        "ARGSORT_IN_PLACE",
        "FIXED_GROUP",
        "OR_ALL",
        "UNTRIED",
        "KEYS_UNROLL",
        "ARGSORT_ITEMS",
        "ARGSORT_MAXREG",
        "EARLY",
        "RANK_LOCAL",
        "PERSIST",
        "KEYS_ASYNC",
        "HIST_COPIES",
    )
    for name in names + ("MATCH",):
        env.pop("KAPI_SORT_" + name, None)
    if match:
        env["KAPI_SORT_MATCH"] = match
    if lookback:
        env["KAPI_SORT_LOOKBACK"] = lookback
    if order:
        env["KAPI_SORT_LOOKBACK_ORDER"] = order
    if prefetch:
        env["KAPI_SORT_PREFETCH"] = prefetch
    if kind not in ("cupy", "default"):
        env["KAPI_SORT_SCATTER"] = kind
    if keys:
        env["KAPI_SORT_KEYS_PER_ITEM"] = keys
    if maxreg:
        env["KAPI_SORT_MAXREG"] = maxreg
    for x in extra:  # +NAME=VALUE: KAPI_SORT_NAME=VALUE (e.g. +LEAN=0)
        name, _, value = x.partition("=")
        env["KAPI_SORT_" + name] = value
    return env


def _run(cmd, env, timeout):
    """(exit status, combined output); 124 when it ran past timeout."""
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"") + (e.stderr or b"")
        return 124, text.decode(errors="replace") if isinstance(text, bytes) else text


def _worker_cmd(args, variant, log2n, check_only=False):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", variant, "--log2n", str(log2n)]
    cmd += ["--reps", str(args.reps), "--distinct", str(args.distinct), "--trim", str(TRIM)]
    cmd += ["--device", args.device] if args.device else []
    return cmd + (["--check-only"] if check_only else [])


def _tail(text, n=12):
    return "\n".join("    " + ln for ln in text.strip().splitlines()[-n:])


def sanitize(args):
    cs = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.path.exists(cs):
        print("compute-sanitizer: not found (no sanitizer runs)")
        return
    variants = [v for v in args.sanitize.split(",") if v and v != "cupy"]
    _ensure_ref(args.sanitize_log2n)
    for i, v in enumerate(variants):
        for tool in args.sanitize_tools.split(",") if i == 0 else ("memcheck",):
            cmd = [cs, "--tool", tool, "--error-exitcode", "99"]
            cmd += _worker_cmd(args, v, args.sanitize_log2n, check_only=True)
            t0 = time.perf_counter()
            rc, text = _run(cmd, _env(v), args.timeout)
            summary = [ln for ln in text.splitlines() if "ERROR SUMMARY" in ln]
            print(f"compute-sanitizer {tool:9s} {v:10s} 2^{args.sanitize_log2n}: exit {rc}, "
                  f"{summary[-1].strip('= ') if summary else 'no summary'}, "
                  f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
            if rc != 0:
                print(_tail(text, 30))


def _ensure_ref(log2n, distinct=0):
    if log2n > 22 and not os.path.exists(_ref_path(log2n, distinct)):
        np.save(_ref_path(log2n, distinct), np.sort(_data(log2n, distinct)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None, help="kapi filter string (default device if none)")
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--distinct", type=int, default=0, help="keys drawn from this many random "
                    "values (0: all random): equal digits collide in the ranking")  # fmt: skip
    ap.add_argument("--variants", default=DEFAULT)
    ap.add_argument("--trim", type=int, default=0, help="sort 2^log2n minus this many keys "
                    "(a partial last tile)")  # fmt: skip
    ap.add_argument("--sanitize", default="default,ballot:8", help="variants run under "
                    "compute-sanitizer first ('' for none)")  # fmt: skip
    ap.add_argument("--sanitize-log2n", type=int, default=14)
    ap.add_argument("--sanitize-tools", default="memcheck,synccheck,racecheck", help="the "
                    "compute-sanitizer tools run on the first --sanitize variant")  # fmt: skip
    ap.add_argument("--timeout", type=int, default=150, help="seconds per process")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--check-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    global TRIM
    TRIM = args.trim
    if args.worker:
        args.name = args.worker
        sys.path.insert(0, HERE)
        worker(args)
        return
    if args.sanitize:
        sanitize(args)
    t0 = time.perf_counter()
    _ensure_ref(args.log2n, args.distinct)
    print(f"reference np.sort of 2^{args.log2n} uint32: {time.perf_counter() - t0:.1f} s")
    rows = []
    for v in [v for v in args.variants.split(",") if v]:
        t0 = time.perf_counter()
        rc, text = _run(_worker_cmd(args, v, args.log2n), _env(v), args.timeout)
        res = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
        r = json.loads(res[-1][7:]) if res else {"variant": v, "check": f"exit {rc}, no result"}
        r["rc"], r["wall_s"] = rc, round(time.perf_counter() - t0, 1)
        rows.append(r)
        print(f"{v}: exit {rc} in {r['wall_s']} s: {json.dumps(r)}", flush=True)
        if rc != 0:
            print(_tail(text))
    cupy = next((r.get("sort_ms") for r in rows if r["variant"] == "cupy"), None)
    cupya = next((r.get("argsort_ms") for r in rows if r["variant"] == "cupy"), None)
    what = f"{args.distinct} distinct values" if args.distinct else "random, 32 bits"
    trim = f" - {TRIM}" if TRIM else ""
    print(f"\nsort of 2^{args.log2n}{trim} uint32 ({what}), ms per call; x cupy = "
          "cupy.sort / kapi.sort, x cupy.argsort likewise (target >= 0.8)")  # fmt: skip
    print("| variant | scatter | keys/item | max regs | prefetch | look-back | match | lean "
          "| v32 narrow in-place | sort ms | x cupy | argsort ms | x cupy.argsort "
          "| check | exit |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        s, a = r.get("sort_ms"), r.get("argsort_ms")
        mine = r["variant"] != "cupy"
        ratio = f"{cupy / s:.2f}" if cupy and s and mine else ""
        ratio_a = f"{cupya / a:.2f}" if cupya and a and mine else ""
        print(f"| {r['variant']} | {r.get('kind', '')} | {r.get('keys_per_item', '')} | "
              f"{r.get('max_registers', '')} | {r.get('prefetch', '')} | {r.get('lookback', '')} | "
              f"{r.get('match', '')} | {r.get('lean', '')} | {r.get('v32', '')} | "
              f"{f'{s:.2f}' if s else ''} | {ratio} | {f'{a:.2f}' if a else ''} | {ratio_a} | "
              f"{r['check']} | {r['rc']} |")  # fmt: skip


if __name__ == "__main__":
    main()
