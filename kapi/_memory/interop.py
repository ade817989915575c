"""Interop: DLPack both ways, __sycl_usm_array_interface__ and __cuda_array_interface__.

Foreign device memory is wrapped without copies; the producer's object (or DLPack holder)
becomes the array's owner, so the memory lives as long as any kapi view of it.
"""

from __future__ import annotations

import numpy as np

from .. import _native
from .._errors import DeviceNotFoundError, UnsupportedDtypeError
from .array import Array, _check_dtype
from .device import Device, devices
from .dtypes import BFLOAT16

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_ONEAPI = 1, 2, 3, 14
_KIND_TO_USM = {1: "host", 2: "device", 3: "shared"}
_DL_CODES = {"i": 0, "u": 1, "f": 2, "b": 6, "c": 5, "V": 4}  # "V": bfloat16 (kDLBfloat)


def dlpack_device(dev: Device) -> tuple[int, int]:
    t = dev.dlpack_device_type
    same = [d for d in devices() if d.dlpack_device_type == t]
    return t, same.index(dev)


def _device_for_dlpack(dtype: int, did: int) -> Device:
    same = [d for d in devices() if d.dlpack_device_type == dtype]
    if dtype == KDL_CPU and not same:
        raise DeviceNotFoundError(
            "host (kDLCPU) memory needs kapi's CPU device, and none is loaded"
        )
    if did >= len(same):
        raise DeviceNotFoundError(
            f"DLPack device ({dtype}, {did}) has no kapi counterpart; kapi devices: "
            + ", ".join(d.filter_string for d in devices())
        )
    return same[did]


