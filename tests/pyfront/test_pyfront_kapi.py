"""pyfront: the kapi kernel API (index space, barriers, atomics, local/private memory) and
device functions."""

import re

import numpy as np
import pytest

import pyfront
from kapi.kernel_api import (
    AddressSpace,
    AtomicRef,
    MemoryOrder,
    MemoryScope,
    PrivateArray,
    atomic_fence,
    group_barrier,
)
from pyfront.kircheck import check


def kir(fn, args, index=("item", 1)):
    m = pyfront.compile_kernel(fn, args, index=index)
    check(m.text)
    return m.text


def find(text, pattern):
    stripped = (ln.split("#")[0].strip() for ln in text.splitlines())
    return [ln for ln in stripped if re.search(pattern, ln)]


def device(fn):
    fn.__kapi_device_func__ = True
    return fn


def test_item_queries_and_sycl_linear_id():
    def k(item, out):
        out[0] = item.get_id(0) + item.get_id(2) + item.get_range(1)
        out[1] = item.get_linear_id()
        out[2] = item.dimensions

    t = kir(k, ["array(i64,1,C,global)"], index=("item", 3))
    assert find(t, r"= global_id i64 2$") and find(t, r"= global_range i64 1$")
    # row-major: ((id0*r1 + id1)*r2 + id2)
    assert len(find(t, r"= global_range i64 [12]$")) >= 3
    assert find(t, r"= const i64 3$")


def test_item_runtime_dimension_uses_select():
    def k(item, d, out):
        out[0] = item.get_id(d)

    t = kir(k, ["i64", "array(i64,1,C,global)"], index=("item", 2))
    assert find(t, r"= select i64 ")


def test_nditem_and_group_queries():
    def k(nd, out):
        g = nd.get_group()
        out[0] = nd.get_global_id(0) + nd.get_local_id(1) + nd.get_global_range(0)
        out[1] = nd.get_local_range(1) + g.get_group_id(0) + g.get_group_range(1)
        out[2] = nd.get_global_linear_id() + nd.get_local_linear_id() + g.get_group_linear_id()
        out[3] = g.get_local_range(0)
        if g.leader:
            out[4] = 1

    t = kir(k, ["array(i64,1,C,global)"], index=("nditem", 2))
    for op in ("global_id", "local_id", "global_range", "local_range", "group_id", "group_range"):
        assert find(t, rf"= {op} i64 [01]$"), op


def test_barrier_and_fence():
    def k(nd, a):
        group_barrier(nd.get_group())
        group_barrier(nd.get_group(), MemoryScope.DEVICE)
        atomic_fence(MemoryOrder.SEQ_CST, MemoryScope.WORK_GROUP)
        a[0] = 0

    t = kir(k, ["array(f32,1,C,global)"], index=("nditem", 1))
    assert find(t, r"^barrier work_group$") and find(t, r"^barrier device$")
    assert find(t, r"^fence seq_cst work_group$")


def test_atomic_ref_operations():
    def k(item, a, e, v):
        r = AtomicRef(a, 0)
        r.fetch_add(v)
        r.fetch_sub(v)
        r.fetch_min(v)
        r.fetch_max(v)
        r.fetch_and(v)
        r.fetch_or(v)
        r.fetch_xor(v)
        r.exchange(v)
        r.store(r.load())
        r2 = AtomicRef(a, 1, memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.WORK_GROUP)
        ok = r2.compare_exchange(e, v)
        if ok:
            a[2] = v

    t = kir(k, ["array(i32,1,C,global)", "array(i32,1,C,global)", "i32"])
    for op in ("add", "sub", "min", "max", "and", "or", "xor", "xchg"):
        assert find(t, rf"= atomic_rmw i32 {op} relaxed device %a %v %\d+$"), op
    assert find(t, r"= atomic_load i32 relaxed device %a ")
    assert find(t, r"^atomic_store relaxed device %a ")
    assert find(t, r"= atomic_cmpxchg i32 acq_rel work_group %a %\d+ %v %\d+$")
    assert find(t, r"^astore %e ")  # the value found goes back into expected


