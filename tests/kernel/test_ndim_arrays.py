"""Kernel arguments of more than 3 dimensions (up to 8, the compiler's KIR_MAX_NDIM): indexing,
`.shape` and strided views of them, on every device; 9 dimensions are refused by name."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@kapi.kernel
def scale4(item, a, out):
    i = item.get_id(0)
    for j in range(a.shape[1]):
        for k in range(a.shape[2]):
            for m in range(a.shape[3]):
                out[i, j, k, m] = 2 * a[i, j, k, m] + m


@kapi.kernel
def sum_last6(item, a, out):
    i, j = item.get_id(0), item.get_id(1)
    s = 0.0
    for k in range(a.shape[2]):
        for m in range(a.shape[3]):
            for n in range(a.shape[4]):
                for p in range(a.shape[5]):
                    s += a[i, j, k, m, n, p]
    out[i, j] = s


def test_four_dims_c_and_strided(dev):
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
    out = kapi.zeros(a.shape, dtype=a.dtype, device=dev)
    kapi.call_kernel(scale4, kapi.Range(2), kapi.asarray(a, device=dev), out)
    np.testing.assert_array_equal(out.asnumpy(), 2 * a + np.arange(5))
    # a strided (layout "A") view of a larger array, and an F-ordered one
    big = np.arange(4 * 3 * 8 * 5, dtype=np.float64).reshape(4, 3, 8, 5)
    view = kapi.asarray(big, device=dev)[::2, :, 1::2, :]
    out = kapi.zeros(view.shape, dtype=big.dtype, device=dev)
    kapi.call_kernel(scale4, kapi.Range(2), view, out)
    np.testing.assert_array_equal(out.asnumpy(), 2 * big[::2, :, 1::2, :] + np.arange(5))
    f = np.asfortranarray(a)
    out = kapi.zeros(a.shape, dtype=a.dtype, device=dev)
    kapi.call_kernel(scale4, kapi.Range(2), kapi.asarray(f, device=dev), out)
    np.testing.assert_array_equal(out.asnumpy(), 2 * a + np.arange(5))


def test_six_dims(dev):
    a = np.random.default_rng(1).random((2, 3, 2, 3, 2, 2))
    out = kapi.zeros((2, 3), dtype=np.float64, device=dev)
    kapi.call_kernel(sum_last6, kapi.Range(2, 3), kapi.asarray(a, device=dev), out)
    np.testing.assert_allclose(out.asnumpy(), a.sum(axis=(2, 3, 4, 5)), rtol=1e-12)


def test_nine_dims_refused(dev):
    a = kapi.zeros((1,) * 9, device=dev)
    with pytest.raises(kapi.UnsupportedKernelArgumentError, match="1 to 8 dimensions.*has 9"):
        kapi.call_kernel(scale4, kapi.Range(1), a, a)


def test_numpy_four_dims_on_the_cpu_device():
    from kapi_testing import needs_cpu_device

    needs_cpu_device()
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
    out = np.zeros_like(a)
    kapi.call_kernel(scale4, kapi.Range(2), a, out)  # NumPy arrays: the CPU device
    np.testing.assert_array_equal(out, 2 * a + np.arange(5))
