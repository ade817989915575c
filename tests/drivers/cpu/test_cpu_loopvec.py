"""Kernels with loops on the CPU device, checked against NumPy. With KAPI_HOST_LOOPVEC on (the
default), a barrier-free kernel's loops that every work-item of a group enters together run
as regions (one work-item loop per iteration, vectorised across work-items; a divergent loop
goes round while any work-item of a chunk is still in it): early exits, break and continue,
nested loops, trip counts that differ per work-item, private arrays, atomics, group sizes that
are no multiple of a chunk or of a vector, and the same kernels with the split off or in other
chunk sizes (in subprocesses: the setting is read when a kernel is built)."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi import kernel_api as K

CPU = [d for d in devices_or_skip() if ":cpu:" in d.filter_string]
pytestmark = pytest.mark.skipif(not CPU, reason="no CPU device")

# group sizes: below a chunk, above one and no multiple of it, 2-D, and the driver's choice
RANGES_1D = [K.NdRange((111,), (37,)), K.NdRange((200,), (100,)), K.NdRange((192,), (192,))]


@kapi.kernel
def escape(item, out, x0, step, maxit):
    # mandelbrot-like: a while loop with two exits that work-items leave at different times
    i = item.get_global_id(0)
    c = x0 + step * np.float32(i)
    z = np.float32(0.0)
    n = 0
    while n < maxit and z * z <= np.float32(4.0):
        z = z * z + c
        n += 1
    out[i] = n


def escape_ref(size, x0, step, maxit):
    out = np.zeros(size, np.int64)
    for i in range(size):
        c = np.float32(x0 + step * np.float32(i))
        z = np.float32(0.0)
        n = 0
        while n < maxit and z * z <= np.float32(4.0):
            z = np.float32(z * z + c)
            n += 1
        out[i] = n
    return out


@kapi.kernel
def early_break(item, a, out, where):
    # a uniform trip count, left early (break) where the row has a negative value
    i = item.get_global_id(0)
    s = a.dtype.type(0)
    k = 0
    for k in range(a.shape[1]):
        if a[i, k] < 0:
            break
        s += a[i, k]
    out[i] = s
    where[i] = k


@kapi.kernel
def skip_some(item, a, out):
    # continue on a per-work-item condition: the loop's exit stays uniform
    i = item.get_global_id(0)
    s = a.dtype.type(0)
    for k in range(a.shape[1]):
        if (k + i) % 3 == 0:
            continue
        s += a[i, k] * k
    out[i] = s


@kapi.kernel
def varying_trip(item, out):
    i = item.get_global_id(0)
    s = 0
    for k in range(i % 7):
        s += k * k + i
    out[i] = s


@kapi.kernel
def nested(item, a, out, maxit):
    # a uniform outer loop around a divergent inner one (a per-row escape count)
    i = item.get_global_id(0)
    total = 0
    for r in range(a.shape[0]):
        v = a[r, i]
        n = 0
        while n < maxit and v < np.float32(100.0):
            v = v * np.float32(1.5) + np.float32(1.0)
            n += 1
        total += n * (r + 1)
    out[i] = total


@kapi.kernel
def matvec_cols(item, a, x, out):
    # out[j] = sum over k of a[k, j] * x[k]: consecutive work-items read consecutive columns
    j = item.get_global_id(0)
    s = a.dtype.type(0)
    for k in range(a.shape[0]):
        s += a[k, j] * x[k]
    out[j] = s


@kapi.kernel
def rows_2d(item, a, out):
    # a 2-D range: each work-item sums its row's first j + 1 values times its column
    i = item.get_global_id(0)
    j = item.get_global_id(1)
    s = a.dtype.type(0)
    for k in range(a.shape[1]):
        s += a[i, k] * (j + 1)
    out[j, i] = s


@kapi.device_func
def block_sum(x, c, p, span):
    # column c's sum over block p of rows: the loop's bounds come from dimension 1's id, the
    # same for every work-item of a chunk (a run along dimension 0)
    lo = p * span
    hi = min(lo + span, x.shape[0])
    s = x.dtype.type(0)
    for r in range(lo, hi):
        s += x[r, c]
    return s


@kapi.kernel
def row_blocks(item, x, out, span):
    c = item.get_global_id(0)
    p = item.get_global_id(1)
    out[p, c] = block_sum(x, c, p, span)


@kapi.kernel
def row_blocks_range(item, x, out, span):
    # the same over a Range, whose groups (the driver's choice) may span rows of dimension 1
    c = item.get_id(0)
    p = item.get_id(1)
    out[p, c] = block_sum(x, c, p, span)


@kapi.kernel
def ids_1_and_2(item, x, out):
    # bounds and a branch from dimensions 1 and 2, and a loop that differs along dimension 0
    # nested in them
    i = item.get_global_id(0)
    j = item.get_global_id(1)
    k = item.get_global_id(2)
    s = x.dtype.type(0)
    for a in range(j + 1):
        for b in range(k, 2 * k + 1):
            s += x[a, i] * (b + 1)
        n = 0
        while n < (i + a) % 4:
            s += x.dtype.type(0.5)
            n += 1
    if j % 2 == 0:
        s = -s
    out[k, j, i] = s


@kapi.kernel
def block_fold(item, x, out, span):
    # each work-item sums its own block of a row, dimension 1 picking the block (as kapi's CPU
    # folds and scans do): the loop reads one element further each iteration
    row = item.get_global_id(0)
    t = item.get_global_id(1)
    i = t * span
    end = min(x.shape[1], i + span)
    s = x.dtype.type(0)
    while i < end:
        s += x[row, i]
        i += 1
    out[row, t] = s


@kapi.kernel
def escape_2d(item, out, x0, y0, step, c_im, maxit):
    # mandelbrot over a 2-D range: ci is the same for a chunk (from get_id(1), or with y0 < 0
    # from the arguments alone) and live across the divergent loop's rounds
    i = item.get_global_id(0)
    j = item.get_global_id(1)
    cr = x0 + step * np.float32(i)
    ci = y0 + step * np.float32(j) if y0 >= np.float32(0.0) else c_im * step
    zr = np.float32(0.0)
    zi = np.float32(0.0)
    n = 0
    while n < maxit and zr * zr + zi * zi <= np.float32(4.0):
        t = zr * zr - zi * zi + cr
        zi = np.float32(2.0) * zr * zi + ci
        zr = t
        n += 1
    out[j, i] = n


def escape_2d_ref(n0, n1, x0, y0, step, c_im, maxit):
    f = np.float32
    out = np.zeros((n1, n0), np.int64)
    for j in range(n1):
        for i in range(n0):
            cr = f(x0 + step * f(i))
            ci = f(y0 + step * f(j)) if y0 >= 0 else f(c_im * step)
            zr = zi = f(0.0)
            n = 0
            while n < maxit and zr * zr + zi * zi <= f(4.0):
                zr, zi = f(zr * zr - zi * zi + cr), f(f(2.0) * zr * zi + ci)
                n += 1
            out[j, i] = n
    return out


def ids_1_and_2_ref(x, shape):
    n0, n1, n2 = shape
    out = np.zeros((n2, n1, n0), np.float64)
    for k in range(n2):
        for j in range(n1):
            for i in range(n0):
                s = sum(x[a, i] * sum(b + 1 for b in range(k, 2 * k + 1)) for a in range(j + 1))
                s += 0.5 * sum((i + a) % 4 for a in range(j + 1))
                out[k, j, i] = -s if j % 2 == 0 else s
    return out


@kapi.kernel
def private_in_loop(item, a, out):
    i = item.get_global_id(0)
    p = K.PrivateArray(8, np.float32, fill_zeros=True)
    for k in range(8):
        p[k] = a[i] * np.float32(k)
    s = np.float32(0)
    for k in range(8):
        s += p[(k * 3 + i) % 8]
    out[i] = s


@kapi.kernel
def atomics_in_loop(item, data, bins):
    i = item.get_global_id(0)
    for k in range(4):
        K.AtomicRef(bins, data[i * 4 + k]).fetch_add(bins.dtype.type(1))


@kapi.kernel
def guarded(item, a, out, n):
    # the loop behind a per-work-item guard: reached on a varying path, so it is left as it is
    i = item.get_global_id(0)
    if i < n:
        s = a.dtype.type(0)
        for k in range(a.shape[1]):
            s += a[i, k]
        out[i] = s


@kapi.kernel
def loop_and_barrier(nditem, a, out, slm):
    # a barrier kernel (the region scheme already) with a loop on each side of the barrier
    lid = nditem.get_local_id(0)
    g = nditem.get_global_id(0)
    s = a.dtype.type(0)
    for k in range(lid % 5 + 1):
        s += a[g] * k
    slm[lid] = s
    K.group_barrier(nditem.get_group())
    t = a.dtype.type(0)
    for k in range(nditem.get_local_range(0)):
        t += slm[k]
    out[g] = t + s


@kapi.kernel
def count_from(item, out, last, x0, step, maxit, start):
    # a count that starts at a uniform value other than 0 and steps by 3, left in the middle of
    # the body (after its step) at either of two breaks, and used after the loop with a value
    # of the loop
    i = item.get_global_id(0)
    c = x0 + step * np.float32(i)
    z = np.float32(0.0)
    n = start
    while True:
        z = z * z + c
        n += 3
        if z * z > np.float32(4.0):
            break
        if n >= maxit:
            break
    out[i] = n
    last[i] = z


def count_from_ref(size, x0, step, maxit, start):
    out, last = np.zeros(size, np.int64), np.zeros(size, np.float32)
    for i in range(size):
        c = np.float32(x0 + step * np.float32(i))
        z, n = np.float32(0.0), start
        while True:
            z = np.float32(z * z + c)
            n += 3
            if z * z > np.float32(4.0) or n >= maxit:
                break
        out[i], last[i] = n, z
    return out, last


@kapi.kernel
def counts_apart(item, out, other, down, before, maxit):
    # counts that work-items still in the loop do not share: one starting at a per-work-item
    # value, one stepped on a per-work-item condition, and one whose value before its step is
    # used after the loop (work-items leave in different rounds); and one counting down by 2
    # that they share
    i = item.get_global_id(0)
    v = np.float32(i % 13)
    n = i % 5
    m = 0
    d = maxit
    e = 0
    t = 5
    while True:
        v = v * np.float32(1.3) + np.float32(1.0)
        if (n + i) % 2 == 0:
            m += 1
        e = d
        n += 1
        d -= 1
        t -= 2
        if n >= maxit or v >= np.float32(50.0):
            break
    out[i] = n
    other[i] = m
    down[i] = t
    before[i] = e * 1000 + d


def counts_apart_ref(size, maxit):
    ref = np.zeros((4, size), np.int64)
    for i in range(size):
        v, n, m, d, t = np.float32(i % 13), i % 5, 0, maxit, 5
        while True:
            v = np.float32(v * np.float32(1.3) + np.float32(1.0))
            if (n + i) % 2 == 0:
                m += 1
            e = d
            n += 1
            d -= 1
            t -= 2
            if n >= maxit or v >= np.float32(50.0):
                break
        ref[:, i] = n, m, t, e * 1000 + d
    return ref


@kapi.kernel
def two_loops(item, out, maxit):
    # two divergent loops one after the other, each with a count the work-items still in it
    # share; the second starts after every work-item of the chunk has left the first
    i = item.get_global_id(0)
    v = np.float32(i % 11) + np.float32(0.5)
    n = 0
    while True:
        v = v * np.float32(1.25)
        n += 1
        if n >= maxit or v > np.float32(40.0):
            break
    w = v
    m = 10
    while True:
        w = w * np.float32(0.75)
        m += 2
        if m >= 10 + 2 * maxit or w < np.float32(1.0):
            break
    out[i] = n * 1000 + m


def two_loops_ref(size, maxit):
    ref = np.zeros(size, np.int64)
    for i in range(size):
        v, n = np.float32(i % 11) + np.float32(0.5), 0
        while True:
            v, n = np.float32(v * np.float32(1.25)), n + 1
            if n >= maxit or v > np.float32(40.0):
                break
        w, m = v, 10
        while True:
            w, m = np.float32(w * np.float32(0.75)), m + 2
            if m >= 10 + 2 * maxit or w < np.float32(1.0):
                break
        ref[i] = n * 1000 + m
    return ref


@kapi.kernel
def escape_loaded(item, out, params, maxit):
    # the escape loop with values every work-item shares loaded from memory (saved once per
    # chunk across each round, not recomputed)
    i = item.get_global_id(0)
    c = params[0] + params[1] * np.float32(i)
    lim = params[2]
    z = np.float32(0.0)
    n = 0
    while n < maxit and z * z <= lim:
        z = z * z + c
        n += 1
    out[i] = n


def call(kernel, rng, *args):
    kapi.call_kernel(kernel, rng, *args)


@pytest.mark.parametrize("rng", RANGES_1D, ids=str)
def test_divergent_loop_with_two_exits(rng):
    size = rng.global_range[0]
    out = kapi.zeros(size, dtype="i8", device=CPU[0])
    x0, step, maxit = np.float32(-2.2), np.float32(2.6 / size), 300
    call(escape, rng, out, x0, step, maxit)
    ref = escape_ref(size, x0, step, maxit)
    assert len(set(ref.tolist())) > 5  # exits at many different iterations
    np.testing.assert_array_equal(out.asnumpy(), ref)


@pytest.mark.parametrize("rng", RANGES_1D, ids=str)
def test_counts_of_a_divergent_loop(rng):
    # a divergent loop's count is kept once per chunk where every work-item still in the loop
    # holds the same (a uniform start, a constant step), and per work-item where not
    size = rng.global_range[0]
    out, last = np.zeros(size, np.int64), np.zeros(size, np.float32)
    x0, step = np.float32(-2.2), np.float32(2.6 / size)
    call(count_from, rng, out, last, x0, step, 200, 7)
    ref_out, ref_last = count_from_ref(size, x0, step, 200, 7)
    assert len(set(ref_out.tolist())) > 5  # work-items leave in many different rounds
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(last, ref_last)
    params = np.array([x0, step, 4.0], np.float32)
    call(escape_loaded, rng, out, params, 300)
    np.testing.assert_array_equal(out, escape_ref(size, x0, step, 300))
    call(two_loops, rng, out, 30)
    ref = two_loops_ref(size, 30)
    assert len(set(ref.tolist())) > 5
    np.testing.assert_array_equal(out, ref)
    outs = [np.zeros(size, np.int64) for _ in range(4)]
    call(counts_apart, rng, *outs, 40)
    ref = counts_apart_ref(size, 40)
    assert len(set(ref[0].tolist())) > 5
    np.testing.assert_array_equal(np.stack(outs), ref)


@pytest.mark.parametrize("rng", RANGES_1D, ids=str)
def test_break_and_continue(rng):
    size = rng.global_range[0]
    gen = np.random.default_rng(3)
    a = gen.uniform(-0.3, 1, (size, 23)).astype(np.float32)
    out = np.zeros(size, np.float32)
    where = np.zeros(size, np.int64)
    call(early_break, rng, a, out, where)
    ref_out, ref_where = np.zeros(size, np.float32), np.zeros(size, np.int64)
    for i in range(size):
        s, k = np.float32(0), 0
        for k in range(23):
            if a[i, k] < 0:
                break
            s += a[i, k]
        ref_out[i], ref_where[i] = s, k
    np.testing.assert_allclose(out, ref_out, rtol=1e-6)
    np.testing.assert_array_equal(where, ref_where)
    call(skip_some, rng, a, out)
    k = np.arange(23)
    mask = (k[None, :] + np.arange(size)[:, None]) % 3 != 0
    np.testing.assert_allclose(out, (a * k * mask).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rng", RANGES_1D, ids=str)
def test_trip_count_per_work_item(rng):
    size = rng.global_range[0]
    out = np.zeros(size, np.int64)
    call(varying_trip, rng, out)
    i = np.arange(size)
    ref = [sum(k * k + j for k in range(j % 7)) for j in i]
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("rng", RANGES_1D, ids=str)
def test_nested_uniform_and_divergent_loops(rng):
    size = rng.global_range[0]
    a = np.random.default_rng(5).uniform(0, 60, (4, size)).astype(np.float32)
    out = np.zeros(size, np.int64)
    call(nested, rng, a, out, 9)
    ref = np.zeros(size, np.int64)
    for i in range(size):
        for r in range(4):
            v, n = a[r, i], 0
            while n < 9 and v < 100:
                v, n = np.float32(v * np.float32(1.5) + np.float32(1.0)), n + 1
            ref[i] += n * (r + 1)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("rng", RANGES_1D, ids=str)
def test_uniform_loops(rng):
    size = rng.global_range[0]
    gen = np.random.default_rng(7)
    a = gen.random((19, size)).astype(np.float32)
    x = gen.random(19).astype(np.float32)
    out = np.zeros(size, np.float32)
    call(matvec_cols, rng, a, x, out)
    np.testing.assert_allclose(out, x @ a, rtol=1e-5)
    v = gen.random(size).astype(np.float32)
    call(private_in_loop, rng, v, out)
    ref = np.array([sum(v[i] * ((k * 3 + i) % 8) for k in range(8)) for i in range(size)])
    np.testing.assert_allclose(out, ref, rtol=1e-5)


@pytest.mark.parametrize(
    "rng",
    [K.NdRange((40, 6), (40, 6)), K.NdRange((40, 6), (20, 3)), K.NdRange((33, 4), (11, 2))],
    ids=str,
)
def test_two_dimensional_range(rng):
    n0, n1 = rng.global_range
    a = np.random.default_rng(9).random((n0, 13)).astype(np.float32)
    out = np.zeros((n1, n0), np.float32)
    call(rows_2d, rng, a, out)
    np.testing.assert_allclose(out, (a.sum(1)[None, :] * np.arange(1, n1 + 1)[:, None]), rtol=1e-5)


ROW_RANGES = [K.NdRange((64, 9), (32, 1)), K.NdRange((40, 6), (20, 3)), K.NdRange((33, 4), (11, 2))]


@pytest.mark.parametrize("rng", ROW_RANGES, ids=str)
def test_loop_bounds_from_dimension_1(rng):
    # rows of dimension 1 in one group each or several to a group, and groups no multiple of
    # a vector; a last block shorter than the others
    n0, n1 = rng.global_range
    x = np.random.default_rng(3).random((7 * n1 - 3, n0)).astype(np.float32)
    out = np.zeros((n1, n0), np.float32)
    call(row_blocks, rng, x, out, 7)
    ref = np.stack([x[p * 7 : p * 7 + 7].sum(0) for p in range(n1)])
    np.testing.assert_allclose(out, ref, rtol=1e-5)


@pytest.mark.parametrize("shape", [(300, 17), (1000, 64), (5, 300)], ids=str)
def test_loop_bounds_from_dimension_1_over_a_range(shape):
    n0, n1 = shape
    x = np.random.default_rng(4).random((5 * n1, n0)).astype(np.float32)
    out = kapi.zeros((n1, n0), dtype="f4", device=CPU[0])
    call(row_blocks_range, K.Range(n0, n1), kapi.asarray(x, device=CPU[0]), out, 5)
    np.testing.assert_allclose(out.asnumpy(), x.reshape(n1, 5, n0).sum(1), rtol=1e-5)


@pytest.mark.parametrize(
    "rng",
    [K.NdRange((1, 37), (1, 1)), K.NdRange((6, 10), (2, 5)), K.NdRange((70, 3), (35, 1))],
    ids=str,
)
def test_blocks_of_a_row_per_dimension_1(rng):
    rows, blocks = rng.global_range
    x = np.random.default_rng(6).random((rows, 9 * blocks - 4)).astype(np.float32)
    out = np.zeros((rows, blocks), np.float32)
    call(block_fold, rng, x, out, 9)
    ref = np.stack([x[:, t * 9 : t * 9 + 9].sum(1) for t in range(blocks)], axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


@pytest.mark.parametrize(
    "rng",
    [
        K.NdRange((24, 5, 3), (8, 5, 3)),
        K.NdRange((20, 4, 6), (20, 2, 3)),
        K.NdRange((9, 3, 2), (3, 1, 1)),
    ],
    ids=str,
)
def test_loop_bounds_and_branches_from_dimensions_1_and_2(rng):
    x = np.random.default_rng(5).random((rng.global_range[1], rng.global_range[0]))
    out = np.zeros(tuple(reversed(rng.global_range)), np.float64)
    call(ids_1_and_2, rng, x, out)
    np.testing.assert_allclose(out, ids_1_and_2_ref(x, rng.global_range), rtol=1e-12)


def test_atomics_guards_and_barriers_in_loop_kernels():
    gen = np.random.default_rng(11)
    data = gen.integers(0, 16, 400).astype(np.int32)
    bins = np.zeros(16, np.int32)
    call(atomics_in_loop, K.NdRange((100,), (50,)), data, bins)
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=16))
    a = gen.random((150, 9)).astype(np.float32)
    out = np.full(150, -1, np.float32)
    call(guarded, K.NdRange((150,), (75,)), a, out, 101)
    np.testing.assert_allclose(out[:101], a[:101].sum(1), rtol=1e-5)
    assert (out[101:] == -1).all()
    v = gen.random(96).astype(np.float32)
    out = np.zeros(96, np.float32)
    call(loop_and_barrier, K.NdRange((96,), (48,)), v, out, K.LocalAccessor((48,), np.float32))
    lid = np.arange(96) % 48
    s = v * np.array([sum(range(m % 5 + 1)) for m in lid])
    ref = s.reshape(2, 48).sum(1).repeat(48) + s
    np.testing.assert_allclose(out, ref, rtol=1e-5)


VARIANTS = """
import sys, numpy as np, kapi
import test_cpu_loopvec as T
from kapi import kernel_api as K
rng = K.NdRange((111,), (37,))
out = kapi.zeros(111, dtype="i8", device="cpu")
kapi.call_kernel(T.escape, rng, out, np.float32(-2.2), np.float32(2.6 / 111), 300)
ok = (out.asnumpy() == T.escape_ref(111, np.float32(-2.2), np.float32(2.6 / 111), 300)).all()
a = np.random.default_rng(5).uniform(0, 60, (4, 111)).astype(np.float32)
n = np.zeros(111, np.int64)
kapi.call_kernel(T.nested, rng, a, n, 9)
print(bool(ok), int(n.sum()))
"""


def run_script(src, env):
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([here, *[p for p in sys.path if p]])
    e = dict(os.environ, PYTHONPATH=path, KAPI_CACHE="0", **env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(src)],
        capture_output=True,
        text=True,
        timeout=300,
        env=e,
    )


def test_same_results_with_the_split_off_and_in_other_chunk_sizes():
    results = set()
    for setting in ("0", "1", "5", "16", "1024"):
        r = run_script(VARIANTS, {"KAPI_HOST_LOOPVEC": setting})
        assert r.returncode == 0, r.stderr[-3000:]
        ok, total = r.stdout.split()
        assert ok == "True", setting
        results.add(total)
    assert len(results) == 1, results


DUMP = """
import numpy as np, kapi
import test_cpu_loopvec as T
from kapi import kernel_api as K
r = K.NdRange((256,), (128,))
a = np.random.default_rng(1).random((19, 256)).astype(np.float32)
kapi.call_kernel(T.matvec_cols, r, a, np.ones(19, np.float32), np.zeros(256, np.float32))
kapi.call_kernel(T.escape, r, np.zeros(256, np.int64), np.float32(-2), np.float32(0.01), 50)
"""


def attributes(ir):
    return [ln for ln in ir.splitlines() if ln.startswith("attributes #") and "kapi-scheme" in ln]


def run_function(ir, kernel):
    """The text of kernel's generated run function in a KAPI_DUMP=host listing."""
    lines = ir.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("define") and kernel in ln)
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return "\n".join(lines[start : end + 1])


