"""Work-group tree reduction in local memory, then one atomic add per group."""

import sys
import time

import numpy as np

import kapi as dpex
from kapi import kernel_api as kapi

WG = 128


@dpex.kernel
def reduce_sum(nditem: kapi.NdItem, a, result, slm):
    lid = nditem.get_local_id(0)
    slm[lid] = a[nditem.get_global_id(0)]
    stride = nditem.get_local_range(0) // 2
    while stride > 0:
        kapi.group_barrier(nditem.get_group())
        if lid < stride:
            slm[lid] += slm[lid + stride]
        stride //= 2
    if lid == 0:
        kapi.AtomicRef(result, 0).fetch_add(slm[0])


def main(n=1 << 18):
    h = (np.arange(n) % 10).astype(np.float32)
    a = dpex.asarray(h)
    result = dpex.zeros(1, dtype=np.float32)
    slm = kapi.LocalAccessor(WG, np.float32)
    space = kapi.NdRange(n, WG)
    dpex.call_kernel(reduce_sum, space, a, result, slm)
    result.fill(0)
    t0 = time.perf_counter()
    dpex.call_kernel(reduce_sum, space, a, result, slm)
    dt = time.perf_counter() - t0
    got, want = float(result.asnumpy()[0]), float(h.sum(dtype=np.float64))
    ok = got == want
    print(
        f"reduction n={n} wg={WG} on {a.device.name}: {dt * 1e3:.3f} ms, sum {got:.0f} -> "
        f"{'OK' if ok else f'MISMATCH (want {want:.0f})'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
