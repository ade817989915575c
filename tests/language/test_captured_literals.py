"""Compile-time values from the enclosing scope, the way numba-dpex code builds kernels in
factories: strings for getattr, memory orders and scopes, dtypes, tuples of constants."""

import functools

import numpy as np
import pytest
from kapi_testing import devices_or_skip, line_of, needs_cpu_device

import kapi as dpex
from kapi import kernel_api as kapi
from pyfront import KernelTypingError, UnsupportedConstructError

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]

RMW = {
    "fetch_add": lambda old, v: old + v,
    "fetch_sub": lambda old, v: old - v,
    "fetch_max": max,
    "fetch_min": min,
    "fetch_and": lambda old, v: old & v,
    "fetch_or": lambda old, v: old | v,
    "fetch_xor": lambda old, v: old ^ v,
    "exchange": lambda old, v: v,
}
ORDER = kapi.MemoryOrder.RELAXED  # a module-level enum member
SHAPE = (2, 3)  # a module-level tuple of constants


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


@functools.lru_cache
def atomic_kernel(op, order, scope):
    @dpex.kernel
    def k(item, acc, vals, olds):
        i = item.get_id(0)
        ref = kapi.AtomicRef(acc, 0, memory_order=order, memory_scope=scope)
        olds[i] = getattr(ref, op)(vals[i])

    return k


@pytest.mark.parametrize("op", sorted(RMW))
def test_atomic_method_named_by_a_captured_string(dev, op):
    vals = np.array([5, 3, 12, 6], np.int32)
    k = atomic_kernel(op, kapi.MemoryOrder.RELAXED, kapi.MemoryScope.DEVICE)
    acc = dpex.asarray(np.array([9], np.int32), device=dev)
    olds = dpex.zeros(1, np.int32, device=dev)
    # one work-item: the result is deterministic
    dpex.call_kernel(k, kapi.Range(1), acc, dpex.asarray(vals[:1], device=dev), olds)
    assert olds.asnumpy()[0] == 9
    assert acc.asnumpy()[0] == RMW[op](9, 5)


def test_captured_memory_order_and_scope_reach_the_kir(dev):
    k = atomic_kernel("fetch_add", kapi.MemoryOrder.SEQ_CST, kapi.MemoryScope.WORK_GROUP)
    acc = dpex.zeros(1, np.int64, device=dev)
    vals = dpex.asarray(np.arange(64, dtype=np.int64), device=dev)
    dpex.call_kernel(k, kapi.Range(64), acc, vals, dpex.zeros(64, np.int64, device=dev))
    assert acc.asnumpy()[0] == sum(range(64))
    kir = "\n".join(k.inspect_kir().values())
    assert "atomic_rmw i64 add seq_cst work_group" in kir


def _fill_factory(dtype, host_dtype, shape):
    @dpex.kernel
    def k(item, out):
        i = item.get_id(0)
        p = kapi.PrivateArray(shape, dtype, fill_zeros=True)
        q = kapi.PrivateArray(SHAPE, host_dtype)
        for r in range(shape[0]):
            for c in range(shape[1]):
                p[r, c] = dtype(r * 10 + c) + host_dtype.type(0.5)
                q[r % 2, c % 3] = np.float32(1)
        kapi.atomic_fence(ORDER, kapi.MemoryScope.WORK_ITEM)
        out[i] = p[shape[0] - 1, shape[1] - 1] + q[1, 2]

    return k


def test_captured_dtypes_and_shape_tuples(dev):
    host = np.zeros(1, np.float64)
    k = _fill_factory(np.float32, host.dtype, (3, 4))
    out = dpex.zeros(2, np.float64, device=dev)
    dpex.call_kernel(k, kapi.Range(2), out)
    np.testing.assert_array_equal(out.asnumpy(), [23.5 + 1, 23.5 + 1])
    kir = "\n".join(k.inspect_kir().values())
    assert "private_array array(f32,2,C,private) zero 3 4" in kir
    assert "private_array array(f64,2,C,private) undef 2 3" in kir


def test_getattr_of_a_module_and_of_an_array():
    needs_cpu_device()  # NumPy arguments
    fn, attr = "sqrt", "shape"

    @dpex.kernel
    def k(item, a):
        i = item.get_id(0)
        a[i] = getattr(np, fn)(a[i]) + getattr(a, attr)[0]

    a = np.array([4.0, 9.0])
    dpex.call_kernel(k, kapi.Range(2), a)
    np.testing.assert_array_equal(a, [4.0, 5.0])


def test_getattr_name_must_be_known_at_compile_time():
    def k(item, a, names):
        getattr(a, names)

    with pytest.raises(UnsupportedConstructError, match="known at compile time") as e:
        dpex.call_kernel(dpex.kernel(k), kapi.Range(1), np.zeros(1), 1)
    assert f":{line_of(k, 'getattr')}:" in str(e.value)


def test_strings_as_values_are_still_refused():
    label = "x"

    def k(item, a):
        a[0] = len(label)

    with pytest.raises(UnsupportedConstructError, match="strings are not supported"):
        dpex.call_kernel(dpex.kernel(k), kapi.Range(1), np.zeros(1))


def test_unknown_attribute_named_by_a_string():
    op = "fetch_nand"

    def k(item, a):
        getattr(kapi.AtomicRef(a, 0), op)(a[0])

    with pytest.raises(KernelTypingError, match="fetch_nand"):
        dpex.call_kernel(dpex.kernel(k), kapi.Range(1), np.zeros(1, np.int32))


OPS = ("fetch_add", "fetch_max")


@functools.lru_cache
def branching_kernel(mode):
    @dpex.kernel
    def k(item, acc, vals):
        ref = kapi.AtomicRef(acc, 0)
        if mode == "add":  # Numba prunes the branch: the string never reaches the kernel
            ref.fetch_add(vals[item.get_id(0)])
        else:
            getattr(ref, OPS[1])(vals[item.get_id(0)])

    return k


@pytest.mark.parametrize("mode", ["add", "max"])
def test_branch_on_a_captured_string_and_names_from_a_tuple(dev, mode):
    vals = dpex.asarray(np.array([3, 9, 4], np.int64), device=dev)
    acc = dpex.zeros(1, np.int64, device=dev)
    dpex.call_kernel(branching_kernel(mode), kapi.Range(3), acc, vals)
    assert acc.asnumpy()[0] == (16 if mode == "add" else 9)
