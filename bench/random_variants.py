"""Shapes of kapi.random's float32 kernels in one process, beside CuPy's Generator (where CuPy
imports): uniform and standard normal of 2^27 float32 for each variant of the generator's
switches (kapi/random.py: PHILOX32, the Philox rounds on uint32 words; WRITE, how a group
writes its staged outputs out; SINCOS, the normals' own cos/sin; STAGED, outputs staged in
local memory and written coalesced; WG, work-items per group of the staged kernel; CPW, counters
per work-item), so that one GPU run shows which shape is fastest. CuPy's default_rng is
XORWOW (curand's device API); its Philox4x3210 generator, the same algorithm as kapi's, is
timed beside it where CuPy has it. Each variant's normals are checked against the default's
(same stream; float32 math within 4e-6) before they are timed.

    python3 bench/random_variants.py [--device gpu] [--log2n 27] [--rows N]
"""

import argparse

import numpy as np
from timing import median_batch

import kapi
from kapi import random as R

VARIANTS = [  # (name, SINCOS, STAGED, WG, CPW, PHILOX32, WRITE: None for the default's)
    ("default (sincos, staged, wg 256, 4 counters, uint64 words)", True, None, 256, 4, False, None),
    ("write-out strided (before)", True, None, 256, 4, False, "strided"),
    ("uint32 words in the Philox rounds (KAPI_PHILOX32=1)", True, None, 256, 4, True, None),
    ("math.cos/math.sin (fastmath: sin/cos.approx)", False, None, 256, 4, False, None),
    ("centred angle: cos/sin.approx in [-pi, pi)", "centred", None, 256, 4, False, None),
    ("write-out: full groups unchecked", True, None, 256, 4, False, "full"),
    ("2 counters per work-item", True, None, 256, 2, False, None),
    ("4 counters, wg 128", True, None, 128, 4, False, None),
    ("4 counters, wg 512", True, None, 512, 4, False, None),
    ("math.cos/math.sin, write-out strided", False, None, 256, 4, False, "strided"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--log2n", type=int, default=None)
    ap.add_argument("--rows", type=int, default=None, help="only the first ROWS variants")
    args = ap.parse_args()
    dev = kapi.Device(args.device)
    n = 1 << (args.log2n or (27 if dev.is_gpu else 20))
    reps, batches = (5, 5) if dev.is_gpu else (1, 3)
    sync = dev.default_queue.wait
    print(f"device: {dev.name}; n = 2^{n.bit_length() - 1} float32")
    cp = None
    if dev.is_gpu:
        try:
            import cupy as cp
        except ImportError:
            print("  (cupy does not import: no CuPy comparison)")
    peer = {}
    if cp is not None:
        cg = cp.random.default_rng(1)
        csync = cp.cuda.Device().synchronize
        peer["random"] = median_batch(lambda: cg.random(n, dtype=cp.float32), csync, reps, batches)
        peer["standard_normal"] = median_batch(
            lambda: cg.standard_normal(n, dtype=cp.float32), csync, reps, batches
        )
        print(
            f"  cupy: random {peer['random'] * 1e3:.3f} ms, "
            f"standard_normal {peer['standard_normal'] * 1e3:.3f} ms"
        )
        try:  # CuPy builds without it, or whose Generator refuses it: no such row
            pg = cp.random.Generator(cp.random.Philox4x3210(1))
            pg.random(16, dtype=cp.float32)
        except Exception as e:  # noqa: BLE001 - a peer that is not there is not an error
            print(f"  (cupy Philox4x3210: {type(e).__name__}: {e})")
            pg = None
        if pg is not None:
            pr = median_batch(lambda: pg.random(n, dtype=cp.float32), csync, reps, batches)
            pn = median_batch(lambda: pg.standard_normal(n, dtype=cp.float32), csync, reps, batches)
            print(
                f"  cupy Philox4x3210: random {pr * 1e3:.3f} ms, standard_normal {pn * 1e3:.3f} ms"
            )
    ref = None
    default_write = R.WRITE
    for name, sincos, staged, wg, cpw, p32, write in VARIANTS[: args.rows]:
        R.SINCOS, R.STAGED, R.WG, R.CPW, R.PHILOX32 = sincos, staged, wg, cpw, p32
        R.WRITE = write or default_write
        R._PLANS.clear()
        z = kapi.random.default_rng(5, device=dev).standard_normal(1 << 16, dtype=np.float32)
        z = z.asnumpy()
        if ref is None:
            ref = z
        elif not np.allclose(z, ref, rtol=1e-6, atol=4e-6):
            raise SystemExit(f"{name}: normals differ from the default's")
        g = kapi.random.default_rng(1, device=dev)
        row = []
        for kind in ("random", "standard_normal"):
            fn = getattr(g, kind)
            t = median_batch(lambda fn=fn: fn(n, dtype=np.float32), sync, reps, batches)
            ratio = f" ({peer[kind] / t:.2f}x cupy)" if kind in peer else ""
            row.append(f"{kind} {t * 1e3:.3f} ms{ratio}")
        print(f"  {name:58s} " + ", ".join(row))


if __name__ == "__main__":
    main()
