"""fastmath on the GPU, beside CuPy in the same process:

1. Generator.standard_normal float32 (2^27 by default) with kapi.random's normal kernels
   compiled accurately, with fastmath={"afn"} (the default: approximate float32 log and
   sqrt, as cuRAND's Box-Muller) and with fastmath=True, beside CuPy's Generator. Every
   variant's normals are checked first: no NaN, moments and a Kolmogorov-Smirnov distance of
   2^20 of them against the normal CDF, and against the accurate kernel's (same stream).
   KAPI_RANDOM_FASTMATH (read at import) sets which variant the process starts with and is
   printed; the variants are then switched in-process (kapi.random.FASTMATH / _FAST).
2. A math-heavy elementwise kernel (sqrt, log, exp, sin, cos and a division per element) of
   float32, kapi @kapi.kernel accurate and fastmath=True, beside CuPy ElementwiseKernels of
   the same expression compiled by NVRTC plainly and with --use_fast_math, each checked
   against NumPy (float64) first.

    python3 bench/fastmath.py [--device gpu] [--log2n 27]
"""

import argparse
import math
import os

import numpy as np
from timing import median_batch

import kapi
from kapi import random as R


def _ks_normal(z: np.ndarray) -> float:
    x = np.sort(z.astype(np.float64))
    f = 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    n = x.size
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def check_normals(z: np.ndarray, ref: np.ndarray | None, name: str) -> str:
    if np.isnan(z).any() or np.isinf(z).any():
        raise SystemExit(f"{name}: NaN or inf among the normals")
    n = z.size
    m, v = float(z.mean()), float(z.var())
    if abs(m) > 5 / math.sqrt(n) or abs(v - 1) > 5 * math.sqrt(2 / n):
        raise SystemExit(f"{name}: mean {m}, variance {v}")
    ks = _ks_normal(z[: 1 << 20])
    if ks > 1.63 / math.sqrt(1 << 20):
        raise SystemExit(f"{name}: KS distance {ks:.2e} past the 1% critical value")
    note = f"mean {m:+.1e} var {v:.5f} KS {ks:.1e}"
    if ref is not None:
        d = np.abs(z.astype(np.float64) - ref)
        if d.max() > 1e-3:
            raise SystemExit(f"{name}: differs from the accurate normals by {d.max():.2e}")
        note += f"; vs accurate: max {d.max():.1e}, {np.mean(d > 1e-5) * 100:.4f}% > 1e-5"
    return note


NORMAL_VARIANTS = [  # (name, FASTMATH, kernel options)
    ("accurate (KAPI_RANDOM_FASTMATH=0)", False, None),
    ("fastmath={'afn'} (default)", True, {"fastmath": frozenset(("afn",))}),
    ("fastmath=True", True, {"fastmath": frozenset(("fast",))}),
]


def normals(dev, n, reps, batches, cp):
    sync = dev.default_queue.wait
    env = os.environ.get("KAPI_RANDOM_FASTMATH", "(unset)")
    print(f"standard_normal float32, n = 2^{n.bit_length() - 1}; KAPI_RANDOM_FASTMATH={env}")
    print(f"  process starts with kapi.random.FASTMATH = {R.FASTMATH}")
    peer = None
    if cp is not None:
        cg = cp.random.default_rng(1)
        csync = cp.cuda.Device().synchronize
        peer = median_batch(lambda: cg.standard_normal(n, dtype=cp.float32), csync, reps, batches)
        print(f"  {'cupy Generator.standard_normal (XORWOW)':40s} {peer * 1e3:8.3f} ms")
        try:  # kapi's algorithm, like for like (CuPy's default_rng is XORWOW)
            pg = cp.random.Generator(cp.random.Philox4x3210(1))
            pg.standard_normal(16, dtype=cp.float32)
        except Exception as e:  # noqa: BLE001 - a peer that is not there is not an error
            print(f"  (cupy Philox4x3210: {type(e).__name__}: {e})")
            pg = None
        if pg is not None:
            pp = median_batch(lambda: pg.standard_normal(n, dtype=cp.float32), csync, reps, batches)
            print(f"  {'cupy Generator(Philox4x3210)':40s} {pp * 1e3:8.3f} ms")
    saved = R.FASTMATH, R._FAST
    ref = None
    for name, on, opts in NORMAL_VARIANTS:
        R.FASTMATH = on
        if opts:
            R._FAST = opts
        R._PLANS.clear()
        z = kapi.random.default_rng(5, device=dev).standard_normal(1 << 22, dtype=np.float32)
        z = z.asnumpy()
        note = check_normals(z, ref, name)
        if ref is None:
            ref = z.astype(np.float64)
        g = kapi.random.default_rng(1, device=dev)
        t = median_batch(lambda g=g: g.standard_normal(n, dtype=np.float32), sync, reps, batches)
        ratio = f"  {peer / t:5.2f} x cupy" if peer else ""
        print(f"  kapi {name:35s} {t * 1e3:8.3f} ms{ratio}   [{note}]")
    R.FASTMATH, R._FAST = saved
    R._PLANS.clear()


