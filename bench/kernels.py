"""The kernels the benchmarks share, as plain Python functions in numba-dpex's style; each
script decorates them (`kapi.kernel(kernels.saxpy)`) or compiles them fresh."""

import math

from kapi import kernel_api as K


def saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def pairwise_distance(item, data, dist):
    i = item.get_id(0)
    j = item.get_id(1)
    d = data.dtype.type(0.0)
    for k in range(data.shape[1]):
        t = data[i, k] - data[j, k]
        d += t * t
    dist[j, i] = math.sqrt(d)


def row_sums(item, a, out):
    # a loop along the row per work-item: a[i, k] steps by a.shape[1] from one item to the next
    i = item.get_id(0)
    s = a.dtype.type(0.0)
    for k in range(a.shape[1]):
        s += a[i, k]
    out[i] = s


def column_sums(nd, a, out, span):
    # kapi's CPU column reduction (x.sum(axis=0) of a C array, kapi/_numeric/reduce.py): the
    # work-items of a group are neighbouring columns, group (_, p) sums rows [p * span, ...)
    r = nd.get_global_id(0)
    p = nd.get_group().get_group_id(1)
    j = p * span
    end = min(a.shape[0], j + span)
    s = a.dtype.type(0.0)
    while j < end:
        s += a[j, r]
        j += 1
    out[p, r] = s


def row_blocks(item, a, out, span):
    # per column, the sum of block p of rows, p dimension 1's id: a 2-D Range kernel whose
    # loop bounds come from get_id(1) (the same loop for a run of work-items along dimension 0)
    c = item.get_id(0)
    p = item.get_id(1)
    j = p * span
    end = min(a.shape[0], j + span)
    s = a.dtype.type(0.0)
    for r in range(j, end):
        s += a[r, c]
    out[p, c] = s


def prefix_rows(item, a, out):
    # out[r, c] = a[0, c] + ... + a[r, c], each work-item its own sum: a triangular loop whose
    # trip count is dimension 1's id
    c = item.get_id(0)
    r = item.get_id(1)
    s = a.dtype.type(0.0)
    for k in range(r + 1):
        s += a[k, c]
    out[r, c] = s


def black_scholes(item, price, strike, t, rate, vol, call, put):
    # dpbench's black-scholes; constants in the arrays' type, so float32 stays float32
    f = price.dtype.type
    i = item.get_id(0)
    p = price[i]
    s = strike[i]
    tt = t[i]
    a = math.log(p / s)
    b = tt * -rate
    z = tt * vol * vol * f(2.0)
    c = f(0.25) * z
    y = f(1.0) / math.sqrt(z)
    w1 = (a - b + c) * y
    w2 = (a - b - c) * y
    d1 = f(0.5) + f(0.5) * math.erf(w1)
    d2 = f(0.5) + f(0.5) * math.erf(w2)
    se = math.exp(b) * s
    r = p * d1 - se * d2
    call[i] = r
    put[i] = r - p + se


def triad(item, a, b, c, s):
    i = item.get_id(0)
    a[i] = b[i] + s * c[i]


def stencil5(item, a, out):
    # 5-point average of the interior; id 0 runs along rows (contiguous)
    f = a.dtype.type
    c = item.get_id(0) + 1
    r = item.get_id(1) + 1
    out[r, c] = f(0.2) * (a[r, c] + a[r - 1, c] + a[r + 1, c] + a[r, c - 1] + a[r, c + 1])


def matmul_naive(item, a, b, c):
    # one output element per work-item, a loop over k (dimension 0, the vectorised one, runs
    # along c's rows: b's and c's accesses are consecutive, a's the same for a row's items)
    i = item.get_id(0)
    j = item.get_id(1)
    acc = c.dtype.type(0.0)
    for k in range(a.shape[1]):
        acc += a[j, k] * b[k, i]
    c[j, i] = acc


def mandelbrot(item, out, x0, y0, step, maxit):
    # escape-time iterations: a loop whose trip count differs from work-item to work-item
    f = out.dtype.type  # out holds float32 counts, so the arithmetic stays in float32
    cr = x0 + step * f(item.get_id(0))
    ci = y0 + step * f(item.get_id(1))
    zr = f(0.0)
    zi = f(0.0)
    n = 0
    while n < maxit and zr * zr + zi * zi <= f(4.0):
        t = zr * zr - zi * zi + cr
        zi = f(2.0) * zr * zi + ci
        zr = t
        n += 1
    out[item.get_id(1), item.get_id(0)] = f(n)


def histogram(item, data, bins):
    # data holds bin numbers already; one atomic add per element
    K.AtomicRef(bins, data[item.get_id(0)]).fetch_add(bins.dtype.type(1))


HIST_ITEMS = 64  # elements per work-item of histogram_local


def histogram_local(nditem, data, bins, local):
    # the histogram as many-core code writes it: each work-group counts HIST_ITEMS elements
    # per work-item into its own local copy, then adds the copy into bins once per bin
    g = nditem.get_group()
    lid = nditem.get_local_id(0)
    nl = nditem.get_local_range(0)
    for b in range(lid, bins.shape[0], nl):
        local[b] = 0
    K.group_barrier(g)
    base = g.get_group_id(0) * nl * HIST_ITEMS + lid
    one = bins.dtype.type(1)
    for k in range(HIST_ITEMS):
        K.AtomicRef(local, data[base + k * nl], address_space=K.AddressSpace.LOCAL).fetch_add(one)
    K.group_barrier(g)
    for b in range(lid, bins.shape[0], nl):
        K.AtomicRef(bins, b).fetch_add(local[b])
