"""numba-dpex 0.23's names, keywords, defaults and error classes, written the way numba-dpex
users write kernels (only the imports changed). The expected values are read from numba-dpex
0.23's sources: numba_dpex/__init__.py, kernel_api/*.py, the JIT overloads in
kernel_api_impl/spirv/overloads/*.py and core/exceptions.py (docs/guide/porting.md lists them).
"""

import inspect

import numpy as np
import pytest
from kapi_testing import devices_or_skip
from numba.core.errors import TypingError

import kapi as dpex
from kapi import kernel_api as kapi

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]

# numba_dpex.__all__ (core/types's names plus the decorators and launch functions), less the
# Numba type classes kapi does not provide (DpctlSyclQueue, DpctlSyclEvent, IntEnumLiteral,
# KernelDispatcherType, RangeType, NdRangeType: typing internals of numba-dpex's dpjit)
DPEX_ALL = (
    "call_kernel call_kernel_async device_func dpjit kernel prange Range NdRange DpnpNdArray "
    "USMNdArray usm_ndarray none boolean bool_ int32 int64 uint32 uint64 float32 float64 b1 i4 "
    "i8 u4 u8 f4 f8 float_ double void"
).split()
KERNEL_API_ALL = (
    "call_kernel group_barrier AddressSpace atomic_fence AtomicRef Group Item LocalAccessor "
    "MemoryOrder MemoryScope NdItem NdRange Range PrivateArray"
).split()
EXCEPTIONS = (
    "KernelHasReturnValueError UnmatchedNumberOfRangeDimsError UnsupportedGroupWorkItemSizeError "
    "ExecutionQueueInferenceError UnsupportedKernelArgumentError "
    "InvalidKernelSpecializationError MissingSpecializationError"
).split()


def params(fn):
    """[(name, default or '-')] of a callable, self left out."""
    sig = inspect.signature(fn)
    out = []
    for p in sig.parameters.values():
        if p.name != "self":
            out.append((p.name, "-" if p.default is p.empty else p.default))
    return out


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


def test_top_level_and_kernel_api_names():
    missing = [n for n in DPEX_ALL if not hasattr(dpex, n)]
    assert missing == []
    assert set(KERNEL_API_ALL) <= set(kapi.__all__)
    assert all(hasattr(kapi, n) for n in KERNEL_API_ALL)
    assert [n for n in EXCEPTIONS if not hasattr(dpex, n)] == []
    assert dpex.float_ is dpex.f4 is dpex.float32 and dpex.double is dpex.float64


def test_memory_enum_values():
    assert {m.name: m.value for m in kapi.MemoryOrder} == {
        "RELAXED": 0,
        "ACQUIRE": 1,
        "CONSUME_UNSUPPORTED": 2,
        "RELEASE": 3,
        "ACQ_REL": 4,
        "SEQ_CST": 5,
    }
    assert [(m.name, m.value) for m in kapi.MemoryScope] == [
        ("WORK_ITEM", 0),
        ("SUB_GROUP", 1),
        ("WORK_GROUP", 2),
        ("DEVICE", 3),
        ("SYSTEM", 4),
    ]
    assert [(m.name, m.value) for m in kapi.AddressSpace] == [
        ("PRIVATE", 0),
        ("GLOBAL", 1),
        ("CONSTANT", 2),
        ("LOCAL", 3),
        ("GENERIC", 4),
    ]


