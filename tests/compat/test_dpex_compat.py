"""numba-dpex 0.23 compatibility: realistic kernels written as numba-dpex users write them.

Every kernel below is numba-dpex code with only the imports changed
(`import kapi as dpex; from kapi import kernel_api as kapi`). Each result is checked against
a NumPy reference. Launches run on the default device (kapi arrays) and, where the CPU device
takes them, on NumPy arrays directly.
"""

import math
from functools import lru_cache

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi as dpex
from kapi import kernel_api as kapi

devices_or_skip()
_DEV = dpex.default_device()

HAS_CPU = bool(dpex.devices("cpu"))
needs_cpu = pytest.mark.skipif(not HAS_CPU, reason="NumPy arguments need the CPU device")
FP64 = _DEV.has_aspect_fp64
needs_fp64 = pytest.mark.skipif(not FP64, reason="device without fp64")
FLOATS = [np.float32, np.float64] if FP64 else [np.float32]


def rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------
# dpbench-style workloads
# ---------------------------------------------------------------------------------------------


@dpex.kernel
def pairwise_distance(item, X1, X2, D):
    # dpbench launches Range(X2.shape[0], X1.shape[0]) and reads the row from get_id(1)
    i = item.get_id(1)
    j = item.get_id(0)
    X1_cols = X1.shape[1]
    d = 0.0
    for k in range(X1_cols):
        tmp = X1[i, k] - X2[j, k]
        d += tmp * tmp
    D[i, j] = math.sqrt(d)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_pairwise_distance(dtype):
    r = rng(1)
    h1 = r.random((37, 5)).astype(dtype)
    h2 = r.random((23, 5)).astype(dtype)
    X1, X2 = dpex.asarray(h1), dpex.asarray(h2)
    D = dpex.empty((37, 23), dtype=dtype)
    dpex.call_kernel(pairwise_distance, kapi.Range(X2.shape[0], X1.shape[0]), X1, X2, D)
    ref = np.sqrt(((h1[:, None, :] - h2[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(D.asnumpy(), ref, rtol=1e-5)


@dpex.kernel
def black_scholes(item, nopt, price, strike, t, rate, volatility, call, put):
    mr = -rate
    sig_sig_two = volatility * volatility * 2
    i = item.get_id(0)
    if i >= nopt:
        return
    P = price[i]
    S = strike[i]
    T = t[i]
    a = math.log(P / S)
    b = T * mr
    z = T * sig_sig_two
    c = 0.25 * z
    y = 1.0 / math.sqrt(z)
    w1 = (a - b + c) * y
    w2 = (a - b - c) * y
    d1 = 0.5 + 0.5 * math.erf(w1)
    d2 = 0.5 + 0.5 * math.erf(w2)
    Se = math.exp(b) * S
    r = P * d1 - Se * d2
    call[i] = r
    put[i] = r - P + Se


def _bs_ref(price, strike, t, rate, vol):
    from math import erf

    erfv = np.vectorize(erf)
    mr = -rate
    z = t * vol * vol * 2
    a = np.log(price / strike)
    b = t * mr
    y = 1.0 / np.sqrt(z)
    w1 = (a - b + 0.25 * z) * y
    w2 = (a - b - 0.25 * z) * y
    d1 = 0.5 + 0.5 * erfv(w1)
    d2 = 0.5 + 0.5 * erfv(w2)
    se = np.exp(b) * strike
    call = price * d1 - se * d2
    return call, call - price + se


@needs_fp64
def test_black_scholes_f64_padded_range():
    r = rng(2)
    n = 1000
    price = r.uniform(10, 50, n)
    strike = r.uniform(10, 50, n)
    t = r.uniform(1, 2, n)
    call = dpex.zeros(n, dtype=np.float64)
    put = dpex.zeros(n, dtype=np.float64)
    args = [dpex.asarray(x) for x in (price, strike, t)]
    dpex.call_kernel(black_scholes, kapi.Range(1024), n, *args, 0.1, 0.2, call, put)
    rc, rp = _bs_ref(price, strike, t, 0.1, 0.2)
    np.testing.assert_allclose(call.asnumpy(), rc, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(put.asnumpy(), rp, rtol=1e-9, atol=1e-9)


@dpex.kernel
def black_scholes_f32(item, nopt, price, strike, t, rate, volatility, call, put):
    # float32 variant: constants and scalars cast to the array dtype, as dpbench does
    dtype = price.dtype
    mr = -rate
    sig_sig_two = volatility * volatility * dtype.type(2)
    i = item.get_id(0)
    if i < nopt:
        P = price[i]
        S = strike[i]
        T = t[i]
        a = math.log(P / S)
        b = T * mr
        z = T * sig_sig_two
        c = dtype.type(0.25) * z
        y = dtype.type(1.0) / math.sqrt(z)
        w1 = (a - b + c) * y
        w2 = (a - b - c) * y
        d1 = dtype.type(0.5) + dtype.type(0.5) * math.erf(w1)
        d2 = dtype.type(0.5) + dtype.type(0.5) * math.erf(w2)
        Se = math.exp(b) * S
        r = P * d1 - Se * d2
        call[i] = r
        put[i] = r - P + Se


def test_black_scholes_f32_scalar_casts():
    r = rng(3)
    n = 512
    price = r.uniform(10, 50, n).astype(np.float32)
    strike = r.uniform(10, 50, n).astype(np.float32)
    t = r.uniform(1, 2, n).astype(np.float32)
    call = dpex.zeros(n, dtype=np.float32)
    put = dpex.zeros(n, dtype=np.float32)
    args = [dpex.asarray(x) for x in (price, strike, t)]
    rate, vol = np.float32(0.1), np.float32(0.2)
    dpex.call_kernel(black_scholes_f32, kapi.Range(n), n, *args, rate, vol, call, put)
    rc, rp = _bs_ref(price.astype(np.float64), strike, t, 0.1, 0.2)
    np.testing.assert_allclose(call.asnumpy(), rc, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(put.asnumpy(), rp, rtol=1e-3, atol=1e-3)


@dpex.kernel
def l2_norm_rows(item, a, d):
    i = item.get_id(0)
    a_rows = a.shape[1]
    d[i] = 0.0
    for k in range(a_rows):
        d[i] += a[i, k] * a[i, k]
    d[i] = math.sqrt(d[i])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_l2_norm(dtype):
    h = rng(4).random((64, 9)).astype(dtype)
    a = dpex.asarray(h)
    d = dpex.empty(64, dtype=dtype)
    dpex.call_kernel(l2_norm_rows, kapi.Range(64), a, d)
    np.testing.assert_allclose(d.asnumpy(), np.linalg.norm(h, axis=1), rtol=1e-5)


# kmeans: kernels built by lru_cache'd factories closing over constants, PrivateArray sized
# from a free variable, min() and dtype casts (dpbench kmeans_kernel_dpex_k style).


@lru_cache
def make_assign_kernel(dims, num_centroids, dtyp):
    @dpex.kernel
    def assign(item, points, centroids, labels):
        i = item.get_id(0)
        best = dtyp(np.inf)
        best_c = 0
        for c in range(num_centroids):
            dist = dtyp(0.0)
            for d in range(dims):
                diff = points[i, d] - centroids[c, d]
                dist += diff * diff
            if dist < best:
                best = dist
                best_c = c
        labels[i] = best_c

    return assign


@lru_cache
def make_partial_sums_kernel(dims, num_centroids, dtyp, work_per_item):
    @dpex.kernel
    def partial_sums(nditem, points, labels, sums, counts, npoints):
        gid = nditem.get_global_id(0)
        local_sums = kapi.PrivateArray((num_centroids, dims), dtyp, fill_zeros=True)
        local_counts = kapi.PrivateArray(num_centroids, np.int32, fill_zeros=True)
        start = gid * work_per_item
        for p in range(start, min(start + work_per_item, npoints)):
            lab = labels[p]
            local_counts[lab] += np.int32(1)
            for d in range(dims):
                local_sums[lab, d] += points[p, d]
        for c in range(num_centroids):
            if local_counts[c] > 0:
                kapi.AtomicRef(counts, c).fetch_add(local_counts[c])
                for d in range(dims):
                    ref = kapi.AtomicRef(sums, (c, d))
                    ref.fetch_add(local_sums[c, d])

    return partial_sums


@lru_cache
def make_flat_partial_sums_kernel(dims, num_centroids, dtyp):
    # PrivateArray sized by a product of closure constants (folded at compile time)
    @dpex.kernel
    def flat_sums(item, points, labels, sums):
        i = item.get_id(0)
        acc = kapi.PrivateArray(dims * num_centroids, dtyp, fill_zeros=True)
        lab = labels[i]
        for d in range(dims):
            acc[lab * dims + d] = points[i, d]
        for c in range(num_centroids):
            for d in range(dims):
                kapi.AtomicRef(sums, (c, d)).fetch_add(acc[c * dims + d])

    return flat_sums


def test_private_array_shape_from_product_of_closure_constants():
    dims, k = 3, 4
    hp = rng(30).random((64, dims)).astype(np.float32)
    hl = (np.arange(64) % k).astype(np.int32)
    sums = dpex.zeros((k, dims), dtype=np.float32)
    kern = make_flat_partial_sums_kernel(dims, k, np.float32)
    dpex.call_kernel(kern, kapi.Range(64), dpex.asarray(hp), dpex.asarray(hl), sums)
    ref = np.stack([hp[hl == c].sum(0) for c in range(k)])
    np.testing.assert_allclose(sums.asnumpy(), ref, rtol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_kmeans_step_closures_private_array(dtype):
    dims, k, wpi = 3, 4, 8
    r = rng(5)
    hp = r.random((256, dims)).astype(dtype)
    hc = hp[:k].copy()
    points, centroids = dpex.asarray(hp), dpex.asarray(hc)
    labels = dpex.empty(256, dtype=np.int32)
    dpex.call_kernel(make_assign_kernel(dims, k, dtype), kapi.Range(256), points, centroids, labels)
    ref_labels = ((hp[:, None, :] - hc[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(labels.asnumpy(), ref_labels)

    sums = dpex.zeros((k, dims), dtype=dtype)
    counts = dpex.zeros(k, dtype=np.int32)
    kern = make_partial_sums_kernel(dims, k, dtype, wpi)
    dpex.call_kernel(kern, kapi.NdRange((32,), (8,)), points, labels, sums, counts, 256)
    ref_counts = np.bincount(ref_labels, minlength=k)
    np.testing.assert_array_equal(counts.asnumpy(), ref_counts)
    ref_sums = np.stack([hp[ref_labels == c].sum(0) for c in range(k)])
    np.testing.assert_allclose(sums.asnumpy(), ref_sums, rtol=1e-4)
    assert make_assign_kernel(dims, k, dtype) is make_assign_kernel(dims, k, dtype)


@dpex.kernel
def knn_kernel(item, train, train_labels, test, k, classes_num, train_size, predictions, votes):
    # knn: PrivateArray of literal shape, row view train[j], insertion into a sorted queue
    i = item.get_id(0)
    queue_neighbors = kapi.PrivateArray(shape=(5, 2), dtype=np.float64)
    for j in range(k):
        x1 = train[j]
        x2 = test[i]
        distance = 0.0
        for jj in range(x1.shape[0]):
            diff = x1[jj] - x2[jj]
            distance += diff * diff
        queue_neighbors[j, 0] = math.sqrt(distance)
        queue_neighbors[j, 1] = train_labels[j]
    for j in range(k):
        new_distance = queue_neighbors[j, 0]
        new_neighbor_label = queue_neighbors[j, 1]
        index = j
        while index > 0 and new_distance < queue_neighbors[index - 1, 0]:
            queue_neighbors[index, 0] = queue_neighbors[index - 1, 0]
            queue_neighbors[index, 1] = queue_neighbors[index - 1, 1]
            index = index - 1
        queue_neighbors[index, 0] = new_distance
        queue_neighbors[index, 1] = new_neighbor_label
    for j in range(k, train_size):
        x1 = train[j]
        x2 = test[i]
        distance = 0.0
        for jj in range(x1.shape[0]):
            diff = x1[jj] - x2[jj]
            distance += diff * diff
        dist = math.sqrt(distance)
        if dist < queue_neighbors[k - 1, 0]:
            queue_neighbors[k - 1, 0] = dist
            queue_neighbors[k - 1, 1] = train_labels[j]
            new_distance = queue_neighbors[k - 1, 0]
            new_neighbor_label = queue_neighbors[k - 1, 1]
            index = k - 1
            while index > 0 and new_distance < queue_neighbors[index - 1, 0]:
                queue_neighbors[index, 0] = queue_neighbors[index - 1, 0]
                queue_neighbors[index, 1] = queue_neighbors[index - 1, 1]
                index = index - 1
            queue_neighbors[index, 0] = new_distance
            queue_neighbors[index, 1] = new_neighbor_label
    for j in range(classes_num):
        votes[i, j] = 0
    for j in range(k):
        votes[i, int(queue_neighbors[j, 1])] += 1
    max_ind = 0
    max_value = 0
    for j in range(classes_num):
        if votes[i, j] > max_value:
            max_value = votes[i, j]
            max_ind = j
    predictions[i] = max_ind


@needs_fp64
def test_knn_row_views_private_array():
    r = rng(6)
    ntrain, ntest, nfeat, classes, k = 200, 40, 4, 3, 5
    htrain = r.random((ntrain, nfeat))
    hlabels = r.integers(0, classes, ntrain).astype(np.int64)
    htest = r.random((ntest, nfeat))
    pred = dpex.empty(ntest, dtype=np.int64)
    votes = dpex.empty((ntest, classes), dtype=np.int64)
    args = (dpex.asarray(htrain), dpex.asarray(hlabels), dpex.asarray(htest))
    dpex.call_kernel(knn_kernel, kapi.Range(ntest), *args, k, classes, ntrain, pred, votes)
    d = np.sqrt(((htest[:, None, :] - htrain[None]) ** 2).sum(-1))
    nn = np.argsort(d, axis=1, kind="stable")[:, :k]
    ref_votes = np.stack([np.bincount(hlabels[row], minlength=classes) for row in nn])
    np.testing.assert_array_equal(votes.asnumpy(), ref_votes)
    ref_pred = np.array([int(np.argmax(v)) if v.max() > 0 else 0 for v in ref_votes])
    np.testing.assert_array_equal(pred.asnumpy(), ref_pred)


@dpex.kernel
def dbscan_neighbors(item, n, dim, data, eps, neighborhood):
    # dbscan: int(bool) accumulation and a ternary
    i = item.get_id(0)
    count = 0
    for j in range(n):
        d = 0.0
        for k in range(dim):
            diff = data[i, k] - data[j, k]
            d += diff * diff
        count += int(d < eps * eps)
    neighborhood[i] = count if count > 1 else -1


@needs_fp64
def test_dbscan_int_of_bool_and_ternary():
    h = rng(7).random((120, 2))
    data = dpex.asarray(h)
    out = dpex.empty(120, dtype=np.int64)
    dpex.call_kernel(dbscan_neighbors, kapi.Range(120), 120, 2, data, 0.1, out)
    d2 = ((h[:, None, :] - h[None]) ** 2).sum(-1)
    cnt = (d2 < 0.01).sum(1)
    np.testing.assert_array_equal(out.asnumpy(), np.where(cnt > 1, cnt, -1))


@dpex.kernel
def gaussian_fan1(item, m, a, size, t):
    if item.get_id(0) < size - 1 - t:
        idx = size * (item.get_id(0) + t + 1) + t
        m[idx] = a[idx] / a[size * t + t]


@dpex.kernel
def gaussian_fan2(item, m, a, b, size, t):
    if item.get_id(0) < size - 1 - t and item.get_id(1) < size - t:
        x = item.get_id(0)
        y = item.get_id(1)
        a[size * (x + 1 + t) + (y + t)] -= m[size * (x + 1 + t) + t] * a[size * t + (y + t)]
        if y == 0:
            b[x + 1 + t] -= m[size * (x + 1 + t) + (y + t)] * b[t]


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_gaussian_elimination(dtype):
    n = 16
    r = rng(8)
    ha = (r.random((n, n)) + n * np.eye(n)).astype(dtype)
    hb = r.random(n).astype(dtype)
    a = dpex.asarray(ha.ravel().copy())
    b = dpex.asarray(hb.copy())
    m = dpex.zeros(n * n, dtype=dtype)
    for t in range(n - 1):
        dpex.call_kernel(gaussian_fan1, kapi.Range(n), m, a, n, t)
        dpex.call_kernel(gaussian_fan2, kapi.Range(n, n), m, a, b, n, t)
    ua = a.asnumpy().reshape(n, n)
    ub = b.asnumpy()
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (ub[i] - ua[i, i + 1 :] @ x[i + 1 :]) / ua[i, i]
    np.testing.assert_allclose(x, np.linalg.solve(ha.astype(np.float64), hb), rtol=1e-3)


@dpex.kernel
def histogram_kernel(item, data, bins, lo, width):
    v = data[item.get_id(0)]
    b = int((v - lo) / width)
    b = min(max(b, 0), bins.shape[0] - 1)
    ref = kapi.AtomicRef(bins, b)
    ref.fetch_add(bins.dtype.type(1))


@pytest.mark.parametrize("bdtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_histogram_atomic(bdtype):
    h = rng(9).normal(0, 1, 5000).astype(np.float32)
    bins = dpex.zeros(16, dtype=bdtype)
    lo, width = np.float32(-3.0), np.float32(6.0 / 16)
    dpex.call_kernel(histogram_kernel, kapi.Range(5000), dpex.asarray(h), bins, lo, width)
    idx = np.clip(((h - lo) / width).astype(np.int64), 0, 15)
    np.testing.assert_array_equal(bins.asnumpy(), np.bincount(idx, minlength=16))


@needs_cpu
def test_histogram_on_numpy_arrays():
    h = rng(10).normal(0, 1, 1000).astype(np.float32)
    bins = np.zeros(8, dtype=np.int32)
    lo, width = np.float32(-2.0), np.float32(0.5)
    dpex.call_kernel(histogram_kernel, kapi.Range(1000), h, bins, lo, width)
    idx = np.clip(((h - lo) / width).astype(np.int64), 0, 7)
    np.testing.assert_array_equal(bins, np.bincount(idx, minlength=8))


# ---------------------------------------------------------------------------------------------
# Reductions: LocalAccessor + group_barrier in a loop (tree reduction), local-memory atomics
# ---------------------------------------------------------------------------------------------


@dpex.kernel
def sum_reduction(nditem, a, partial, slm):
    gid = nditem.get_global_id(0)
    lid = nditem.get_local_id(0)
    group = nditem.get_group()
    group_size = nditem.get_local_range(0)
    slm[lid] = a[gid]
    kapi.group_barrier(group)
    stride = group_size // 2
    while stride > 0:
        if lid < stride:
            slm[lid] += slm[lid + stride]
        kapi.group_barrier(group, kapi.MemoryScope.WORK_GROUP)
        stride >>= 1
    if lid == 0:
        partial[group.get_group_id(0)] = slm[0]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32], ids=lambda d: d.__name__)
@pytest.mark.parametrize("wg", [8, 64])
def test_tree_reduction_local_accessor(dtype, wg):
    n = 1024
    h = (np.arange(n) % 13).astype(dtype)
    a = dpex.asarray(h)
    partial = dpex.zeros(n // wg, dtype=dtype)
    slm = kapi.LocalAccessor(wg, dtype=dtype)
    dpex.call_kernel(sum_reduction, kapi.NdRange(kapi.Range(n), kapi.Range(wg)), a, partial, slm)
    np.testing.assert_allclose(partial.asnumpy(), h.reshape(-1, wg).sum(1))


@dpex.kernel
def reduction_for_loop_barrier(nditem, a, out, slm):
    # barrier inside a for loop with a group-size-dependent trip count
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    wg = nditem.get_local_range(0)
    slm[lid] = a[gid]
    kapi.group_barrier(nditem.get_group())
    steps = 0
    s = wg
    while s > 1:
        steps += 1
        s //= 2
    for level in range(steps):
        off = 1 << level
        if lid % (2 * off) == 0:
            slm[lid] += slm[lid + off]
        kapi.group_barrier(nditem.get_group())
    if lid == 0:
        kapi.AtomicRef(out, 0).fetch_add(slm[0])


def test_reduction_barrier_in_for_loop_and_atomic_total():
    n, wg = 512, 32
    h = rng(11).integers(0, 100, n).astype(np.int64)
    out = dpex.zeros(1, dtype=np.int64)
    dpex.call_kernel(
        reduction_for_loop_barrier,
        kapi.NdRange((n,), (wg,)),
        dpex.asarray(h),
        out,
        kapi.LocalAccessor((wg,), np.int64),
    )
    assert out.asnumpy()[0] == h.sum()


@dpex.kernel
def local_histogram(nditem, data, bins, local_bins):
    lid = nditem.get_local_linear_id()
    nbins = local_bins.shape[0]
    if lid < nbins:
        local_bins[lid] = 0
    kapi.group_barrier(nditem.get_group())
    v = data[nditem.get_global_id(0)]
    lref = kapi.AtomicRef(
        local_bins,
        v % nbins,
        memory_order=kapi.MemoryOrder.RELAXED,
        memory_scope=kapi.MemoryScope.WORK_GROUP,
        address_space=kapi.AddressSpace.LOCAL,
    )
    lref.fetch_add(local_bins.dtype.type(1))
    kapi.group_barrier(nditem.get_group())
    if lid < nbins:
        kapi.AtomicRef(bins, lid).fetch_add(local_bins[lid])


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_histogram_local_atomics(dtype):
    n, wg, nb = 2048, 64, 16
    h = rng(12).integers(0, 1000, n).astype(dtype)
    bins = dpex.zeros(nb, dtype=dtype)
    slm = kapi.LocalAccessor(nb, dtype)
    dpex.call_kernel(local_histogram, kapi.NdRange((n,), (wg,)), dpex.asarray(h), bins, slm)
    np.testing.assert_array_equal(bins.asnumpy(), np.bincount(h % nb, minlength=nb))


# ---------------------------------------------------------------------------------------------
# Index-space objects: every method of Item, NdItem and Group
# ---------------------------------------------------------------------------------------------


@dpex.kernel
def item_queries_2d(item, out):
    i = item.get_id(0)
    j = item.get_id(1)
    lin = item.get_linear_id()
    out[lin, 0] = i
    out[lin, 1] = j
    out[lin, 2] = item.get_range(0)
    out[lin, 3] = item.get_range(1)
    out[lin, 4] = item.get_linear_range()
    out[lin, 5] = item.dimensions


def test_item_methods_2d():
    r0, r1 = 6, 5
    out = dpex.zeros((r0 * r1, 6), dtype=np.int64)
    dpex.call_kernel(item_queries_2d, kapi.Range(r0, r1), out)
    h = out.asnumpy()
    ii, jj = np.meshgrid(np.arange(r0), np.arange(r1), indexing="ij")
    np.testing.assert_array_equal(h[:, 0], ii.ravel())  # SYCL linearisation: last dim fastest
    np.testing.assert_array_equal(h[:, 1], jj.ravel())
    assert (h[:, 2] == r0).all() and (h[:, 3] == r1).all()
    assert (h[:, 4] == r0 * r1).all() and (h[:, 5] == 2).all()


@dpex.kernel
def item_queries_3d(item, out):
    lin = item.get_linear_id()
    for d in range(3):  # a runtime (non-literal) dimension argument
        out[lin, d] = item.get_id(d)
    out[lin, 3] = item.get_linear_range()
    out[lin, 4] = item.dimensions


def test_item_methods_3d_runtime_dim():
    shape = (3, 4, 5)
    out = dpex.zeros((60, 5), dtype=np.int32)
    dpex.call_kernel(item_queries_3d, kapi.Range(*shape), out)
    h = out.asnumpy()
    ref = np.array(list(np.ndindex(*shape)))
    np.testing.assert_array_equal(h[:, :3], ref)
    assert (h[:, 3] == 60).all() and (h[:, 4] == 3).all()


@dpex.kernel
def nditem_queries(nditem, out):
    g = nditem.get_group()
    lin = nditem.get_global_linear_id()
    out[lin, 0] = nditem.get_global_id(0)
    out[lin, 1] = nditem.get_global_id(1)
    out[lin, 2] = nditem.get_local_id(0)
    out[lin, 3] = nditem.get_local_id(1)
    out[lin, 4] = nditem.get_global_range(0) * 100 + nditem.get_global_range(1)
    out[lin, 5] = nditem.get_local_range(0) * 100 + nditem.get_local_range(1)
    out[lin, 6] = nditem.get_local_linear_id()
    out[lin, 7] = nditem.get_global_linear_range()
    out[lin, 8] = nditem.get_local_linear_range()
    out[lin, 9] = g.get_group_id(0) * 100 + g.get_group_id(1)
    out[lin, 10] = g.get_group_linear_id()
    out[lin, 11] = g.get_group_range(0) * 100 + g.get_group_range(1)
    out[lin, 12] = g.get_group_linear_range()
    out[lin, 13] = g.get_local_range(0) * 100 + g.get_local_range(1)
    out[lin, 14] = g.get_local_linear_range()
    out[lin, 15] = nditem.dimensions * 10 + g.dimensions


def test_nditem_and_group_methods():
    G, L = (8, 12), (4, 3)
    n = G[0] * G[1]
    out = dpex.full((n, 16), -1, dtype=np.int64)
    dpex.call_kernel(nditem_queries, kapi.NdRange(kapi.Range(*G), kapi.Range(*L)), out)
    h = out.asnumpy()
    gi, gj = np.meshgrid(np.arange(G[0]), np.arange(G[1]), indexing="ij")
    gi, gj = gi.ravel(), gj.ravel()
    li, lj = gi % L[0], gj % L[1]
    bi, bj = gi // L[0], gj // L[1]
    ng = (G[0] // L[0], G[1] // L[1])
    np.testing.assert_array_equal(h[:, 0], gi)
    np.testing.assert_array_equal(h[:, 1], gj)
    np.testing.assert_array_equal(h[:, 2], li)
    np.testing.assert_array_equal(h[:, 3], lj)
    assert (h[:, 4] == G[0] * 100 + G[1]).all()
    assert (h[:, 5] == L[0] * 100 + L[1]).all()
    np.testing.assert_array_equal(h[:, 6], li * L[1] + lj)
    assert (h[:, 7] == n).all() and (h[:, 8] == L[0] * L[1]).all()
    np.testing.assert_array_equal(h[:, 9], bi * 100 + bj)
    np.testing.assert_array_equal(h[:, 10], bi * ng[1] + bj)
    assert (h[:, 11] == ng[0] * 100 + ng[1]).all()
    assert (h[:, 12] == ng[0] * ng[1]).all()
    assert (h[:, 13] == L[0] * 100 + L[1]).all()
    assert (h[:, 14] == L[0] * L[1]).all()
    assert (h[:, 15] == 22).all()


@dpex.kernel
def nditem_3d(nditem, out):
    g = nditem.get_group()
    lin = nditem.get_global_linear_id()
    out[lin, 0] = g.get_group_linear_id()
    out[lin, 1] = nditem.get_local_linear_id()
    out[lin, 2] = nditem.get_global_id(2) + 10 * nditem.get_global_id(1)
    out[lin, 3] = g.get_group_id(2)


def test_nditem_3d_linear_ids():
    G, L = (4, 4, 6), (2, 2, 3)
    n = 96
    out = dpex.zeros((n, 4), dtype=np.int64)
    dpex.call_kernel(nditem_3d, kapi.NdRange(G, L), out)
    h = out.asnumpy()
    idx = np.array(list(np.ndindex(*G)))
    grp = idx // np.array(L)
    loc = idx % np.array(L)
    ng = np.array(G) // np.array(L)
    np.testing.assert_array_equal(h[:, 0], (grp[:, 0] * ng[1] + grp[:, 1]) * ng[2] + grp[:, 2])
    np.testing.assert_array_equal(h[:, 1], (loc[:, 0] * L[1] + loc[:, 1]) * L[2] + loc[:, 2])
    np.testing.assert_array_equal(h[:, 2], idx[:, 2] + 10 * idx[:, 1])
    np.testing.assert_array_equal(h[:, 3], grp[:, 2])


# ---------------------------------------------------------------------------------------------
# LocalAccessor in 1, 2 and 3 dimensions; tiled matmul; transposes through local memory
# ---------------------------------------------------------------------------------------------

TILE = 4


@dpex.kernel
def matmul_tiled(nditem, a, b, c, sa, sb):
    i = nditem.get_global_id(0)
    j = nditem.get_global_id(1)
    li = nditem.get_local_id(0)
    lj = nditem.get_local_id(1)
    n = a.shape[1]
    acc = c.dtype.type(0)
    for t in range(n // TILE):
        sa[li, lj] = a[i, t * TILE + lj]
        sb[li, lj] = b[t * TILE + li, j]
        kapi.group_barrier(nditem.get_group())
        for k in range(TILE):
            acc += sa[li, k] * sb[k, lj]
        kapi.group_barrier(nditem.get_group())
    c[i, j] = acc


# integer tiles: tests/test_dpex_compat_known_bugs.py (optimiser emits vector reductions)
@pytest.mark.parametrize("dtype", [np.float32], ids=lambda d: d.__name__)
def test_matmul_tiled_local_2d(dtype):
    m, k, n = 8, 12, 16
    r = rng(13)
    ha = r.integers(-5, 5, (m, k)).astype(dtype)
    hb = r.integers(-5, 5, (k, n)).astype(dtype)
    c = dpex.empty((m, n), dtype=dtype)
    sa = kapi.LocalAccessor((TILE, TILE), dtype)
    sb = kapi.LocalAccessor((TILE, TILE), dtype)
    rng_ = kapi.NdRange(kapi.Range(m, n), kapi.Range(TILE, TILE))
    dpex.call_kernel(matmul_tiled, rng_, dpex.asarray(ha), dpex.asarray(hb), c, sa, sb)
    np.testing.assert_array_equal(c.asnumpy(), ha @ hb)


@dpex.kernel
def reverse_in_group_3d(nditem, a, out, slm):
    # each group reverses its 3D block through local memory
    i = nditem.get_local_id(0)
    j = nditem.get_local_id(1)
    k = nditem.get_local_id(2)
    L0 = nditem.get_local_range(0)
    L1 = nditem.get_local_range(1)
    L2 = nditem.get_local_range(2)
    gi = nditem.get_global_id(0)
    gj = nditem.get_global_id(1)
    gk = nditem.get_global_id(2)
    slm[i, j, k] = a[gi, gj, gk]
    kapi.group_barrier(nditem.get_group())
    out[gi, gj, gk] = slm[L0 - 1 - i, L1 - 1 - j, L2 - 1 - k]


def test_local_accessor_3d():
    G, L = (4, 6, 8), (2, 3, 4)
    h = np.arange(np.prod(G), dtype=np.float32).reshape(G)
    out = dpex.empty(G, dtype=np.float32)
    slm = kapi.LocalAccessor(L, np.float32)
    dpex.call_kernel(reverse_in_group_3d, kapi.NdRange(G, L), dpex.asarray(h), out, slm)
    ref = h.reshape(2, 2, 2, 3, 2, 4)[:, ::-1, :, ::-1, :, ::-1].reshape(G)
    ref = np.empty_like(h)
    for b0 in range(0, G[0], L[0]):
        for b1 in range(0, G[1], L[1]):
            for b2 in range(0, G[2], L[2]):
                blk = h[b0 : b0 + L[0], b1 : b1 + L[1], b2 : b2 + L[2]]
                ref[b0 : b0 + L[0], b1 : b1 + L[1], b2 : b2 + L[2]] = blk[::-1, ::-1, ::-1]
    np.testing.assert_array_equal(out.asnumpy(), ref)


@dpex.kernel
def local_shape_query(nditem, out, slm):
    # LocalAccessor shape inside the kernel follows the launch-time size
    if nditem.get_global_id(0) == 0:
        out[0] = slm.shape[0]
        out[1] = slm.shape[1]
        out[2] = slm.size
        out[3] = slm.ndim


def test_local_accessor_shape_specialises():
    # unlike numba-dpex (one compile for all sizes), kapi specialises on the LocalAccessor
    # shape (docs/guide/porting.md): each shape is its own compile, and each computes right
    for shape in ((4, 5), (7, 3), (4, 5)):
        out = dpex.zeros(4, dtype=np.int64)
        dpex.call_kernel(
            local_shape_query, kapi.NdRange((8,), (8,)), out, kapi.LocalAccessor(shape, np.float32)
        )
        assert list(out.asnumpy()) == [shape[0], shape[1], shape[0] * shape[1], 2]
    local_types = sorted(at[1] for _, at in local_shape_query.overloads)
    assert local_types == ["array(f32,2,C,local,4,5)", "array(f32,2,C,local,7,3)"]


# ---------------------------------------------------------------------------------------------
# AtomicRef: every method, every dtype, global and local memory
# ---------------------------------------------------------------------------------------------

ATOMIC_DTYPES = [np.int32, np.int64, np.uint32, np.uint64, np.float32]
if FP64:
    ATOMIC_DTYPES.append(np.float64)
INT_ATOMIC = [np.int32, np.int64, np.uint32, np.uint64]


@dpex.kernel
def atomic_arith(item, vals, res):
    i = item.get_id(0)
    v = vals[i]
    kapi.AtomicRef(res, 0).fetch_add(v)
    kapi.AtomicRef(res, 1).fetch_sub(v)
    kapi.AtomicRef(res, 2).fetch_min(v)
    kapi.AtomicRef(res, 3).fetch_max(v)


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_atomic_add_sub_min_max_global(dtype):
    n = 300
    h = (rng(14).integers(1, 50, n)).astype(dtype)
    init = np.array([0, 100000, 1000, 0], dtype=dtype)
    res = dpex.asarray(init)
    dpex.call_kernel(atomic_arith, kapi.Range(n), dpex.asarray(h), res)
    out = res.asnumpy()
    assert out[0] == h.sum(dtype=dtype)
    assert out[1] == dtype(100000) - h.sum(dtype=dtype)
    assert out[2] == h.min() and out[3] == h.max()


@dpex.kernel
def atomic_bits(item, vals, res):
    i = item.get_id(0)
    v = vals[i]
    kapi.AtomicRef(res, 0).fetch_and(v)
    kapi.AtomicRef(res, 1).fetch_or(v)
    kapi.AtomicRef(res, 2).fetch_xor(v)


@pytest.mark.parametrize("dtype", INT_ATOMIC, ids=lambda d: np.dtype(d).name)
def test_atomic_and_or_xor(dtype):
    n = 64
    h = rng(15).integers(0, 1 << 30, n).astype(dtype)
    res = dpex.asarray(np.array([(1 << 31) - 1, 0, 0], dtype=dtype))
    dpex.call_kernel(atomic_bits, kapi.Range(n), dpex.asarray(h), res)
    out = res.asnumpy()
    assert out[0] == np.bitwise_and.reduce(h) & ((1 << 31) - 1)
    assert out[1] == np.bitwise_or.reduce(h)
    assert out[2] == np.bitwise_xor.reduce(h)


@dpex.kernel
def atomic_fetch_returns_old(item, counter, slots):
    # fetch_add returns the old value: every work-item gets a unique ticket
    ticket = kapi.AtomicRef(counter, 0).fetch_add(counter.dtype.type(1))
    slots[item.get_id(0)] = ticket


@pytest.mark.parametrize("dtype", INT_ATOMIC, ids=lambda d: np.dtype(d).name)
def test_atomic_fetch_returns_unique_tickets(dtype):
    n = 500
    counter = dpex.zeros(1, dtype=dtype)
    slots = dpex.zeros(n, dtype=dtype)
    dpex.call_kernel(atomic_fetch_returns_old, kapi.Range(n), counter, slots)
    assert counter.asnumpy()[0] == n
    np.testing.assert_array_equal(np.sort(slots.asnumpy()), np.arange(n, dtype=dtype))


@dpex.kernel
def atomic_load_store_exchange(item, a, out):
    i = item.get_id(0)
    ref = kapi.AtomicRef(a, i, memory_order=kapi.MemoryOrder.RELAXED)
    old = ref.load()
    ref.store(a.dtype.type(old + 1))  # int32 + int32 is int64 in Numba typing
    prev = ref.exchange(a.dtype.type(7))
    out[i] = old + prev


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_atomic_load_store_exchange(dtype):
    h = np.arange(20, dtype=dtype)
    a = dpex.asarray(h)
    out = dpex.zeros(20, dtype=dtype)
    dpex.call_kernel(atomic_load_store_exchange, kapi.Range(20), a, out)
    np.testing.assert_array_equal(a.asnumpy(), np.full(20, 7, dtype=dtype))
    np.testing.assert_array_equal(out.asnumpy(), h + h + dtype(1))


@dpex.kernel
def atomic_cas_add(item, acc, vals, expected_scratch):
    # the classic CAS loop: add with compare_exchange, retrying with the refreshed expected
    i = item.get_id(0)
    ref = kapi.AtomicRef(acc, 0)
    expected_scratch[i] = ref.load()
    desired = acc.dtype.type(expected_scratch[i] + vals[i])
    while not ref.compare_exchange(expected_scratch, desired, i):
        desired = acc.dtype.type(expected_scratch[i] + vals[i])
        pass


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_compare_exchange_loop_global(dtype):
    n = 200
    h = rng(16).integers(1, 10, n).astype(dtype)
    acc = dpex.zeros(1, dtype=dtype)
    scratch = dpex.zeros(n, dtype=dtype)
    dpex.call_kernel(atomic_cas_add, kapi.Range(n), acc, dpex.asarray(h), scratch)
    assert acc.asnumpy()[0] == h.sum(dtype=dtype)


@dpex.kernel
def cas_once(item, a, expected, desired, ok):
    i = item.get_id(0)
    ok[i] = 1 if kapi.AtomicRef(a, i).compare_exchange(expected, desired[i], i) else 0


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_compare_exchange_failure_writes_current(dtype):
    ha = np.array([1, 2, 3, 4], dtype=dtype)
    he = np.array([1, 0, 3, 0], dtype=dtype)
    hd = np.array([10, 20, 30, 40], dtype=dtype)
    a, e = dpex.asarray(ha), dpex.asarray(he)
    ok = dpex.zeros(4, dtype=np.int32)
    dpex.call_kernel(cas_once, kapi.Range(4), a, e, dpex.asarray(hd), ok)
    np.testing.assert_array_equal(ok.asnumpy(), [1, 0, 1, 0])
    np.testing.assert_array_equal(a.asnumpy(), np.array([10, 2, 30, 4], dtype=dtype))
    np.testing.assert_array_equal(e.asnumpy(), np.array([1, 2, 3, 4], dtype=dtype))


@dpex.kernel
def atomic_local_all_ops(nditem, vals, out, slm, expected):
    lid = nditem.get_local_id(0)
    g = nditem.get_group()
    if lid == 0:
        slm[0] = 0
        slm[1] = 0
        slm[2] = 100000
        slm[3] = 0
        slm[4] = 0
    kapi.group_barrier(g)
    v = vals[nditem.get_global_id(0)]
    sc = kapi.MemoryScope.WORK_GROUP
    kapi.AtomicRef(slm, 0, memory_scope=sc).fetch_add(v)
    kapi.AtomicRef(slm, 1, memory_scope=sc).fetch_max(v)
    kapi.AtomicRef(slm, 2, memory_scope=sc).fetch_min(v)
    kapi.AtomicRef(slm, 3, memory_scope=sc).fetch_sub(v)
    e = kapi.AtomicRef(slm, 4, memory_scope=sc)
    expected[nditem.get_global_id(0)] = e.load()
    gid = nditem.get_global_id(0)
    while not e.compare_exchange(expected, slm.dtype.type(expected[gid] + v), gid):
        pass
    kapi.group_barrier(g)
    if lid == 0:
        gid = g.get_group_id(0)
        out[gid, 0] = slm[0]
        out[gid, 1] = slm[1]
        out[gid, 2] = slm[2]
        out[gid, 3] = slm[3]
        out[gid, 4] = kapi.AtomicRef(slm, 4, memory_scope=sc).load()


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES, ids=lambda d: np.dtype(d).name)
def test_atomics_on_local_memory(dtype):
    n, wg = 256, 64
    h = rng(17).integers(1, 100, n).astype(dtype)
    out = dpex.zeros((n // wg, 5), dtype=dtype)
    slm = kapi.LocalAccessor(5, dtype)
    scratch = dpex.zeros(n, dtype=dtype)
    dpex.call_kernel(
        atomic_local_all_ops, kapi.NdRange((n,), (wg,)), dpex.asarray(h), out, slm, scratch
    )
    blocks = h.reshape(-1, wg)
    o = out.asnumpy()
    np.testing.assert_array_equal(o[:, 0], blocks.sum(1, dtype=dtype))
    np.testing.assert_array_equal(o[:, 1], blocks.max(1))
    np.testing.assert_array_equal(o[:, 2], blocks.min(1))
    np.testing.assert_array_equal(o[:, 3], (dtype(0) - blocks.sum(1, dtype=dtype)).astype(dtype))
    np.testing.assert_array_equal(o[:, 4], blocks.sum(1, dtype=dtype))


@dpex.kernel
def atomic_2d_index(item, grid, counts):
    i = item.get_id(0)
    j = item.get_id(1)
    kapi.AtomicRef(counts, (i % 2, j % 3)).fetch_add(grid[i, j])


def test_atomic_ref_tuple_index_2d():
    h = np.arange(48, dtype=np.int32).reshape(6, 8)
    counts = dpex.zeros((2, 3), dtype=np.int32)
    dpex.call_kernel(atomic_2d_index, kapi.Range(6, 8), dpex.asarray(h), counts)
    ref = np.zeros((2, 3), dtype=np.int32)
    for i in range(6):
        for j in range(8):
            ref[i % 2, j % 3] += h[i, j]
    np.testing.assert_array_equal(counts.asnumpy(), ref)


@dpex.kernel
def fence_publish(nditem, data, flags, out):
    # producer/consumer inside a group: release fence before the flag, acquire after it
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    data[gid] = gid * 3
    kapi.atomic_fence(kapi.MemoryOrder.RELEASE, kapi.MemoryScope.DEVICE)
    kapi.AtomicRef(flags, gid, memory_order=kapi.MemoryOrder.RELAXED).store(flags.dtype.type(1))
    kapi.group_barrier(nditem.get_group(), kapi.MemoryScope.DEVICE)
    kapi.atomic_fence(kapi.MemoryOrder.ACQUIRE, kapi.MemoryScope.WORK_GROUP)
    partner = gid - lid + (nditem.get_local_range(0) - 1 - lid)
    if kapi.AtomicRef(flags, partner).load() == 1:
        out[gid] = data[partner]
    kapi.atomic_fence(kapi.MemoryOrder.SEQ_CST, kapi.MemoryScope.WORK_GROUP)
    kapi.atomic_fence(kapi.MemoryOrder.ACQ_REL, kapi.MemoryScope.DEVICE)


def test_atomic_fence_and_device_scope_barrier():
    n, wg = 64, 16
    data = dpex.zeros(n, dtype=np.int64)
    flags = dpex.zeros(n, dtype=np.int32)
    out = dpex.full(n, -1, dtype=np.int64)
    dpex.call_kernel(fence_publish, kapi.NdRange((n,), (wg,)), data, flags, out)
    g = np.arange(n)
    partner = g - g % wg + (wg - 1 - g % wg)
    np.testing.assert_array_equal(out.asnumpy(), partner * 3)


# ---------------------------------------------------------------------------------------------
# PrivateArray, device_func nesting, casts, builtins, views, layouts
# ---------------------------------------------------------------------------------------------


@dpex.kernel
def private_sort3(item, a, out):
    i = item.get_id(0)
    p = kapi.PrivateArray((3,), dtype=a.dtype)
    for k in range(3):
        p[k] = a[i, k]
    for x in range(3):
        for y in range(2 - x):
            if p[y] > p[y + 1]:
                t = p[y]
                p[y] = p[y + 1]
                p[y + 1] = t
    for k in range(3):
        out[i, k] = p[k]


def test_private_array_bubble_sort():
    h = rng(18).random((50, 3)).astype(np.float32)
    out = dpex.empty((50, 3), dtype=np.float32)
    dpex.call_kernel(private_sort3, kapi.Range(50), dpex.asarray(h), out)
    np.testing.assert_array_equal(out.asnumpy(), np.sort(h, axis=1))


@dpex.kernel
def private_2d_zeros(item, out):
    i = item.get_id(0)
    p = kapi.PrivateArray((2, 3), np.int32, fill_zeros=True)
    p[1, i % 3] = i
    s = 0
    for a in range(2):
        for b in range(3):
            s += p[a, b] * (a * 3 + b + 1)
    out[i] = s


def test_private_array_2d_fill_zeros():
    out = dpex.zeros(12, dtype=np.int64)
    dpex.call_kernel(private_2d_zeros, kapi.Range(12), out)
    i = np.arange(12)
    np.testing.assert_array_equal(out.asnumpy(), i * (3 + i % 3 + 1))


@dpex.device_func
def sq(x):
    return x * x


@dpex.device_func
def dist2(a, b, i, j):
    s = a.dtype.type(0)
    for k in range(a.shape[1]):
        s += sq(a[i, k] - b[j, k])
    return s


@dpex.device_func
def nearest(a, b, i):
    best = 0
    bestd = dist2(a, b, i, 0)
    for j in range(1, b.shape[0]):
        d = dist2(a, b, i, j)
        if d < bestd:
            bestd = d
            best = j
    return best, bestd


@dpex.kernel
def nearest_kernel(item, a, b, idx, dist):
    i = item.get_id(0)
    j, d = nearest(a, b, i)
    idx[i] = j
    dist[i] = d


def test_device_func_nesting_and_tuple_return():
    r = rng(19)
    ha = r.random((40, 3)).astype(np.float32)
    hb = r.random((9, 3)).astype(np.float32)
    idx = dpex.empty(40, dtype=np.int64)
    dist = dpex.empty(40, dtype=np.float32)
    dpex.call_kernel(nearest_kernel, kapi.Range(40), dpex.asarray(ha), dpex.asarray(hb), idx, dist)
    d = ((ha[:, None] - hb[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(idx.asnumpy(), d.argmin(1))
    np.testing.assert_allclose(dist.asnumpy(), d.min(1), rtol=1e-5)
    assert sq(3) == 9  # device functions stay callable from Python


@dpex.device_func
def group_sum(nditem, slm, x):
    # barrier inside a device function
    lid = nditem.get_local_id(0)
    slm[lid] = x
    kapi.group_barrier(nditem.get_group())
    s = slm.dtype.type(0)
    for k in range(nditem.get_local_range(0)):
        s += slm[k]
    kapi.group_barrier(nditem.get_group())
    return s


@dpex.kernel
def group_sum_kernel(nditem, a, out, slm):
    gid = nditem.get_global_id(0)
    out[gid] = group_sum(nditem, slm, a[gid])


def test_device_func_with_barrier_and_local_accessor():
    h = np.arange(64, dtype=np.int32)
    out = dpex.zeros(64, dtype=np.int32)
    dpex.call_kernel(
        group_sum_kernel,
        kapi.NdRange((64,), (16,)),
        dpex.asarray(h),
        out,
        kapi.LocalAccessor(16, np.int32),
    )
    np.testing.assert_array_equal(out.asnumpy(), np.repeat(h.reshape(4, 16).sum(1), 16))


@dpex.kernel
def casts_and_builtins(item, a, out_f, out_i):
    i = item.get_id(0)
    x = a[i]
    y = np.float32(x) * np.float32(0.5)
    out_f[i, 0] = y
    out_f[i, 1] = abs(x - 10.0)
    out_f[i, 2] = max(x, 5.0)
    out_f[i, 3] = min(x, 5.0, 7.0)
    out_f[i, 4] = float(int(x))
    out_f[i, 5] = round(x)
    out_f[i, 6] = x if x > 3.0 else -x
    out_f[i, 7] = out_f.dtype.type(x) ** 2
    out_i[i, 0] = int(x)
    out_i[i, 1] = np.int32(x) // 3
    out_i[i, 2] = np.int32(x) % 3
    out_i[i, 3] = int(x > 4.0) + int(x < 2.0) * 10
    out_i[i, 4] = np.int64(x) << 2
    out_i[i, 5] = (np.int32(x) ^ 5) | 8
    out_i[i, 6] = len(a)
    out_i[i, 7] = a.ndim * 100 + a.size


@needs_fp64
def test_casts_and_builtins():
    h = np.linspace(-3.7, 9.2, 40)
    of = dpex.zeros((40, 8), dtype=np.float64)
    oi = dpex.zeros((40, 8), dtype=np.int64)
    dpex.call_kernel(casts_and_builtins, kapi.Range(40), dpex.asarray(h), of, oi)
    f, i_ = of.asnumpy(), oi.asnumpy()
    np.testing.assert_allclose(f[:, 0], (h.astype(np.float32) * np.float32(0.5)), rtol=1e-6)
    np.testing.assert_allclose(f[:, 1], np.abs(h - 10))
    np.testing.assert_allclose(f[:, 2], np.maximum(h, 5))
    np.testing.assert_allclose(f[:, 3], np.minimum(h, 5))
    np.testing.assert_allclose(f[:, 4], np.trunc(h))
    np.testing.assert_allclose(f[:, 5], np.round(h))
    np.testing.assert_allclose(f[:, 6], np.where(h > 3, h, -h))
    np.testing.assert_allclose(f[:, 7], h**2)
    t = np.trunc(h).astype(np.int64)
    np.testing.assert_array_equal(i_[:, 0], t)
    np.testing.assert_array_equal(i_[:, 1], t // 3)
    np.testing.assert_array_equal(i_[:, 2], t % 3)
    np.testing.assert_array_equal(i_[:, 3], (h > 4).astype(int) + (h < 2).astype(int) * 10)
    np.testing.assert_array_equal(i_[:, 4], t << 2)
    np.testing.assert_array_equal(i_[:, 5], (t ^ 5) | 8)
    assert (i_[:, 6] == 40).all() and (i_[:, 7] == 140).all()


@dpex.kernel
def math_funcs(item, a, out):
    i = item.get_id(0)
    x = a[i]
    out[i, 0] = math.sin(x) + math.cos(x)
    out[i, 1] = math.exp(x) - math.expm1(x)
    out[i, 2] = math.log1p(x) + math.log2(x + 1) + math.log10(x + 1)
    out[i, 3] = math.atan2(x, 2.0) + math.hypot(x, 3.0)
    out[i, 4] = math.pow(x, 1.5) + math.fmod(x * 10, 3.0)
    out[i, 5] = math.tanh(x) + math.asinh(x) + math.pi
    out[i, 6] = math.floor(x * 3) + math.ceil(x * 3)
    out[i, 7] = math.erfc(x) + math.lgamma(x + 1) + math.gamma(x + 1)
    out[i, 8] = math.copysign(x, -1.0) + x * 8
    out[i, 9] = math.isnan(x) + math.isinf(x) * 2 + math.fabs(-x)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_math_functions(dtype):
    h = np.linspace(0.1, 2.0, 32).astype(dtype)
    out = dpex.zeros((32, 10), dtype=dtype)
    dpex.call_kernel(math_funcs, kapi.Range(32), dpex.asarray(h), out)
    x = h.astype(np.float64)
    g = np.vectorize(math.gamma)
    lg = np.vectorize(math.lgamma)
    ec = np.vectorize(math.erfc)
    ref = np.stack(
        [
            np.sin(x) + np.cos(x),
            np.exp(x) - np.expm1(x),
            np.log1p(x) + np.log2(x + 1) + np.log10(x + 1),
            np.arctan2(x, 2) + np.hypot(x, 3),
            x**1.5 + np.fmod(x * 10, 3),
            np.tanh(x) + np.arcsinh(x) + np.pi,
            np.floor(x * 3) + np.ceil(x * 3),
            ec(x) + lg(x + 1) + g(x + 1),
            -x + x * 8,
            x,
        ],
        axis=1,
    )
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=tol, atol=tol)


@dpex.kernel
def row_view_scale(item, a, b, s):
    i = item.get_id(0)
    row = a[i]
    out = b[i]
    for k in range(row.shape[0]):
        out[k] = row[k] * s


@pytest.mark.parametrize("order", ["C", "F"])
def test_row_views_on_c_and_f_arrays(order):
    h = np.asarray(rng(20).random((10, 7)), order=order).astype(np.float32, order=order)
    b = dpex.zeros((10, 7), dtype=np.float32)
    dpex.call_kernel(row_view_scale, kapi.Range(10), dpex.asarray(h), b, np.float32(2.0))
    np.testing.assert_allclose(b.asnumpy(), h * 2)


@dpex.kernel
def axpy_strided(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def test_strided_views():
    hx = np.arange(40, dtype=np.float32)
    hy = np.ones(40, dtype=np.float32)
    x, y = dpex.asarray(hx), dpex.asarray(hy)
    dpex.call_kernel(axpy_strided, kapi.Range(10), np.float32(3.0), x[::4], y[1::4])
    ref = hy.copy()
    ref[1::4] = 3 * hx[::4] + 1
    np.testing.assert_array_equal(y.asnumpy(), ref)
    xr = x[::-1]  # negative strides
    dpex.call_kernel(axpy_strided, kapi.Range(40), np.float32(1.0), xr, y)
    np.testing.assert_array_equal(y.asnumpy(), ref + hx[::-1])


@needs_cpu
def test_strided_and_f_order_numpy_arrays():
    hx = np.asfortranarray(np.arange(24, dtype=np.float64).reshape(4, 6))
    out = np.zeros((4, 6), dtype=np.float64)
    dpex.call_kernel(row_view_scale, kapi.Range(4), hx, out, 0.5)
    np.testing.assert_array_equal(out, hx * 0.5)
    y = np.zeros(30, dtype=np.float32)
    x = np.arange(60, dtype=np.float32)
    dpex.call_kernel(axpy_strided, kapi.Range(10), np.float32(2.0), x[::6], y[::3])
    np.testing.assert_array_equal(y[::3], 2 * x[::6])
    assert (y[1::3] == 0).all()


@dpex.kernel
def transpose_2d(item, a, b):
    i = item.get_id(0)
    j = item.get_id(1)
    b[j, i] = a[i, j]


def test_transpose_f_order_and_transposed_view():
    h = np.arange(35, dtype=np.int32).reshape(5, 7)
    a = dpex.asarray(np.asfortranarray(h))
    b = dpex.zeros((7, 5), dtype=np.int32)
    dpex.call_kernel(transpose_2d, kapi.Range(5, 7), a, b)
    np.testing.assert_array_equal(b.asnumpy(), h.T)
    d = dpex.zeros((7, 5), dtype=np.int32)
    dpex.call_kernel(transpose_2d, kapi.Range(7, 5), b, d.T)  # F-layout view of a C array
    np.testing.assert_array_equal(d.asnumpy(), h.T)


@dpex.kernel
def bool_mask(item, a, mask, out):
    i = item.get_id(0)
    if mask[i]:
        out[i] = a[i]
    else:
        out[i] = 0


def test_bool_array_and_bool_scalar():
    h = np.arange(16, dtype=np.int32)
    m = h % 3 == 0
    out = dpex.zeros(16, dtype=np.int32)
    dpex.call_kernel(bool_mask, kapi.Range(16), dpex.asarray(h), dpex.asarray(m), out)
    np.testing.assert_array_equal(out.asnumpy(), np.where(m, h, 0))


@dpex.kernel
def flag_kernel(item, a, flag):
    i = item.get_id(0)
    a[i] = 1 if flag else 2


def test_bool_scalar_argument():
    a = dpex.zeros(4, dtype=np.int32)
    dpex.call_kernel(flag_kernel, kapi.Range(4), a, True)
    assert (a.asnumpy() == 1).all()
    dpex.call_kernel(flag_kernel, kapi.Range(4), a, False)
    assert (a.asnumpy() == 2).all()


SCALE = 2.5
OFFSETS = (1, 2, 3)


@dpex.kernel
def globals_kernel(item, a):
    i = item.get_id(0)
    a[i] = a[i] * SCALE + OFFSETS[i % 3] + math.pi * 0


def test_module_globals_and_tuple_constants():
    h = np.arange(9, dtype=np.float32)
    a = dpex.asarray(h)
    dpex.call_kernel(globals_kernel, kapi.Range(9), a)
    np.testing.assert_allclose(a.asnumpy(), h * 2.5 + np.array([1, 2, 3] * 3))


@dpex.kernel
def early_exit_break(item, a, limit, out):
    i = item.get_id(0)
    if i >= a.shape[0]:
        return
    k = 0
    while True:
        if a[i] * k > limit:
            break
        k += 1
    out[i] = k


def test_while_break_and_return():
    h = np.arange(1, 21, dtype=np.int64)
    out = dpex.zeros(20, dtype=np.int64)
    dpex.call_kernel(early_exit_break, kapi.Range(32), dpex.asarray(h), 100, out)
    np.testing.assert_array_equal(out.asnumpy(), 100 // h + 1)


# ---------------------------------------------------------------------------------------------
# Kernels without an item argument (numba-dpex warned but compiled them), plain functions
# ---------------------------------------------------------------------------------------------


@dpex.kernel
def no_item_kernel(a, v):
    a[0] = v


def test_kernel_without_item_argument():
    a = dpex.zeros(3, dtype=np.int64)
    with pytest.warns(DeprecationWarning, match="item"):
        dpex.call_kernel(no_item_kernel, kapi.Range(1), a, 42)
    assert list(a.asnumpy()) == [42, 0, 0]


def test_undecorated_function_via_kernel_api_call_kernel():
    def scale(item, a, s):
        i = item.get_id(0)
        a[i] = a[i] * s

    h = np.arange(10, dtype=np.float32)
    a = dpex.asarray(h)
    kapi.call_kernel(scale, kapi.Range(10), a, np.float32(3))
    np.testing.assert_array_equal(a.asnumpy(), h * 3)


# ---------------------------------------------------------------------------------------------
# Explicit signatures and asynchronous launches
# ---------------------------------------------------------------------------------------------


@dpex.kernel(
    [
        (dpex.ItemType(1), dpex.DpnpNdArray(ndim=1, dtype=dpex.int64, layout="C"), dpex.int64),
        (dpex.ItemType(1), dpex.DpnpNdArray(ndim=1, dtype=dpex.float32, layout="C"), dpex.float32),
    ]
)
def add_scalar_sig(item, a, s):
    i = item.get_id(0)
    a[i] += s


def test_kernel_with_explicit_signatures():
    assert len(add_scalar_sig.overloads) == 2  # compiled eagerly
    a = dpex.arange(8, dtype=np.int64)
    dpex.call_kernel(add_scalar_sig, kapi.Range(8), a, 5)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(8) + 5)
    f = dpex.zeros(8, dtype=np.float32)
    dpex.call_kernel(add_scalar_sig, kapi.Range(8), f, np.float32(1.5))
    assert (f.asnumpy() == 1.5).all()
    with pytest.raises(dpex.InvalidKernelSpecializationError, match="signature"):
        dpex.call_kernel(add_scalar_sig, kapi.Range(8), dpex.zeros(8, dtype=np.int32), 1)
    assert len(add_scalar_sig.overloads) == 2


@dpex.device_func((dpex.float32, dpex.float32))
def sig_devfunc(x, y):
    return x * y + 1


@dpex.kernel
def use_sig_devfunc(item, a, b):
    i = item.get_id(0)
    b[i] = sig_devfunc(a[i], a[i])


def test_device_func_with_signature():
    h = np.arange(6, dtype=np.float32)
    b = dpex.zeros(6, dtype=np.float32)
    dpex.call_kernel(use_sig_devfunc, kapi.Range(6), dpex.asarray(h), b)
    np.testing.assert_array_equal(b.asnumpy(), h * h + 1)


@dpex.kernel
def inc_kernel(item, a, b):
    i = item.get_id(0)
    b[i] = a[i] + 1


def test_call_kernel_async_chain_of_dependent_events():
    n = 4096
    a = dpex.arange(n, dtype=np.int64)
    b = dpex.zeros(n, dtype=np.int64)
    c = dpex.zeros(n, dtype=np.int64)
    d = dpex.zeros(n, dtype=np.int64)
    h1, e1 = dpex.call_kernel_async(inc_kernel, kapi.Range(n), (), a, b)
    h2, e2 = dpex.call_kernel_async(inc_kernel, kapi.Range(n), (e1,), b, c)
    h3, e3 = dpex.call_kernel_async(inc_kernel, kapi.Range(n), (e1, e2, h2), c, d)
    e3.wait()
    for h in (h1, h2, h3):
        h.wait()
    np.testing.assert_array_equal(d.asnumpy(), np.arange(n) + 3)
    dpex.wait_all([e1, e2, e3])


def test_call_kernel_async_with_nd_range_and_local_accessor():
    n, wg = 256, 32
    h = np.arange(n, dtype=np.int32)
    partial = dpex.zeros(n // wg, dtype=np.int32)
    _, ev = dpex.call_kernel_async(
        sum_reduction,
        kapi.NdRange((n,), (wg,)),
        (),
        dpex.asarray(h),
        partial,
        kapi.LocalAccessor(wg, np.int32),
    )
    ev.wait()
    np.testing.assert_array_equal(partial.asnumpy(), h.reshape(-1, wg).sum(1))


# ---------------------------------------------------------------------------------------------
# Error cases numba-dpex users hit: the message must say what to do
# ---------------------------------------------------------------------------------------------


def test_error_local_accessor_with_range():
    a = dpex.zeros(16, dtype=np.int32)
    with pytest.raises((TypeError, dpex.KapiError), match="NdRange"):
        dpex.call_kernel(sum_reduction, kapi.Range(16), a, a, kapi.LocalAccessor(16, np.int32))


def test_error_nd_range_not_divisible():
    with pytest.raises(dpex.UnsupportedGroupWorkItemSizeError, match="divide"):
        kapi.NdRange((100,), (7,))
    with pytest.raises(dpex.UnmatchedNumberOfRangeDimsError):
        kapi.NdRange((16, 16), (4,))


def test_error_wrong_argument_count():
    a = dpex.zeros(8, dtype=np.float32)
    with pytest.raises(dpex.KapiError) as ei:
        dpex.call_kernel(axpy_strided, kapi.Range(8), np.float32(1), a)
    assert "takes 3 argument(s)" in str(ei.value) and "2 were given" in str(ei.value)


def test_error_kernel_called_directly():
    a = dpex.zeros(8, dtype=np.float32)
    with pytest.raises(dpex.KernelCallError, match="call_kernel"):
        axpy_strided(np.float32(1), a, a)
    with pytest.raises(dpex.KernelCallError, match="call_kernel"):
        axpy_strided[kapi.Range(8)](np.float32(1), a, a)


@dpex.kernel
def atomic_int_literal(item, a):
    kapi.AtomicRef(a, 0).fetch_add(1)


@dpex.kernel
def atomic_float_into_int(item, a):
    kapi.AtomicRef(a, 0).fetch_add(1.5)


def test_error_atomic_ref_value_type_mismatch():
    # numba-dpex rejects a value whose type is not the ref dtype; kapi must either do the
    # same with an actionable message, or accept the safe (int literal) case correctly
    a = dpex.zeros(1, dtype=np.int32)
    with pytest.raises(dpex.KapiError) as ei:
        dpex.call_kernel(atomic_float_into_int, kapi.Range(4), a)
    msg = str(ei.value)
    assert "AtomicRef" in msg or "fetch_add" in msg
    assert "dtype.type" in msg or "int32" in msg


@dpex.kernel
def atomic_on_int8(item, a):
    kapi.AtomicRef(a, 0).fetch_add(a.dtype.type(1))


def test_error_atomic_ref_unsupported_dtype():
    a = dpex.zeros(4, dtype=np.int8)
    with pytest.raises(dpex.KapiError, match="int32|i32"):
        dpex.call_kernel(atomic_on_int8, kapi.Range(4), a)


@dpex.kernel
def atomic_and_float(item, a):
    kapi.AtomicRef(a, 0).fetch_and(a[1])


def test_error_atomic_bitwise_on_float():
    a = dpex.zeros(4, dtype=np.float32)
    with pytest.raises(dpex.KapiError, match="fetch_and"):
        dpex.call_kernel(atomic_and_float, kapi.Range(4), a)


@dpex.kernel
def returns_value(item, a):
    return a[0]


def test_error_kernel_returns_value():
    with pytest.raises(dpex.KapiError, match="return"):
        dpex.call_kernel(returns_value, kapi.Range(1), dpex.zeros(1, dtype=np.int32))


def test_error_range_with_numpy_int_and_bad_local_accessor():
    with pytest.raises(TypeError):
        kapi.LocalAccessor((1, 2, 3, 4), np.float32)
    with pytest.raises(TypeError):
        kapi.LocalAccessor(8, np.complex64)


def test_error_dependent_events_must_be_tuple():
    a = dpex.zeros(4, dtype=np.int64)
    _, e = dpex.call_kernel_async(inc_kernel, kapi.Range(4), (), a, a)
    with pytest.raises(TypeError, match="tuple"):
        dpex.call_kernel_async(inc_kernel, kapi.Range(4), e, a, a)
    e.wait()


def test_error_message_points_at_kernel_line():
    @dpex.kernel
    def bad(item, a):
        a[0] = undefined_name  # noqa: F821

    with pytest.raises(dpex.KapiError) as ei:
        dpex.call_kernel(bad, kapi.Range(1), dpex.zeros(1, dtype=np.int32))
    assert "test_dpex_compat.py" in str(ei.value) and "undefined_name" in str(ei.value)


@dpex.device_func
def divmod_sign(a, b):
    if b == 0:
        return 0, 0, False
    return a // b, a % b, a < 0


@dpex.kernel
def divmod_loop(item, a, out):
    i = item.get_id(0)
    acc_q = 0
    acc_r = 0
    negs = 0
    for b in range(4):  # a tuple-returning device function called in a loop
        q, r, neg = divmod_sign(a[i], b)
        acc_q += q
        acc_r += r
        negs += int(neg)
    out[i, 0] = acc_q
    out[i, 1] = acc_r
    out[i, 2] = negs


def test_device_func_tuple_return_in_loop():
    h = np.arange(-10, 10, dtype=np.int64)
    out = dpex.zeros((20, 3), dtype=np.int64)
    dpex.call_kernel(divmod_loop, kapi.Range(20), dpex.asarray(h), out)
    bs = np.arange(1, 4)
    np.testing.assert_array_equal(out.asnumpy()[:, 0], (h[:, None] // bs).sum(1))
    np.testing.assert_array_equal(out.asnumpy()[:, 1], (h[:, None] % bs).sum(1))
    np.testing.assert_array_equal(out.asnumpy()[:, 2], (h < 0) * 3)


@dpex.kernel
def flat_index_of_shape(item, a, out):
    # a.shape[d] and a.strides-free flattening with a run-time dimension index
    i = item.get_id(0)
    j = item.get_id(1)
    k = item.get_id(2)
    idx = (i, j, k)
    lin = 0
    for d in range(a.ndim):
        lin = lin * a.shape[d] + idx[d]
    out[i, j, k] = lin + a.shape[-1] * 0 + idx[-1] * 0


def test_runtime_index_into_shape_and_index_tuples():
    a = dpex.zeros((3, 4, 5), dtype=np.int64)
    dpex.call_kernel(flat_index_of_shape, kapi.Range(3, 4, 5), a, a)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(60).reshape(3, 4, 5))


# ---------------------------------------------------------------------------------------------
# More of what numba-dpex code does: options, grid-stride loops, atomics on views/negatives
# ---------------------------------------------------------------------------------------------


@dpex.kernel(debug=True, inline_threshold=2, release_gil=False)
def with_options(item, a):
    i = item.get_id(0)
    a[i] = i * 2


def test_kernel_decorator_options_accepted():
    a = dpex.zeros(8, dtype=np.int64)
    dpex.call_kernel(with_options, kapi.Range(8), a)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(8) * 2)


@dpex.kernel
def grid_stride_saxpy(nditem, n, alpha, x, y):
    i = nditem.get_global_id(0)
    stride = nditem.get_global_range(0)
    while i < n:
        y[i] = alpha * x[i] + y[i]
        i += stride


def test_grid_stride_loop_nd_range():
    n = 10007
    hx = rng(21).random(n).astype(np.float32)
    hy = rng(22).random(n).astype(np.float32)
    y = dpex.asarray(hy)
    dpex.call_kernel(
        grid_stride_saxpy, kapi.NdRange((256,), (64,)), n, np.float32(2.0), dpex.asarray(hx), y
    )
    np.testing.assert_allclose(y.asnumpy(), 2 * hx + hy, rtol=1e-6)


@dpex.kernel
def atomic_minmax_signed(item, vals, res):
    v = vals[item.get_id(0)]
    kapi.AtomicRef(res, 0, memory_order=kapi.MemoryOrder.SEQ_CST).fetch_min(v)
    kapi.AtomicRef(res, 1, memory_order=kapi.MemoryOrder.ACQ_REL).fetch_max(v)
    kapi.AtomicRef(res, 2, memory_scope=kapi.MemoryScope.SYSTEM).fetch_add(v)


@pytest.mark.parametrize(
    "dtype",
    [np.int32, np.int64, np.float32] + ([np.float64] * FP64),
    ids=lambda d: np.dtype(d).name,
)
def test_atomic_min_max_with_negative_values(dtype):
    h = rng(23).integers(-1000, 1000, 777).astype(dtype)
    res = dpex.asarray(np.array([0, 0, 0], dtype=dtype))
    dpex.call_kernel(atomic_minmax_signed, kapi.Range(777), dpex.asarray(h), res)
    out = res.asnumpy()
    assert out[0] == min(h.min(), 0) and out[1] == max(h.max(), 0)
    assert out[2] == h.sum(dtype=dtype)


@dpex.kernel
def atomic_on_views(item, every_other, fgrid):
    i = item.get_id(0)
    kapi.AtomicRef(every_other, i % every_other.shape[0]).fetch_add(every_other.dtype.type(1))
    kapi.AtomicRef(fgrid, (i % 3, i % 2)).fetch_add(fgrid.dtype.type(i))


def test_atomic_ref_on_strided_and_f_order_arrays():
    base = dpex.zeros(10, dtype=np.int32)
    fgrid = dpex.asarray(np.zeros((3, 2), dtype=np.int64, order="F"))
    dpex.call_kernel(atomic_on_views, kapi.Range(60), base[::2], fgrid)
    np.testing.assert_array_equal(base.asnumpy(), np.tile([12, 0], 5))
    ref = np.zeros((3, 2), dtype=np.int64)
    for i in range(60):
        ref[i % 3, i % 2] += i
    np.testing.assert_array_equal(fgrid.asnumpy(), ref)


@dpex.kernel
def atomic_int64_python_literal(item, counts):
    # a Python int is int64: no cast needed for int64 arrays (as in numba-dpex)
    kapi.AtomicRef(counts, item.get_id(0) % 4).fetch_add(1)


def test_atomic_python_int_on_int64_array():
    c = dpex.zeros(4, dtype=np.int64)
    dpex.call_kernel(atomic_int64_python_literal, kapi.Range(100), c)
    np.testing.assert_array_equal(c.asnumpy(), [25, 25, 25, 25])


@dpex.kernel
def local_2d_atomic_hist(nditem, data, out, slm):
    li = nditem.get_local_id(0)
    lj = nditem.get_local_id(1)
    if li < 2 and lj < 2:
        slm[li, lj] = 0
    kapi.group_barrier(nditem.get_group())
    v = data[nditem.get_global_id(0), nditem.get_global_id(1)]
    kapi.AtomicRef(slm, (v % 2, (v // 2) % 2), memory_scope=kapi.MemoryScope.WORK_GROUP).fetch_add(
        np.int32(1)
    )
    kapi.group_barrier(nditem.get_group())
    if li < 2 and lj < 2:
        kapi.AtomicRef(out, (li, lj)).fetch_add(slm[li, lj])


def test_atomic_ref_tuple_index_on_2d_local_accessor():
    h = rng(24).integers(0, 100, (16, 16)).astype(np.int32)
    out = dpex.zeros((2, 2), dtype=np.int32)
    dpex.call_kernel(
        local_2d_atomic_hist,
        kapi.NdRange((16, 16), (4, 8)),
        dpex.asarray(h),
        out,
        kapi.LocalAccessor((2, 2), np.int32),
    )
    ref = np.zeros((2, 2), dtype=np.int32)
    np.add.at(ref, (h % 2, (h // 2) % 2), 1)
    np.testing.assert_array_equal(out.asnumpy(), ref)


@dpex.kernel
def scalar_promotions(item, a, f, u, out):
    i = item.get_id(0)
    out[i, 0] = a[i] * f  # float32 array * Python float (float64)
    out[i, 1] = a[i] + u  # float32 + uint32 scalar
    out[i, 2] = a[i] / 3  # true division by an int literal


@needs_fp64
def test_scalar_argument_promotions():
    h = np.linspace(1, 5, 9).astype(np.float32)
    out = dpex.zeros((9, 3), dtype=np.float64)
    dpex.call_kernel(scalar_promotions, kapi.Range(9), dpex.asarray(h), 0.1, np.uint32(7), out)
    o = out.asnumpy()
    np.testing.assert_allclose(o[:, 0], h.astype(np.float64) * 0.1, rtol=1e-12)
    np.testing.assert_allclose(o[:, 1], h.astype(np.float64) + 7, rtol=1e-12)
    np.testing.assert_allclose(o[:, 2], h.astype(np.float64) / 3, rtol=1e-12)


@dpex.device_func
def row_sum(row):
    s = 0.0
    for k in range(row.shape[0]):
        s += row[k]
    return s


@dpex.kernel
def row_sums_via_device_func(item, a, out):
    i = item.get_id(0)
    out[i] = row_sum(a[i])


def test_row_view_passed_to_device_func():
    h = rng(25).random((12, 5))
    out = dpex.zeros(12, dtype=np.float64)
    dpex.call_kernel(row_sums_via_device_func, kapi.Range(12), dpex.asarray(h), out)
    np.testing.assert_allclose(out.asnumpy(), h.sum(1))


@dpex.device_func
def scale_row(row, s):
    for k in range(row.shape[0]):
        row[k] = row[k] * s
    return row_sum(row)  # the view travels on into a nested device function


@dpex.kernel
def scale_planes(item, a, sums):
    i = item.get_id(0)
    j = item.get_id(1)
    sums[i, j] = scale_row(a[i, j], 2.0) + scale_row(a[i][j], 0.5) * 0


def test_row_views_of_3d_array_through_nested_device_funcs():
    h = rng(26).random((3, 4, 6))
    a = dpex.asarray(h)
    sums = dpex.zeros((3, 4), dtype=np.float64)
    dpex.call_kernel(scale_planes, kapi.Range(3, 4), a, sums)
    np.testing.assert_allclose(a.asnumpy(), h)  # *2 then *0.5
    np.testing.assert_allclose(sums.asnumpy(), (h * 2).sum(-1))


@dpex.kernel
def ldexp_compiles(item, x, e, out):
    i = item.get_id(0)
    out[i] = math.ldexp(x[i], e[i])


def test_math_ldexp():
    sig = "(item(1), array(f32,1,C,global), array(i32,1,C,global), array(f32,1,C,global))"
    asm = ldexp_compiles.inspect_asm(sig)
    assert any("ldexp" in ln and "ExtInst" in ln for ln in asm.splitlines())
    hx = np.linspace(-3, 3, 16).astype(np.float32)
    he = np.arange(-8, 8, dtype=np.int32)
    out = dpex.zeros(16, dtype=np.float32)
    dpex.call_kernel(ldexp_compiles, kapi.Range(16), dpex.asarray(hx), dpex.asarray(he), out)
    np.testing.assert_array_equal(out.asnumpy(), np.ldexp(hx, he))


# ---------------------------------------------------------------------------------------------
# More misuse numba-dpex users run into
# ---------------------------------------------------------------------------------------------


@dpex.kernel
def atomic_wrong_space(item, a):
    kapi.AtomicRef(a, 0, address_space=kapi.AddressSpace.LOCAL).fetch_add(a.dtype.type(1))


@dpex.kernel
def atomic_explicit_global(item, a):
    kapi.AtomicRef(a, 0, address_space=kapi.AddressSpace.GLOBAL).fetch_add(a.dtype.type(1))


def test_atomic_ref_address_space_must_match():
    a = dpex.zeros(1, dtype=np.int32)
    dpex.call_kernel(atomic_explicit_global, kapi.Range(10), a)
    assert a.asnumpy()[0] == 10
    with pytest.raises(dpex.KapiError, match="(?i)address.space|global|local"):
        dpex.call_kernel(atomic_wrong_space, kapi.Range(1), a)


@dpex.kernel
def atomic_on_private(item, a):
    p = kapi.PrivateArray(4, np.int32, fill_zeros=True)
    kapi.AtomicRef(p, 0).fetch_add(np.int32(1))
    a[0] = p[0]


def test_atomic_ref_on_private_array_rejected():
    with pytest.raises(dpex.KapiError, match="(?i)private"):
        dpex.call_kernel(atomic_on_private, kapi.Range(1), dpex.zeros(1, dtype=np.int32))


@dpex.kernel
def barrier_on_item(nditem, a):
    kapi.group_barrier(nditem)
    a[nditem.get_global_id(0)] = 1


def test_group_barrier_needs_the_group():
    with pytest.raises(dpex.KapiError, match="get_group"):
        dpex.call_kernel(barrier_on_item, kapi.NdRange((4,), (4,)), dpex.zeros(4, dtype=np.int32))


@dpex.kernel
def barrier_in_range_kernel(item, a):
    a[item.get_id(0)] = 1
    kapi.group_barrier(item.get_group())


def test_item_has_no_group():
    # Item (Range launch) has no work-group: numba-dpex has no get_group on Item either
    with pytest.raises(dpex.KapiError, match="NdRange|get_group"):
        dpex.call_kernel(barrier_in_range_kernel, kapi.Range(4), dpex.zeros(4, dtype=np.int32))


@dpex.kernel
def nd_kernel_ids(nditem, a):
    a[nditem.get_global_id(0)] = nditem.get_local_id(0)


def test_nd_kernel_launched_with_range_is_an_error():
    a = dpex.zeros(8, dtype=np.int64)
    with pytest.raises(dpex.KapiError, match="NdRange|get_local_id|Item"):
        dpex.call_kernel(nd_kernel_ids, kapi.Range(8), a)
    dpex.call_kernel(nd_kernel_ids, kapi.NdRange((8,), (4,)), a)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(8) % 4)


@dpex.kernel
def private_array_runtime_shape(item, a, n):
    p = kapi.PrivateArray(n, np.float32)
    p[0] = 1
    a[0] = p[0]


def test_private_array_shape_must_be_constant():
    with pytest.raises(dpex.KapiError, match="(?i)constant|literal"):
        dpex.call_kernel(
            private_array_runtime_shape, kapi.Range(1), dpex.zeros(1, dtype=np.float32), 4
        )


def test_local_accessor_shape_as_list_and_int_dtype_names():
    out = dpex.zeros(4, dtype=np.int64)
    dpex.call_kernel(
        local_shape_query,
        kapi.NdRange((8,), (8,)),
        out,
        kapi.LocalAccessor([3, 5], dtype=np.float32),
    )
    assert list(out.asnumpy()) == [3, 5, 15, 2]


@dpex.kernel
def small_int_wrap(item, a, b):
    i = item.get_id(0)
    b[i] = a[i] * a.dtype.type(3) + a.dtype.type(200)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16])
def test_small_integer_arrays_wrap_like_numpy(dtype):
    h = np.arange(0, 120, dtype=dtype)
    b = dpex.zeros(120, dtype=dtype)
    dpex.call_kernel(small_int_wrap, kapi.Range(120), dpex.asarray(h), b)
    with np.errstate(over="ignore"):
        ref = (h.astype(np.int64) * 3 + np.array(200).astype(dtype).astype(np.int64)).astype(dtype)
    np.testing.assert_array_equal(b.asnumpy(), ref)


@needs_cpu
def test_mixing_numpy_and_kapi_arrays_on_cpu():
    if not dpex.default_device().is_cpu:
        pytest.skip("kapi arrays live on a GPU here")
    h = np.arange(10, dtype=np.float32)
    out = dpex.zeros(10, dtype=np.float32)
    dpex.call_kernel(axpy_strided, kapi.Range(10), np.float32(2.0), h, out)
    np.testing.assert_array_equal(out.asnumpy(), 2 * h)


# ---------------------------------------------------------------------------------------------
# gpairs, Python semantics details, constants
# ---------------------------------------------------------------------------------------------


@dpex.kernel
def gpairs_kernel(nditem, x1, y1, z1, w1, x2, y2, z2, w2, rbins_squared, result):
    # dpbench gpairs style: per-pair squared distance, bin search, float atomics
    i = nditem.get_global_id(0)
    n2 = x2.shape[0]
    nbins = rbins_squared.shape[0]
    px = x1[i]
    py = y1[i]
    pz = z1[i]
    pw = w1[i]
    for j in range(n2):
        dx = px - x2[j]
        dy = py - y2[j]
        dz = pz - z2[j]
        wprod = pw * w2[j]
        dsq = dx * dx + dy * dy + dz * dz
        k = nbins - 1
        while dsq <= rbins_squared[k]:
            kapi.AtomicRef(result, k - 1).fetch_add(wprod)
            k = k - 1
            if k <= 0:
                break


@needs_fp64
def test_gpairs_float64_atomics():
    r = rng(27)
    n = 128
    pts = [r.random(n) for _ in range(8)]
    rbins = np.linspace(0.1, 1.2, 10)
    rbins_sq = rbins**2
    result = dpex.zeros(10, dtype=np.float64)
    dpex.call_kernel(
        gpairs_kernel,
        kapi.NdRange((n,), (32,)),
        *[dpex.asarray(p) for p in pts],
        dpex.asarray(rbins_sq),
        result,
    )
    x1, y1, z1, w1, x2, y2, z2, w2 = pts
    dsq = (x1[:, None] - x2) ** 2 + (y1[:, None] - y2) ** 2 + (z1[:, None] - z2) ** 2
    wp = w1[:, None] * w2
    ref = np.zeros(10)
    for k in range(9, 0, -1):
        ref[k - 1] = wp[dsq <= rbins_sq[k]].sum()
    np.testing.assert_allclose(result.asnumpy(), ref, rtol=1e-10)


@dpex.kernel
def python_semantics(item, a, out):
    i = item.get_id(0)
    x = a[i]
    n, m = out.shape  # tuple unpacking of shape
    out[i, 0] = x % 3.0  # float modulo takes the sign of the divisor
    out[i, 1] = x // 2.0
    out[i, 2] = 1.0 if -2.0 <= x < 2.0 else 0.0  # chained comparison
    out[i, 3] = 1.0 if (x > 0 and x < 3) or not (x > -1) else 0.0
    out[i, 4] = m * 10 + n * 0
    s = 0.0
    for k in range(5, 0, -2):  # negative step
        s = s * 10 + k
    out[i, 5] = s
    best = -math.inf
    if x > best:
        best = x
    out[i, 6] = best + (np.inf if x > 100 else 0.0)


@needs_fp64
def test_python_semantics_details():
    h = np.linspace(-4.5, 4.5, 19)
    out = dpex.zeros((19, 7), dtype=np.float64)
    dpex.call_kernel(python_semantics, kapi.Range(19), dpex.asarray(h), out)
    o = out.asnumpy()
    np.testing.assert_allclose(o[:, 0], np.mod(h, 3.0))
    np.testing.assert_allclose(o[:, 1], np.floor_divide(h, 2.0))
    np.testing.assert_array_equal(o[:, 2], ((-2 <= h) & (h < 2)).astype(float))
    np.testing.assert_array_equal(o[:, 3], (((h > 0) & (h < 3)) | ~(h > -1)).astype(float))
    assert (o[:, 4] == 70).all() and (o[:, 5] == 531).all()
    np.testing.assert_array_equal(o[:, 6], h)


@dpex.kernel
def int_semantics(item, a, out):
    i = item.get_id(0)
    x = a[i]
    out[i, 0] = x // 3
    out[i, 1] = x % 3
    out[i, 2] = x >> 1
    out[i, 3] = abs(x)
    out[i, 4] = -x if x < 0 else x * 2
    out[i, 5] = x**2
    out[i, 6] = np.uint64(7) >> np.uint64(1)
    out[i, 7] = max(x, 0) - min(x, 0)


def test_integer_semantics_negative_operands():
    h = np.arange(-9, 10, dtype=np.int64)
    out = dpex.zeros((19, 8), dtype=np.int64)
    dpex.call_kernel(int_semantics, kapi.Range(19), dpex.asarray(h), out)
    o = out.asnumpy()
    np.testing.assert_array_equal(o[:, 0], h // 3)
    np.testing.assert_array_equal(o[:, 1], h % 3)
    np.testing.assert_array_equal(o[:, 2], h >> 1)
    np.testing.assert_array_equal(o[:, 3], np.abs(h))
    np.testing.assert_array_equal(o[:, 4], np.where(h < 0, -h, 2 * h))
    np.testing.assert_array_equal(o[:, 5], h**2)
    assert (o[:, 6] == 3).all()
    np.testing.assert_array_equal(o[:, 7], np.abs(h))


WEIGHTS = np.array([0.25, 0.5, 0.25], dtype=np.float32)


@dpex.kernel
def stencil_global_weights(item, a, b):
    i = item.get_id(0) + 1
    b[i] = WEIGHTS[0] * a[i - 1] + WEIGHTS[1] * a[i] + WEIGHTS[2] * a[i + 1]


@dpex.kernel
def stencil_global_weights_loop(item, a, b):
    i = item.get_id(0) + 1
    s = np.float32(0)
    for k in range(WEIGHTS.shape[0]):  # run-time index into a global constant array
        s += WEIGHTS[k] * a[i + k - 1]
    b[i] = s


BIG_TABLE = np.arange(100, dtype=np.int64)


@dpex.kernel
def big_table_runtime_index(item, a):
    a[item.get_id(0)] = BIG_TABLE[item.get_id(0)]


@pytest.mark.parametrize("kern", [stencil_global_weights, stencil_global_weights_loop])
def test_module_level_numpy_array_constant(kern):
    h = np.arange(12, dtype=np.float32) ** 2
    b = dpex.zeros(12, dtype=np.float32)
    dpex.call_kernel(kern, kapi.Range(10), dpex.asarray(h), b)
    ref = np.zeros(12, dtype=np.float32)
    ref[1:-1] = 0.25 * h[:-2] + 0.5 * h[1:-1] + 0.25 * h[2:]
    np.testing.assert_allclose(b.asnumpy(), ref, rtol=1e-6)


def test_large_global_array_runtime_index_says_what_to_do():
    with pytest.raises(dpex.KapiError, match="array argument"):
        dpex.call_kernel(big_table_runtime_index, kapi.Range(4), dpex.zeros(4, dtype=np.int64))


# ---------------------------------------------------------------------------------------------
# Helpers: register_jitable functions, device functions with defaults and keywords
# ---------------------------------------------------------------------------------------------

from numba.extending import register_jitable  # noqa: E402


@register_jitable
def clamp(x, lo, hi):
    return min(max(x, lo), hi)


@dpex.device_func
def affine(x, a=2.0, b=1.0):
    return a * x + b


def undecorated_helper(x):
    return x + 1


@dpex.kernel
def use_jitable(item, a):
    i = item.get_id(0)
    a[i] = clamp(a[i], 1.0, 5.0)


@dpex.kernel
def use_defaults_and_keywords(item, a):
    i = item.get_id(0)
    a[i] = affine(a[i]) * 100 + affine(a[i], b=3.0) * 10 + affine(b=0.0, x=a[i], a=1.0)


@dpex.kernel
def use_undecorated(item, a):
    a[item.get_id(0)] = undecorated_helper(a[0])


def test_register_jitable_function_in_kernel():
    h = np.arange(8, dtype=np.float64)
    a = dpex.asarray(h)
    dpex.call_kernel(use_jitable, kapi.Range(8), a)
    np.testing.assert_array_equal(a.asnumpy(), np.clip(h, 1, 5))


def test_device_func_defaults_and_keyword_arguments():
    h = np.arange(8, dtype=np.float64)
    a = dpex.asarray(h)
    dpex.call_kernel(use_defaults_and_keywords, kapi.Range(8), a)
    np.testing.assert_array_equal(a.asnumpy(), (2 * h + 1) * 100 + (2 * h + 3) * 10 + h)


def test_undecorated_helper_error_says_to_decorate():
    with pytest.raises(dpex.KapiError, match="device_func"):
        dpex.call_kernel(use_undecorated, kapi.Range(2), dpex.zeros(2, dtype=np.float64))


@dpex.kernel
def local_bit_atomics(nditem, vals, out, slm):
    lid = nditem.get_local_id(0)
    g = nditem.get_group()
    if lid == 0:
        slm[0] = slm.dtype.type(0x7FFFFFFF)
        slm[1] = 0
        slm[2] = 0
        slm[3] = 0
    kapi.group_barrier(g)
    v = vals[nditem.get_global_id(0)]
    sc = kapi.MemoryScope.WORK_GROUP
    kapi.AtomicRef(slm, 0, memory_scope=sc).fetch_and(v)
    kapi.AtomicRef(slm, 1, memory_scope=sc).fetch_or(v)
    kapi.AtomicRef(slm, 2, memory_scope=sc).fetch_xor(v)
    if lid == 3:
        kapi.AtomicRef(slm, 3, memory_scope=sc).store(v)
    kapi.group_barrier(g)
    old = kapi.AtomicRef(slm, 3, memory_scope=sc).exchange(v) if lid == 5 else v
    kapi.group_barrier(g)
    if lid == 0:
        gid = g.get_group_id(0)
        for k in range(4):
            out[gid, k] = slm[k]
    if lid == 5:
        out[g.get_group_id(0), 4] = old


@pytest.mark.parametrize("dtype", INT_ATOMIC, ids=lambda d: np.dtype(d).name)
def test_bitwise_exchange_store_atomics_on_local_memory(dtype):
    n, wg = 128, 32
    h = rng(28).integers(0, 1 << 30, n).astype(dtype)
    out = dpex.zeros((n // wg, 5), dtype=dtype)
    dpex.call_kernel(
        local_bit_atomics,
        kapi.NdRange((n,), (wg,)),
        dpex.asarray(h),
        out,
        kapi.LocalAccessor(4, dtype),
    )
    b = h.reshape(-1, wg)
    o = out.asnumpy()
    np.testing.assert_array_equal(o[:, 0], np.bitwise_and.reduce(b, axis=1) & 0x7FFFFFFF)
    np.testing.assert_array_equal(o[:, 1], np.bitwise_or.reduce(b, axis=1))
    np.testing.assert_array_equal(o[:, 2], np.bitwise_xor.reduce(b, axis=1))
    np.testing.assert_array_equal(o[:, 3], b[:, 5])
    np.testing.assert_array_equal(o[:, 4], b[:, 3])


@needs_cpu
def test_simulator_style_call_with_numpy_arrays_and_local_accessor():
    # numba-dpex tests call kernel_api.call_kernel on undecorated functions and NumPy arrays
    # (its pure-Python simulator); kapi compiles the function and runs it on the CPU device
    def block_sum(nditem, a, out, slm):
        lid = nditem.get_local_id(0)
        slm[lid] = a[nditem.get_global_id(0)]
        kapi.group_barrier(nditem.get_group())
        if lid == 0:
            s = 0
            for k in range(nditem.get_local_range(0)):
                s += slm[k]
            out[nditem.get_group().get_group_id(0)] = s

    h = np.arange(64, dtype=np.int64)
    out = np.zeros(4, dtype=np.int64)
    kapi.call_kernel(
        block_sum, kapi.NdRange((64,), (16,)), h, out, kapi.LocalAccessor(16, np.int64)
    )
    np.testing.assert_array_equal(out, h.reshape(4, 16).sum(1))


@dpex.kernel
def mandelbrot(item, xmin, ymin, dx, dy, max_iter, out):
    j = item.get_id(0)  # contiguous index on dimension 0, as numba-dpex code does
    i = item.get_id(1)
    cr = xmin + j * dx
    ci = ymin + i * dy
    zr = 0.0
    zi = 0.0
    n = 0
    while n < max_iter and zr * zr + zi * zi <= 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci  # tuple swap
        n += 1
    out[i, j] = n


@needs_fp64
def test_mandelbrot_tuple_swap_while():
    w, h, it = 48, 32, 50
    out = dpex.zeros((h, w), dtype=np.int32)
    dpex.call_kernel(mandelbrot, kapi.Range(w, h), -2.0, -1.0, 3.0 / w, 2.0 / h, it, out)
    ref = np.zeros((h, w), dtype=np.int32)
    for i in range(h):
        for j in range(w):
            cr, ci = -2.0 + j * (3.0 / w), -1.0 + i * (2.0 / h)
            zr = zi = 0.0
            n = 0
            while n < it and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                n += 1
            ref[i, j] = n
    np.testing.assert_array_equal(out.asnumpy(), ref)


@dpex.kernel
def nbody_accel(nditem, pos, mass, acc, tile):
    # n-body with positions staged through local memory one tile at a time
    i = nditem.get_global_id(0)
    lid = nditem.get_local_id(0)
    wg = nditem.get_local_range(0)
    n = pos.shape[0]
    eps = np.float32(1e-3)
    ax = np.float32(0)
    ay = np.float32(0)
    az = np.float32(0)
    for t in range(n // wg):
        j = t * wg + lid
        tile[lid, 0] = pos[j, 0]
        tile[lid, 1] = pos[j, 1]
        tile[lid, 2] = pos[j, 2]
        tile[lid, 3] = mass[j]
        kapi.group_barrier(nditem.get_group())
        for k in range(wg):
            dx = tile[k, 0] - pos[i, 0]
            dy = tile[k, 1] - pos[i, 1]
            dz = tile[k, 2] - pos[i, 2]
            r2 = dx * dx + dy * dy + dz * dz + eps
            inv = np.float32(1) / math.sqrt(r2 * r2 * r2)
            ax += tile[k, 3] * dx * inv
            ay += tile[k, 3] * dy * inv
            az += tile[k, 3] * dz * inv
        kapi.group_barrier(nditem.get_group())
    acc[i, 0] = ax
    acc[i, 1] = ay
    acc[i, 2] = az


def test_nbody_local_tiles():
    n, wg = 128, 32
    r = rng(29)
    pos = r.random((n, 3)).astype(np.float32)
    mass = r.random(n).astype(np.float32)
    acc = dpex.zeros((n, 3), dtype=np.float32)
    dpex.call_kernel(
        nbody_accel,
        kapi.NdRange((n,), (wg,)),
        dpex.asarray(pos),
        dpex.asarray(mass),
        acc,
        kapi.LocalAccessor((wg, 4), np.float32),
    )
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d**2).sum(-1) + 1e-3
    ref = (mass[None, :, None] * d / np.sqrt(r2**3)[:, :, None]).sum(1)
    np.testing.assert_allclose(acc.asnumpy(), ref, rtol=2e-3, atol=1e-2)


@dpex.kernel
def atomic_consume(item, a):
    kapi.AtomicRef(a, 0, memory_order=kapi.MemoryOrder.CONSUME_UNSUPPORTED).fetch_add(np.int32(1))


def test_error_consume_memory_order_names_the_alternatives():
    with pytest.raises(dpex.KapiError, match="CONSUME_UNSUPPORTED is not supported.*ACQUIRE"):
        dpex.call_kernel(atomic_consume, kapi.Range(1), dpex.zeros(1, dtype=np.int32))


@dpex.device_func
def fill_iota(buf, start):
    for k in range(buf.shape[0]):
        buf[k] = start + k


@dpex.device_func
def total(buf):
    s = buf.dtype.type(0)
    for k in range(buf.shape[0]):
        s += buf[k]
    return s


@dpex.kernel
def private_and_local_views_to_device_funcs(nditem, out, slm):
    lid = nditem.get_local_id(0)
    p = kapi.PrivateArray(4, np.int64)
    fill_iota(p, lid)  # a PrivateArray passed to a device function
    fill_iota(slm[lid], lid * 10)  # a row of a 2-D LocalAccessor
    kapi.group_barrier(nditem.get_group())
    out[nditem.get_global_id(0)] = total(p) * 1000 + total(slm[(lid + 1) % 8])


def test_private_array_and_local_row_passed_to_device_funcs():
    out = dpex.zeros(16, dtype=np.int64)
    dpex.call_kernel(
        private_and_local_views_to_device_funcs,
        kapi.NdRange((16,), (8,)),
        out,
        kapi.LocalAccessor((8, 3), np.int64),
    )
    lid = np.arange(16) % 8
    nxt = (lid + 1) % 8
    np.testing.assert_array_equal(out.asnumpy(), (4 * lid + 6) * 1000 + (30 * nxt + 3))


@dpex.kernel
def store_scalar(item, a, x):
    a[item.get_id(0)] = x


SCALAR_ARGS = [
    np.int32(-7),
    np.uint32(4000000000),
    np.int64(-(2**40)),
    np.uint64(2**63 + 5),
    np.float32(1.25),
    np.bool_(True),
    7,
    -3.5,
    True,
]
if FP64:
    SCALAR_ARGS.append(np.float64(1e300))


@pytest.mark.parametrize("x", SCALAR_ARGS, ids=lambda v: f"{type(v).__name__}")
def test_scalar_arguments_of_every_type(x):
    dtype = np.asarray(x).dtype
    if dtype == np.float64 and not FP64:
        pytest.skip("device without fp64")
    a = dpex.zeros(3, dtype=dtype)
    dpex.call_kernel(store_scalar, kapi.Range(3), a, x)
    np.testing.assert_array_equal(a.asnumpy(), np.full(3, x, dtype=dtype))


@dpex.kernel
def int_dot_blocked(item, a, b, c):
    # an integer matmul with the inner loop over a fixed tile (as tiled matmuls are written)
    i = item.get_id(0)
    acc = c.dtype.type(0)
    for t in range(a.shape[1] // 4):
        for k in range(4):
            acc += a[i, t * 4 + k] * b[t * 4 + k, i]
    c[i] = acc


def test_integer_reduction_over_unrolled_tile_vector_reduce():
    # regression: the SLP vectoriser's llvm.vector.reduce.add has no SPIR-V; the compiler
    # now expands it (compiler/src/spirv/spirv_prepare.c) instead of failing at opt_level 2
    h = np.arange(64, dtype=np.int32).reshape(8, 8)
    c = dpex.zeros(8, dtype=np.int32)
    dpex.call_kernel(int_dot_blocked, kapi.Range(8), dpex.asarray(h), dpex.asarray(h), c)
    np.testing.assert_array_equal(c.asnumpy(), np.diag(h @ h))
