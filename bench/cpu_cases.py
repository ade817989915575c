"""The CPU kernels the CPU benches share (bench/opencl_cpu.py against Intel's OpenCL CPU runtime,
bench/numba_cpu.py against Numba parallel): each a kernel of bench/kernels.py or
bench/cpu_barrier.py, its index space and its arguments as NumPy arrays, made the same way for
every peer."""

import os
import types

import cpu_barrier
import kernels
import numpy as np

import kapi
from kapi import kernel_api as K


def renamed(fn, suffix):
    """A copy of fn under another name: a kernel of its own (own SPIR-V, own native module)."""
    name = f"{fn.__name__}_{suffix}"
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    g = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    g.__qualname__ = name
    return g


def with_env(env, call):
    """call() with the variables of env set, as they were afterwards."""
    saved = {v: os.environ.get(v) for v in env}
    os.environ.update(env)
    try:
        return call()
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old


def parse_variants(specs):
    """{name: {VAR: VALUE}} from `--variant NAME:VAR=VALUE[,VAR=VALUE]` arguments."""
    variants = {}
    for spec in specs:
        name, _, assigns = spec.partition(":")
        variants[name] = dict(kv.split("=", 1) for kv in assigns.split(",") if kv)
    return variants


class Case:
    """One kernel on one problem: its Python function, index space (kapi form; OpenCL sizes
    derived), arguments as NumPy arrays and scalars, the outputs to compare, tolerances, and
    the work of one launch (bytes or flops) for a rate column."""

    def __init__(
        self, name, size, fn, space, args, outputs, rtol=0, atol=0, work=None, unit="", check=None
    ):
        self.name, self.size, self.fn, self.space = name, size, fn, space
        self.args, self.outputs, self.rtol, self.atol = args, outputs, rtol, atol
        self.work, self.unit, self.check = work, unit, check

    def opencl_sizes(self):
        if isinstance(self.space, kapi.NdRange):
            return tuple(self.space.global_range), tuple(self.space.local_range)
        return tuple(self.space), None


