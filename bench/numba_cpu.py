"""kapi's CPU device against Numba's parallel CPU target on the kernels of bench/opencl_cpu.py,
for machines where Intel's OpenCL CPU runtime cannot be installed (the GPU machine: no network,
and the runtime's environment is larger than what can be carried there).

Each kapi kernel is the one bench/opencl_cpu.py builds (bench/kernels.py, bench/cpu_barrier.py).
A Range kernel's peer is the same Python function compiled by Numba (its item a two-index
value), called from `@numba.njit(parallel=True)` with a `prange` over the last dimension and
a loop over dimension 0. Kernels Numba cannot run as they are are written as Numba users
write them: the tiled matmul (local memory, barriers) as cpu_barrier.matmul_numba (i-k-j, the
order that vectorises), the tree reduction and the local scan as a prange over the groups, the
atomic histogram as per-chunk histograms summed at the end (Numba has no atomics).
Both run on every core of the same process, sample by sample in turn (the order rotating);
results agree before anything is timed; figures are medians and ratio = Numba's time / kapi's
time (> 1: kapi faster).

    python3 bench/numba_cpu.py [--repeat 15] [--only NAME,...] [--scale S] [--json F] [--plot P]

Numba's OpenMP layer spins between parallel regions by default and would take the cores from
kapi's pool right after each Numba sample: OMP_WAIT_POLICY=passive is set unless given.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.extending import (  # noqa: E402
    intrinsic,
    make_attribute_wrapper,
    models,
    overload_method,
    register_model,
)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_barrier  # noqa: E402
import kernels  # noqa: E402
import plotting  # noqa: E402

import kapi  # noqa: E402
from kapi import kernel_api as K  # noqa: E402

prange = numba.prange


class _RangeItemType(numba.types.Type):
    """A Range kernel's item as a Numba value (two indices, no heap object), so that the
    kernel's own Python function compiles under Numba and its peer runs the same source."""

    def __init__(self):
        super().__init__(name="RangeItem")


_range_item = _RangeItemType()


@register_model(_RangeItemType)
class _RangeItemModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("i0", numba.types.intp), ("i1", numba.types.intp)])


make_attribute_wrapper(_RangeItemType, "i0", "i0")
make_attribute_wrapper(_RangeItemType, "i1", "i1")


@intrinsic
def _item(typingctx, i0, i1):
    def codegen(context, builder, signature, args):
        it = cgutils.create_struct_proxy(_range_item)(context, builder)
        it.i0, it.i1 = args
        return it._getvalue()

    return _range_item(numba.types.intp, numba.types.intp), codegen


@overload_method(_RangeItemType, "get_id")
def _get_id(item, d):
    return lambda item, d: item.i0 if d == 0 else item.i1


def range_peer(fn, space):
    """The Range kernel fn as Numba runs it: a prange over the last dimension and a plain loop
    over dimension 0 (the contiguous one, as kapi's and Intel's vectorisers take it)."""
    body = numba.njit(fn)
    dims = tuple(space)
    if len(dims) == 1:

        @numba.njit(parallel=True)
        def run1(n0, *args):
            for i0 in prange(n0):
                body(_item(i0, 0), *args)

        return lambda *args: run1(dims[0], *args)

    @numba.njit(parallel=True)
    def run2(n0, n1, *args):
        for i1 in prange(n1):
            for i0 in range(n0):
                body(_item(i0, i1), *args)

    return lambda *args: run2(dims[0], dims[1], *args)


@numba.njit(parallel=True)
def group_sums_numba(a, out, wg):
    for g in prange(out.shape[0]):
        acc = a.dtype.type(0)
        for k in range(g * wg, (g + 1) * wg):
            acc += a[k]
        out[g] = acc