def test_atomic_ref_float_multi_dim_and_local():
    def k(nd, a, loc):
        i = nd.get_local_id(0)
        AtomicRef(a, (i, 1)).fetch_add(a.dtype.type(1))
        AtomicRef(loc, i, address_space=AddressSpace.LOCAL).fetch_max(np.float64(2))

    t = kir(k, ["array(f32,2,C,global)", "array(f64,1,C,local)"], index=("nditem", 1))
    assert "%loc: array(f64,1,C,local)" in t
    assert find(t, r"= atomic_rmw f32 add relaxed device %a %\d+ %\d+ %\d+$")
    assert find(t, r"= atomic_rmw f64 max relaxed device %loc ")


def _get2(t, i, j):
    return t[i, j]


_get2.__kapi_device_func__ = True


def test_static_local_shape():
    # a LocalAccessor specialised on its shape: the type names the extents and passes them on
    # to device functions; `shape` reads the `dim` that the compiler folds to the constant
    def k(nd, a, t):
        i = nd.get_local_id(0)
        t[i, 0] = a[i]
        a[i] = _get2(t, i, 0) + t.shape[1]

    t = kir(k, ["array(f32,1,C,global)", "array(f32,2,C,local,8,4)"], index=("nditem", 1))
    assert "%t: array(f32,2,C,local,8,4)" in t
    assert find(t, r"^func @\S+\(%t: array\(f32,2,C,local,8,4\)")
    assert find(t, r"= dim i64 %t 1$")


@pytest.mark.parametrize(
    "ty, msg",
    [
        ("array(f32,2,C,local,8)", "rank 2 needs 2 static extents"),
        ("array(f32,1,C,global,8)", "only local arrays"),
        ("array(f32,1,C,local,0)", "static array extents must be"),
    ],
)
def test_static_local_shape_errors(ty, msg):
    def k(nd, t):
        t[0] = 1

    with pytest.raises(pyfront.KernelTypingError, match=msg):
        pyfront.compile_kernel(k, [ty], index=("nditem", 1))


def test_private_array():
    def k(item, out):
        p = PrivateArray((2, 3), np.float32, fill_zeros=True)
        q = PrivateArray(4, out.dtype)
        for i in range(4):
            q[i] = i
        p[1, 2] = q[3]
        out[0] = p[1, 2]

    t = kir(k, ["array(i32,1,C,global)"])
    assert find(t, r"= private_array array\(f32,2,C,private\) zero 2 3$")
    assert find(t, r"= private_array array\(i32,1,C,private\) undef 4$")


SHAPE = (8,)


def test_private_array_shape_from_a_global_constant():
    def k(item, out):
        p = PrivateArray(SHAPE, np.int64)
        p[0] = 1
        out[0] = p[0]

    t = kir(k, ["array(i64,1,C,global)"])
    assert find(t, r"= private_array array\(i64,1,C,private\) undef 8$")


@device
def _dev_axpy(a, x, i):
    return a * x[i]


@device
def _dev_outer(a, x, i):
    return _dev_axpy(a, x, i) + 1


def test_device_functions_typed_per_call_and_nested():
    def k(item, a, x, n):
        i = item.get_id(0)
        x[i] = _dev_outer(a, x, i)
        x[0] = _dev_axpy(n, x, 0)  # a second specialisation (i64 scale)

    t = kir(k, ["f32", "array(f32,1,C,global)", "i64"])
    funcs = re.findall(r"^func @(\S+)\((.*)\) -> (\S+)", t, re.M)
    sigs = {(f[0].split(".")[0], f[1], f[2]) for f in funcs}
    assert len(funcs) == 3
    assert ("_dev_axpy", "%a: f32, %x: array(f32,1,C,global), %i: i64", "f32") in sigs
    assert ("_dev_axpy", "%a: i64, %x: array(f32,1,C,global), %i: i64", "f64") in sigs
    # f32 + 1 is f64 in Numba, so the outer function returns f64
    assert ("_dev_outer", "%a: f32, %x: array(f32,1,C,global), %i: i64", "f64") in sigs
    assert find(t, r"= call f64 @_dev_outer %a %x %\d+$")
    assert find(t, r"= call f64 @_dev_axpy(\.1)? %n %x %\d+$")


