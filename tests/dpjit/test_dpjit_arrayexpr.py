"""Array statements in prange bodies (kapi/_dpjit/arrayexpr.py): assignments to slices and
dot products of slices run as element loops inside the kernel; each function is also run as
plain Python on NumPy arrays (kapi.prange is range there) for the expected result. Host code's
np.dot / `@` on kapi arrays (kapi/_dpjit/host.py)."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi import prange
from pyfront import UnsupportedConstructError

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def _check(fn, dev, *arrays, scalars=()):
    """Runs fn on NumPy copies (reference) and through dpjit on dev; compares every array."""
    want = [np.array(a, copy=True) for a in arrays]
    fn(*want, *scalars)
    got = [kapi.asarray(np.array(a, copy=True), device=dev) for a in arrays]
    kapi.dpjit(fn)(*got, *scalars)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-12)


def _floyd_step(path):
    for k in range(path.shape[0]):
        for i in prange(path.shape[0]):
            # reads the target's own row and an element of it (taken before the row changes)
            path[i, :] = np.minimum(path[i, :], path[i, k] + path[k, :])


def _column_dots(a, b):
    for i in range(b.shape[0]):
        for j in prange(b.shape[1]):
            b[i, j] += np.dot(a[i + 1 :, i], b[i + 1 :, j])


def _matmul_dots(c, a, b, alpha):
    for i in range(c.shape[0]):
        for j in prange(c.shape[1]):
            c[:i, j] += alpha * b[i, j] * a[i, :i]  # an update of a slice, scalars broadcast
            c[i, j] = b[:i, j] @ a[i, :i]


def _two_axes(out, a):
    for i in prange(out.shape[0]):
        out[i, :, 1:] = a[i, :, 1:] * 2.0 + a[i, :, : -1 + a.shape[2]]


@pytest.mark.parametrize("n", [1, 7])
def test_slice_assignment_reading_the_target(dev, n):
    rng = np.random.default_rng(n)
    path = rng.integers(1, 20, (n, n)).astype(np.float64)
    np.fill_diagonal(path, 0)
    _check(_floyd_step, dev, path)


def test_dot_products_of_column_slices(dev):
    rng = np.random.default_rng(1)
    _check(_column_dots, dev, rng.random((6, 6)), rng.random((6, 5)))


def test_slice_update_and_matmul_of_slices(dev):
    rng = np.random.default_rng(2)
    _check(_matmul_dots, dev, rng.random((5, 4)), rng.random((5, 5)), rng.random((5, 4)),
           scalars=(1.5,))  # fmt: skip


def test_two_sliced_axes_with_an_offset_read(dev):
    rng = np.random.default_rng(3)
    _check(_two_axes, dev, np.zeros((3, 4, 5)), rng.random((3, 4, 5)))


def _csr_matvec(y, row, col, val, x):
    for i in prange(row.shape[0] - 1):
        cols = col[row[i] : row[i + 1]]  # slices bound to names: read as the slices
        vals = val[row[i] : row[i + 1]]
        y[i] = vals @ x[cols]  # a gather through a slice of an index array


def test_dot_of_named_slices_and_a_gather(dev):
    rng = np.random.default_rng(5)
    dense = rng.random((6, 7)) * (rng.random((6, 7)) < 0.4)
    dense[2] = 0.0  # an empty row
    row = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))]).astype(np.int64)
    col = np.nonzero(dense)[1].astype(np.int64)
    val = dense[dense != 0]
    x = rng.random(7)
    _check(_csr_matvec, dev, np.zeros(6), row, col, val, x)
    y = kapi.asarray(np.zeros(6), device=dev)
    args = [kapi.asarray(a, device=dev) for a in (row, col, val, x)]
    kapi.dpjit(_csr_matvec)(y, *args)
    np.testing.assert_allclose(y.asnumpy(), dense @ x, rtol=1e-12)


def _covariance(cov, data, scale):
    m = data.shape[1]
    for i in prange(m):
        # a chained assignment of a vector-matrix product of slices
        # (scale: a free scalar in a chained assignment)
        cov[i:m, i] = cov[i, i:m] = data[:, i] @ data[:, i:m] / scale


def _matvec_rows(out, a, v):
    for i in prange(out.shape[0]):
        out[i, :] = a[:, :] @ v[:] + out[i, :]


def test_chained_assignment_of_a_vector_matrix_product(dev):
    rng = np.random.default_rng(6)
    _check(_covariance, dev, np.zeros((5, 5)), rng.random((4, 5)), scalars=(2.0,))
    _check(_matvec_rows, dev, rng.random((3, 4)), rng.random((4, 6)), rng.random(6))


def test_host_code_axis_reductions_and_mask_indexing(dev):
    @kapi.dpjit
    def f(data):
        mean = np.sum(data, axis=0) / data.shape[0]
        sd = np.max(data, axis=1)
        mean[mean <= 0.5] = 1.0
        big = data[data > 0.5]
        return mean, sd, big.sum()

    rng = np.random.default_rng(7)
    x = rng.random((4, 5))
    mean, mx, big = f(kapi.asarray(x, device=dev))
    want = x.sum(axis=0) / 4
    want[want <= 0.5] = 1.0
    np.testing.assert_allclose(mean.asnumpy(), want)
    np.testing.assert_allclose(mx.asnumpy(), x.max(axis=1))
    assert big == pytest.approx(x[x > 0.5].sum())


def _shifted(a):
    for i in prange(a.shape[0]):
        a[i, 1:] = a[i, 0:4] + 1.0  # reads elements the loop would already have written


def test_a_shifted_slice_of_the_target_is_not_turned_into_a_loop(dev):
    # NumPy reads the whole right side first; an element loop would not, so the statement is
    # left as written and the kernel compiler refuses the slice by name
    a = kapi.asarray(np.zeros((3, 5)), device=dev)
    with pytest.raises(UnsupportedConstructError, match="slic"):
        kapi.dpjit(_shifted)(a)


def test_host_code_dot_and_matmul_of_kapi_arrays(dev):
    @kapi.dpjit
    def f(m, v):
        s = np.dot(v, v)  # a scalar in host code
        w = m @ v
        return s, w, np.dot(m, m)

    rng = np.random.default_rng(4)
    m, v = rng.random((3, 3)), rng.random(3)
    s, w, mm = f(kapi.asarray(m, device=dev), kapi.asarray(v, device=dev))
    assert isinstance(s, float) and s == pytest.approx(v @ v)
    np.testing.assert_allclose(w.asnumpy(), m @ v)
    np.testing.assert_allclose(mm.asnumpy(), m @ m)


def test_host_code_np_reshape_of_a_kapi_array(dev):
    @kapi.dpjit
    def f(y, n):
        return np.reshape(y, (n, 1)) * 2.0

    y = np.arange(4.0)
    got = f(kapi.asarray(y, device=dev), 4)
    assert got.shape == (4, 1)
    np.testing.assert_array_equal(got.asnumpy(), y.reshape(4, 1) * 2.0)


def _row_max_4d(tmp, x):
    for i in prange(x.shape[3]):
        tmp[:, :, :, i] = np.max(x[:, :, :, i]) - x[:, :, :, i].min()


def _pool_4d(out, x):
    for i in prange(out.shape[1]):
        for j in prange(out.shape[2]):
            for k in prange(out.shape[0]):
                for m in prange(out.shape[3]):  # a fourth prange: a loop inside the kernel
                    out[k, i, j, m] = np.max(x[k, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2, m])


def _sums(out, a):
    for i in prange(a.shape[0]):
        # nested reductions, the method form, the mean and a product of an expression
        out[i, 0] = np.sum(a[i, :] - np.mean(a[i, :]))
        out[i, 1] = (a[i, 1:] * 2.0).sum() + np.prod(a[i, :2] + 1.0)
        out[i, 2] = np.min(np.abs(a[i, :] - 0.5))


def test_whole_reductions_of_slices(dev):
    rng = np.random.default_rng(8)
    _check(_row_max_4d, dev, np.zeros((2, 3, 4, 5)), rng.random((2, 3, 4, 5)))
    _check(_pool_4d, dev, np.zeros((2, 3, 2, 3)), rng.random((2, 6, 4, 3)))
    _check(_sums, dev, np.zeros((4, 3)), rng.random((4, 6)))
