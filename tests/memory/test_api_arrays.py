"""kapi.Array: creation, metadata, host transfers, views, copies, fills and interop, on every
device."""

import numpy as np
import pytest

import kapi

try:
    DEVICES = kapi.devices()
except kapi.KapiError as e:  # pragma: no cover - native parts missing
    pytest.skip(f"no kapi runtime: {e}", allow_module_level=True)

ids = [d.filter_string for d in DEVICES]
DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32]
DTYPES += [np.uint64, np.float32, np.float64]
USM = ["device", "shared", "host"]


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


def ref(shape, dtype):
    n = int(np.prod(shape))
    return (np.arange(n) % 7 + 1).astype(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_every_dtype(dev, dtype):
    if dtype == np.float64 and not dev.has_aspect_fp64:
        pytest.skip("no fp64")
    h = ref((3, 5), dtype)
    a = kapi.asarray(h, device=dev)
    assert a.dtype == np.dtype(dtype) and a.shape == (3, 5) and a.ndim == 2
    assert a.strides == h.strides and a.size == 15 and a.itemsize == h.itemsize
    assert a.nbytes == h.nbytes and a.device is dev
    np.testing.assert_array_equal(a.asnumpy(), h)
    if a._host_ok:  # host memory: a zero-copy view
        np.testing.assert_array_equal(np.asarray(a), h)
    else:  # device memory is never converted implicitly
        with pytest.raises(TypeError, match="asnumpy"):
            np.asarray(a)


@pytest.mark.parametrize("usm", USM)
def test_creation_functions(dev, usm):
    f = np.float32
    e = kapi.empty((2, 3), dtype=f, device=dev, usm_type=usm)
    assert e.usm_type == usm and e.shape == (2, 3)
    np.testing.assert_array_equal(kapi.zeros(5, dtype=f, device=dev, usm_type=usm).asnumpy(), 0)
    np.testing.assert_array_equal(kapi.ones((2, 2), dtype="i4", device=dev).asnumpy(), 1)
    np.testing.assert_array_equal(kapi.full(3, 7, dtype="u2", device=dev).asnumpy(), [7, 7, 7])
    np.testing.assert_array_equal(kapi.arange(2, 11, 3, device=dev).asnumpy(), [2, 5, 8])
    like = kapi.ones_like(e)
    assert like.device is dev and like.dtype == e.dtype and like.usm_type == usm
    np.testing.assert_array_equal(kapi.zeros_like(e).asnumpy(), 0)
    np.testing.assert_array_equal(kapi.full_like(e, 2.5).asnumpy(), 2.5)
    assert kapi.empty_like(e, dtype="i8").dtype == np.int64


def test_default_dtypes(dev):
    a = kapi.empty(3, device=dev)
    assert a.dtype == (np.float64 if dev.has_aspect_fp64 else np.float32)
    assert kapi.full(2, 3, device=dev).dtype == np.int64
    assert kapi.full(2, True, device=dev).dtype == np.bool_
    assert kapi.arange(4, device=dev).dtype == np.int64


def test_fortran_order(dev):
    a = kapi.asarray(np.asfortranarray(ref((3, 4), np.float32)), device=dev)
    assert a.layout == "F" and a.strides == (4, 12)
    np.testing.assert_array_equal(a.asnumpy(), ref((3, 4), np.float32))
    b = kapi.zeros((3, 4), dtype="f4", order="F", device=dev)
    assert b.flags["F_CONTIGUOUS"] and not b.flags["C_CONTIGUOUS"]


def test_basic_slicing_views_share_memory(dev):
    h = ref((6, 8), np.int32)
    a = kapi.asarray(h, device=dev)
    for key in [
        (slice(1, 5), slice(None, None, 2)),
        (slice(None, None, -1),),
        (slice(None), slice(None, None, -3)),
        (2,),
        (Ellipsis, 3),
        (None, slice(1, 3)),
        (-1, slice(-3, None)),
    ]:
        v = a[key]
        assert isinstance(v, kapi.Array) and v.base is a.base
        np.testing.assert_array_equal(v.asnumpy(), h[key])
        assert v.shape == h[key].shape and v.strides == h[key].strides
    # one element is a 0-d array on the device (the array API's rule, as dpnp and CuPy)
    e = a[2, 3]
    assert isinstance(e, kapi.Array) and e.shape == () and e.dtype == np.int32
    assert int(e) == h[2, 3] and e == h[2, 3]
    a[::2, 1] = -5
    h[::2, 1] = -5
    np.testing.assert_array_equal(a.asnumpy(), h)
    a[1:3][:, ::-1] = np.arange(8)
    h[1:3][:, ::-1] = np.arange(8)
    np.testing.assert_array_equal(a.asnumpy(), h)


def test_views_keep_memory_alive(dev):
    a = kapi.arange(100, dtype="i8", device=dev)
    v = a[10:20]
    del a
    np.testing.assert_array_equal(v.asnumpy(), np.arange(10, 20))


def test_advanced_indexing_runs_on_the_device(dev):
    h = np.arange(5.0)
    a = kapi.asarray(h, device=dev)
    for key in ([0, 3, -1], np.array([4, 4, 0])):
        r = a[key]
        assert isinstance(r, kapi.Array) and r.device == a.device
        np.testing.assert_array_equal(r.asnumpy(), h[key])
    np.testing.assert_array_equal(a[a > 2].asnumpy(), h[h > 2])
    with pytest.raises(IndexError):
        a[10]
    with pytest.raises(IndexError):
        a[[0, 7]]
    with pytest.raises(IndexError, match="integer"):
        a[[0.5]]


def test_copy_fill_astype_transpose_reshape(dev):
    h = ref((4, 6), np.float32)
    a = kapi.asarray(h, device=dev)
    c = a[:, ::2].copy()
    assert c.layout == "C" and c.base is not a.base
    np.testing.assert_array_equal(c.asnumpy(), h[:, ::2])
    a[1:3, 1:3].fill(9)
    h[1:3, 1:3] = 9
    np.testing.assert_array_equal(a.asnumpy(), h)
    np.testing.assert_array_equal(a.astype("i4").asnumpy(), h.astype("i4"))
    np.testing.assert_array_equal(a.T.asnumpy(), h.T)
    np.testing.assert_array_equal(a.reshape(3, 8).asnumpy(), h.reshape(3, 8))
    # a reshape that strides cannot express copies on the device, as NumPy's does
    np.testing.assert_array_equal(a.T.reshape(24).asnumpy(), h.T.reshape(24))
    with pytest.raises(ValueError):
        a.T.reshape(24, copy=False)


def test_to_device_and_asarray_of_kapi_array(dev):
    a = kapi.arange(6, device=dev)
    assert kapi.asarray(a) is a
    assert a.to_device(dev) is a
    for other in DEVICES:
        b = a.to_device(other)
        assert b.device is other
        np.testing.assert_array_equal(b.asnumpy(), np.arange(6))
    c = kapi.asarray(a, copy=True)
    assert c.base is not a.base
    assert kapi.asarray(a, dtype="f4").dtype == np.float32


def test_asarray_sources(dev):
    np.testing.assert_array_equal(
        kapi.asarray([[1, 2], [3, 4]], device=dev).asnumpy(), [[1, 2], [3, 4]]
    )
    np.testing.assert_array_equal(
        kapi.asarray(bytearray(b"\x01\x02"), dtype="u1", device=dev).asnumpy(), [1, 2]
    )
    m = memoryview(np.arange(4, dtype="i2"))
    np.testing.assert_array_equal(kapi.asarray(m, device=dev).asnumpy(), [0, 1, 2, 3])
    with pytest.raises(kapi.UnsupportedDtypeError, match="datetime64"):
        kapi.asarray(np.zeros(3, "M8[s]"), device=dev)
    with pytest.raises(kapi.UnsupportedDtypeError):
        kapi.empty(3, dtype="f16", device=dev)  # float128


def test_usm_interface_round_trip(dev):
    a = kapi.arange(10, dtype="i4", device=dev)[::2]
    iface = a.__sycl_usm_array_interface__
    assert iface["shape"] == (5,) and iface["strides"] == (2,) and iface["typestr"] == "<i4"

    class Producer:
        __sycl_usm_array_interface__ = iface

    b = kapi.asarray(Producer())
    assert b.data_ptr == a.data_ptr and b.device is dev
    np.testing.assert_array_equal(b.asnumpy(), np.arange(0, 10, 2))


def test_dlpack_export_to_numpy(dev):
    if dev.dlpack_device_type != 1:
        pytest.skip("NumPy imports only kDLCPU memory")
    a = kapi.asarray(ref((3, 4), np.float64), device=dev)
    assert a.__dlpack_device__() == (1, 0)
    n = np.from_dlpack(a[:, ::-2])
    np.testing.assert_array_equal(n, ref((3, 4), np.float64)[:, ::-2])
    a[0, 3] = 123  # shares memory
    assert n[0, 0] == 123
    n[0, 0] = 7  # a versioned (DLPack 1.0) capsule: NumPy's array is writable
    assert a[0, 3] == 7
    assert "dltensor_versioned" in repr(a.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" not in repr(a.__dlpack__())
    del a
    assert n[0, 0] == 7  # the capsule kept the buffer alive


def test_dlpack_import_from_numpy():
    cpu = kapi.devices("cpu")
    if not cpu:
        pytest.skip("no CPU device")
    h = ref((2, 5), np.int64)
    a = kapi.from_dlpack(h)
    assert a.device is cpu[0] and a.data_ptr == h.ctypes.data
    np.testing.assert_array_equal(a.asnumpy(), h)
    a[0, 0] = 77
    assert h[0, 0] == 77
    b = kapi.from_dlpack(h.T)
    np.testing.assert_array_equal(b.asnumpy(), h.T)
    for cap in (h.__dlpack__(), h.__dlpack__(max_version=(1, 0))):
        kapi.from_dlpack(cap)
        with pytest.raises(TypeError, match="consumed"):
            kapi.from_dlpack(cap)


def test_repr_and_len(dev):
    a = kapi.arange(3, dtype="i4", device=dev)
    assert "kapi.Array([0, 1, 2]" in repr(a) and dev.filter_string in repr(a)
    assert len(a) == 3 and list(a) == [0, 1, 2]


def test_arrays_cannot_be_constructed_directly():
    with pytest.raises(TypeError, match="kapi.empty"):
        kapi.Array((3,))


def test_scalar_conversions(dev):
    a = kapi.full(1, 3, dtype="i4", device=dev)
    assert int(a) == 3 and float(a) == 3.0 and bool(a)
    with pytest.raises(TypeError):
        float(kapi.zeros(2, device=dev))


def test_array_obj_is_the_array_itself(dev):
    # dpnp.ndarray's _array_obj (its usm_ndarray): kapi's array is both
    a = kapi.arange(4, device=dev)
    assert a._array_obj is a
    assert kapi.zeros_like(a[1:]._array_obj).shape == (3,)
