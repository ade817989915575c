"""cuFFT for the fft extension on NVIDIA GPUs, loaded at run time (_vendor.py): batched
complex-to-complex transforms along the last axis of a contiguous (batch, n) array, one
cufftPlanMany plan per (device, n, batch, precision), kept in a small cache. The queues'
earlier work is waited for, the transform runs on the context's default stream, and the
context is synchronised before the result is handed back.

KAPI_CUFFT=0 turns it off (fourier.py then runs kapi's kernels); KAPI_CUFFT=/path/to/
libcufft.so.N picks the library.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict

import numpy as np

from . import _vendor

_CUFFT_C2C, _CUFFT_Z2Z = 0x29, 0x69
_FORWARD, _INVERSE = -1, 1
_PLANS: OrderedDict = OrderedDict()  # (dev_id, n, batch, dtype) -> cufftHandle
_MAX_PLANS = 16
FAILURES: list = []  # cufftResult codes of calls that failed (the kernel ran instead)


def _lib():
    return _vendor.load("KAPI_CUFFT", "libcufft", ("12", "11", "10"),
                        ("nvidia.cufft", "nvidia.cu13", "nvidia.cu12"))  # fmt: skip


def available() -> bool:
    return _lib() is not None


def _plan(lib, dev_id: int, n: int, batch: int, dt: np.dtype):
    key = (dev_id, n, batch, dt)
    h = _PLANS.get(key)
    if h is not None:
        _PLANS.move_to_end(key)
        return h
    h = ctypes.c_int()
    dims = (ctypes.c_int * 1)(n)
    kind = _CUFFT_C2C if dt == np.complex64 else _CUFFT_Z2Z
    # contiguous rows: embed pointers NULL (the basic layout), stride 1, distance n
    r = lib.cufftPlanMany(ctypes.byref(h), 1, dims, None, 1, n, None, 1, n, kind, batch)
    if r != 0:
        FAILURES.append(("cufftPlanMany", r))
        return None
    _PLANS[key] = h
    while len(_PLANS) > _MAX_PLANS:
        _, old = _PLANS.popitem(last=False)
        lib.cufftDestroy(old)
    return h


def c2c(x, out, inverse: bool) -> bool:
    """out (B, n) = the unnormalised DFT of x (B, n) along its rows (both C-contiguous,
    complex64 or complex128, on one CUDA device); False where cuFFT cannot do it (the caller
    runs kapi's kernel)."""
    dt = x.dtype
    if dt not in (np.complex64, np.complex128) or x.device.backend != "cuda":
        return False
    lib = _lib()
    if lib is None:
        return False
    batch, n = x.shape
    if n == 0 or batch == 0 or n * batch >= 2**31:
        return False
    dev_id = _vendor.device_id(x)
    if not _vendor.context(dev_id):
        return False
    x.sycl_queue.wait()
    out.sycl_queue.wait()
    h = _plan(lib, dev_id, n, batch, dt)
    if h is None:
        return False
    ex = lib.cufftExecC2C if dt == np.complex64 else lib.cufftExecZ2Z
    r = ex(h, ctypes.c_void_p(x._ptr), ctypes.c_void_p(out._ptr),
           _INVERSE if inverse else _FORWARD)  # fmt: skip
    if r != 0:
        FAILURES.append(("cufftExec", r))
        return False
    return _vendor.synchronise()
