"""The heat stencil's step over MPI ranks, one GPU per rank: kapi arrays beside the same
program with CuPy arrays, in the same processes, alternating rounds. A step is the halo
exchange (two Sendrecv of one row each way) and the Jacobi kernel; both programs pass the
rows the same way: directly when the MPI is CUDA-aware, else through pinned host rows.

    mpiexec -n 2 python3 bench/mpi_halo.py [--rows 16384 --cols 8192 --steps 50 --rounds 5]

Rank 0 prints the median exchange and step times of each and the kapi / CuPy ratios, and the
largest difference between the two programs' grids (both run the same steps).
"""

import argparse
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

import kapi


@kapi.kernel
def jacobi(item, u, v, first):
    j = item.get_id(0) + 1
    i = item.get_id(1) + first
    v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


CUDA_JACOBI = r"""
extern "C" __global__ void jacobi(const double* u, double* v, long rows, long cols) {
  long j = (long)blockIdx.x * blockDim.x + threadIdx.x + 1;
  long i = (long)blockIdx.y + 1;
  if (j < cols - 1 && i < rows - 1)
    v[i * cols + j] = 0.25 * (u[(i - 1) * cols + j] + u[(i + 1) * cols + j] +
                              u[i * cols + j - 1] + u[i * cols + j + 1]);
}
"""


class Program:
    """One rank's part of the grid and its halo exchange; subclasses give the array library."""

    def __init__(self, comm, block, staged):
        self.comm, self.staged = comm, staged
        r, n = comm.Get_rank(), comm.Get_size()
        self.up = r - 1 if r > 0 else MPI.PROC_NULL
        self.down = r + 1 if r < n - 1 else MPI.PROC_NULL
        self.rows, self.cols = block.shape

    def exchange(self):
        u, last = self.u, self.rows - 1
        pairs = ((u[1], self.up, u[last], self.down), (u[last - 1], self.down, u[0], self.up))
        for send, dest, recv, source in pairs:
            if not self.staged:
                self.comm.Sendrecv(send, dest=dest, recvbuf=recv, source=source)
                continue
            self.to_host(send, self.hs)
            self.comm.Sendrecv(self.hs_mpi, dest=dest, recvbuf=self.hr_mpi, source=source)
            if source != MPI.PROC_NULL:
                self.from_host(self.hr, recv)

    def step(self):
        self.sync()
        t0 = time.perf_counter()
        self.exchange()
        t1 = time.perf_counter()
        self.kernel()
        self.u, self.v = self.v, self.u
        self.sync()
        return t1 - t0, time.perf_counter() - t0


class KapiProgram(Program):
    def __init__(self, comm, block, staged, dev):
        super().__init__(comm, block, staged)
        self.u = kapi.asarray(block, device=dev)
        self.v = self.u.copy()
        self.hs = kapi.empty(self.cols, dtype=block.dtype, device=dev, usm_type="host")
        self.hr = kapi.empty(self.cols, dtype=block.dtype, device=dev, usm_type="host")
        # NumPy views of the pinned rows, made once: MPI reads them in place with no queue
        # wait per call (the copies to and from them are synchronous already)
        self.hs_mpi, self.hr_mpi = np.asarray(self.hs), np.asarray(self.hr)
        self.range = kapi.Range(self.cols - 2, self.rows - 2)

    def to_host(self, row, host):
        host[...] = row

    def from_host(self, host, row):
        row[...] = host

    def kernel(self):
        kapi.call_kernel_async(jacobi, self.range, [], self.u, self.v, np.int64(1))

    def sync(self):
        self.u.sycl_queue.wait()

    def grid(self):
        return self.u.asnumpy()


class CupyProgram(Program):
    def __init__(self, comm, block, staged, ordinal):
        import cupy as cp
        import cupyx

        super().__init__(comm, block, staged)
        self.cp, self.device = cp, cp.cuda.Device(ordinal)
        with self.device:
            self.u = cp.asarray(block)
            self.v = self.u.copy()
            self.fn = cp.RawKernel(CUDA_JACOBI, "jacobi")
        self.hs = self.hs_mpi = cupyx.empty_pinned(self.cols, dtype=block.dtype)
        self.hr = self.hr_mpi = cupyx.empty_pinned(self.cols, dtype=block.dtype)

    def to_host(self, row, host):
        with self.device:
            row.get(out=host)

    def from_host(self, host, row):
        with self.device:
            row.set(host)

    def exchange(self):
        with self.device:
            super().exchange()

    def kernel(self):
        with self.device:
            grid = ((self.cols - 2 + 255) // 256, self.rows - 2)
            self.fn(grid, (256,), (self.u, self.v, np.int64(self.rows), np.int64(self.cols)))

    def sync(self):
        self.device.synchronize()

    def grid(self):
        with self.device:
            return self.cp.asnumpy(self.u)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--transport", choices=("auto", "direct", "staged"), default="auto")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    dev = kapi.device_for_local_rank(comm)
    gpus = [d for d in kapi.devices("gpu") if d.backend == "cuda"]
    if dev not in gpus:
        if rank == 0:
            print("NOTE: no CUDA GPU for this rank: kapi only, no CuPy anchor")
    staged = args.transport == "staged" or (args.transport == "auto" and not kapi.cuda_aware_mpi())
    g = np.zeros((args.rows, args.cols))
    g[0, :] = 1.0
    g[:, 0] = np.linspace(1.0, 0.0, args.rows)
    bounds = np.linspace(0, args.rows, size + 1).astype(int)
    lo, hi = bounds[rank], bounds[rank + 1]
    block = np.ascontiguousarray(g[max(lo - 1, 0) : min(hi + 1, args.rows)])
    programs = {"kapi": KapiProgram(comm, block, staged, dev)}
    if dev in gpus:
        programs["cupy"] = CupyProgram(comm, block, staged, gpus.index(dev))
    times = {name: ([], []) for name in programs}
    for p in programs.values():  # warm-up: compiles, first touches
        comm.Barrier()
        p.step()
    for _ in range(args.rounds):
        for name, p in programs.items():
            comm.Barrier()
            for _ in range(args.steps):
                ex, st = p.step()
                times[name][0].append(comm.allreduce(ex, op=MPI.MAX))
                times[name][1].append(comm.allreduce(st, op=MPI.MAX))
    grids = {name: p.grid() for name, p in programs.items()}
    diff = float(np.abs(grids["kapi"] - grids["cupy"]).max()) if "cupy" in grids else 0.0
    diff = comm.allreduce(diff, op=MPI.MAX)
    if rank == 0:
        med = {n: (statistics.median(e), statistics.median(s)) for n, (e, s) in times.items()}
        k = med["kapi"]
        print(
            f"heat step {args.rows}x{args.cols} float64 on {size} ranks "
            f"({dev.filter_string} on rank 0), {'staged' if staged else 'CUDA-aware direct'} "
            f"halos, median of {args.rounds}x{args.steps} steps"
        )
        print(f"kapi: exchange {k[0] * 1e6:.1f} us, step {k[1] * 1e6:.1f} us")
        if "cupy" in med:
            c = med["cupy"]
            print(f"cupy: exchange {c[0] * 1e6:.1f} us, step {c[1] * 1e6:.1f} us")
            print(
                f"ratio kapi/cupy: exchange {k[0] / c[0]:.3f}x, step {k[1] / c[1]:.3f}x; "
                f"max |kapi - cupy| {diff:.2e}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