def test_parameter_names_and_defaults():
    MO, MS = kapi.MemoryOrder, kapi.MemoryScope
    assert params(kapi.AtomicRef.__init__) == [
        ("ref", "-"),
        ("index", "-"),
        ("memory_order", MO.RELAXED),
        ("memory_scope", MS.DEVICE),
        ("address_space", None),
    ]
    for m in ("fetch_add fetch_sub fetch_min fetch_max fetch_and fetch_or fetch_xor").split():
        assert params(getattr(kapi.AtomicRef, m)) == [("val", "-")], m
    assert params(kapi.AtomicRef.store) == params(kapi.AtomicRef.exchange) == [("val", "-")]
    assert params(kapi.AtomicRef.load) == []
    assert params(kapi.AtomicRef.compare_exchange) == [
        ("expected_ref", "-"),
        ("desired", "-"),
        ("expected_idx", 0),
    ]
    assert params(kapi.group_barrier) == [("group", "-"), ("fence_scope", MS.WORK_GROUP)]
    assert params(kapi.atomic_fence) == [("memory_order", "-"), ("memory_scope", "-")]
    assert params(kapi.PrivateArray.__init__) == [
        ("shape", "-"),
        ("dtype", "-"),
        ("fill_zeros", False),
    ]
    assert params(kapi.LocalAccessor.__init__) == [("shape", "-"), ("dtype", "-")]
    assert params(kapi.Range.__new__)[1:] == [("dim0", "-"), ("dim1", None), ("dim2", None)]
    assert params(kapi.NdRange.__init__) == [("global_size", "-"), ("local_size", "-")]
    assert params(kapi.Item.get_id) == params(kapi.Item.get_range) == [("idx", "-")]
    for m in ("get_group_id", "get_group_range", "get_local_range"):
        assert params(getattr(kapi.Group, m)) == [("dim", "-")], m
    for m in ("get_global_id", "get_local_id", "get_global_range", "get_local_range"):
        assert params(getattr(kapi.NdItem, m)) == [("idx", "-")], m
    assert params(dpex.call_kernel)[:2] == [("kernel_fn", "-"), ("index_space", "-")]
    assert params(dpex.call_kernel_async)[:3] == [
        ("kernel_fn", "-"),
        ("index_space", "-"),
        ("dependent_events", "-"),
    ]
    assert params(dpex.kernel)[0] == ("function_or_signature", None)
    assert params(dpex.device_func)[0] == ("function_or_signature", None)


def test_range_members():
    r = kapi.Range(4, 2)
    assert (r.get(1), r.size(), r.ndim, r.dim0, r.dim1, r.dim2) == (2, 8, 2, 4, 2, -1)
    nd = kapi.NdRange((8, 4), (2, 2))
    assert nd.global_range == nd.get_global_range() == kapi.Range(8, 4)
    assert nd.local_range == nd.get_local_range() == kapi.Range(2, 2)
    assert nd == kapi.NdRange(kapi.Range(8, 4), kapi.Range(2, 2))


def test_misuse_raises_numba_dpex_error_classes(dev):
    with pytest.raises(dpex.UnmatchedNumberOfRangeDimsError):
        kapi.NdRange((8, 4), (2,))
    with pytest.raises(dpex.UnsupportedGroupWorkItemSizeError):
        kapi.NdRange((10,), (4,))
    with pytest.raises(TypeError):  # numba-dpex: "dim0 of a Range must be an int."
        kapi.Range("4")
    with pytest.raises(TypeError):
        kapi.LocalAccessor((4, 4), np.complex64)
    with pytest.raises(TypeError):
        kapi.LocalAccessor((1, 2, 3, 4), np.float32)
    with pytest.raises(NotImplementedError):
        kapi.LocalAccessor(4, np.float32)[0]
    with pytest.raises(NotImplementedError):
        kapi.group_barrier(None)

    @dpex.kernel
    def uses_local(item, a, slm):
        slm[0] = a[0]

    a = dpex.zeros(4, np.float32, device=dev)
    with pytest.raises(TypeError, match="LocalAccessor"):  # numba-dpex: TypeError
        dpex.call_kernel(uses_local, kapi.Range(4), a, kapi.LocalAccessor(4, np.float32))

    @dpex.kernel
    def returns(item, a):
        return a[0]

    with pytest.raises(dpex.KernelHasReturnValueError):
        dpex.call_kernel(returns, kapi.Range(4), a)
    with pytest.raises(ValueError):
        dpex.kernel(42)


