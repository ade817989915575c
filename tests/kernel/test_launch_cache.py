"""The launch path's caches (kapi/_ext/launch.c) never change what a launch does: each kapi
array carries a descriptor parsed once (an ArgDesc in its _kd slot), the launcher reuses the
index space it parsed when given the very same extents tuples, and the last dispatch key is
compared in place. Each test would launch with stale pointers, shapes or extents if a cache
keyed on the wrong thing."""

import gc

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi import _native
from kapi import kernel_api as kapi_api
from kapi._memory.dtypes import DTYPE_TO_KIR

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@kapi.kernel
def put_index(item, a, x):
    i = item.get_id(0)
    a[i] = i + x


@kapi.kernel
def put_index_2d(item, a):
    i = item.get_id(0)
    j = item.get_id(1)
    a[i, j] = i * 100 + j


@kapi.kernel
def group_ids(nditem, a):
    i = nditem.get_global_id(0)
    a[i] = nditem.get_group().get_group_id(0) * 1000 + nditem.get_local_id(0)


def test_same_shape_different_arrays(dev):
    arrays = [kapi.zeros(16, dtype="i8", device=dev) for _ in range(4)]
    r = kapi.Range(16)
    for k, a in enumerate(arrays):
        kapi.call_kernel(put_index, r, a, k * 10)
    for k, a in enumerate(arrays):
        np.testing.assert_array_equal(a.asnumpy(), np.arange(16) + k * 10)


def test_alternating_arrays_and_dtypes(dev):
    # the same kernel with alternating argument types: every launch must use its own
    # specialisation and its own array
    a32 = kapi.zeros(8, dtype="i4", device=dev)
    a64 = kapi.zeros(8, dtype="i8", device=dev)
    f32 = kapi.zeros(8, dtype="f4", device=dev)
    for rep in range(3):
        for k, a in enumerate((a32, a64, f32, a64, a32)):
            kapi.call_kernel(put_index, kapi.Range(8), a, rep * 100 + k)
            np.testing.assert_array_equal(a.asnumpy(), np.arange(8) + rep * 100 + k)
    assert put_index._launcher.cache_size >= 3


def test_views_of_one_buffer(dev):
    base = kapi.zeros(32, dtype="i8", device=dev)
    kapi.call_kernel(put_index, kapi.Range(32), base, 0)
    # views share the owner but not the pointer, shape or strides
    kapi.call_kernel(put_index, kapi.Range(16), base[::2], 1000)
    kapi.call_kernel(put_index, kapi.Range(15), base[17:], 2000)
    expect = np.arange(32)
    expect[::2] = np.arange(16) + 1000
    expect[17:] = np.arange(15) + 2000
    np.testing.assert_array_equal(base.asnumpy(), expect)
    # a reversed view: negative strides
    kapi.call_kernel(put_index, kapi.Range(32), base[::-1], 0)
    np.testing.assert_array_equal(base.asnumpy(), np.arange(32)[::-1])


def test_reshaped_and_transposed_views(dev):
    flat = kapi.zeros(24, dtype="i8", device=dev)
    a = flat.reshape(4, 6)
    kapi.call_kernel(put_index_2d, kapi.Range(4, 6), a)
    ref = np.arange(4)[:, None] * 100 + np.arange(6)[None, :]
    np.testing.assert_array_equal(a.asnumpy(), ref)
    b = flat.reshape(6, 4)  # the same buffer, the other shape
    kapi.call_kernel(put_index_2d, kapi.Range(6, 4), b)
    np.testing.assert_array_equal(b.asnumpy(), np.arange(6)[:, None] * 100 + np.arange(4))
    kapi.call_kernel(put_index_2d, kapi.Range(4, 6), b.T)  # strided: another specialisation
    np.testing.assert_array_equal(b.T.asnumpy(), ref)


def test_arrays_freed_and_reallocated_between_launches(dev):
    # a dead array's id (and memory) is reused by the next one: nothing may stay attached to
    # the id
    r = kapi.Range(8)
    for k in range(40):
        n = 8 if k % 2 else 12
        a = kapi.zeros(n, dtype="i8", device=dev)
        kapi.call_kernel(put_index, r, a, k)
        got = a.asnumpy()
        np.testing.assert_array_equal(got[:8], np.arange(8) + k)
        np.testing.assert_array_equal(got[8:], 0)
        del a, got
        gc.collect()