@numba.njit(parallel=True)
def group_scans_numba(a, out, wg):
    for g in prange(a.shape[0] // wg):
        acc = a.dtype.type(0)
        for k in range(g * wg, (g + 1) * wg):
            acc += a[k]
            out[k] = acc


@numba.njit(parallel=True)
def histogram_numba(data, bins, chunks):
    nb = bins.shape[0]
    part = np.zeros((chunks, nb), bins.dtype)
    step = (data.shape[0] + chunks - 1) // chunks
    for c in prange(chunks):
        for k in range(c * step, min((c + 1) * step, data.shape[0])):
            part[c, data[k]] += 1
    for b in range(nb):
        acc = bins.dtype.type(0)
        for c in range(chunks):
            acc += part[c, b]
        bins[b] = acc


class Case:
    """A kapi kernel launch and its Numba peer on copies of the same data: kargs for kapi
    (NumPy arrays, copied to the device), nargs for Numba, outputs compared by index pair."""

    def __init__(
        self, name, size, kernel, space, kargs, numba_fn, nargs, pairs, tol=0.0, check=None
    ):
        self.name, self.size, self.kernel, self.space = name, size, kernel, space
        self.kargs, self.numba_fn, self.nargs = kargs, numba_fn, nargs
        self.pairs, self.tol, self.check = pairs, tol, check


def cases(scale, only):
    rng = np.random.default_rng(7)
    sc = 2.0**scale
    out = []

    def want(name):
        return not only or name in only

    def copies(*arrays):
        return [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]

    for dt, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        name = f"black-scholes-f{8 * np.dtype(dt).itemsize}"
        if want(name):
            n = int(2**22 * sc)
            p, s, t = (rng.uniform(lo, hi, n).astype(dt) for lo, hi in ((10, 50), (10, 50), (1, 2)))
            args = [p, s, t, dt(0.1), dt(0.2), np.zeros(n, dt), np.zeros(n, dt)]
            out.append(
                Case(
                    name,
                    f"2^{int(np.log2(n))} options",
                    kernels.black_scholes,
                    kapi.Range(n),
                    args,
                    range_peer(kernels.black_scholes, (n,)),
                    copies(*args),
                    [(5, 5), (6, 6)],
                    tol,
                )
            )
    if want("pairwise-f32"):
        n, d = 2048, 3
        data = rng.random((n, d), dtype=np.float32)
        args = [data, np.zeros((n, n), np.float32)]
        out.append(
            Case(
                "pairwise-f32",
                f"{n}x{d}",
                kernels.pairwise_distance,
                kapi.Range(n, n),
                args,
                range_peer(kernels.pairwise_distance, (n, n)),
                copies(*args),
                [(1, 1)],
                1e-5,
            )
        )
    for name, kern in (
        ("matmul-f32", cpu_barrier.tiled_matmul),
        ("matmul-naive-f32", kernels.matmul_naive),
    ):
        if not want(name):
            continue
        n, tile = 512, cpu_barrier.TILE
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        kargs = [a, b, np.zeros((n, n), np.float32)]
        space = kapi.Range(n, n)
        size = f"{n}^2, a loop over k"
        if name == "matmul-f32":
            kargs += [K.LocalAccessor((tile, tile), np.float32) for _ in range(2)]
            space = kapi.NdRange((n, n), (tile, tile))
            size = f"{n}^2, {tile}x{tile} tiles"
        tiled = name == "matmul-f32"
        peer = cpu_barrier.matmul_numba if tiled else range_peer(kern, (n, n))
        out.append(
            Case(name, size, kern, space, kargs, peer, copies(a, b, kargs[2]), [(2, 2)], 1e-4)
        )
    if want("tree-reduce-f32"):
        n, wg = int(2**24 * sc), 256
        a = rng.random(n, dtype=np.float32)
        kargs = [a, np.zeros(n // wg, np.float32), K.LocalAccessor((wg,), np.float32)]
        out.append(
            Case(
                "tree-reduce-f32",
                f"2^{int(np.log2(n))}, groups of {wg}",
                cpu_barrier.tree_reduce,
                kapi.NdRange((n,), (wg,)),
                kargs,
                group_sums_numba,
                [a, np.zeros(n // wg, np.float32), wg],
                [(1, 1)],
                1e-5,
            )
        )
    if want("local-scan-i32"):
        n, wg = int(2**22 * sc), 256
        a = rng.integers(-5, 5, n, dtype=np.int32)
        kargs = [a, np.zeros(n, np.int32), K.LocalAccessor((wg,), np.int32)]
        out.append(
            Case(
                "local-scan-i32",
                f"2^{int(np.log2(n))}, groups of {wg}",
                cpu_barrier.scan,
                kapi.NdRange((n,), (wg,)),
                kargs,
                group_scans_numba,
                [a, np.zeros(n, np.int32), wg],
                [(1, 1)],
            )
        )
    if want("histogram-i32"):
        n, bins = int(2**24 * sc), 256
        data = rng.integers(0, bins, n, dtype=np.int32)
        chunks = 8 * numba.get_num_threads()
        out.append(
            Case(
                "histogram-i32",
                f"2^{int(np.log2(n))}, {bins} bins",
                kernels.histogram,
                kapi.Range(n),
                [data, np.zeros(bins, np.int32)],
                histogram_numba,
                [data, np.zeros(bins, np.int32), chunks],
                [(1, 1)],
            )
        )
    if want("triad-f32"):
        n = int(2**24 * sc)
        b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        args = [np.zeros(n, np.float32), b, c, np.float32(3.0)]
        out.append(
            Case(
                "triad-f32",
                f"2^{int(np.log2(n))}",
                kernels.triad,
                kapi.Range(n),
                args,
                range_peer(kernels.triad, (n,)),
                copies(*args),
                [(0, 0)],
                1e-6,
            )
        )
    if want("saxpy-f32"):
        n = int(2**24 * sc)
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        args = [np.float32(2.0), x, y]
        # both add into y on every launch: compare after one launch each
        out.append(
            Case(
                "saxpy-f32",
                f"2^{int(np.log2(n))}",
                kernels.saxpy,
                kapi.Range(n),
                args,
                range_peer(kernels.saxpy, (n,)),
                copies(*args),
                [(2, 2)],
                1e-6,
            )
        )
    if want("stencil-f32"):
        n = int(2048 * sc**0.5)
        a = rng.random((n, n), dtype=np.float32)
        args = [a, np.zeros((n, n), np.float32)]
        out.append(
            Case(
                "stencil-f32",
                f"{n}^2, 5 points",
                kernels.stencil5,
                kapi.Range(n - 2, n - 2),
                args,
                range_peer(kernels.stencil5, (n - 2, n - 2)),
                copies(*args),
                [(1, 1)],
                1e-6,
            )
        )
    if want("mandelbrot-f32"):
        n = int(1024 * sc**0.5)
        step = np.float32(2.5 / n)
        args = [np.zeros((n, n), np.float32), np.float32(-2.0), np.float32(-1.25), step, 256]
        out.append(
            Case(
                "mandelbrot-f32",
                f"{n}^2, <= 256 iterations",
                kernels.mandelbrot,
                kapi.Range(n, n),
                args,
                range_peer(kernels.mandelbrot, (n, n)),
                copies(*args),
                [(0, 0)],
                check=lambda x, y: np.mean(x != y) <= 1e-3,
            )
        )
    return out


class KapiRunner:
    def __init__(self, case, cpu):
        fn = getattr(case.kernel, "py_func", case.kernel)
        self.kernel = kapi.kernel(fn)
        self.space = case.space
        self.args = [
            kapi.asarray(a, device=cpu) if isinstance(a, np.ndarray) else a for a in case.kargs
        ]

    def launch(self):
        kapi.call_kernel(self.kernel, self.space, *self.args)

    def output(self, i):
        return self.args[i].asnumpy()


class NumbaRunner:
    def __init__(self, case):
        self.fn, self.args = case.numba_fn, case.nargs

    def launch(self):
        self.fn(*self.args)

    def output(self, i):
        return self.args[i]


def agree(case, mine, theirs):
    for i, j in case.pairs:
        a, b = mine.output(i), theirs.output(j)
        ok = case.check(a, b) if case.check else np.allclose(a, b, rtol=case.tol, atol=case.tol)
        if not ok:
            raise SystemExit(f"{case.name}: kapi's output {i} and Numba's differ")


def timed(runners, repeat):
    for r in runners:
        r.launch()
    wall = [[] for _ in runners]
    for rep in range(repeat):
        k = rep % len(runners)
        for j in list(range(k, len(runners))) + list(range(k)):
            t0 = time.perf_counter()
            runners[j].launch()
            wall[j].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in wall]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--scale", type=float, default=0)
    ap.add_argument("--only", default="")
    plotting.add_args(ap)
    args = ap.parse_args()
    cpu = kapi.Device("cpu")
    numba.njit(parallel=True)(lambda a: a.sum())(np.ones(4))  # starts Numba's threads
    print(
        f"{os.cpu_count()} cores; kapi: {cpu}, {cpu.max_compute_units} compute units; Numba "
        f"{numba.__version__}, {numba.get_num_threads()} threads, layer "
        f"{numba.threading_layer()}; ratio = Numba ms / kapi ms (> 1: kapi faster)"
    )
    print(f"{'kernel':<18} {'size':<26} {'kapi ms':>9} {'Numba ms':>9} {'ratio':>7}", flush=True)
    ratios = plotting.Ratios()
    got = []
    for case in cases(args.scale, set(filter(None, args.only.split(",")))):
        mine, theirs = KapiRunner(case, cpu), NumbaRunner(case)
        mine.launch()
        theirs.launch()
        agree(case, mine, theirs)
        t = timed([mine, theirs], args.repeat)
        print(
            f"{case.name:<18} {case.size:<26} {t[0] * 1e3:9.3f} {t[1] * 1e3:9.3f} "
            f"{t[1] / t[0]:6.2f}x",
            flush=True,
        )
        ratios.add(case.name, "Numba parallel", t[1] / t[0])
        got.append(t[1] / t[0])
    if len(got) > 1:
        print(f"geometric mean of the ratios: {float(np.exp(np.mean(np.log(got)))):.2f}x")
    ratios.write(args, f"kapi's CPU device against Numba parallel ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
