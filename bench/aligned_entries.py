"""What the NVPTX finaliser's aligned entries give a kernel whose work-items each touch 4 (or
2) neighbouring float32 elements: the same kernel on whole arrays (16-byte aligned: the CUDA
driver launches NAME__kapi_aligned, one ld/st.global.v4 per 4 elements) and on views one
element in (the kernel itself: four scalar accesses 16 bytes apart across the work-items),
in one process, beside CuPy's device copy of the same bytes (the bandwidth a copy reaches).
Each result is checked against NumPy first.

    python3 bench/aligned_entries.py [--device gpu] [--log2n 26]
"""

import argparse

import numpy as np
from timing import median_batch

import kapi
from kapi import kernel_api


@kapi.kernel
def four_each(item, src, dst):
    i = item.get_id(0) * 4
    a = src[i]
    b = src[i + 1]
    c = src[i + 2]
    d = src[i + 3]
    dst[i] = d
    dst[i + 1] = c
    dst[i + 2] = b
    dst[i + 3] = a


@kapi.kernel
def two_each(item, src, dst):
    i = item.get_id(0) * 2
    a = src[i]
    b = src[i + 1]
    dst[i] = b * np.float32(2.0)
    dst[i + 1] = a


def _want(name, x):
    out = np.empty_like(x)
    if name == "four_each":
        out[0::4], out[1::4], out[2::4], out[3::4] = x[3::4], x[2::4], x[1::4], x[0::4]
    else:
        out[0::2], out[1::2] = x[1::2] * 2, x[0::2]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--log2n", type=int, default=None)
    args = ap.parse_args()
    dev = kapi.Device(args.device)
    n = 1 << (args.log2n or (26 if dev.is_gpu else 20))
    reps, batches = (10, 7) if dev.is_gpu else (2, 3)
    sync = dev.default_queue.wait
    print(f"device: {dev.name}; n = 2^{n.bit_length() - 1} float32 (read and written once)")
    x = np.random.default_rng(0).standard_normal(n + 4).astype(np.float32)
    src = kapi.asarray(x, device=dev)
    dst = kapi.zeros(n + 4, dtype=np.float32, device=dev)
    gb = 2 * n * 4 / 1e9
    try:
        import cupy as cp

        cx, cy = cp.asarray(x[:n]), cp.empty(n, cp.float32)
        t = median_batch(lambda: cy.__setitem__(Ellipsis, cx), cp.cuda.Device().synchronize,
                         reps, batches)  # fmt: skip
        print(f"  cupy copy                       {t * 1e3:.3f} ms  {gb / t:7.0f} GB/s")
    except ImportError:
        print("  (cupy does not import: no CuPy comparison)")
    for kern, per, name in ((four_each, 4, "four_each"), (two_each, 2, "two_each")):
        for off in (0, 1):
            s, d = src[off : off + n], dst[off : off + n]
            kapi.call_kernel(kern, kernel_api.Range(n // per), s, d)
            np.testing.assert_array_equal(d.asnumpy(), _want(name, x[off : off + n]))
            t = median_batch(
                lambda s=s, d=d, kern=kern, per=per: kapi.call_kernel(
                    kern, kernel_api.Range(n // per), s, d
                ),
                sync,
                reps,
                batches,
            )
            how = "whole arrays (aligned entry)" if off == 0 else "views 4 bytes in (kernel)"
            print(f"  {name} {how:28s} {t * 1e3:.3f} ms  {gb / t:7.0f} GB/s")


if __name__ == "__main__":
    main()
