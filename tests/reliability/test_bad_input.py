"""Wrong input to the public API, on every device: each case raises a kapi error (or the
numba-dpex-compatible class) whose message says what to do, and the next correct launch on
the same device still works. Issue 12, item 6."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi import kernel_api as kapi_api

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@kapi.kernel
def copy1(item, a, b):
    i = item.get_id(0)
    b[i] = a[i]


@kapi.kernel
def fill(item, a, x):
    a[item.get_id(0)] = x


def check_still_works(dev):
    """A correct launch after the failure: the failure left no broken state behind."""
    a = kapi.asarray(np.arange(64, dtype=np.int32), device=dev)
    b = kapi.zeros(64, dtype=np.int32, device=dev)
    kapi.call_kernel(copy1, kapi.Range(64), a, b)
    np.testing.assert_array_equal(b.asnumpy(), np.arange(64, dtype=np.int32))


def raises(cls, fn, *words):
    """Runs fn, checks it raises `cls` (a KapiError unless said otherwise) and that the
    message holds every one of `words` (the advice it gives)."""
    with pytest.raises(cls) as ei:
        fn()
    msg = str(ei.value)
    for w in words:
        assert w in msg, f"{w!r} not in the message {msg!r}"
    return ei.value


def arrays(dev, n=64, dtype=np.int32):
    return kapi.zeros(n, dtype=dtype, device=dev), kapi.zeros(n, dtype=dtype, device=dev)


# --- the kernel's arguments ----------------------------------------------------------------


def test_too_few_arguments(dev):
    a, _ = arrays(dev)
    e = raises(
        kapi.InvalidKernelSpecializationError,
        lambda: kapi.call_kernel(copy1, kapi.Range(64), a),
        "copy1",
    )
    assert isinstance(e, kapi.KapiError)
    check_still_works(dev)


def test_too_many_arguments(dev):
    a, b = arrays(dev)
    raises(
        kapi.InvalidKernelSpecializationError,
        lambda: kapi.call_kernel(copy1, kapi.Range(64), a, b, a, b),
        "copy1",
    )
    check_still_works(dev)


@pytest.mark.parametrize(
    "bad",
    [None, "text", b"bytes", {"a": 1}, object(), slice(3)],
    ids=["None", "str", "bytes", "dict", "object", "slice"],
)
def test_argument_of_unsupported_type(dev, bad):
    a, _ = arrays(dev)
    e = raises(
        kapi.UnsupportedKernelArgumentError,
        lambda: kapi.call_kernel(copy1, kapi.Range(64), a, bad),
        "argument",
    )
    assert isinstance(e, TypeError)  # numba-dpex-compatible: a TypeError subclass
    check_still_works(dev)


def test_python_list_as_array(dev):
    a, _ = arrays(dev)
    raises(
        kapi.UnsupportedKernelArgumentError,
        lambda: kapi.call_kernel(copy1, kapi.Range(4), a, [0, 0, 0, 0]),
        "list",
        "kapi.asarray",
    )
    check_still_works(dev)


def test_integer_too_large_for_int64(dev):
    a, _ = arrays(dev)
    raises(
        kapi.UnsupportedKernelArgumentError,
        lambda: kapi.call_kernel(fill, kapi.Range(64), a, 2**70),
        "int64",
    )
    check_still_works(dev)


@pytest.mark.parametrize("dtype", ["longdouble", "clongdouble", "datetime64[s]", "U4", "V8"])
def test_unsupported_dtype_array(dev, dtype):
    a, _ = arrays(dev)
    host = np.zeros(64, dtype=dtype)
    launch = (lambda: kapi.call_kernel(copy1, kapi.Range(64), host, a)) if dev.is_cpu else None
    if launch is not None:
        raises((kapi.UnsupportedDtypeError, kapi.UnsupportedKernelArgumentError), launch)
    raises(kapi.UnsupportedDtypeError, lambda: kapi.asarray(host, device=dev), "dtype")
    raises(kapi.UnsupportedDtypeError, lambda: kapi.empty(4, dtype=dtype, device=dev), "dtype")
    check_still_works(dev)


def test_object_array(dev):
    host = np.array([1, "a", None, 2.0], dtype=object)
    raises(kapi.UnsupportedDtypeError, lambda: kapi.asarray(host, device=dev), "dtype object")
    if dev.is_cpu:
        a = kapi.zeros(4, dtype=np.int32, device=dev)
        raises(
            (kapi.UnsupportedDtypeError, kapi.UnsupportedKernelArgumentError),
            lambda: kapi.call_kernel(copy1, kapi.Range(4), host, a),
            "object",
        )
    check_still_works(dev)


def test_scalar_of_unsupported_dtype(dev):
    a = kapi.zeros(64, dtype=np.float32, device=dev)
    raises(
        (kapi.UnsupportedDtypeError, kapi.UnsupportedKernelArgumentError),
        lambda: kapi.call_kernel(fill, kapi.Range(64), a, np.longdouble(1)),
        "float128",
    )
    check_still_works(dev)


@pytest.mark.parametrize("ndim", [0, 9])  # kernels take arrays of 1 to 8 dimensions
def test_array_rank_out_of_range(dev, ndim):
    a = kapi.zeros((2,) * ndim, dtype=np.int32, device=dev)
    b = kapi.zeros(64, dtype=np.int32, device=dev)
    raises(
        (kapi.UnsupportedKernelArgumentError, kapi.KernelCompileError),
        lambda: kapi.call_kernel(copy1, kapi.Range(1), a, b),
        "dimension",
    )
    check_still_works(dev)


def test_read_only_numpy_output(dev):
    if not dev.is_cpu:
        pytest.skip("NumPy arrays are kernel arguments on the CPU device only")
    src = np.arange(64, dtype=np.int32)
    dst = np.zeros(64, dtype=np.int32)
    dst.flags.writeable = False
    raises(
        kapi.UnsupportedKernelArgumentError,
        lambda: kapi.call_kernel(copy1, kapi.Range(64), src, dst),
        "read-only",
        "copy",
    )
    assert not dst.any()  # nothing was written through the read-only view
    ro_src = src.copy()
    ro_src.flags.writeable = False  # read-only inputs stay fine
    out = np.zeros(64, dtype=np.int32)
    kapi.call_kernel(copy1, kapi.Range(64), ro_src, out)
    np.testing.assert_array_equal(out, src)
    check_still_works(dev)


@kapi.device_func
def store_one(a, i):
    a[i] = 1


@kapi.kernel
def via_device_func(item, a):
    store_one(a, item.get_id(0))


@kapi.kernel
def atomic_count(item, a, out):
    kapi_api.AtomicRef(out, 0).fetch_add(a[item.get_id(0)])


def test_read_only_numpy_written_by_atomic_or_device_func(dev):
    if not dev.is_cpu:
        pytest.skip("NumPy arrays are kernel arguments on the CPU device only")
    ro = np.zeros(8, dtype=np.int32)
    ro.flags.writeable = False
    raises(
        kapi.UnsupportedKernelArgumentError,
        lambda: kapi.call_kernel(via_device_func, kapi.Range(8), ro),
        "argument 0",
        "read-only",
    )
    raises(
        kapi.UnsupportedKernelArgumentError,
        lambda: kapi.call_kernel(atomic_count, kapi.Range(8), ro, ro),
        "argument 1",
    )
    out = np.zeros(1, dtype=np.int32)
    ones = np.ones(8, dtype=np.int32)
    ones.flags.writeable = False
    for _ in range(2):  # the second launch takes the dispatch cache's entry
        kapi.call_kernel(atomic_count, kapi.Range(8), ones, out)
    assert out[0] == 16
    assert not ro.any()
    check_still_works(dev)


def test_numpy_array_on_non_cpu_device(dev):
    if dev.is_cpu:
        pytest.skip("NumPy arrays are accepted on the CPU device")
    a = kapi.zeros(64, dtype=np.int32, device=dev)
    raises(
        (kapi.UnsupportedKernelArgumentError, kapi.ExecutionQueueInferenceError),
        lambda: kapi.call_kernel(copy1, kapi.Range(64), np.zeros(64, np.int32), a),
        "kapi.asarray",
    )
    check_still_works(dev)


def test_arrays_on_two_devices():
    if len(DEVICES) < 2:
        pytest.skip("needs two devices")
    a = kapi.zeros(8, dtype=np.int32, device=DEVICES[0])
    b = kapi.zeros(8, dtype=np.int32, device=DEVICES[1])
    raises(
        kapi.ExecutionQueueInferenceError,
        lambda: kapi.call_kernel(copy1, kapi.Range(8), a, b),
        "to_device",
    )
    for d in DEVICES[:2]:
        check_still_works(d)


# --- the kernel object itself --------------------------------------------------------------


def test_kernel_called_like_a_function(dev):
    a, b = arrays(dev)
    raises(kapi.KernelCallError, lambda: copy1(a, b), "call_kernel")
    raises(kapi.KernelCallError, lambda: copy1[kapi.Range(64)](a, b), "call_kernel")
    check_still_works(dev)


def test_not_a_kernel(dev):
    a, b = arrays(dev)
    raises(TypeError, lambda: kapi.call_kernel(len, kapi.Range(64), a, b), "kernel")
    raises(TypeError, lambda: kapi.call_kernel(None, kapi.Range(64), a, b), "kernel")
    check_still_works(dev)


def test_kernel_with_return_value(dev):
    @kapi.kernel
    def returns(item, a):
        a[item.get_id(0)] = 1
        return 3

    a, _ = arrays(dev)
    raises(
        kapi.KernelHasReturnValueError,
        lambda: kapi.call_kernel(returns, kapi.Range(64), a),
        "return",
    )
    check_still_works(dev)


def test_kernel_not_compilable(dev):
    @kapi.kernel
    def uses_a_dict(item, a):
        d = {}
        a[item.get_id(0)] = len(d)

    a, _ = arrays(dev)
    e = raises(
        kapi.KapiError,
        lambda: kapi.call_kernel(uses_a_dict, kapi.Range(64), a),
        "test_bad_input.py:",
    )
    assert "Traceback" not in str(e)
    check_still_works(dev)


# --- index spaces --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, -(2**40), 2.5, "8", None, True])
def test_range_extent_invalid(dev, bad):
    raises(kapi.InvalidRangeError, lambda: kapi.Range(bad), "positive integer")
    raises(
        kapi.InvalidRangeError, lambda: kapi.Range(4, bad), "positive integer"
    ) if bad is not None else None
    check_still_works(dev)


@pytest.mark.parametrize("space", [0, -3, (4, 0), (), (1, 2, 3, 4), "x", 2.0, [4]])
def test_index_space_invalid_at_launch(dev, space):
    a, b = arrays(dev)
    raises(kapi.InvalidRangeError, lambda: kapi.call_kernel(copy1, space, a, b), "Range")
    check_still_works(dev)


def test_range_too_large_for_the_device(dev):
    """2**40 work-items (and 2**62): the launch either refuses at once with advice or would
    run for hours; it must refuse."""
    a, b = arrays(dev)
    for n in (2**40, 2**62, (2**21, 2**21), (2**14, 2**14, 2**14)):
        raises(
            kapi.InvalidRangeError,
            lambda n=n: kapi.call_kernel(
                copy1, kapi.Range(*(n if isinstance(n, tuple) else (n,))), a, b
            ),
            "too large",
        )
    check_still_works(dev)


def test_ndrange_not_divisible(dev):
    raises(kapi.UnsupportedGroupWorkItemSizeError, lambda: kapi.NdRange((10,), (4,)), "multiple")
    raises(
        kapi.UnsupportedGroupWorkItemSizeError, lambda: kapi.NdRange((8, 10), (2, 3)), "dimension 1"
    )
    raises(kapi.UnmatchedNumberOfRangeDimsError, lambda: kapi.NdRange((8, 8), (8,)), "same number")
    check_still_works(dev)


def test_local_size_over_device_maximum(dev):
    @kapi.kernel
    def nd_copy(item, a, b):
        i = item.get_global_id(0)
        b[i] = a[i]

    big = dev.max_work_group_size * 2
    a, b = arrays(dev, big)
    raises(
        (kapi.UnsupportedGroupWorkItemSizeError, kapi.DeviceError),
        lambda: kapi.call_kernel(nd_copy, kapi.NdRange((big,), (big,)), a, b),
        str(dev.max_work_group_size),
        "smaller local size",
    )
    kapi.call_kernel(nd_copy, kapi.NdRange((big,), (big // 2,)), a, b)  # half fits
    check_still_works(dev)


# --- allocations ---------------------------------------------------------------------------


@pytest.mark.parametrize("nbytes", [2**50, 2**62])
def test_out_of_memory_allocation(dev, nbytes):
    e = raises(
        (kapi.OutOfDeviceMemoryError, MemoryError),
        lambda: kapi.empty(nbytes, dtype=np.uint8, device=dev),
    )
    assert isinstance(e, MemoryError)  # catchable as Python's MemoryError too
    check_still_works(dev)


def test_allocation_size_overflows(dev):
    raises(
        (ValueError, kapi.KapiError),
        lambda: kapi.empty((2**40, 2**40), dtype=np.float64, device=dev),
    )
    raises(ValueError, lambda: kapi.empty(-1, dtype=np.int32, device=dev), "non-negative")
    check_still_works(dev)


def test_unknown_device_filter(dev):
    raises(kapi.DeviceNotFoundError, lambda: kapi.zeros(4, device="nosuchbackend:gpu:7"))
    check_still_works(dev)
