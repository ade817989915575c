"""Range and NdRange: numba-dpex's members, and clear errors where numba-dpex had none."""

import pickle

import numpy as np
import pytest

import kapi


def test_range_is_a_tuple_with_numba_dpex_members():
    r = kapi.Range(4, 5, 6)
    assert isinstance(r, tuple) and tuple(r) == (4, 5, 6)
    assert r.ndim == 3 and r.size() == 120 and r.get(1) == 5
    assert (r.dim0, r.dim1, r.dim2) == (4, 5, 6)
    r1 = kapi.Range(7)
    assert (r1.ndim, r1.dim1, r1.dim2) == (1, -1, -1)
    assert kapi.Range(2, 3).dim2 == -1


def test_range_accepts_numpy_integers():
    r = kapi.Range(np.int64(8), np.int32(2))
    assert tuple(r) == (8, 2) and all(type(d) is int for d in r)


@pytest.mark.parametrize("dims", [(0,), (4, 0), (-1,), (2, 3, 0), (1.5,), ("3",), (True,)])
def test_range_rejects_bad_extents(dims):
    # numba-dpex silently turned Range(4, 0) into a 1-D range; kapi says what is wrong.
    with pytest.raises(kapi.InvalidRangeError):
        kapi.Range(*dims)


def test_range_dim2_without_dim1():
    with pytest.raises(kapi.InvalidRangeError, match="without dimension 1"):
        kapi.Range(4, None, 3)


def test_ndrange_members_and_equality():
    nd = kapi.NdRange(kapi.Range(8, 4), (4, 2))
    assert nd.global_range == kapi.Range(8, 4) and nd.local_range == kapi.Range(4, 2)
    assert nd.get_global_range() == (8, 4) and nd.get_local_range() == (4, 2)
    assert nd == kapi.NdRange((8, 4), kapi.Range(4, 2))
    assert nd != kapi.NdRange((8, 4), (2, 2))
    assert nd.ndim == 2
    assert "global_range" in str(nd) and "NdRange" in repr(nd)


def test_ndrange_accepts_ints_for_1d():
    assert kapi.NdRange(16, 4).global_range == (16,)


def test_ndrange_rank_mismatch():
    with pytest.raises(kapi.UnmatchedNumberOfRangeDimsError):
        kapi.NdRange((8, 8), (4,))


def test_ndrange_local_must_divide_global():
    with pytest.raises(kapi.UnsupportedGroupWorkItemSizeError, match="does not divide"):
        kapi.NdRange((10,), (4,))


def test_ndrange_needs_both_sizes():
    with pytest.raises(TypeError):
        kapi.NdRange((8,))


def test_pickle_round_trip():
    r = kapi.Range(3, 2)
    assert pickle.loads(pickle.dumps(r)) == r
    nd = kapi.NdRange((8,), (2,))
    assert pickle.loads(pickle.dumps(nd)) == nd
