"""kapi.sort / kapi.argsort of uint32 and row-wise kapi.reduce / kapi.cumsum of float32 on kapi's
CPU device, checked against NumPy, then timed (medians over batches of calls with one wait).
Run it under two checkouts alternately to compare them (PYTHONPATH picks the kapi):

    PYTHONPATH=<checkout> python3 bench/cpu_sort_rows.py LABEL [--log2n 22]
"""

import argparse

import numpy as np
from timing import median_batch

import kapi


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("--log2n", type=int, default=22)
    args = ap.parse_args()
    dev = kapi.Device("cpu")
    sync = dev.default_queue.wait
    n = 1 << args.log2n
    hk = np.random.default_rng(0).integers(0, 2**32, n, dtype=np.uint32)
    k = kapi.asarray(hk, device=dev)
    if not np.array_equal(kapi.sort(k).asnumpy(), np.sort(hk)):
        raise SystemExit("kapi.sort differs from np.sort")
    ts = median_batch(lambda: kapi.sort(k), sync, 1, 5)
    ta = median_batch(lambda: kapi.argsort(k), sync, 1, 5)
    print(f"{args.label}: 2^{args.log2n} uint32: sort {ts * 1e3:.1f} ms, argsort {ta * 1e3:.1f} ms")
    for shape in [(65536, 64), (4096, 1024), (16, 1 << 18)]:
        h = np.random.default_rng(0).random(shape, dtype=np.float32)
        x = kapi.asarray(h, device=dev)
        if not np.array_equal(kapi.reduce("max", x, axis=1).asnumpy(), h.max(axis=1)):
            raise SystemExit("kapi.reduce differs from np.max")
        t = median_batch(lambda x=x: kapi.reduce("max", x, axis=1), sync, 3, 5)
        t2 = median_batch(lambda x=x: kapi.cumsum(x, axis=1), sync, 3, 5)
        print(
            f"{args.label}: {shape} float32: kapi.reduce('max', axis=1) {t * 1e3:.2f} ms, "
            f"kapi.cumsum(axis=1) {t2 * 1e3:.2f} ms"
        )


if __name__ == "__main__":
    main()
