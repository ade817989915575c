"""Where a work-group tree reduction's time goes on kapi's CPU driver: the same kernel cut
after its copy into local memory and after each tree step, timed in turn in one process
(minimum over --repeat launches, per group of --wg, launch wall time / groups).

`S<k>` runs the steps with stride > k (`S<wg/2>`: the copy and the final store only; `S0`:
the whole reduction); `copy` is the copy alone. Differences between columns are what the
steps cost. In cache with the default 2^20 elements (4 MiB); with `--flush MIB` a copy of that
many MiB runs (untimed) before every launch, so the input comes from memory as in
bench/cpu_barrier.py, where the triad and the scan run between two reductions.

    PYTHONPATH=$PWD .venv/bin/python bench/cpu_tree_steps.py [--log2n 20] [--wg 256] [--repeat 201]
        [--flush 512]
"""

import argparse
import time

import numpy as np

import kapi
from kapi import kernel_api as K


def tree_until(stop):
    @kapi.kernel
    def tree(nditem, a, out, slm):
        lid = nditem.get_local_id(0)
        slm[lid] = a[nditem.get_global_id(0)]
        K.group_barrier(nditem.get_group())
        stride = nditem.get_local_range(0) // 2
        while stride > stop:
            if lid < stride:
                slm[lid] += slm[lid + stride]
            K.group_barrier(nditem.get_group())
            stride //= 2
        if lid == 0:
            out[nditem.get_group().get_group_id(0)] = slm[0]

    return tree


@kapi.kernel
def flush_copy(item, dst, src):
    i = item.get_id(0)
    dst[i] = src[i]


@kapi.kernel
def copy_only(nditem, a, out, slm):
    lid = nditem.get_local_id(0)
    slm[lid] = a[nditem.get_global_id(0)]
    K.group_barrier(nditem.get_group())
    if lid == 0:
        out[nditem.get_group().get_group_id(0)] = slm[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=20)
    ap.add_argument("--wg", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=201)
    ap.add_argument("--flush", type=int, default=0, help="MiB copied before each launch")
    args = ap.parse_args()
    cpu = kapi.Device("cpu")
    n, wg = 1 << args.log2n, args.wg
    h = np.random.default_rng(1).random(n, dtype=np.float32)
    a = kapi.asarray(h, device=cpu)
    r = kapi.empty(n // wg, dtype="f4", device=cpu)
    slm = K.LocalAccessor((wg,), np.float32)
    nd = kapi.NdRange((n,), (wg,))
    stops = [wg // 2]
    while stops[-1] > 1:
        stops.append(stops[-1] // 2)
    stops.append(0)
    kernels = {f"S{s}": tree_until(s) for s in stops}
    fns = {name: (lambda k=k: kapi.call_kernel(k, nd, a, r, slm)) for name, k in kernels.items()}
    fns["copy"] = lambda: kapi.call_kernel(copy_only, nd, a, r, slm)
    for f in fns.values():
        f()
    np.testing.assert_allclose(r.asnumpy(), h.reshape(-1, wg)[:, 0], rtol=0)  # copy ran last
    fns["S0"]()
    np.testing.assert_allclose(r.asnumpy(), h.reshape(-1, wg).sum(axis=1), rtol=1e-4)
    flush = lambda: None  # noqa: E731
    if args.flush:
        fl = args.flush << 18  # float32 elements in each of the two buffers
        fsrc = kapi.asarray(np.ones(fl, dtype=np.float32), device=cpu)
        fdst = kapi.empty(fl, dtype="f4", device=cpu)
        rng = kapi.Range(fl)

        def flush():
            kapi.call_kernel(flush_copy, rng, fdst, fsrc)  # synchronous, as the timed launches

        flush()
    times = {k: [] for k in fns}
    for _ in range(args.repeat):
        for k, f in fns.items():
            flush()
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    groups = n // wg
    where = f", input from memory ({args.flush} MiB copied before each)" if args.flush else ""
    print(
        f"{cpu}, 2^{args.log2n} f32, groups of {wg}{where}: ns per group (minimum of {args.repeat})"
    )
    print("  ".join(f"{k} {min(v) * 1e9 / groups:.1f}" for k, v in times.items()))


if __name__ == "__main__":
    main()
