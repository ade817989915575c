"""Array statements of prange bodies that need the arrays' dimensions
(kapi/_dpjit/arraytyped.py, kernels generated per the free arrays' ndims): subscripts with
missing trailing indices, names bound to array expressions, `@` of matrices, reshape,
broadcasting, reductions along an axis and masked reductions. Each function also runs as
plain Python on NumPy arrays (kapi.prange is range there) for the expected result."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi import prange

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def _check(fn, dev, *arrays, scalars=(), rtol=1e-12):
    want = [np.array(a, copy=True) for a in arrays]
    fn(*want, *scalars)
    got = [kapi.asarray(np.array(a, copy=True), device=dev) for a in arrays]
    kapi.dpjit(fn)(*got, *scalars)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=rtol)


def _row_stats(out, x):
    for i in prange(x.shape[0]):
        out[i, 0] = np.max(x[i])  # x[i]: a row of a 2-d x, all of a 3-d x's plane
        out[i, 1] = x[i].sum() / np.sum(x)  # a free array's name alone: all of it


def test_missing_trailing_indices_per_ndim(dev):
    rng = np.random.default_rng(1)
    f = kapi.dpjit(_row_stats)
    for shape in [(4, 5), (3, 2, 4)]:  # one function, a kernel per ndim of x
        x = rng.random(shape)
        want = np.zeros((shape[0], 2))
        _row_stats(want, x)
        got = kapi.zeros((shape[0], 2), device=dev)
        f(got, kapi.asarray(x, device=dev))
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)


def _masked_mean(res, data, radius, rmax):
    for i in prange(res.shape[0]):
        r1 = rmax * i / res.shape[0]
        r2 = rmax * (i + 1) / res.shape[0]
        mask = np.logical_and(r1 <= radius, radius < r2)  # bound names, read where used
        values = data[mask]
        res[i] = values.mean() + data[(radius < r2) & (radius >= r1)].sum()


def test_masked_reductions(dev):
    rng = np.random.default_rng(2)
    radius = rng.random(50)
    _check(_masked_mean, dev, np.zeros(6), rng.random(50), radius, scalars=(radius.max(),))


def _conv(output, inp, weights):
    K, N, C_in, C_out = weights.shape[0], inp.shape[0], inp.shape[3], weights.shape[3]
    for i in prange(output.shape[1]):
        for j in prange(output.shape[2]):
            patch = inp[:, i : i + K, j : j + K, :].copy()
            output[:, i, j, :] = np.sum(
                np.sum(
                    np.sum(
                        np.reshape(patch, (N, K, K, C_in, 1))
                        * np.reshape(weights, (1, K, K, C_in, C_out)),
                        axis=1,
                    ),
                    axis=1,
                ),
                axis=1,
            )


def test_copy_reshape_broadcast_and_axis_sums(dev):
    rng = np.random.default_rng(3)
    x, w = rng.random((2, 6, 5, 3)), rng.random((3, 3, 3, 4))
    _check(_conv, dev, np.zeros((2, 4, 3, 4)), x, w)


def _blocks(sigma, g, h, d):
    for k in prange(g.shape[0]):
        for a in prange(h.shape[0]):
            for b in range(h.shape[1]):
                gh = g[k, a] @ h[a, b]  # matrices: rows of 4-d arrays
                hd = h[a, b] * d[k, a, b]
                sigma[k, a] += gh @ hd - np.max(hd, axis=0)


def test_matrix_products_of_bound_names(dev):
    rng = np.random.default_rng(4)
    g, h, d = rng.random((2, 3, 4, 4)), rng.random((3, 2, 4, 4)), rng.random((2, 3, 2))
    _check(_blocks, dev, np.zeros((2, 3, 4, 4)), g, h, d)


def _self_read(x, y):
    for i in prange(x.shape[0]):
        x[i] = x[i] - np.mean(x[i])  # its own elements, in step; the mean before the loop
        y[i] += y[i] @ y[:, :]  # other elements of the target: left as written (refused)


def test_statements_reading_their_target(dev):
    rng = np.random.default_rng(5)
    x = rng.random((3, 4))
    got = kapi.asarray(x, device=dev)
    with pytest.raises(kapi.KapiError, match="matmul"):
        kapi.dpjit(_self_read)(got, kapi.asarray(np.eye(3), device=dev))

    def centre(x):
        for i in prange(x.shape[0]):
            x[i] = x[i] - np.mean(x[i])

    _check(centre, dev, x)


def _accumulate_over_inner(out, a):
    for i in prange(a.shape[0]):
        for j in prange(a.shape[1]):  # out[i] does not read j: j stays a loop
            for k in prange(a.shape[2]):
                out[i] += a[i, j, k] * (j + 1)


def test_inner_prange_updating_one_element_runs_in_sequence(dev):
    import ast

    from kapi._dpjit.analysis import _stores_without

    body = ast.parse("out[i] += a[i, j, k]\nb[i, j] = 1").body
    assert _stores_without(body, "j") and not _stores_without(body[1:], "j")
    # an index computed from the loop variable counts as it
    assert not _stores_without(ast.parse("k = i * 4 + j\nb[k] = 1").body, "j")
    rng = np.random.default_rng(6)
    _check(_accumulate_over_inner, dev, np.zeros(3), rng.random((3, 40, 50)), rtol=1e-10)


# -- shapes NumPy would refuse or broadcast: checked at the launch -----------------------------


def _add_rows(a, b, out):
    for i in prange(a.shape[0]):
        out[i, :] = a[i, :] + b


def _update_private(a, b, out, n):
    for i in prange(a.shape[0]):
        x = np.zeros(n)
        x = x + a[i, :]
        x = x + b  # NumPy makes x longer where b is: written in place, x cannot grow
        out[i] = x.sum()


def _row_dot(a, b, out):
    for i in prange(a.shape[0]):
        out[i] = a[i, :] @ b


def _line_of(fn, text):
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize(
    ("fn", "text", "extents"),
    [
        (_add_rows, "out[i, :] = ", "a.shape[1] is 3 and b.shape[0] is 5"),
        (_update_private, "x = x + b", "n is 3 and b.shape[0] is 5"),
        (_row_dot, "a[i, :] @ b", "a.shape[1] is 3 and b.shape[0] is 5"),
    ],
)
def test_mismatched_extents_raise_at_the_statement(dev, fn, text, extents):
    a = kapi.asarray(np.ones((4, 3)), device=dev)
    out = kapi.zeros((4, 3), device=dev) if fn is _add_rows else kapi.zeros(4, device=dev)
    extra = (3,) if fn is _update_private else ()
    f = kapi.dpjit(fn)
    b_ok = np.arange(3.0)
    _check(fn, dev, np.ones((4, 3)), b_ok, out.asnumpy(), scalars=extra)  # matching: runs
    with pytest.raises(ValueError, match="could not be broadcast together") as ei:
        f(a, kapi.asarray(np.arange(5.0), device=dev), out, *extra)
    assert f"{__file__}:{_line_of(fn, text)}: dpjit:" in str(ei.value)
    assert extents in str(ei.value)
    with pytest.raises(ValueError):  # and NumPy refuses the same shapes
        fn(np.ones((4, 3)), np.arange(5.0), out.asnumpy(), *extra)


def test_private_array_sized_by_an_array_is_a_clear_error(dev):
    def sized_by_array(a, out):
        for i in prange(a.shape[0]):
            x = np.zeros(a.shape[1])
            out[i] = x.sum()

    with pytest.raises(kapi.UnsupportedPrangeError, match="it reads a, a Array, not an integer"):
        kapi.dpjit(sized_by_array)(kapi.ones((2, 3), device=dev), kapi.zeros(2, device=dev))
