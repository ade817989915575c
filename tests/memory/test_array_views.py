"""Basic indexing takes a fast path (integers, slices, one Ellipsis) that computes the view's
offset, shape and strides itself: it must select exactly what NumPy selects, and fail as
NumPy fails."""

import numpy as np
import pytest

import kapi

KEYS = [
    0,
    -1,
    3,
    slice(None),
    slice(1, 5),
    slice(None, None, -1),
    slice(5, 1, -2),
    slice(2, 2),
    slice(-3, None),
    slice(None, None, 3),
    Ellipsis,
    (1, 2),
    (-1, slice(None, None, 2)),
    (Ellipsis, 1),
    (1, Ellipsis),
    (slice(1, 4), Ellipsis, slice(None, None, -1)),
    (slice(None), 0, 1),
    (np.int64(2), np.int32(-2)),
    (Ellipsis, slice(3, 0, -1), 0),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
@pytest.mark.parametrize("order", ["C", "F"])
def test_basic_views_select_what_numpy_selects(key, order):
    h = np.asarray(np.arange(6 * 7 * 5, dtype=np.float32).reshape(6, 7, 5), order=order)
    a = kapi.asarray(h)
    v = a[key]
    want = h[key]
    assert v.shape == want.shape
    np.testing.assert_array_equal(np.asarray(v.asnumpy()), want)
    # writes through the view land where NumPy's view would write
    h2 = h.copy(order=order)
    a[key] = -1.0
    h2[key] = -1.0
    np.testing.assert_array_equal(a.asnumpy(), h2)


@pytest.mark.parametrize("key", [6, -7, (0, 7), (Ellipsis, 5)], ids=repr)
def test_out_of_bounds_raises_numpy_index_error(key):
    h = np.zeros((6, 7, 5))
    a = kapi.asarray(h)
    with pytest.raises(IndexError) as numpy_err:
        h[key]
    with pytest.raises(IndexError) as kapi_err:
        a[key]
    assert str(kapi_err.value) == str(numpy_err.value)


def test_too_many_indices_and_two_ellipses_fail_as_numpy():
    a = kapi.asarray(np.zeros((2, 3)))
    with pytest.raises(IndexError, match="too many indices"):
        a[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        a[..., ...]


def test_row_copies_through_host_rows():
    """The halo exchange's idiom: rows to and from a host-memory row by `h[...] = row`."""
    u = kapi.asarray(np.arange(12.0).reshape(3, 4))
    h = kapi.empty(4, dtype=np.float64, usm_type="host")
    h[...] = u[1]
    np.testing.assert_array_equal(np.asarray(h), [4.0, 5.0, 6.0, 7.0])
    u[2][...] = h
    np.testing.assert_array_equal(u.asnumpy()[2], [4.0, 5.0, 6.0, 7.0])
