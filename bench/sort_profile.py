"""Two kapi.sort (or kapi.argsort) calls of 2^log2n random uint32 on the GPU, the second
checked against NumPy: the process bench/gpu_sort4.sh runs under Nsight Compute, which skips
the first call's kernels (compiled and cached by then) and profiles the second's.

    python3 bench/sort_profile.py [--log2n 27] [--argsort]

The KAPI_SORT_* switches in the environment apply (read at import).
"""

import argparse
import sys

import numpy as np

import kapi


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--argsort", action="store_true")
    ap.add_argument("--device", default="gpu", help="kapi filter string")
    args = ap.parse_args()
    h = np.random.default_rng(0).integers(0, 2**32, 1 << args.log2n, dtype=np.uint32)
    dev = kapi.Device(args.device)
    k = kapi.asarray(h, device=dev)
    fn = kapi.argsort if args.argsort else kapi.sort
    fn(k)
    dev.default_queue.wait()
    got = fn(k).asnumpy()
    want = np.argsort(h, kind="stable") if args.argsort else np.sort(h)
    ok = np.array_equal(got, want)
    print(f"{'argsort' if args.argsort else 'sort'} of 2^{args.log2n}: {'ok' if ok else 'WRONG'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
