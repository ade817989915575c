"""Several GPUs in one process, from one thread: strong scaling of pairwise distance from one
GPU to two (each GPU computes half of the rows, both launched asynchronously before one wait),
and GPU-to-GPU copy bandwidth of to_device beside cupy.asarray across devices.

    python3 bench/multi_gpu.py [--n 16384 --dims 128 --copy-mib 1024 --repeat 9]

Prints each figure beside its anchor and the ratio. On one device (or without CuPy) it still
runs, degraded, and says so: the one-device time, and a copy within the device.
"""

import argparse
import statistics
import sys
import time

import numpy as np

import kapi


@kapi.kernel
def pairwise_rows(item, data, dist, first):
    """dist[r, i] = |data[i] - data[first + r]|: the rows first.. of the distance matrix."""
    i = item.get_id(0)
    r = item.get_id(1)
    j = first + r
    d = data.dtype.type(0.0)
    for k in range(data.shape[1]):
        t = data[i, k] - data[j, k]
        d += t * t
    dist[r, i] = d**0.5


def timed(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def scaling(gpus, n, dims, repeat):
    rng = np.random.default_rng(0)
    host = rng.random((n, dims), dtype=np.float32)
    parts = []  # (device's data, its rows of dist, first row)
    bounds = np.linspace(0, n, len(gpus) + 1).astype(int)
    for g, lo, hi in zip(gpus, bounds[:-1], bounds[1:], strict=True):
        parts.append(
            (kapi.asarray(host, device=g), kapi.empty((hi - lo, n), np.float32, device=g), lo)
        )
    whole = (parts[0][0], kapi.empty((n, n), np.float32, device=gpus[0]), 0)

    def run(jobs):
        evs = [
            kapi.call_kernel_async(
                pairwise_rows, kapi.Range(n, d.shape[0]), [], x, d, np.int64(lo)
            )[1]
            for x, d, lo in jobs
        ]
        kapi.wait_all(evs)

    # alternating, so that drift (clocks, other load) touches both alike
    run([whole]), run(parts)
    ones, manys = [], []
    for _ in range(repeat):
        ones.append(timed(lambda: run([whole]), 1))
        manys.append(timed(lambda: run(parts), 1))
    one, many = statistics.median(ones), statistics.median(manys)
    # check a few rows of each part against NumPy
    for _x, d, lo in parts:
        got = d[:2].asnumpy()
        want = np.sqrt(((host[None, :, :] - host[lo : lo + 2, None, :]) ** 2).sum(axis=2))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return one, many


def copy_bandwidth(src_dev, dst_dev, mib, repeat):
    n = mib * (1 << 20) // 4
    a = kapi.arange(n, dtype=np.float32, device=src_dev)
    same = src_dev == dst_dev
    op = (lambda: a.copy()) if same else (lambda: a.to_device(dst_dev))
    t = timed(lambda: op().sycl_queue.wait(), repeat)
    b = op()
    assert b.device == dst_dev and float(b[n - 1]) == float(a[n - 1])  # n - 1 rounded to f32
    return n * 4 / t / 1e9


def cupy_copy_bandwidth(src, dst, mib, repeat):
    import cupy as cp

    n = mib * (1 << 20) // 4
    with cp.cuda.Device(src):
        x = cp.arange(n, dtype=cp.float32)

    def op():
        with cp.cuda.Device(dst):
            y = x.copy() if src == dst else cp.asarray(x)
            cp.cuda.Device(dst).synchronize()
        return y

    t = timed(op, repeat)
    return n * 4 / t / 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--dims", type=int, default=128)
    ap.add_argument("--copy-mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    gpus = [d for d in kapi.devices("gpu") if d.backend == "cuda"]
    devs = gpus or [kapi.default_device()]
    print("devices:", ", ".join(f"{d.filter_string} ({d.name})" for d in devs))
    if len(devs) < 2:
        print(
            "NOTE: one device only: no scaling and no GPU-to-GPU copy can be measured here; "
            "the figures below are the one-device time and a copy within the device"
        )
    try:
        import cupy  # noqa: F401

        has_cupy = bool(gpus)
    except ImportError:
        has_cupy = False
        print("NOTE: CuPy is not installed: no anchor for the copy bandwidth")

    pair = devs[:2]
    one, many = scaling(pair, args.n, args.dims, args.repeat)
    print(
        f"pairwise distance n={args.n} d={args.dims} float32: 1 device {one * 1e3:.3f} ms, "
        f"{len(pair)} devices {many * 1e3:.3f} ms: scaling {one / many:.3f}x"
        + ("" if len(pair) > 1 else " (one device: no scaling)")
    )
    src, dst = pair[0], pair[-1]
    bw = copy_bandwidth(src, dst, args.copy_mib, args.repeat)
    line = (
        f"to_device {src.filter_string} -> {dst.filter_string}, {args.copy_mib} MiB: {bw:.1f} GB/s"
    )
    if src != dst:
        line += f" (peer access: {src.can_access_peer(dst)})"
    if has_cupy:
        cbw = cupy_copy_bandwidth(gpus.index(src), gpus.index(dst), args.copy_mib, args.repeat)
        what = "cupy.asarray across devices" if src != dst else "cupy copy"
        line += f"; {what} {cbw:.1f} GB/s: ratio {bw / cbw:.3f}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
