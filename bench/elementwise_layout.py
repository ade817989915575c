"""Elementwise operations on arrays that do not collapse to one dimension (slices, broadcast
rows and columns, a transposed operand), beside NumPy (the CPU device) or CuPy (a GPU), with
the index space's dimension 0 on the last axis from INNER_FIRST elements (kapi/_numeric/
ufunc.py) and, in the same process, the settings named by --variants: `before` (dimension 0
always on the first axis: what every such launch ran before), `now` (the default) and
`innerN` (the last axis in dimension 0 from N elements on).

Every result is checked against NumPy first. Times: the median over rounds of the median of
batches (kapi and CuPy: calls back to back and one wait); the rounds alternate the settings.

    python3 bench/elementwise_layout.py [--device cpu|gpu] [--rounds 5] [--variants before,now]
        [--tall 20,24] [--json F --plot bench/plots/elementwise_layout_cpu.png]
"""

import argparse
import statistics
import time

import numpy as np
from plotting import Ratios, add_args
from timing import median_batch

import kapi
from kapi._numeric import ufunc

_SETTINGS = {"before": 1 << 62, "now": ufunc.INNER_FIRST}


def _empty(like, shape):
    """An empty float32 array of shape in like's library and on its device."""
    if isinstance(like, np.ndarray):
        return np.empty(shape, np.float32)
    if isinstance(like, kapi.Array):
        return kapi.empty(shape, dtype=np.float32, device=like.device)
    import cupy as cp

    return cp.empty(shape, cp.float32)


def cases(rng, big, tall_log2=()):
    """(name, host operands, kapi operands from them, the operation on either)."""
    n = 4096 if big else 2048
    sq = rng.random((n, n), dtype=np.float32)
    tall = rng.random((1 << 20, 32), dtype=np.float32)
    cube = rng.random((256, 256, 64), dtype=np.float32)
    out = []

    def add(name, arrays, views, op):
        out.append((name, arrays, views, op))

    add(f"({n}, {n}) left half + 1", [sq], lambda a: (a[:, : n // 2],), lambda x: x + 1)
    add(f"({n}, {n}) + column", [sq], lambda a: (a, a[:, :1]), lambda x, c: x - c)
    add(f"({n}, {n}) + row", [sq], lambda a: (a, a[:1, :]), lambda x, r: x * r)
    add(f"({n}, {n}) + its transpose", [sq], lambda a: (a, a.T), lambda x, t: x + t)
    for m in (3, 8, 16, 32):
        add(
            f"(2^20, {m}) + ({m},)",
            [tall],
            lambda a, m=m: (a[:, :m], a[0, :m]),
            lambda x, r: x + r,
        )
    for k in tall_log2:  # the same broadcast at other sizes, into a new array and into out=
        t3 = rng.random((1 << k, 4), dtype=np.float32)
        add(f"(2^{k}, 3) + (3,)", [t3], lambda a: (a[:, :3], a[0, :3]), lambda x, r: x + r)
        add(
            f"(2^{k}, 3) + (3,), out=",
            [t3],
            lambda a: (a[:, :3], a[0, :3], _empty(a, (a.shape[0], 3))),
            lambda x, r, o: np.add(x, r, out=o),
        )
    add("(256, 256, 64)[..., :32] * 2", [cube], lambda a: (a[..., :32],), lambda x: x * 2)
    add(
        "(256, 256, 64) - mean over axis 2",
        [cube],
        lambda a: (a, a[..., :1]),
        lambda x, m: x - m,
    )
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default="before,now")
    ap.add_argument("--tall", default="", help="log2 sizes of (N, 3) + (3,) cases, e.g. 20,24")
    add_args(ap)
    args = ap.parse_args()
    dev = kapi.Device(args.device)
    sync = dev.default_queue.wait
    gpu = dev.device_type != "cpu"
    if gpu:
        import cupy as cp

        peer_name, peer_sync, to_peer = "CuPy", cp.cuda.Device().synchronize, cp.asarray
    else:
        peer_name, peer_sync, to_peer = "NumPy", (lambda: None), (lambda h: h)
    variants = args.variants.split(",")
    for v in variants:
        if v.startswith("inner"):
            _SETTINGS[v] = int(v[5:])
    print(f"device: {dev.name}, {dev.max_compute_units} compute units; variants {variants}")

    def run(x):
        _ = x._ptr  # a pending (lazy) result is computed when its memory is asked for
        return x

    def setting(v):
        ufunc.INNER_FIRST = _SETTINGS[v]
        ufunc._LAUNCH_PLANS.clear()

    todo = []
    rng = np.random.default_rng(0)
    tall = [int(k) for k in args.tall.split(",") if k]
    for name, arrays, views, op in cases(rng, True, tall):
        hv = views(*arrays)
        kv = views(*(kapi.asarray(h, device=dev) for h in arrays))
        pv = views(*(to_peer(h) for h in arrays))
        want = op(*hv)
        for v in variants:
            setting(v)
            got = run(op(*kv)).asnumpy()
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{name} ({v})")
        todo.append((name, kv, pv, op))
    print(f"checked against NumPy; ms, median of {args.rounds} rounds")
    times = {}
    for _ in range(args.rounds):
        for name, kv, pv, op in todo:
            for v in variants:
                setting(v)
                f = lambda kv=kv, op=op: run(op(*kv))  # noqa: E731
                times.setdefault((name, v), []).append(median_batch(f, sync, 3, 3))
            f = lambda pv=pv, op=op: op(*pv)  # noqa: E731
            times.setdefault((name, "peer"), []).append(median_batch(f, peer_sync, 3, 3))
    setting("now")
    ratios = Ratios()
    med = statistics.median
    for name, _kv, _pv, _op in todo:
        tp = med(times[name, "peer"])
        line = f"  {name:36s} {peer_name} {tp * 1e3:8.3f}"
        for v in variants:
            t = med(times[name, v])
            line += f"  {v} {t * 1e3:8.3f} ({tp / t:6.2f}x)"
            ratios.add(name, f"{peer_name} / kapi {v}", tp / t)
        print(line)
    title = f"elementwise, arrays of 2-3 dimensions, on {dev.name} ({time.strftime('%F')})"
    ratios.write(args, title)


if __name__ == "__main__":
    main()