def test_index_space_changes_between_launches(dev):
    a = kapi.zeros(16, dtype="i8", device=dev)
    r8 = kapi.Range(8)
    for space, n in ((r8, 8), (kapi.Range(16), 16), (r8, 8), ((12,), 12), (5, 5), ((12,), 12)):
        a.fill(-1)
        kapi.call_kernel(put_index, space, a, 0)
        got = a.asnumpy()
        np.testing.assert_array_equal(got[:n], np.arange(n))
        np.testing.assert_array_equal(got[n:], -1)


def test_ndrange_changes_between_launches(dev):
    a = kapi.zeros(64, dtype="i8", device=dev)
    nd = kapi.NdRange(64, 16)
    for local in (16, 8, 16):
        space = nd if local == 16 else kapi.NdRange(64, local)
        kapi.call_kernel(group_ids, space, a)
        i = np.arange(64)
        np.testing.assert_array_equal(a.asnumpy(), (i // local) * 1000 + i % local)
    # the same NdRange object with its extents replaced (its slots are writable): the launch
    # must read the new ones
    nd._local_range = kapi.Range(32)
    kapi.call_kernel(group_ids, nd, a)
    i = np.arange(64)
    np.testing.assert_array_equal(a.asnumpy(), (i // 32) * 1000 + i % 32)
    # a Range launch after an NdRange one over the same global extents tuple
    kapi.call_kernel(put_index, nd._global_range, a, 0)
    np.testing.assert_array_equal(a.asnumpy(), i)


def test_bad_index_space_after_good_one(dev):
    a = kapi.zeros(8, dtype="i8", device=dev)
    kapi.call_kernel(put_index, kapi.Range(8), a, 0)
    for bad in ((0,), (8, -1), "8", (1, 2, 3, 4)):
        with pytest.raises(kapi.InvalidRangeError):
            kapi.call_kernel(put_index, bad, a, 0)
    kapi.call_kernel(put_index, kapi.Range(4), a, 1)
    np.testing.assert_array_equal(a.asnumpy()[:4], np.arange(4) + 1)


def test_numpy_and_kapi_arrays_mixed():
    if not kapi.devices("cpu"):
        pytest.skip("no CPU device")
    cpu = kapi.devices("cpu")[0]
    h1, h2 = np.zeros(8, np.int64), np.zeros(8, np.int64)
    d = kapi.zeros(8, dtype="i8", device=cpu)
    for k, a in enumerate((h1, d, h2, h1)):  # same shape, different memory each time
        kapi.call_kernel(put_index, kapi.Range(8), a, k)
    np.testing.assert_array_equal(h1, np.arange(8) + 3)
    np.testing.assert_array_equal(d.asnumpy(), np.arange(8) + 1)
    np.testing.assert_array_equal(h2, np.arange(8) + 2)


def test_array_descriptor_is_parsed_once(dev):
    a = kapi.zeros((4, 6), dtype="f4", device=dev)
    kd = a._kdesc
    assert isinstance(kd, _native.ext().ArgDesc)
    assert kd is a._kdesc  # cached in the slot
    assert kd.typekey == "array(f32,2,C,global)"
    assert a[:, ::2]._kdesc.typekey == "array(f32,2,A,global)"
    assert a.T._kdesc.typekey == "array(f32,2,F,global)"
    # equal keys of different arrays are one interned object (compared by address)
    b = kapi.zeros((2, 3), dtype="f4", device=dev)
    assert b._kdesc.typekey is kd.typekey


def test_bad_descriptors_raise():
    ArgDesc = _native.ext().ArgDesc
    with pytest.raises(TypeError):
        ArgDesc([1, 2])
    with pytest.raises(TypeError):
        ArgDesc(("A", 5, 0, None, 0, (1,), (1,)))  # the type key must be a str
    with pytest.raises(SystemError):
        ArgDesc(("A", "array(f32,9,C,global)", 0, None, 0, (1,) * 9, (1,) * 9))  # 8 at most
    with pytest.raises(SystemError):
        ArgDesc(("S", "c128", b"0123456789abcdefg"))  # 16 bytes at most (complex128)
    ArgDesc(("S", "c128", b"0123456789abcdef"))


def test_uninitialised_descriptor_in_an_array_raises(dev):
    a = kapi.zeros(4, dtype="i8", device=dev)
    ArgDesc = _native.ext().ArgDesc
    a._kd = ArgDesc.__new__(ArgDesc)
    with pytest.raises(SystemError):
        kapi.call_kernel(put_index, kapi.Range(4), a, 0)
    a._kd = None  # recomputed on the next launch
    kapi.call_kernel(put_index, kapi.Range(4), a, 0)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(4))


def test_array_subclass_takes_the_general_path(dev):
    class Sub(kapi.Array):
        __slots__ = ()

    a = kapi.zeros(8, dtype="i8", device=dev)
    s = Sub._make(
        a._owner, a._ptr, a._shape, a._strides, a._dtype, a._queue, a._usm_type, a._host_ok
    )
    kapi.call_kernel(put_index, kapi.Range(8), s, 4)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(8) + 4)


def test_async_launches_over_changing_arrays(dev):
    arrays = [kapi.zeros(16, dtype="i8", device=dev) for _ in range(3)]
    events = []
    for k, a in enumerate(arrays):
        _, ev = kapi.call_kernel_async(put_index, kapi.Range(16), (), a, k)
        events.append(ev)
    kapi.wait_all(events)
    for k, a in enumerate(arrays):
        np.testing.assert_array_equal(a.asnumpy(), np.arange(16) + k)


def test_local_accessor_after_global_arrays(dev):
    @kapi.kernel
    def stage(nditem, a, slm):
        lid = nditem.get_local_id(0)
        slm[lid] = a[nditem.get_global_id(0)]
        kapi_api.group_barrier(nditem.get_group())
        a[nditem.get_global_id(0)] = slm[nditem.get_local_range(0) - 1 - lid]

    for wg in (4, 8, 4):
        h = np.arange(32, dtype=np.float32)
        a = kapi.asarray(h, device=dev)
        kapi.call_kernel(stage, kapi.NdRange(32, wg), a, kapi_api.LocalAccessor((wg,), np.float32))
        np.testing.assert_array_equal(a.asnumpy(), h.reshape(-1, wg)[:, ::-1].ravel())


@kapi.kernel
def no_arrays(item, x):
    pass


def test_launch_without_arrays_follows_default_device(monkeypatch):
    # the queue of a launch without device arrays is remembered with KAPI_DEFAULT_DEVICE
    kapi.call_kernel(no_arrays, kapi.Range(4), 1)
    monkeypatch.setenv("KAPI_DEFAULT_DEVICE", "no-such-backend")
    with pytest.raises(kapi.DeviceNotFoundError, match="KAPI_DEFAULT_DEVICE"):
        kapi.call_kernel(no_arrays, kapi.Range(4), 1)
    with pytest.raises(kapi.DeviceNotFoundError, match="KAPI_DEFAULT_DEVICE"):
        kapi.call_kernel(no_arrays, kapi.Range(4), 2)  # an error is not remembered
    monkeypatch.setenv("KAPI_DEFAULT_DEVICE", DEVICES[-1].filter_string)
    kapi.call_kernel(no_arrays, kapi.Range(4), 1)
    monkeypatch.setenv("KAPI_DEFAULT_DEVICE", "no-such-backend:7")
    with pytest.raises(kapi.DeviceNotFoundError):
        kapi.call_kernel(no_arrays, kapi.Range(4), 1)
    monkeypatch.delenv("KAPI_DEFAULT_DEVICE")
    kapi.call_kernel(no_arrays, kapi.Range(4), 1)
    _, ev = kapi.call_kernel_async(no_arrays, kapi.Range(4), (), 3)
    ev.wait()


# -- NumPy arrays and scalars: read through their buffers, with the Python helper's keys -------


def _cpu():
    cpus = kapi.devices("cpu")
    if not cpus:
        pytest.skip("no CPU device")
    return cpus[0]


@kapi.kernel
def touch(item, a):
    pass


@kapi.kernel
def fill_scalar(item, a, x):
    a[item.get_id(0)] = x


def _numpy_cases():
    base = np.arange(4 * 6 * 5, dtype=np.float64).reshape(4, 6, 5)
    cases = [np.zeros(7, dt) for dt in list(DTYPE_TO_KIR) + [np.intc, np.longlong, np.ulonglong]]
    cases += [
        base,
        np.asfortranarray(base),
        base[:, ::2, 1:4],
        base[::-1, :, ::-2],
        base[:, 2:3, :],  # an extent of 1: still C
        base[:, :, 1],
        base.T[:, :, 0],
        np.zeros((3, 1), np.float32)[:, ::5],  # a stride beside an extent of 1
        np.zeros((0, 4), np.int32),  # empty: contiguous both ways
        np.zeros((5, 0), np.int32)[::2],
        np.broadcast_to(np.float32(1), (3, 4)),  # stride 0, read-only
        np.zeros((2, 3), np.uint8, order="F")[:, ::-1],
    ]
    return cases


def test_numpy_array_keys_match_the_python_helper():
    _cpu()
    from kapi._kernel.launch import _numpy_desc

    for a in _numpy_cases():
        kapi.call_kernel(touch, kapi.Range(1), a)
        assert touch._launcher.last_key[2] == _numpy_desc(a, 0)[1], (a.dtype, a.shape, a.strides)


def test_numpy_arrays_of_every_layout_give_right_results():
    _cpu()
    h = np.zeros((8, 12), np.int64)
    for view, shape in ((h, (8, 12)), (h.T, (12, 8)), (h[::2, 1::3], (4, 4)), (h[::-1], (8, 12))):
        view[...] = -1
        kapi.call_kernel(put_index_2d, kapi.Range(*shape), view)
        i, j = np.indices(shape)
        np.testing.assert_array_equal(view, i * 100 + j)
    f = np.zeros((5, 7), np.int64, order="F")
    kapi.call_kernel(put_index_2d, kapi.Range(5, 7), f)
    np.testing.assert_array_equal(f, np.indices((5, 7))[0] * 100 + np.indices((5, 7))[1])


@pytest.mark.parametrize(
    "x",
    [np.float32(2.5), np.float64(-1.25), np.int8(-3), np.uint64(2**64 - 1), np.longlong(-7)],
    ids=lambda x: type(x).__name__,
)
def test_numpy_scalars(x):
    cpu = _cpu()
    a = kapi.zeros(4, dtype=np.dtype(type(x)), device=cpu)
    kapi.call_kernel(fill_scalar, kapi.Range(4), a, x)
    assert fill_scalar._launcher.last_key[3] == DTYPE_TO_KIR[a.dtype]
    np.testing.assert_array_equal(a.asnumpy(), np.full(4, x))
    b = kapi.zeros(4, dtype="?", device=cpu)
    kapi.call_kernel(fill_scalar, kapi.Range(4), b, np.bool_(True))
    assert b.asnumpy().all()


def test_numpy_arguments_the_buffer_path_leaves_to_python():
    _cpu()
    from numpy.lib.stride_tricks import as_strided

    errors = [
        (np.zeros(4, ">f4"), kapi.UnsupportedDtypeError),  # not the native byte order
        (np.zeros((), np.float32), kapi.UnsupportedKernelArgumentError),
        (np.zeros((1,) * 9, np.float32), kapi.UnsupportedKernelArgumentError),  # 8 at most
        (as_strided(np.zeros(16, np.uint8), (3,), (3,)).view(np.uint8), None),
        (as_strided(np.zeros(16, np.int16), (3,), (3,)), kapi.UnsupportedKernelArgumentError),
        (np.longdouble(1), kapi.UnsupportedDtypeError),
        (np.datetime64(1, "s"), kapi.UnsupportedDtypeError),
    ]
    for x, err in errors:
        if err is None:
            kapi.call_kernel(touch, kapi.Range(1), x)  # odd strides of 1-byte items are fine
            continue
        with pytest.raises(err):
            kapi.call_kernel(touch, kapi.Range(1), x)

    class Sub(np.ndarray):
        pass

    s = np.zeros(6, np.int64).view(Sub)
    kapi.call_kernel(put_index, kapi.Range(6), s, 1)  # the Python helper: same result
    np.testing.assert_array_equal(s, np.arange(6) + 1)


@kapi.kernel
def read_strides(item, a, out):
    s = a.strides
    out[0] = s[0]
    out[1] = s[1]


def test_numpy_strides_seen_by_kernels_are_the_arrays_own():
    # NumPy's buffer export rewrites the strides of extents 0 and 1 in contiguous arrays; the
    # kernel must still see the array's own (as through the Python helper, taken by a subclass)
    _cpu()

    class Sub(np.ndarray):
        pass

    base = np.zeros((6, 8), np.float32)
    cases = [
        base,
        base[:, 2:3],
        base[2:3, :],
        base[1:2, 3:4],
        base[::4][:1],
        base[:0, ::2],
        base[::-1][:, 5:6],
        np.zeros((3, 1), np.float32)[:, ::5],
        np.asfortranarray(base)[:, :1],
    ]
    for a in cases:
        fast, slow = np.zeros(2, np.int64), np.zeros(2, np.int64)
        kapi.call_kernel(read_strides, kapi.Range(1), a, fast)
        kapi.call_kernel(read_strides, kapi.Range(1), a.view(Sub), slow)
        np.testing.assert_array_equal(fast, slow, err_msg=f"{a.shape} {a.strides}")
        assert fast.tolist() in ([s // 4 for s in a.strides], list(a.strides))
