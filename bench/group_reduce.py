"""Sum of n float32 values three ways in kapi, and CuPy's `sum` where CuPy imports (the GPU
machine): a sub-group reduction (reduce_over_group over nd_item.get_sub_group()), a
work-group reduce_over_group, and a hand-written local-memory tree reduction.

Every kernel first accumulates ITEMS elements per work-item (coalesced: work-item i reads
i, i + G, i + 2G, ... for G work-items in all, four independent sums), then combines the
partial sums of its group and adds the group's total to the result with one atomic. Each sum is
checked against NumPy before it is timed. Times are medians over batches of launches with one
wait each (as bench/gpu.py); GB/s counts the bytes read (4 n).

    python3 bench/group_reduce.py [--device gpu|cpu] [--log2n 28] [--items 256] [--wg 256]

Defaults: 2^28 elements on a GPU, 2^22 on the CPU driver.
"""

import argparse

import numpy as np
from timing import median_batch

import kapi
from kapi import kernel_api as K

GroupOp = K.GroupOp


@kapi.device_func
def strided_sum(nd, a, items):
    # four independent chains keep four loads in flight per work-item
    stride = nd.get_global_range(0)
    k = nd.get_global_id(0)
    s0 = np.float32(0)
    s1 = np.float32(0)
    s2 = np.float32(0)
    s3 = np.float32(0)
    for _ in range(items // 4):
        s0 += a[k]
        s1 += a[k + stride]
        s2 += a[k + 2 * stride]
        s3 += a[k + 3 * stride]
        k += 4 * stride
    return (s0 + s1) + (s2 + s3)


@kapi.kernel
def sub_group_sum(nd, a, out, items):
    acc = strided_sum(nd, a, items)
    sg = nd.get_sub_group()
    total = K.reduce_over_group(sg, acc, GroupOp.ADD)
    if sg.leader:
        K.AtomicRef(out, 0).fetch_add(total)


@kapi.kernel
def work_group_sum(nd, a, out, items):
    acc = strided_sum(nd, a, items)
    g = nd.get_group()
    total = K.reduce_over_group(g, acc, GroupOp.ADD)
    if g.leader:
        K.AtomicRef(out, 0).fetch_add(total)


@kapi.kernel
def tree_sum(nd, a, out, items, tmp):
    acc = strided_sum(nd, a, items)
    g = nd.get_group()
    lid = nd.get_local_id(0)
    tmp[lid] = acc
    K.group_barrier(g)
    s = nd.get_local_range(0) // 2
    while s > 0:
        if lid < s:
            tmp[lid] += tmp[lid + s]
        K.group_barrier(g)
        s //= 2
    if lid == 0:
        K.AtomicRef(out, 0).fetch_add(tmp[0])


def kapi_case(kern, nd_range, out, args):
    events = []

    def launch():
        out.fill(0)
        _, ev = kapi.call_kernel_async(kern, nd_range, (), *args)
        events[:] = [ev]

    def sync():
        if events:
            kapi.wait_all(events)
            events.clear()

    return launch, sync


def check(name, got, want):
    if not np.isclose(got, want, rtol=1e-3):
        raise SystemExit(f"{name}: sum {got} differs from NumPy's {want}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None, help="kapi filter string (default: gpu if any)")
    ap.add_argument("--log2n", type=int, default=None)
    ap.add_argument("--items", type=int, default=256, help="elements per work-item")
    ap.add_argument("--wg", type=int, default=256, help="work-group size (a power of two)")
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args()
    dev = kapi.Device(args.device) if args.device else kapi.default_device()
    log2n = args.log2n or (28 if dev.is_gpu else 22)
    n, items, wg = 1 << log2n, args.items, args.wg
    reps = args.reps or (20 if dev.is_gpu else 3)
    assert items % 4 == 0 and n % (items * wg) == 0, "n must be a multiple of items * wg"
    host = np.random.default_rng(0).random(n, dtype=np.float32)
    want = float(host.sum(dtype=np.float64))
    a = kapi.asarray(host, device=dev)
    out = kapi.zeros(1, dtype=np.float32, device=dev)
    nd = kapi.NdRange((n // items,), (wg,))
    cases = {
        "sub-group reduce_over_group": (sub_group_sum, (a, out, items)),
        "work-group reduce_over_group": (work_group_sum, (a, out, items)),
        "local-memory tree": (tree_sum, (a, out, items, K.LocalAccessor(wg, np.float32))),
    }
    print(f"device: {dev.name}; n = 2^{log2n} f32, {items} per work-item, groups of {wg}")
    print(f"sub-group sizes {dev.sub_group_sizes}")
    rows = []
    for name, (kern, kargs) in cases.items():
        launch, sync = kapi_case(kern, nd, out, kargs)
        launch()
        sync()
        check(name, float(out.asnumpy()[0]), want)
        rows.append((name, median_batch(launch, sync, reps)))
    try:
        import cupy as cp
    except ImportError:
        cp = None
    if cp is not None and dev.is_gpu:
        ca = cp.asarray(host)
        check("cupy.sum", float(ca.sum()), want)
        rows.append(("cupy.sum", median_batch(ca.sum, cp.cuda.Device().synchronize, reps)))
    base_name = "cupy.sum" if "cupy.sum" in dict(rows) else "local-memory tree"
    base = dict(rows)[base_name]
    print(f"{'kernel':<30} {'ms':>9} {'GB/s':>9} {'vs ' + base_name:>22}")
    for name, t in rows:
        print(f"{name:<30} {t * 1e3:9.3f} {4 * n / t / 1e9:9.1f} {base / t:21.2f}x")


if __name__ == "__main__":
    main()
