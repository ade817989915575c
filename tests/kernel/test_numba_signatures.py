"""Numba types in @kernel and @device_func signatures, as numba-dpex documents them, and
kapi's scalar type names as signature entries and conversions."""

import numba
import numpy as np
import pytest
from kapi_testing import devices_or_skip, needs_cpu_device
from numba import float32, int32, int64, types, void
from numba.core.errors import TypingError

import kapi as dpex
from kapi import kernel_api as kapi

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


def vadd(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]


def madd(item, a, b, c):
    i, j = item.get_id(0), item.get_id(1)
    c[i, j] = a[i, j] + b[i, j]


def axpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def test_tuple_of_numba_array_types(dev):
    k = dpex.kernel((types.int32[::1], types.int32[::1], types.int32[::1]))(vadd)
    a = dpex.asarray(np.arange(8, dtype=np.int32), device=dev)
    c = dpex.zeros(8, np.int32, device=dev)
    dpex.call_kernel(k, kapi.Range(8), a, a, c)
    np.testing.assert_array_equal(c.asnumpy(), 2 * np.arange(8))
    assert list(k.inspect_kir()) == ["(item(1), " + ", ".join(["array(i32,1,C,global)"] * 3) + ")"]


def test_eager_compilation_with_the_item_type():
    sig = (dpex.ItemType(1), types.int64[::1], numba.int64[::1], types.int64[::1])
    k = dpex.kernel(sig)(vadd)
    assert len(k.overloads) == 1  # compiled at decoration, as numba-dpex
    k2 = dpex.kernel([sig, (dpex.ItemType(1),) + (types.float32[::1],) * 3])(vadd)
    assert len(k2.overloads) == 2


def test_eager_compilation_of_a_kernel_without_item():
    def scale(a):
        a[0] = a[0] * 2

    k = dpex.kernel((types.float64[::1],))(scale)
    assert [ck.index for ck in k.overloads.values()] == [None]
    needs_cpu_device()  # NumPy arguments
    a = np.ones(1)
    with pytest.warns(DeprecationWarning):
        dpex.call_kernel(k, kapi.Range(1), a)
    assert a[0] == 2 and len(k.overloads) == 1


def test_list_of_void_signatures_and_layouts(dev):
    k = dpex.kernel(
        [
            void(types.float64[:, :], types.float64[:, :], types.float64[:, :]),
            (types.Array(types.float32, 2, "F"),) * 3,
        ]
    )(madd)
    x = dpex.asarray(np.arange(12.0).reshape(3, 4), device=dev)  # C-contiguous
    out = dpex.zeros((3, 4), np.float64, device=dev)
    dpex.call_kernel(k, kapi.Range(3, 4), x, x, out)  # a C array fits the declared A layout
    np.testing.assert_array_equal(out.asnumpy(), 2 * np.arange(12.0).reshape(3, 4))
    f = dpex.asarray(np.asfortranarray(np.ones((3, 4), np.float32)), device=dev)
    dpex.call_kernel(k, kapi.Range(3, 4), f, f, f)
    assert (f.asnumpy() == 2).all()
    assert sorted(s.split(", ")[1] for s in k.inspect_kir()) == [
        "array(f32,2,F,global)",
        "array(f64,2,A,global)",
    ]


@pytest.mark.parametrize(
    "scalar", [types.int64, numba.int64, int64, dpex.int64, np.int64, "i64"], ids=str
)
def test_scalar_entries(dev, scalar):
    k = dpex.kernel((scalar, types.float64[::1], types.float64[::1]))(axpy)
    x = dpex.asarray(np.arange(4.0), device=dev)
    y = dpex.zeros(4, np.float64, device=dev)
    dpex.call_kernel(k, kapi.Range(4), 3, x, y)
    np.testing.assert_array_equal(y.asnumpy(), 3 * np.arange(4.0))


def test_call_matching_no_signature_is_numba_dpex_typing_error(dev):
    k = dpex.kernel((dpex.ItemType(1),) + (types.int64[::1],) * 3)(vadd)
    a = dpex.zeros(8, np.int32, device=dev)
    for cls in (TypingError, dpex.InvalidKernelSpecializationError):
        with pytest.raises(cls, match=r"cannot be called with \(array\(i32"):
            dpex.call_kernel(k, kapi.Range(8), a, a, a)
    with pytest.raises(dpex.MissingSpecializationError):
        dpex.call_kernel(k, kapi.Range(8), a, a, a)
    assert len(k.overloads) == 1


def test_signature_errors_name_the_type_without_contradiction():
    with pytest.raises(dpex.UnsupportedDtypeError) as e:
        dpex.asarray(np.zeros(3, "M8[s]"))
    msg = str(e.value)
    assert "datetime64" in msg or "M8" in msg
    assert "M8" not in msg.split("use one of")[1] and "datetime" not in msg.split("use one of")[1]
    with pytest.raises(dpex.InvalidKernelSpecializationError, match="NPDatetime"):
        dpex.kernel((types.NPDatetime("s"),))(lambda item, a: None)
    with pytest.raises(dpex.KernelHasReturnValueError, match="void return type"):
        dpex.kernel(int64(types.int64[::1]))(lambda item, a: None)
    with pytest.raises(dpex.UnsupportedDtypeError, match="1 to 8 dimensions"):
        dpex.kernel((types.float32[:, :, :, :, :, :, :, :, :],))(lambda item, a: None)