def cases(scale, only):
    rng = np.random.default_rng(7)
    sc = 2.0**scale
    out = []

    def want(name):
        return not only or name in only

    for dt, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        name = "black-scholes-f32" if dt == np.float32 else "black-scholes-f64"
        if want(name):
            n = int(2**22 * sc)
            price = rng.uniform(10, 50, n).astype(dt)
            strike = rng.uniform(10, 50, n).astype(dt)
            t = rng.uniform(1, 2, n).astype(dt)
            args = [price, strike, t, dt(0.1), dt(0.2), np.zeros(n, dt), np.zeros(n, dt)]
            item = np.dtype(dt).itemsize
            out.append(
                Case(
                    name,
                    f"2^{int(np.log2(n))} options",
                    kernels.black_scholes,
                    kapi.Range(n),
                    args,
                    [5, 6],
                    rtol=tol,
                    atol=tol,
                    work=5 * n * item,
                    unit="GB/s",
                )
            )
    if want("pairwise-f32"):
        n, d = 2048, 3
        data = rng.random((n, d), dtype=np.float32)
        out.append(
            Case(
                "pairwise-f32",
                f"{n}x{d}",
                kernels.pairwise_distance,
                kapi.Range(n, n),
                [data, np.zeros((n, n), np.float32)],
                [1],
                rtol=1e-5,
                atol=1e-6,
                work=3 * d * n * n,
                unit="GFLOP/s",
            )
        )
    if want("rowsum-f32"):
        n, d = int(2**18 * sc), 8
        a = rng.random((n, d), dtype=np.float32)
        out.append(
            Case(
                "rowsum-f32",
                f"2^18x{d}",
                kernels.row_sums,
                kapi.Range(n),
                [a, np.zeros(n, np.float32)],
                [1],
                rtol=1e-5,
                atol=1e-6,
                work=4 * d * n,
                unit="GB/s",
            )
        )
    for rows, cols in ((2048, 2048), (1 << 16, 256)):
        name = f"colsum-f32-{rows}x{cols}"
        if want(name) or want("colsum-f32"):
            a = rng.random((rows, cols), dtype=np.float32)
            parts = 4  # the 2-core dev box: 8 groups of 256 columns at most, 4 parts each
            span = -(-rows // parts)
            out.append(
                Case(
                    name,
                    f"{rows}x{cols}, axis=0",
                    kernels.column_sums,
                    kapi.NdRange((cols, parts), (256, 1)),
                    [a, np.zeros((parts, cols), np.float32), span],
                    [1],
                    rtol=1e-4,
                    atol=1e-3,
                    work=4 * rows * cols,
                    unit="GB/s",
                )
            )
    if want("rowblocks-f32"):
        rows, cols, parts = int(4096 * sc), 2048, 64
        a = rng.random((rows, cols), dtype=np.float32)
        span = -(-rows // parts)
        out.append(
            Case(
                "rowblocks-f32",
                f"{rows}x{cols}, {parts} blocks",
                kernels.row_blocks,
                kapi.Range(cols, parts),
                [a, np.zeros((parts, cols), np.float32), span],
                [1],
                rtol=1e-4,
                atol=1e-3,
                work=4 * rows * cols,
                unit="GB/s",
            )
        )
    if want("prefixrows-f32"):
        rows, cols = int(512 * sc), 2048
        a = rng.random((rows, cols), dtype=np.float32)
        out.append(
            Case(
                "prefixrows-f32",
                f"{rows}x{cols}",
                kernels.prefix_rows,
                kapi.Range(cols, rows),
                [a, np.zeros((rows, cols), np.float32)],
                [1],
                rtol=1e-4,
                atol=1e-3,
                work=cols * rows * (rows + 1) // 2,
                unit="GFLOP/s",
            )
        )
    if want("matmul-f32"):
        n, tile = 512, cpu_barrier.TILE
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        sa = K.LocalAccessor((tile, tile), np.float32)
        sb = K.LocalAccessor((tile, tile), np.float32)
        out.append(
            Case(
                "matmul-f32",
                f"{n}^2, {tile}x{tile} tiles",
                cpu_barrier.tiled_matmul,
                kapi.NdRange((n, n), (tile, tile)),
                [a, b, np.zeros((n, n), np.float32), sa, sb],
                [2],
                rtol=1e-5,
                atol=1e-4,
                work=2 * n**3,
                unit="GFLOP/s",
                check=matmul_close,
            )
        )
    if want("matmul-naive-f32"):
        n = 512
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        out.append(
            Case(
                "matmul-naive-f32",
                f"{n}^2, a loop over k",
                kernels.matmul_naive,
                kapi.Range(n, n),
                [a, b, np.zeros((n, n), np.float32)],
                [2],
                rtol=1e-5,
                atol=1e-4,
                work=2 * n**3,
                unit="GFLOP/s",
                check=matmul_close,
            )
        )
    if want("tree-reduce-f32"):
        n, wg = int(2**24 * sc), 256
        a = rng.random(n, dtype=np.float32)
        out.append(
            Case(
                "tree-reduce-f32",
                f"2^{int(np.log2(n))}, groups of {wg}",
                cpu_barrier.tree_reduce,
                kapi.NdRange((n,), (wg,)),
                [a, np.zeros(n // wg, np.float32), K.LocalAccessor((wg,), np.float32)],
                [1],
                rtol=1e-5,
                atol=1e-5,
                work=4 * n,
                unit="GB/s",
            )
        )
    if want("local-scan-i32"):
        n, wg = int(2**22 * sc), 256
        a = rng.integers(-5, 5, n, dtype=np.int32)
        out.append(
            Case(
                "local-scan-i32",
                f"2^{int(np.log2(n))}, groups of {wg}",
                cpu_barrier.scan,
                kapi.NdRange((n,), (wg,)),
                [a, np.zeros(n, np.int32), K.LocalAccessor((wg,), np.int32)],
                [1],
                work=8 * n,
                unit="GB/s",
            )
        )
    if want("histogram-i32"):
        n, bins = int(2**24 * sc), 256
        data = rng.integers(0, bins, n, dtype=np.int32)
        out.append(
            Case(
                "histogram-i32",
                f"2^{int(np.log2(n))}, {bins} bins",
                kernels.histogram,
                kapi.Range(n),
                [data, np.zeros(bins, np.int32)],
                [1],
                work=4 * n,
                unit="GB/s",
            )
        )
    if want("histogram-local-i32"):
        n, bins, wg = int(2**24 * sc), 256, 256
        data = rng.integers(0, bins, n, dtype=np.int32)
        out.append(
            Case(
                "histogram-local-i32",
                f"2^{int(np.log2(n))}, {bins} bins, local copies",
                kernels.histogram_local,
                kapi.NdRange((n // kernels.HIST_ITEMS,), (wg,)),
                [data, np.zeros(bins, np.int32), K.LocalAccessor((bins,), np.int32)],
                [1],
                work=4 * n,
                unit="GB/s",
            )
        )
    if want("triad-f32"):
        n = int(2**24 * sc)
        b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        out.append(
            Case(
                "triad-f32",
                f"2^{int(np.log2(n))}",
                kernels.triad,
                kapi.Range(n),
                [np.zeros(n, np.float32), b, c, np.float32(3.0)],
                [0],
                rtol=1e-6,
                work=12 * n,
                unit="GB/s",
            )
        )
    if want("saxpy-f32"):
        n = int(2**24 * sc)
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        out.append(
            Case(
                "saxpy-f32",
                f"2^{int(np.log2(n))}",
                kernels.saxpy,
                kapi.Range(n),
                [np.float32(2.0), x, y],
                [2],
                rtol=1e-6,
                work=12 * n,
                unit="GB/s",
            )
        )
    if want("stencil-f32"):
        n = int(2048 * sc**0.5)
        a = rng.random((n, n), dtype=np.float32)
        out.append(
            Case(
                "stencil-f32",
                f"{n}^2, 5 points",
                kernels.stencil5,
                kapi.Range(n - 2, n - 2),
                [a, np.zeros((n, n), np.float32)],
                [1],
                rtol=1e-6,
                work=8 * n * n,
                unit="GB/s",
            )
        )
    if want("mandelbrot-f32"):
        n = int(1024 * sc**0.5)
        step = np.float32(2.5 / n)
        out.append(
            Case(
                "mandelbrot-f32",
                f"{n}^2, <= 256 iterations",
                kernels.mandelbrot,
                kapi.Range(n, n),
                [np.zeros((n, n), np.float32), np.float32(-2.0), np.float32(-1.25), step, 256],
                [0],
                check=mandelbrot_close,
            )
        )
    return out


def matmul_close(args, mine, theirs):
    return np.allclose(mine, theirs, rtol=1e-5, atol=1e-4) and np.allclose(
        mine, args[0] @ args[1], rtol=1e-4
    )


def mandelbrot_close(args, mine, theirs):
    """Escape counts may differ where rounding (FMA contraction) moves a point across the
    escape radius: at most 0.1% of the points."""
    return np.mean(mine != theirs) <= 1e-3
