"""Interop with CUDA libraries on kapi's CUDA device: CuPy (__cuda_array_interface__, DLPack)
and PyTorch (DLPack). Skipped where there is no CUDA device or library."""

import numpy as np
import pytest
from kapi_testing import needs_cpu_device

import kapi

try:
    CUDA = [d for d in kapi.devices() if d.backend == "cuda"]
except kapi.KapiError:  # pragma: no cover
    CUDA = []
if not CUDA:
    pytest.skip("no kapi CUDA device", allow_module_level=True)
np.row_stack = getattr(np, "row_stack", np.vstack)  # numba-cuda on NumPy 2.5 (TOOLCHAIN.md)
DEV = CUDA[0]


@kapi.kernel
def twice(item, a):
    i = item.get_id(0)
    a[i] = a[i] * 2


def test_export_dlpack_device_and_cai():
    a = kapi.arange(8, dtype="f4", device=DEV)
    assert a.__dlpack_device__() == (2, 0)
    cai = a.__cuda_array_interface__
    assert cai["data"][0] == a.data_ptr and cai["shape"] == (8,) and cai["typestr"] == "<f4"


def test_cpu_arrays_have_no_cuda_array_interface():
    needs_cpu_device()
    with pytest.raises(AttributeError):
        _ = kapi.zeros(2, device="cpu").__cuda_array_interface__


def test_cupy_round_trip():
    cp = pytest.importorskip("cupy")
    x = cp.arange(16, dtype=cp.float32)
    a = kapi.asarray(x)  # __cuda_array_interface__, no copy
    assert a.device == DEV and a.data_ptr == x.data.ptr
    kapi.call_kernel(twice, kapi.Range(16), a)
    np.testing.assert_array_equal(cp.asnumpy(x), np.arange(16) * 2)
    b = kapi.arange(8, dtype="i4", device=DEV)
    y = cp.asarray(b)  # kapi -> CuPy through __cuda_array_interface__
    np.testing.assert_array_equal(cp.asnumpy(y), np.arange(8))
    z = cp.from_dlpack(b)
    np.testing.assert_array_equal(cp.asnumpy(z), np.arange(8))


def test_torch_dlpack_round_trip():
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    a = kapi.from_dlpack(t)
    assert a.device == DEV and a.shape == (3, 4)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(12).reshape(3, 4))
    flat = kapi.from_dlpack(t.reshape(-1))
    kapi.call_kernel(twice, kapi.Range(12), flat)
    torch.cuda.synchronize()
    assert float(t[2, 3]) == 22.0
    back = torch.from_dlpack(kapi.arange(5, dtype="i8", device=DEV))
    assert back.device.type == "cuda" and back.tolist() == [0, 1, 2, 3, 4]