def test_the_loops_run_as_vectorised_regions():
    # a fixed target (SSE4.2: 4 floats a vector) so that the check does not depend on this CPU
    env = {"KAPI_DUMP": "host", "KAPI_HOST_CPU": "x86-64-v2"}
    r = run_script(DUMP, env)
    assert r.returncode == 0, r.stderr[-3000:]
    runs = attributes(r.stderr)
    assert len(runs) == 2 and all('"kapi-loop-regions"="1"' in a for a in runs), runs
    # the work-item loops of the loops' regions are vectorised
    assert "<4 x float>" in run_function(r.stderr, "matvec_cols")
    # the escape count, an int64, is kept once per chunk (every work-item still in the loop
    # holds the same): it no longer halves the lanes, as it did kept per work-item
    assert "<4 x float>" in run_function(r.stderr, "escape")
    off = run_script(DUMP, dict(env, KAPI_HOST_LOOPVEC="0"))
    assert off.returncode == 0, off.stderr[-3000:]
    runs = attributes(off.stderr)
    assert len(runs) == 2 and all('"kapi-scheme"="loop"' in a for a in runs), runs
    assert "x float>" not in run_function(off.stderr, "escape")


@pytest.mark.parametrize("target, lanes", [("skylake-avx512", 16), ("haswell", 8)])
def test_a_divergent_loop_keeps_its_values_in_vector_registers(target, lanes):
    # On an AVX-512 (AVX2) target a kernel with a divergent loop runs in chunks of a few
    # vectors of 16 (8) work-items, its slots in run's frame: once the masked saves become
    # plain ones, the loop's values go round its rounds as vector phis instead of through
    # memory. On AVX2 the vectoriser chose 4 lanes for the loop's 64-bit count, and left the
    # values in memory (mandelbrot 3.3 times as slow). Only the listing is checked, so a host
    # without those instructions may refuse to run the module.
    env = {"KAPI_DUMP": "host", "KAPI_HOST_CPU": target}
    r = run_script(DUMP.replace("kapi.call_kernel", "T.try_call"), env)
    assert r.returncode == 0, r.stderr[-3000:]
    run = run_function(r.stderr, "escape")
    assert f"phi <{lanes} x float>" in run, run[:3000]
    assert re.search(r'"kapi-free-saves"="[1-9]', "\n".join(attributes(r.stderr)))
    # no store under a mask is split into a branch per lane (AVX2 has no byte stores under a
    # mask: there the loop's done flags are 32-bit)
    assert "pred.store" not in run
    assert " x float>" in run_function(r.stderr, "matvec_cols")
    # the split's count and the results do not change with it: a group of 37 work-items
    # (a tail chunk only, on AVX-512) and one of 100 on this host, whatever its ISA
    for rng in RANGES_1D[:2]:
        size = rng.global_range[0]
        out = kapi.zeros(size, dtype="i8", device=CPU[0])
        call(escape, rng, out, np.float32(-2.2), np.float32(2.6 / size), 300)
        ref = escape_ref(size, np.float32(-2.2), np.float32(2.6 / size), 300)
        np.testing.assert_array_equal(out.asnumpy(), ref)


