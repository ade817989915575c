"""Inclusive prefix sum (scan): Hillis-Steele within work-groups in local memory, then a
second kernel adds the scanned group totals."""

import sys
import time

import numpy as np

import kapi as dpex
from kapi import kernel_api as kapi

WG = 256


@dpex.kernel
def scan_groups(nditem: kapi.NdItem, a, out, sums, slm):
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    n = nditem.get_local_range(0)
    slm[lid] = a[gid]
    offset = 1
    while offset < n:
        kapi.group_barrier(nditem.get_group())
        v = slm[lid]
        if lid >= offset:
            v += slm[lid - offset]
        kapi.group_barrier(nditem.get_group())
        slm[lid] = v
        offset *= 2
    kapi.group_barrier(nditem.get_group())
    out[gid] = slm[lid]
    if lid == n - 1:
        sums[nditem.get_group().get_group_id(0)] = slm[lid]


@dpex.kernel
def add_offsets(item, out, scanned_sums, wg):
    i = item.get_id(0)
    g = i // wg
    if g > 0:
        out[i] += scanned_sums[g - 1]


def main(n=WG * WG):
    h = (np.arange(n) % 5).astype(np.int64)
    a = dpex.asarray(h)
    out = dpex.empty_like(a)
    ngroups = n // WG
    sums = dpex.empty(ngroups, dtype=np.int64)
    sums_scanned = dpex.empty(ngroups, dtype=np.int64)
    dummy = dpex.empty(1, dtype=np.int64)
    slm = kapi.LocalAccessor(WG, np.int64)

    def scan():
        dpex.call_kernel(scan_groups, kapi.NdRange(n, WG), a, out, sums, slm)
        # ngroups <= WG: one group scans the group totals
        dpex.call_kernel(
            scan_groups, kapi.NdRange(ngroups, ngroups), sums, sums_scanned, dummy, slm
        )
        dpex.call_kernel(add_offsets, kapi.Range(n), out, sums_scanned, WG)

    scan()  # the first run compiles the two kernels
    t0 = time.perf_counter()
    scan()
    dt = time.perf_counter() - t0
    ok = np.array_equal(out.asnumpy(), np.cumsum(h))
    print(f"scan n={n} int64 on {a.device.name}: {dt * 1e3:.3f} ms -> {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