@dpex.device_func(int64(int64, int64))
def dsum(a, b):
    return a + b


@dpex.device_func([int32(int32), int64(int64)])
def inc(a):
    return a + 1


@dpex.device_func(int32(float32))
def trunc_to_i32(x):
    return x * 2


@dpex.kernel
def use_device_funcs(item, a, out, f):
    i = item.get_id(0)
    out[i] = dsum(a[i], a[i]) + inc(a[i])
    f[i] = trunc_to_i32(f[i])


def test_device_func_with_numba_signatures(dev):
    for dt in (np.int32, np.int64):
        a = dpex.asarray(np.arange(6, dtype=dt), device=dev)
        out = dpex.zeros(6, dt, device=dev)
        f = dpex.asarray(np.full(6, 1.3, np.float32), device=dev)
        dpex.call_kernel(use_device_funcs, kapi.Range(6), a, out, f)
        np.testing.assert_array_equal(out.asnumpy(), 3 * np.arange(6) + 1)
        # the declared int32 result truncates 2.6, as Numba casts to a declared return type
        np.testing.assert_array_equal(f.asnumpy(), np.full(6, 2.0, np.float32))
    kir = "\n".join(use_device_funcs.inspect_kir().values())
    assert "@inc" in kir and "(%a: i32)" in kir.replace("%a.0", "%a")


def test_specialized_device_func_converts_like_numba_dpex(dev):
    """numba-dpex's test_calling_specialized_device_func_wrong_signature: a float32 argument
    takes the int32 specialisation (no new one is compiled)."""

    @dpex.device_func(int32(int32))
    def increment(a):
        return a + 1

    @dpex.kernel
    def k(item, a, b):
        i = item.get_id(0)
        b[i] = increment(a[i])

    a = dpex.asarray(np.full(8, 1.5, np.float32), device=dev)
    b = dpex.zeros(8, np.float32, device=dev)
    dpex.call_kernel(k, kapi.Range(8), a, b)
    assert (b.asnumpy() == 2).all()


def test_device_func_call_matching_no_declared_array_signature():
    from pyfront import KernelTypingError

    @dpex.device_func((types.float32[::1],))
    def first(a):
        return a[0]

    @dpex.kernel
    def k(item, a, out):
        out[0] = first(a)

    with pytest.raises(KernelTypingError, match="declared with signatures"):
        dpex.call_kernel(k, kapi.Range(1), np.zeros(2, np.float64), np.zeros(1))


@dpex.kernel
def conversions(item, a, out):
    i = item.get_id(0)
    v = a[i]
    out[i, 0] = dpex.float32(v)
    out[i, 1] = dpex.int8(v)
    out[i, 2] = numba.float32(v)
    out[i, 3] = types.uint16(v)
    out[i, 4] = dpex.f8(v)


def test_kapi_and_numba_scalar_types_convert_in_kernels(dev):
    h = np.array([1.7, 300.25, -2.5])
    out = dpex.zeros((3, 5), np.float64, device=dev)
    dpex.call_kernel(conversions, kapi.Range(3), dpex.asarray(h, device=dev), out)
    got = out.asnumpy()
    np.testing.assert_array_equal(got[:, 0], h.astype(np.float32))
    np.testing.assert_array_equal(got[:, 1], [1, 300 - 256, -2])
    np.testing.assert_array_equal(got[:, 2], h.astype(np.float32))
    np.testing.assert_array_equal(got[:, 3], [1, 300, 65534])
    np.testing.assert_array_equal(got[:, 4], h)


@dpex.device_func(dpex.int64(dpex.int64, dpex.int64))
def kapi_named_sum(a, b):
    return a + b


@dpex.kernel(dpex.void(dpex.ItemType(1), dpex.int32[::1], dpex.float32[:, ::1]))
def kapi_named_kernel(item, a, m):
    i = item.get_id(0)
    p = kapi.PrivateArray(2, dpex.float32, fill_zeros=True)
    p[1] = dpex.float32(kapi_named_sum(a[i], a[i]))
    m[i, 0] = p[1] + p[0]


def test_signatures_from_kapi_scalar_names(dev):
    """numba-dpex's scalar names are Numba types: ported code builds signatures and array
    types from them (`from numba_dpex import int64` becomes `from kapi import int64`)."""
    assert len(kapi_named_kernel.overloads) == 1
    assert dpex.float32[:, ::1] == "array(f32,2,C,global)"
    assert dpex.int64[::1, :] == "array(i64,2,F,global)"
    assert dpex.float64[:] == "array(f64,1,A,global)"
    a = dpex.asarray(np.arange(4, dtype=np.int32), device=dev)
    m = dpex.zeros((4, 2), dtype=dpex.float32, device=dev)
    assert m.dtype == dpex.float32 and np.zeros(2, dtype=dpex.int8).dtype == np.int8
    dpex.call_kernel(kapi_named_kernel, kapi.Range(4), a, m)
    np.testing.assert_array_equal(m.asnumpy()[:, 0], 2 * np.arange(4))
    assert repr(dpex.int64(dpex.int64, dpex.int64)) == "kapi.int64(kapi.int64, kapi.int64)"
    assert dpex.int32(3.7) == 3 and type(dpex.int32(3.7)) is np.int32
    with pytest.raises(TypeError, match="slices"):
        dpex.float32[3]