def test_a_divergent_loop_keeps_its_count_once_per_chunk():
    # every work-item still in the escape loop holds the same count: the round loads it once,
    # steps it as a scalar, and writes it into the lanes that leave; kept per work-item
    # (KAPI_HOST_LOOPVEC_UNIFORM=0), each round steps a vector of counts
    step = re.compile(r"= add <16 x i64> %[\w.]+, <i64 1, i64 1,")
    env = {"KAPI_DUMP": "host", "KAPI_HOST_CPU": "skylake-avx512"}
    for setting, scalar in (("1", True), ("0", False)):
        r = run_script(
            DUMP.replace("kapi.call_kernel", "T.try_call"),
            dict(env, KAPI_HOST_LOOPVEC_UNIFORM=setting),
        )
        assert r.returncode == 0, r.stderr[-3000:]
        run = run_function(r.stderr, "escape")
        assert ("kapi.count" in run) == scalar, setting
        assert (step.search(run) is None) == scalar, setting
        # the rounds go round as a loop of their own (KAPI_HOST_LOOPVEC_SELF), which LLVM
        # unswitches on the scalar count's test; the next state is still a mask test, of the
        # lanes of either copy
        assert ("kapi.lanes" in run) == scalar, setting
        # without the count's vectors, a chunk of four vectors fits the registers (two with it)
        chunk = re.search(r"add nuw nsw i64 %kapi\.chunk, (\d+)", run)
        assert chunk and int(chunk.group(1)) == (64 if scalar else 32), setting
    r = run_script(VARIANTS, {"KAPI_HOST_LOOPVEC_UNIFORM": "0"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split()[0] == "True"


def test_a_divergent_loops_dead_values_are_saved_whole():
    # escape's z is live across the loop's header and nowhere else: a work-item that leaves
    # the loop never reads it again, so each round stores the vector it computed for all 16
    # lanes instead of selecting the leaving lanes' old ones (KAPI_HOST_FREE_SAVES=0: as
    # before). The values used after the loop (count_from's z, counts_apart's counts) keep
    # their selects: test_counts_of_a_divergent_loop fails if they lose them.
    free = re.compile(r'"kapi-free-saves"="(\d+)"')
    blend = re.compile(r"select <16 x i1> %[\w.]+, <16 x float>")
    env = {"KAPI_DUMP": "host", "KAPI_HOST_CPU": "skylake-avx512"}
    found = {}
    for setting in ("1", "0"):
        r = run_script(
            DUMP.replace("kapi.call_kernel", "T.try_call"), dict(env, KAPI_HOST_FREE_SAVES=setting)
        )
        assert r.returncode == 0, r.stderr[-3000:]
        run = run_function(r.stderr, "escape")
        attrs = [a for a in attributes(r.stderr) if free.search(a)]
        assert len(attrs) == 2, attributes(r.stderr)
        # escape's run comes second in the listing (matvec_cols, a uniform loop, has none)
        found[setting] = [int(free.search(a).group(1)) for a in attrs], len(blend.findall(run))
    # one store per vector of the chunk (four of 16 work-items), none with a select
    assert found["1"] == ([0, 4], 0), found
    assert found["0"] == ([0, 0], 4), found
    r = run_script(VARIANTS, {"KAPI_HOST_FREE_SAVES": "0"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split()[0] == "True"
    default = run_script(VARIANTS, {})
    assert default.returncode == 0, default.stderr[-3000:]
    assert default.stdout == r.stdout


ROWS = """
import numpy as np, kapi
import test_cpu_loopvec as T
from kapi import kernel_api as K
x = np.random.default_rng(2).random((40, 64)).astype(np.float32)
out = np.zeros((8, 64), np.float32)
T.try_call(T.row_blocks, K.NdRange((64, 8), (32, 2)), x, out, 5)
r = K.NdRange((24, 5, 3), (8, 5, 3))
y = np.random.default_rng(5).random((5, 24))
o3 = np.zeros((3, 5, 24))
T.try_call(T.ids_1_and_2, r, y, o3)
z = np.random.default_rng(6).random((4, 300)).astype(np.float32)
o2 = np.zeros((4, 10), np.float32)
T.try_call(T.block_fold, K.NdRange((4, 10), (1, 1)), z, o2, 30)
print(repr(out.tobytes().hex()), repr(o3.tobytes().hex()), repr(o2.tobytes().hex()))
"""


def test_bounds_from_dimension_1_make_a_uniform_loop():
    # A chunk is a run along dimension 0 with the other ids fixed, so a loop whose bounds come
    # from get_global_id(1) is the same loop for every work-item of a chunk: it runs as a
    # region (one work-item loop per iteration, vectorised across work-items, its loads plain
    # vector loads). Taken as varying (KAPI_HOST_LOOPVEC_ROWS=0, as before) such loops were
    # not split at all: each work-item ran its own loop down a column, and a 2-D Range kernel
    # summing blocks of rows per column ran 8-38x slower.
    found = re.compile(r'"kapi-(loop-regions|divergent-loops)"="(\d+)"')
    env = {"KAPI_DUMP": "host", "KAPI_HOST_CPU": "x86-64-v2"}
    counts, outs = {}, {}
    for setting in ("1", "0"):
        r = run_script(ROWS, dict(env, KAPI_HOST_LOOPVEC_ROWS=setting))
        assert r.returncode == 0, r.stderr[-3000:]
        counts[setting] = [dict(found.findall(a)) for a in attributes(r.stderr)]
        outs[setting] = r.stdout
        if setting == "1":
            assert "<4 x float>" in run_function(r.stderr, "row_blocks")
    # row_blocks: its one loop; ids_1_and_2: the two loops on dimensions 1 and 2 (the loop on
    # dimension 0's id inside them differs between work-items and stays whole); block_fold:
    # none, as its loop reads along itself (split, each iteration would be a round of the
    # state machine for a chunk of one work-item: kapi's scans with a device function ran 2-3.6
    # times as slow so)
    assert counts["1"] == [
        {"loop-regions": "1", "divergent-loops": "0"},
        {"loop-regions": "2", "divergent-loops": "0"},
        {"loop-regions": "0", "divergent-loops": "0"},
    ], counts
    assert [c["loop-regions"] for c in counts["0"][:2]] == ["0", "0"], counts
    assert outs["1"] == outs["0"]


ROUNDS = """
import numpy as np, kapi
import test_cpu_loopvec as T
from kapi import kernel_api as K
out = np.zeros((6, 64), np.int64)
f = np.float32
for y0 in (f(0.0), f(-1.0)):
    T.try_call(T.escape_2d, K.NdRange((64, 6), (32, 3)), out, f(-2.0), y0, f(3.0 / 64), f(7.0), 40)
"""


@pytest.mark.parametrize("rng", [K.NdRange((64, 6), (32, 3)), K.NdRange((37, 5), (37, 1))], ids=str)
def test_values_the_same_for_a_chunk_across_a_divergent_loop(rng):
    n0, n1 = rng.global_range
    f = np.float32
    for y0 in (f(0.0), f(-1.0)):
        out = np.zeros((n1, n0), np.int64)
        call(escape_2d, rng, out, f(-2.0), y0, f(3.0 / n0), f(7.0), 40)
        ref = escape_2d_ref(n0, n1, f(-2.0), y0, f(3.0 / n0), f(7.0), 40)
        np.testing.assert_array_equal(out, ref)


def test_values_the_same_for_a_chunk_stay_in_registers_across_rounds():
    # ci is the same in every work-item of a chunk but live across the divergent loop's
    # rounds, which run under a mask: one copy per chunk was read and written each round by
    # a masked gather and scatter of one address (mandelbrot 7x, a ci from the arguments alone
    # 5.9x as slow); per work-item in the frame, it is a vector register
    env = {"KAPI_DUMP": "host", "KAPI_HOST_CPU": "skylake-avx512"}
    r = run_script(ROUNDS, env)
    assert r.returncode == 0, r.stderr[-3000:]
    run = run_function(r.stderr, "escape_2d")
    assert "phi <16 x float>" in run
    assert "masked.gather" not in run and "masked.scatter" not in run, run[:3000]
    # one copy per chunk (KAPI_HOST_ROUND_UNIFORMS=0, as before): the masked gather and scatter
    old = run_script(ROUNDS, dict(env, KAPI_HOST_ROUND_UNIFORMS="0"))
    assert old.returncode == 0, old.stderr[-3000:]
    assert "masked.scatter" in run_function(old.stderr, "escape_2d")


def try_call(*args):
    """kapi.call_kernel, where a module built for a CPU this host is not may fail to run."""
    try:
        kapi.call_kernel(*args)
    except kapi.KapiError:
        pass