def test_kernel_typing_errors_are_numba_typing_errors(dev):
    @dpex.kernel
    def fetch_and_on_floats(item, a):
        kapi.AtomicRef(a, 0).fetch_and(a[0])

    with pytest.raises(TypingError, match="integer arrays only"):
        dpex.call_kernel(fetch_and_on_floats, kapi.Range(1), dpex.zeros(1, np.float32, device=dev))

    @dpex.kernel
    def wrong_value_type(item, a):
        kapi.AtomicRef(a, 0).fetch_add(1)  # int64 into an int32 array, as numba-dpex refuses

    with pytest.raises(TypingError, match="int64"):
        dpex.call_kernel(wrong_value_type, kapi.Range(1), dpex.zeros(1, np.int32, device=dev))


@dpex.kernel
def keywords_kernel(nd, a, expected, out):
    gid = nd.get_global_id(dim=0)
    g = nd.get_group()
    out[gid] = g.get_group_id(dim=0) * 100 + nd.get_local_id(dim=0) + g.get_local_range(dim=0)
    p = kapi.PrivateArray(shape=2, dtype=np.int64, fill_zeros=True)
    kapi.group_barrier(group=g, fence_scope=kapi.MemoryScope.WORK_GROUP)
    kapi.atomic_fence(memory_order=kapi.MemoryOrder.SEQ_CST, memory_scope=kapi.MemoryScope.DEVICE)
    if gid == 0:
        ref = kapi.AtomicRef(
            ref=a,
            index=0,
            memory_order=kapi.MemoryOrder.RELAXED,
            memory_scope=kapi.MemoryScope.DEVICE,
            address_space=kapi.AddressSpace.GLOBAL,
        )
        ok = ref.compare_exchange(expected_ref=expected, desired=a.dtype.type(7), expected_idx=2)
        p[0] = ok
        # numba-dpex's pure-Python mock names the first parameter `expected`: accepted too
        p[1] = ref.compare_exchange(expected=expected, desired=a.dtype.type(9), expected_idx=1)
        out[0] = p[0] * 10 + p[1]


def test_keyword_arguments_as_numba_dpex_names_them(dev):
    a = dpex.asarray(np.array([5], np.int64), device=dev)
    expected = dpex.asarray(np.array([0, 0, 5], np.int64), device=dev)
    out = dpex.zeros(8, np.int64, device=dev)
    dpex.call_kernel(keywords_kernel, kapi.NdRange((8,), (4,)), a, expected, out)
    # first exchange succeeds (5 == expected[2]); the second fails (7 != expected[1] == 0)
    # and writes the current value 7 into expected[1]
    assert a.asnumpy()[0] == 7
    np.testing.assert_array_equal(expected.asnumpy(), [0, 7, 5])
    np.testing.assert_array_equal(out.asnumpy(), [10, 5, 6, 7, 104, 105, 106, 107])


def test_atomic_ref_python_members():
    a = np.array([3, 4], np.int32)
    r = kapi.AtomicRef(a, 1)
    assert (r.ref, r.memory_order, r.memory_scope, r.address_space) == (
        4,
        kapi.MemoryOrder.RELAXED,
        kapi.MemoryScope.DEVICE,
        None,
    )
    exp = np.array([4], np.int32)
    assert r.compare_exchange(exp, np.int32(9)) and a[1] == 9
    assert kapi.LocalAccessor(np.array([2, 3]), np.float32).shape == (2, 3)


def test_index_space_objects_in_python():
    g = kapi.Group(kapi.Range(8), kapi.Range(4), kapi.Range(2), [1])
    assert not g.leader
    nd = kapi.NdItem(kapi.Item(kapi.Range(8), [4]), kapi.Item(kapi.Range(4), [0]), g)
    assert g.leader and nd.get_group() is g and nd.get_global_linear_id() == 4
    assert (g.get_group_id(dim=0), g.get_group_linear_range(), g.dimensions) == (1, 2, 1)
