"""Distributed reductions over MPI ranks with kapi arrays: the norm of a sharded vector and
k-means (Lloyd) steps, each rank's partial sums combined by Allreduce straight from kapi
arrays; checked against the same computation in one NumPy process.

Every rank makes the same points (one seed) and keeps its shard on its device. A k-means step
labels each point with its nearest centroid (a kernel), sums the points and counts of each
cluster on the device, and Allreduces those k x (d + 1) sums.

    mpiexec -n 2 python samples/distributed/mpi_kmeans.py [--points 20000 --k 4 --steps 5]
"""

import argparse
import sys
import time

import numpy as np
from mpi4py import MPI

import kapi


@kapi.kernel
def nearest(item, x, centroids, labels):
    i = item.get_id(0)
    best = 0
    best_d = np.inf
    for c in range(centroids.shape[0]):
        d = 0.0
        for j in range(x.shape[1]):
            t = x[i, j] - centroids[c, j]
            d += t * t
        if d < best_d:
            best_d = d
            best = c
    labels[i] = best


def reference(points: np.ndarray, centroids: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        d2 = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
        labels = d2.argmin(axis=1)
        for c in range(len(centroids)):
            members = points[labels == c]
            if len(members):
                centroids[c] = members.mean(axis=0)
    return centroids


class Reducer:
    """Allreduce(SUM) of a kapi array: handed to MPI directly where it can read the memory
    (the CPU device, a CUDA-aware MPI), else through a pinned host copy."""

    def __init__(self, comm, like, staged: bool):
        self.comm, self.staged = comm, staged
        if staged:
            self.host = kapi.empty_like(like, usm_type="host")

    def sum(self, local, out):
        if not self.staged:
            self.comm.Allreduce(local, out, op=MPI.SUM)
            return
        self.host[...] = local
        self.comm.Allreduce(MPI.IN_PLACE, self.host, op=MPI.SUM)
        out[...] = self.host


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=20000)
    ap.add_argument("--dims", type=int, default=2)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--transport", choices=("auto", "direct", "staged"), default="auto")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    dev = kapi.device_for_local_rank(comm)
    staged = args.transport == "staged" or (
        args.transport == "auto" and not dev.host_accessible and not kapi.cuda_aware_mpi()
    )
    rng = np.random.default_rng(0)
    centres = rng.uniform(-10, 10, (args.k, args.dims))
    points = centres[rng.integers(0, args.k, args.points)] + rng.normal(
        size=(args.points, args.dims)
    )
    bounds = np.linspace(0, args.points, size + 1).astype(int)
    x = kapi.asarray(points[bounds[rank] : bounds[rank + 1]], device=dev)
    d, k = args.dims, args.k
    t0 = time.perf_counter()

    # The norm: each rank's sum of squares, then one Allreduce of a 1-element kapi array.
    local = kapi.zeros(1, dtype=np.float64, device=dev)
    local[0] = (x * x).sum()
    total = kapi.zeros(1, dtype=np.float64, device=dev)
    Reducer(comm, local, staged).sum(local, total)
    norm = float(np.sqrt(total.asnumpy()[0]))

    # k-means: labels on the device, per-cluster sums on the device, Allreduce of the sums.
    centroids = kapi.asarray(points[:k].copy(), device=dev)
    labels = kapi.empty(x.shape[0], dtype=np.int32, device=dev)
    stats = kapi.zeros((k, d + 1), dtype=np.float64, device=dev)
    summed = kapi.zeros((k, d + 1), dtype=np.float64, device=dev)
    reducer = Reducer(comm, stats, staged)
    for _ in range(args.steps):
        kapi.call_kernel(nearest, kapi.Range(x.shape[0]), x, centroids, labels)
        for c in range(k):
            w = (labels == c).astype(np.float64)
            stats[c, d] = w.sum()
            for j in range(d):
                stats[c, j] = (x[:, j] * w).sum()
        reducer.sum(stats, summed)
        counts = summed[:, d:]
        moved = summed[:, :d] / kapi.where(counts > 0, counts, 1.0)
        centroids = kapi.where(counts > 0, moved, centroids)
    got = centroids.asnumpy()
    elapsed = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)

    want_norm = float(np.linalg.norm(points))
    want = reference(points, points[:k].copy(), args.steps)
    ok_norm = abs(norm - want_norm) <= 1e-10 * want_norm
    ok_means = bool(np.allclose(got, want, rtol=1e-9, atol=1e-9))
    ok = comm.allreduce(int(ok_norm and ok_means), op=MPI.MIN) == 1
    if rank == 0:
        print(
            f"norm of {args.points} points on {size} ranks: {norm:.10g} (NumPy {want_norm:.10g}); "
            f"k-means k={k}, {args.steps} steps: max |centroid error| "
            f"{float(np.abs(got - want).max()):.2e} ({dev.filter_string} on rank 0, "
            f"{'staged' if staged else 'direct'} Allreduce, {elapsed * 1e3:.1f} ms): "
            f"{'OK' if ok else 'MISMATCH'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
