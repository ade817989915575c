"""cuBLAS for matmul on NVIDIA GPUs, loaded at run time as the CUDA driver loads libcuda:
nothing links it, and where it cannot be loaded matmul runs kapi's own tiled kernel.

kapi's CUDA driver allocates in each device's primary context, which the CUDA runtime (and so
cuBLAS) uses too, so cuBLAS reads and writes kapi arrays in place. The queue's earlier work is
waited for, the GEMM runs on the context's default stream, and the context is synchronised
before the result is handed back (later launches on kapi's stream then see it).

KAPI_CUBLAS=0 turns it off; KAPI_CUBLAS=/path/to/libcublas.so.N picks the library.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..._memory.array import Array
from . import _vendor

_STATE: dict = {"handles": {}}  # "handles": {device id: handle}, "failures": [status]
_GEMM = {  # dtype -> (strided-batched GEMM, scalar type)
    np.dtype(np.float32): ("cublasSgemmStridedBatched", ctypes.c_float),
    np.dtype(np.float64): ("cublasDgemmStridedBatched", ctypes.c_double),
    np.dtype(np.complex64): ("cublasCgemmStridedBatched", ctypes.c_float * 2),
    np.dtype(np.complex128): ("cublasZgemmStridedBatched", ctypes.c_double * 2),
}


def _load():
    return _vendor.load(
        "KAPI_CUBLAS",
        "libcublas",
        ("13", "12", "11"),
        ("nvidia.cublas", "nvidia.cu13", "nvidia.cu12"),
    )


def _handle(dev_id: int):
    """The cuBLAS handle of device dev_id, its primary context made current; None on failure."""
    if not _vendor.context(dev_id):
        return None
    h = _STATE["handles"].get(dev_id)
    if h is None:
        h = ctypes.c_void_p()
        if _load().cublasCreate_v2(ctypes.byref(h)) != 0:
            return None
        _STATE["handles"][dev_id] = h
    return h


def _rows(x: Array, rows: int, cols: int):
    """(leading dimension, batch stride) in elements of x (B, rows, cols) if its rows are
    contiguous, else None."""
    i = x.itemsize
    bs, rs, cs = x.strides
    if cs != i and cols > 1:
        return None
    if rs % i or bs % i:
        return None
    ld = rs // i if rows > 1 else cols
    if ld < max(cols, 1) or rs < 0 or bs < 0:
        return None
    return ld, bs // i


def available() -> bool:
    return _load() is not None


def matmul(a3: Array, b3: Array, out3: Array) -> bool:
    """out3 (B, n, m) = a3 (B, n, k) @ b3 (B, k, m) through cuBLAS; False where cuBLAS is not
    loaded, the device is not CUDA, the dtype has no GEMM or the layout does not fit (the
    caller then runs kapi's kernel)."""
    dt = out3.dtype
    if dt not in _GEMM or out3.device.backend != "cuda" or a3.dtype != dt or b3.dtype != dt:
        return False
    lib = _load()
    if lib is None:
        return False
    bsz, n, k = a3.shape
    m = b3.shape[2]
    la, lb, lc = _rows(a3, n, k), _rows(b3, k, m), _rows(out3, n, m)
    if la is None or lb is None or lc is None:
        return False
    dev_id = _vendor.device_id(out3)
    h = _handle(dev_id)
    if h is None:
        return False
    for x in (a3, b3, out3):
        x.sycl_queue.wait()
    name, scalar = _GEMM[dt]
    one = scalar(1.0) if scalar in (ctypes.c_float, ctypes.c_double) else scalar(1.0, 0.0)
    zero = scalar(0.0) if scalar in (ctypes.c_float, ctypes.c_double) else scalar(0.0, 0.0)
    # row-major C = A @ B is column-major C^T = B^T @ A^T: cuBLAS computes (m x n) from
    # B^T (m x k, ld lb) and A^T (k x n, ld la)
    r = getattr(lib, name)(
        h, 0, 0, ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k), ctypes.byref(one),
        ctypes.c_void_p(b3._ptr), ctypes.c_int(lb[0]), ctypes.c_longlong(lb[1]),
        ctypes.c_void_p(a3._ptr), ctypes.c_int(la[0]), ctypes.c_longlong(la[1]),
        ctypes.byref(zero),
        ctypes.c_void_p(out3._ptr), ctypes.c_int(lc[0]), ctypes.c_longlong(lc[1]),
        ctypes.c_int(bsz),
    )  # fmt: skip
    if r != 0:
        _STATE.setdefault("failures", []).append(r)
        return False
    return _vendor.synchronise()