def to_dlpack(a: Array, dl_device=None, copy=None, max_version=None):
    if dl_device is not None and tuple(dl_device) != dlpack_device(a.device):
        if tuple(dl_device)[0] == KDL_CPU and copy is not False:
            return a.asnumpy().__dlpack__()
        raise BufferError(f"cannot export this array to DLPack device {tuple(dl_device)}")
    if copy is True:
        a = a.copy()
    a.sycl_queue.wait()  # the consumer's stream knows nothing of kapi's pending commands
    kind = a.dtype.kind
    dev_type, dev_id = dlpack_device(a.device)
    i = a.itemsize
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    return _native.ext().rt_dlpack_export(
        a,
        a.data_ptr,
        a.shape,
        tuple(s // i for s in a.strides),
        _DL_CODES[kind],
        i * 8,
        dev_type,
        dev_id,
        versioned,
    )


def _dtype_from_dl(code: int, bits: int, lanes: int) -> np.dtype:
    kinds = {0: "i", 1: "u", 2: "f", 6: "b", 5: "c"}
    if (code, bits, lanes) == (4, 16, 1) and BFLOAT16 is not None:
        return BFLOAT16
    if lanes != 1 or code not in kinds or bits % 8:
        raise UnsupportedDtypeError(f"DLPack dtype (code {code}, bits {bits}, lanes {lanes})")
    return _check_dtype(np.dtype(f"{kinds[code]}{bits // 8}") if code != 6 else np.bool_)


def _wrap(owner, ptr, shape, strides_bytes, dtype, dev: Device, usm_type: str) -> Array:
    q = dev.default_queue
    host_ok = dev.host_accessible or usm_type in ("host", "shared")
    return Array._make(owner, ptr, shape, strides_bytes, dtype, q, usm_type, host_ok)


def _from_capsule(capsule) -> Array:
    ext = _native.ext()
    ptr, shape, strides, code, bits, lanes, dtype, did, holder, _ro = ext.rt_dlpack_import(capsule)
    dt = _dtype_from_dl(code, bits, lanes)
    if strides is None:
        from .array import _contiguous_strides

        sb = _contiguous_strides(shape, dt.itemsize, "C")
    else:
        sb = tuple(s * dt.itemsize for s in strides)
    if dtype in (KDL_CPU, KDL_CUDA_HOST):
        dev = _device_for_dlpack(KDL_CPU, 0)
        return _wrap(holder, ptr, shape, sb, dt, dev, "host")
    if dtype == KDL_ONEAPI:
        kind, index, _, _ = ext.rt_pointer_info(ptr)
        if index < 0:
            raise DeviceNotFoundError("oneAPI DLPack memory of a context kapi does not know")
        return _wrap(holder, ptr, shape, sb, dt, devices()[index], _KIND_TO_USM.get(kind, "device"))
    dev = _device_for_dlpack(dtype, did)
    return _wrap(holder, ptr, shape, sb, dt, dev, "device")


def from_dlpack(x, /, *, device=None, copy=None) -> Array:
    """A kapi array sharing the memory of a DLPack producer (NumPy, PyTorch, CuPy, ...)."""
    if hasattr(x, "__dlpack__"):
        try:
            cap = x.__dlpack__(stream=None, max_version=(1, 0))
        except TypeError:  # a producer older than DLPack 1.0
            try:
                cap = x.__dlpack__(stream=None)
            except TypeError:
                cap = x.__dlpack__()
    else:
        cap = x
    a = _from_capsule(cap)
    if device is not None:
        a = a.to_device(device)
    if copy:
        a = a.copy()
    return a


def _from_usm_interface(obj, iface) -> Array:
    ext = _native.ext()
    ptr = iface["data"][0]
    dt = _check_dtype(np.dtype(iface["typestr"]))
    shape = tuple(iface["shape"])
    offset = iface.get("offset", 0) or 0
    ptr += offset * dt.itemsize
    strides = iface.get("strides")
    from .array import _contiguous_strides

    sb = (
        _contiguous_strides(shape, dt.itemsize, "C")
        if strides is None
        else tuple(s * dt.itemsize for s in strides)
    )
    kind, index, _, _ = ext.rt_pointer_info(ptr)
    if index < 0:
        raise DeviceNotFoundError(
            "__sycl_usm_array_interface__ memory does not belong to any kapi device; copy it "
            "through the host with kapi.asarray(numpy.asarray(x))"
        )
    return _wrap(obj, ptr, shape, sb, dt, devices()[index], _KIND_TO_USM.get(kind, "device"))


def _from_cuda_interface(obj, iface) -> Array:
    dt = _check_dtype(np.dtype(iface["typestr"]))
    shape = tuple(iface["shape"])
    ptr = iface["data"][0]
    from .array import _contiguous_strides

    strides = iface.get("strides")
    sb = _contiguous_strides(shape, dt.itemsize, "C") if strides is None else tuple(strides)
    kind, index, _, _ = _native.ext().rt_pointer_info(ptr)
    if index >= 0:
        dev = devices()[index]
    else:
        cuda = [d for d in devices() if d.backend == "cuda"]
        if not cuda:
            raise DeviceNotFoundError("CUDA memory given, but kapi has no CUDA device loaded")
        dev = cuda[0]
    return _wrap(obj, ptr, shape, sb, dt, dev, "device")


def import_foreign(obj):
    """A zero-copy kapi array over obj's device memory, or None when obj is host data."""
    iface = getattr(obj, "__sycl_usm_array_interface__", None)
    if iface is not None:
        return _from_usm_interface(obj, iface)
    if isinstance(obj, np.ndarray):
        return None
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is not None:
        return _from_cuda_interface(obj, iface)
    if hasattr(obj, "__dlpack_device__") and hasattr(obj, "__dlpack__"):
        dev_type, _ = obj.__dlpack_device__()
        if int(dev_type) in (KDL_CPU, KDL_CUDA_HOST):
            return None  # host data: copied into USM by the caller
        return from_dlpack(obj)
    return None


def cuda_aware_mpi() -> bool:
    """Whether the MPI library under mpi4py takes CUDA device memory in its calls (a CUDA-aware
    build of Open MPI, MPICH or MVAPICH): MPIX_Query_cuda_support, else MPICH's
    MPIX_GPU_query_support. KAPI_MPI_CUDA_AWARE=1 or 0 overrides the answer. Without it, pass
    GPU arrays through host memory (the staged path of docs/guide/multi_gpu.md)."""
    import ctypes
    import os

    forced = os.environ.get("KAPI_MPI_CUDA_AWARE", "")
    if forced in ("0", "1"):
        return forced == "1"
    from mpi4py import MPI

    lib = ctypes.CDLL(MPI.__file__)  # its symbol lookups reach the MPI library it links
    query = getattr(lib, "MPIX_Query_cuda_support", None)
    if query is not None:
        query.restype = ctypes.c_int
        if query() == 1:
            return True
    gpu_query = getattr(lib, "MPIX_GPU_query_support", None)
    if gpu_query is not None:
        supported = ctypes.c_int(0)
        if gpu_query(0, ctypes.byref(supported)) == 0:  # MPIX_GPU_SUPPORT_CUDA
            return supported.value == 1
    return False
