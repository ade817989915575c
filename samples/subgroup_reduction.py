"""Sub-group (warp-level) reduction: a shuffle-down tree, and reduce_over_group on the
sub-group, each followed by one atomic add per sub-group.

A sub-group is 32 work-items on NVIDIA GPUs and one on kapi's CPU device; the same kernel
is right for any size (the tree's width comes from the sub-group itself).
"""

import sys
import time

import numpy as np

import kapi as dpex
from kapi import kernel_api as kapi

WG = 128  # a multiple of every sub-group size, so the shuffle tree sees full sub-groups


@dpex.kernel
def shuffle_tree_sum(nditem: kapi.NdItem, a, result):
    sg = nditem.get_sub_group()
    x = a[nditem.get_global_id(0)]
    offset = sg.get_max_local_range() // 2
    while offset > 0:
        x += kapi.shuffle_down(sg, x, offset)  # lane i adds lane i + offset
        offset //= 2
    if sg.leader:
        kapi.AtomicRef(result, 0).fetch_add(x)


@dpex.kernel
def sub_group_sum(nditem: kapi.NdItem, a, result):
    sg = nditem.get_sub_group()
    x = kapi.reduce_over_group(sg, a[nditem.get_global_id(0)], kapi.GroupOp.ADD)
    if sg.leader:
        kapi.AtomicRef(result, 1).fetch_add(x)


def main(n=1 << 18):
    h = (np.arange(n) % 10).astype(np.float32)  # small integers: the sum is exact in float32
    a = dpex.asarray(h)
    result = dpex.zeros(2, dtype=np.float32)
    space = kapi.NdRange(n, WG)
    dpex.call_kernel(shuffle_tree_sum, space, a, result)
    dpex.call_kernel(sub_group_sum, space, a, result)
    result.fill(0)
    t0 = time.perf_counter()
    dpex.call_kernel(shuffle_tree_sum, space, a, result)
    dpex.call_kernel(sub_group_sum, space, a, result)
    dt = time.perf_counter() - t0
    got, want = result.asnumpy(), float(h.sum(dtype=np.float64))
    ok = bool((got == want).all())
    sizes = a.device.sub_group_sizes
    print(
        f"sub-group reduction n={n} wg={WG} on {a.device.name} (sub-group sizes {sizes}): "
        f"{dt * 1e3:.3f} ms, sums {got[0]:.0f} {got[1]:.0f} -> "
        f"{'OK' if ok else f'MISMATCH (want {want:.0f})'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
