"""kapi.kernel_api: the pure-Python kernel API objects keep numba-dpex 0.23's names, values
and semantics (simulator side)."""

import numpy as np
import pytest

from kapi import kernel_api as K


def test_enum_values_match_numba_dpex():
    assert [m.value for m in K.MemoryOrder] == [0, 1, 2, 3, 4, 5]
    assert K.MemoryOrder.CONSUME_UNSUPPORTED == 2 and K.MemoryOrder.SEQ_CST == 5
    assert (K.MemoryScope.WORK_ITEM, K.MemoryScope.SYSTEM) == (0, 4)
    assert (K.AddressSpace.GLOBAL, K.AddressSpace.LOCAL, K.AddressSpace.GENERIC) == (1, 3, 4)


def test_item_linear_id_is_sycl_row_major():
    it = K.Item((4, 5, 6), (1, 2, 3))
    assert it.get_linear_id() == (1 * 5 + 2) * 6 + 3
    assert it.get_linear_range() == 120 and it.dimensions == 3
    assert it.get_id(1) == 2 and it.get_range(2) == 6


def test_nditem_and_group():
    g = K.Group((8, 4), (2, 2), (4, 2), (3, 1))
    nd = K.NdItem(K.Item((8, 4), (7, 3)), K.Item((2, 2), (1, 1)), g)
    assert nd.get_global_linear_id() == 7 * 4 + 3 and nd.get_local_linear_id() == 3
    assert nd.get_group().get_group_linear_id() == 3 * 2 + 1
    assert g.get_group_range(0) == 4 and g.get_local_range(1) == 2 and nd.dimensions == 2


def test_atomic_ref_simulation():
    a = np.array([5, 7], dtype=np.int32)
    r = K.AtomicRef(a, 1)
    assert r.fetch_add(np.int32(3)) == 7 and a[1] == 10
    assert r.fetch_max(np.int32(2)) == 10 and a[1] == 10
    expected = np.array([1], dtype=np.int32)
    assert not r.compare_exchange(expected, np.int32(0)) and expected[0] == 10
    assert r.compare_exchange(expected, np.int32(0)) and a[1] == 0
    with pytest.raises(TypeError):
        K.AtomicRef(np.zeros(2, np.int16), 0)


def test_private_array_local_accessor_and_barrier():
    p = K.PrivateArray((2, 3), np.float32, fill_zeros=True)
    p[1, 2] = 4
    assert p[1, 2] == 4 and p[0, 0] == 0
    la = K.LocalAccessor((4, 2), np.float64)
    assert la.shape == (4, 2) and la.ndim == 2
    with pytest.raises(NotImplementedError):
        la[0, 0]
    with pytest.raises(TypeError):
        K.LocalAccessor((0,), np.float32)
    with pytest.raises(NotImplementedError):
        K.group_barrier(None)
    K.atomic_fence(K.MemoryOrder.RELAXED, K.MemoryScope.DEVICE)