def body(item, x, out):
    i = item.get_id(0)
    v = x[i]
    out[i] = math.sqrt(v) * math.log(v) + math.exp(-v) * math.sin(v) + math.cos(v) / v


EXPR = "out = sqrtf(v) * logf(v) + expf(-v) * sinf(v) + cosf(v) / v"


def elementwise(dev, n, reps, batches, cp):
    sync = dev.default_queue.wait
    print(f"math kernel, float32, n = 2^{n.bit_length() - 1}: {EXPR}")
    h = np.random.default_rng(3).uniform(0.25, 8.0, n).astype(np.float32)
    hs = h[: 1 << 20].astype(np.float64)
    want = np.sqrt(hs) * np.log(hs) + np.exp(-hs) * np.sin(hs) + np.cos(hs) / hs
    x = kapi.asarray(h, device=dev)
    out = kapi.empty_like(x)
    for name, k, cp_opts in [
        ("accurate", kapi.kernel(body), ()),
        ("fastmath=True", kapi.kernel(body, fastmath=True), ("--use_fast_math",)),
    ]:

        def run(k=k):
            kapi.call_kernel(k, kapi.Range(n), x, out)

        run()
        got = out.asnumpy()[: 1 << 20]
        err = np.max(np.abs(got - want) / (1 + np.abs(want)))
        if err > (2e-6 if name == "accurate" else 2e-5):
            raise SystemExit(f"kapi {name}: error {err:.2e} against NumPy")
        t = median_batch(run, sync, reps, batches)
        row = f"  kapi {name:15s} {t * 1e3:8.3f} ms (err {err:.1e})"
        if cp is not None:
            ek = cp.ElementwiseKernel("float32 v", "float32 out", EXPR, "fm", options=cp_opts)
            cx = cp.asarray(h)
            cout = cp.empty_like(cx)
            ek(cx, cout)
            cerr = np.max(np.abs(cp.asnumpy(cout[: 1 << 20]) - want) / (1 + np.abs(want)))
            c = median_batch(lambda ek=ek, cx=cx, cout=cout: ek(cx, cout),
                             cp.cuda.Device().synchronize, reps, batches)  # fmt: skip
            tag = " --use_fast_math" if cp_opts else ""
            row += f"   cupy{tag} {c * 1e3:8.3f} ms (err {cerr:.1e})  {c / t:5.2f} x cupy"
        print(row)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--log2n", type=int, default=None)
    args = ap.parse_args()
    dev = kapi.Device(args.device)
    n = 1 << (args.log2n or (27 if dev.is_gpu else 20))
    reps, batches = (5, 5) if dev.is_gpu else (1, 3)
    print(f"device: {dev.name}")
    cp = None
    if dev.is_gpu:
        try:
            import cupy as cp
        except ImportError:
            print("  (cupy does not import: no CuPy comparison)")
    normals(dev, n, reps, batches, cp)
    elementwise(dev, n >> 1, reps, batches, cp)


if __name__ == "__main__":
    main()
