"""kapi arrays as the chunks of a dask.array, on a distributed LocalCluster with one worker
per device (each pinned to it): chunks made on the workers' devices, an elementwise kernel and
a kapi.fuse'd expression over them with map_blocks, and reductions through Dask's tree, all
checked against NumPy.

    python samples/distributed/dask_arrays.py [--n 1000000 --chunks 4 --devices cpu,cpu]
"""

import argparse
import math
import sys
import time

import dask.array as da
import distributed
import numpy as np

import kapi
import kapi.dask


@kapi.kernel
def _smooth(item, x, out):
    i = item.get_id(0)
    out[i] = 0.5 * x[i] + 0.25 * math.sin(x[i])


def smooth(chunk):
    """A hand-written kernel over one chunk, on the chunk's device."""
    out = kapi.empty_like(chunk)
    kapi.call_kernel(_smooth, kapi.Range(chunk.size), chunk, out)
    return out


@kapi.fuse
def energy(a, b):
    return a * a + 2.0 * a * b + 1.0


def on_device(block, n):
    """A chunk of the data (k / n for its indices k), made on the worker's device: its default
    device, to which the cluster pinned it."""
    return kapi.asarray(block) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--devices", default=None, help="filter strings (default: every GPU)")
    args = ap.parse_args()
    devs = args.devices.split(",") if args.devices else None
    host = np.arange(args.n, dtype=np.float64) / args.n
    with (
        kapi.dask.LocalCluster(devices=devs, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        pinned = sorted(client.run(lambda: kapi.dask.worker_device().filter_string).values())
        t0 = time.perf_counter()
        x = da.arange(args.n, chunks=-(-args.n // args.chunks), dtype=np.float64)
        kx = x.map_blocks(on_device, args.n, dtype=x.dtype)  # chunks: kapi arrays
        y = kx.map_blocks(smooth, dtype=x.dtype)
        e = da.map_blocks(energy, kx, y, dtype=x.dtype)
        is_kapi = kx.map_blocks(
            lambda c: np.full(1, isinstance(c, kapi.Array)),
            chunks=((1,) * kx.numblocks[0],),
            dtype=bool,
        )
        total, peak, low, all_kapi = client.compute(
            [e.sum(), y.max(), y.min(), is_kapi.all()], sync=True
        )
        elapsed = time.perf_counter() - t0
    ys = 0.5 * host + 0.25 * np.sin(host)
    want = float((host * host + 2.0 * host * ys + 1.0).sum())
    got = float(total)
    ok = (
        math.isclose(got, want, rel_tol=1e-9)
        and math.isclose(float(peak), float(ys.max()), rel_tol=1e-12)
        and math.isclose(float(low), float(ys.min()), rel_tol=1e-12)
        and bool(all_kapi)
    )
    print(
        f"dask.array of {args.n} float64 in {args.chunks} kapi chunks on workers pinned to "
        f"{pinned}: sum {got:.10g} (NumPy {want:.10g}), max {float(peak):.6g}, min "
        f"{float(low):.6g}, every chunk a kapi array: {bool(all_kapi)}, {elapsed:.2f} s: "
        f"{'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
