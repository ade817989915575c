"""2-D heat equation (Jacobi iterations) over MPI ranks, one device per rank, with kapi arrays
handed to mpi4py directly; checked against the same iterations in one NumPy process.

The grid's rows are split among the ranks; each rank keeps its rows plus one halo row above
and below on its device, and before every step swaps its edge rows with its neighbours
(Sendrecv). On kapi's CPU device the arrays go to MPI through the buffer protocol; on a GPU
through DLPack when the MPI is CUDA-aware, else staged through pinned host buffers.

    mpiexec -n 2 python samples/distributed/mpi_heat.py [--rows 256 --cols 256 --steps 200]
"""

import argparse
import sys
import time

import numpy as np
from mpi4py import MPI

import kapi


@kapi.kernel
def jacobi(item, u, v, first):
    """v = mean of u's four neighbours, over rows first.. of the index space (column fastest)."""
    j = item.get_id(0) + 1
    i = item.get_id(1) + first
    v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


def initial(rows: int, cols: int) -> np.ndarray:
    """The whole grid at step 0: a hot top edge, a warm left edge, cold elsewhere."""
    g = np.zeros((rows, cols))
    g[0, :] = 1.0
    g[:, 0] = np.linspace(1.0, 0.0, rows)
    return g


def reference(g: np.ndarray, steps: int) -> np.ndarray:
    u, v = g.copy(), g.copy()
    for _ in range(steps):
        v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u, v = v, u
    return u


class Halo:
    """Swaps edge rows with the neighbours: directly with kapi arrays where MPI can read
    them (the CPU device, or a CUDA-aware MPI), else through pinned host rows."""

    def __init__(self, comm, u, staged: bool):
        self.comm, self.staged = comm, staged
        r, n = comm.Get_rank(), comm.Get_size()
        self.up = r - 1 if r > 0 else MPI.PROC_NULL
        self.down = r + 1 if r < n - 1 else MPI.PROC_NULL
        if staged:  # pinned host rows, and NumPy views of them that MPI reads in place
            self.host = [
                kapi.empty(u.shape[1], dtype=u.dtype, device=u.device, usm_type="host")
                for _ in range(2)
            ]
            self.host_mpi = [np.asarray(h) for h in self.host]

    def exchange(self, u):
        last = u.shape[0] - 1
        pairs = ((u[1], self.up, u[last], self.down), (u[last - 1], self.down, u[0], self.up))
        for send, dest, recv, source in pairs:
            if not self.staged:
                self.comm.Sendrecv(send, dest=dest, recvbuf=recv, source=source)
                continue
            self.host[0][...] = send  # device -> pinned host
            self.comm.Sendrecv(self.host_mpi[0], dest=dest, recvbuf=self.host_mpi[1], source=source)
            if source != MPI.PROC_NULL:
                recv[...] = self.host[1]  # pinned host -> device


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--cols", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--transport", choices=("auto", "direct", "staged"), default="auto")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    dev = kapi.device_for_local_rank(comm)
    staged = args.transport == "staged" or (
        args.transport == "auto" and not dev.host_accessible and not kapi.cuda_aware_mpi()
    )
    g = initial(args.rows, args.cols)
    bounds = np.linspace(0, args.rows, size + 1).astype(int)
    lo, hi = bounds[rank], bounds[rank + 1]
    # rows lo-1 .. hi (halo included), clipped at the grid's edges
    top, bottom = max(lo - 1, 0), min(hi + 1, args.rows)
    u = kapi.asarray(g[top:bottom], device=dev)
    v = u.copy()
    # u's first and last rows are halo rows, or the grid's fixed edges: the rows between change
    first, last = 1, u.shape[0] - 1
    halo = Halo(comm, u, staged)
    rng = kapi.Range(args.cols - 2, last - first)
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        halo.exchange(u)
        kapi.call_kernel(jacobi, rng, u, v, first)
        u, v = v, u
    u.sycl_queue.wait()
    elapsed = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    mine = u[1 if lo > 0 else 0 : u.shape[0] - (1 if hi < args.rows else 0)].asnumpy()
    parts = comm.gather(mine, root=0)
    ok = True
    if rank == 0:
        got = np.concatenate(parts)
        want = reference(g, args.steps)
        err = float(np.abs(got - want).max())
        ok = got.shape == want.shape and err <= 1e-12
        print(
            f"heat {args.rows}x{args.cols}, {args.steps} steps on {size} ranks "
            f"({dev.filter_string} on rank 0, {'staged' if staged else 'direct'} halos): "
            f"{elapsed * 1e3 / args.steps:.3f} ms/step, max |error| {err:.2e}: "
            f"{'OK' if ok else 'MISMATCH'}"
        )
    return 0 if comm.bcast(ok, root=0) else 1


if __name__ == "__main__":
    sys.exit(main())
