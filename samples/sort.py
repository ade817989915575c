"""Sorting without writing kernels: kapi.sort, kapi.argsort, kapi.topk and kapi.unique (a
radix sort generated as kernels on the device where the array lives, the default device),
and a gather by the sorting indices, checked against NumPy."""

import sys
import time

import numpy as np

import kapi


def main(n=1 << 20):
    rng = np.random.default_rng(0)
    hkeys = rng.integers(0, 1 << 16, n).astype(np.uint32)
    hvals = rng.standard_normal(n).astype(np.float32)
    hvals[::1000] = np.nan  # NaNs sort last, as NumPy
    keys, vals = kapi.asarray(hkeys), kapi.asarray(hvals)
    checks = {}

    kapi.sort(keys)  # the first call compiles the radix sort's kernels
    t0 = time.perf_counter()
    s = kapi.sort(keys)
    s.sycl_queue.wait()
    dt = time.perf_counter() - t0
    checks["sort uint32"] = (s, np.sort(hkeys))
    checks["sort float32 with NaNs"] = (kapi.sort(vals), np.sort(hvals))
    checks["argsort (stable)"] = (kapi.argsort(keys), np.argsort(hkeys, kind="stable"))
    checks["sort rows of a 2-D array"] = (
        kapi.sort(vals.reshape(1024, -1)),
        np.sort(hvals.reshape(1024, -1)),
    )
    top, where = kapi.topk(kapi.asarray(np.nan_to_num(hvals)), 5)
    order = np.argsort(-np.nan_to_num(hvals), kind="stable")[:5]
    checks["topk values"] = (top, np.nan_to_num(hvals)[order])
    checks["topk indices"] = (where, order)
    u, c = kapi.unique(keys, return_counts=True)
    wu, wc = np.unique(hkeys, return_counts=True)
    checks["unique"] = (u, wu)
    checks["unique counts"] = (c, wc)

    ok = True
    for name, (got, want) in checks.items():
        good = np.array_equal(got.asnumpy(), want, equal_nan=want.dtype.kind == "f")
        ok &= good
        print(f"  {name:28s} {'OK' if good else 'MISMATCH'}")
    print(
        f"sort of {n} uint32 on {keys.device.name}: {dt * 1e3:.3f} ms -> "
        f"{'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
