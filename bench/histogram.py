"""kapi.histogram beside NumPy's (the CPU device) or CuPy's (a GPU) on the same data, and
beside kapi's general path (it sorts the data; what every histogram took before the counts
kernels) in the same process.

float32 normal data; equal bins over a given range (10, 100, 1000 bins) and 101 given edges
spaced unevenly (a binary search per value); with --weights, float32 weights (each value
adds its own). Every result is checked before it is timed: against the peer's, or with
weights against NumPy's float64 sums. Times: the median over rounds of the median of batches
(kapi and CuPy: calls back to back and one wait); the rounds alternate kapi, its sorting path
and the peer.

    python3 bench/histogram.py [--device cpu|gpu] [--log2n 24] [--rounds 5] [--cpu-rows R]
        [--weights] [--json F --plot bench/plots/histogram_cpu.png]
"""

import argparse
import statistics
import time

import numpy as np
from plotting import Ratios, add_args
from timing import median_batch

import kapi
from kapi._numeric import histogram as H
from kapi._numeric import replay as _replay


def cases(rng):
    edges = np.sort(rng.uniform(-4, 4, 101))
    edges[0], edges[-1] = -4.0, 4.0
    return [
        ("10 bins", {"bins": 10, "range": (-4.0, 4.0)}),
        ("100 bins", {"bins": 100, "range": (-4.0, 4.0)}),
        ("1000 bins", {"bins": 1000, "range": (-4.0, 4.0)}),
        ("100 given edges", {"bins": edges}),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpu-rows", type=int, default=0, help="the CPU kernel's rows (both kinds)")
    ap.add_argument("--weights", action="store_true", help="float32 weights, uniform in [0, 1)")
    add_args(ap)
    args = ap.parse_args()
    if args.cpu_rows:
        H._CPU_ROWS_EQUAL = H._CPU_ROWS_SEARCH = args.cpu_rows
    dev = kapi.Device(args.device)
    sync = dev.default_queue.wait
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    h = rng.standard_normal(n).astype(np.float32)
    x = kapi.asarray(h, device=dev)
    w = rng.random(n).astype(np.float32) if args.weights else None
    wx = kapi.asarray(w, device=dev) if args.weights else None
    gpu = dev.device_type != "cpu"
    if gpu:
        import cupy as cp

        peer_name = "CuPy"
        hp = cp.asarray(h)
        wp = cp.asarray(w) if args.weights else None

        def peer(kw):
            b = kw["bins"]
            b = cp.asarray(b) if isinstance(b, np.ndarray) else b
            return cp.histogram(hp, bins=b, range=kw.get("range"), weights=wp)[0]

        peer_sync = cp.cuda.Device().synchronize
        to_host = cp.asnumpy
    else:
        peer_name = "NumPy"

        def peer(kw):
            return np.histogram(h, weights=w, **kw)[0]

        def peer_sync():
            return None

        def to_host(a):
            return a

    print(f"device: {dev.name}, {dev.max_compute_units} compute units; n = 2^{args.log2n}", end="")
    print(f"; CPU rows of counts a chunk: {H._CPU_ROWS_EQUAL}, search {H._CPU_ROWS_SEARCH}", end="")
    print("; float32 weights" if args.weights else "")
    todo = []
    for name, kw in cases(rng):
        ours = dict(kw, weights=wx)
        if isinstance(kw["bins"], np.ndarray):
            ours["bins"] = kapi.asarray(kw["bins"], device=dev)
        want = to_host(peer(kw))
        if args.weights:  # float64 sums: NumPy's given edges subtract float32 running sums
            want = np.histogram(h, weights=w.astype(np.float64), **kw)[0]
        for counts in (True, False):
            H.COUNTS = counts
            _replay.clear_plans()
            got = kapi.histogram(x, **ours)[0].asnumpy()
            same = np.allclose(got, want, rtol=1e-4) if args.weights else np.array_equal(got, want)
            if not same:
                raise SystemExit(f"{name} (counts={counts}) differs from {peer_name}")
        todo.append((name, kw, ours))
    H.COUNTS = True
    print(f"checked against {peer_name}")
    times = {}
    for _ in range(args.rounds):
        for name, kw, ours in todo:
            for counts in (True, False):
                H.COUNTS = counts

                def f(ours=ours):
                    return kapi.histogram(x, **ours)

                times.setdefault((name, counts), []).append(median_batch(f, sync, 2, 3))
            H.COUNTS = True
            times.setdefault((name, "peer"), []).append(
                median_batch(lambda kw=kw: peer(kw), peer_sync, 2, 3)
            )
    ratios = Ratios()
    med = statistics.median
    print(
        f"ms, median of {args.rounds} rounds; x {peer_name}: its time / kapi's (> 1: kapi faster)"
    )
    for name, _kw, _ours in todo:
        tp, tk, ts = (med(times[name, v]) for v in ("peer", True, False))
        print(
            f"  {name:18s} {peer_name} {tp * 1e3:8.3f}  kapi {tk * 1e3:8.3f} ({tp / tk:6.2f}x)"
            f"  kapi sorting {ts * 1e3:8.3f} ({tp / ts:6.2f}x)  sorting / kapi {ts / tk:6.2f}x"
        )
        ratios.add(name, f"{peer_name} / kapi", tp / tk)
        ratios.add(name, f"{peer_name} / kapi sorting", tp / ts)
    what = "float32, weighted" if args.weights else "float32"
    title = f"kapi.histogram on {dev.name}, 2^{args.log2n} {what} ({time.strftime('%F')})"
    ratios.write(args, title)


if __name__ == "__main__":
    main()
