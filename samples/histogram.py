"""Histogram with global atomics: every work-item increments the bin of its value."""

import sys
import time

import numpy as np

import kapi as dpex
from kapi import kernel_api as kapi


@dpex.kernel
def histogram(item, data, bins):
    v = data[item.get_id(0)]
    ref = kapi.AtomicRef(
        bins, v, memory_order=kapi.MemoryOrder.RELAXED, memory_scope=kapi.MemoryScope.DEVICE
    )
    ref.fetch_add(bins.dtype.type(1))


def main(n=1 << 20, nbins=64):
    h = np.random.default_rng(3).integers(0, nbins, n).astype(np.int32)
    data = dpex.asarray(h)
    bins = dpex.zeros(nbins, dtype=np.int32)
    dpex.call_kernel(histogram, kapi.Range(n), data, bins)
    bins.fill(0)
    t0 = time.perf_counter()
    dpex.call_kernel(histogram, kapi.Range(n), data, bins)
    dt = time.perf_counter() - t0
    ok = np.array_equal(bins.asnumpy(), np.bincount(h, minlength=nbins))
    print(
        f"histogram n={n} bins={nbins} on {bins.device.name}: {dt * 1e3:.3f} ms -> "
        f"{'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