class _Wrapper:
    __kapi_device_func__ = True

    def __init__(self, f):
        self.py_func = f


def _plain_store(x, v):
    x[0] = v


_store = _Wrapper(_plain_store)


def test_device_function_wrapper_object_and_void_result():
    def k(item, x):
        _store(x, 3.0)

    t = kir(k, ["array(f64,1,C,global)"])
    assert find(t, r"^call void @_plain_store %x %\d+$")
    assert re.search(r"^func @_plain_store\(.*\) -> void", t, re.M)


def test_device_function_with_item_parameter():
    @device
    def gid(it):
        return it.get_id(0)

    def k(item, x):
        x[gid(item)] = 1

    t = kir(k, ["array(i64,1,C,global)"])
    assert re.search(r"^func @gid\(\) -> i64", t, re.M)
    assert find(t, r"= call i64 @gid$")


def test_atomic_value_type_must_match_dtype():
    def k(item, a):
        AtomicRef(a, 0).fetch_add(1)  # a Python int is int64, the array holds int32

    with pytest.raises(pyfront.KernelTypingError) as ei:
        kir(k, ["array(i32,1,C,global)"])
    assert "int32" in str(ei.value) and ":" in str(ei.value)


def test_atomic_bitwise_on_float_rejected():
    def k(item, a):
        AtomicRef(a, 0).fetch_and(a[0])

    with pytest.raises(pyfront.KernelTypingError) as ei:
        kir(k, ["array(f32,1,C,global)"])
    assert "integer" in str(ei.value)


def test_atomic_on_unsupported_dtype_rejected():
    def k(item, a):
        AtomicRef(a, 0).fetch_add(a[0])

    with pytest.raises(pyfront.KernelTypingError) as ei:
        kir(k, ["array(i16,1,C,global)"])
    assert "AtomicRef does not support int16" in str(ei.value)


def test_atomic_address_space_mismatch_rejected():
    def k(item, a):
        AtomicRef(a, 0, address_space=AddressSpace.LOCAL).fetch_add(a[0])

    with pytest.raises(pyfront.KernelTypingError) as ei:
        kir(k, ["array(f32,1,C,global)"])
    assert "address space" in str(ei.value)


def test_private_array_zeroed_where_created_inside_a_loop():
    def k(item, out, n):
        for j in range(n):
            p = PrivateArray((2, 2), np.float64, fill_zeros=True)
            p[j % 2, 0] += 1.0
            out[j] = p[0, 0]

    t = kir(k, ["array(f64,1,C,global)", "i64"])
    assert find(t, r"= private_array array\(f64,2,C,private\) undef 2 2$")
    assert re.search(r"^\^zero\.\d+\.body:", t, re.M)
    assert find(t, r"^astore %\d+ %\d+ %\d+ %\d+$")
    assert find(t, r"= const i64 4$")  # 2*2 elements


@device
def _dev_sum2(t):
    return t[0] + t[1]


@device
def _dev_pair(a):
    return a, a


def test_device_function_tuple_parameter_is_scalarised():
    def k(item, x, flag):
        x[0] = _dev_sum2((x[1], 2.0)) if flag else 0.0

    t = kir(k, ["array(f32,1,C,global)", "bool"])
    assert "%flag: bool" in t
    assert re.search(r"^func @_dev_sum2\(%t\.0: f32, %t\.1: f64\) -> f64", t, re.M)
    assert find(t, r"= call f64 @_dev_sum2 %\d+ %\d+$")


def test_device_function_returning_a_tuple_uses_private_out_arrays():
    # numba-dpex device functions may return tuples; KIR functions return one scalar, so the
    # items come back through one-element private arrays passed after the arguments
    def k(item, x):
        a, b = _dev_pair(x[0])
        x[0] = a + b

    t = kir(k, ["array(f32,1,C,global)"])
    assert len(find(t, r"private_array array\(f32,1,C,private\) undef 1")) == 2
    assert find(t, r"^call void @_dev_pair %\d+ %\d+ %\d+$")
    assert len(find(t, r"astore %ret\.[01] ")) == 2
