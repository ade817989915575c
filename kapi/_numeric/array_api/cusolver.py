"""cuSOLVER (cusolverDn) for linalg.solve, inv, det, slogdet, cholesky, eigh, eigvalsh, svd,
svdvals and qr on NVIDIA GPUs, loaded at run time (_vendor.py); where it cannot be loaded, or
a call fails, _linalg_kernels.py runs kapi's kernels instead (eigh, eigvalsh, svd, svdvals
and qr have none: they raise TypeError there). Batches loop over their matrices (getrf/getrs,
potrf, syevd, gesvd, geqrf have no strided batched form). The queues' earlier work is
waited for, the calls run on the context's default stream, and the context is synchronised
before info is read and results are handed back.

cuSOLVER is column-major; kapi's arrays are row-major, so a C-contiguous (n, n) matrix is the
column-major transpose. solve factors A^T (getrf) and solves with trans=T, the right-hand
sides given column-major (the caller passes B^T, C-contiguous); cholesky factors the stored
A^T = conj(A) (Hermitian A) as U^H U with uplo=upper, whose row-major view is the lower L of
A = L L^H (the other triangle is left as it was: the caller zeroes it).

KAPI_CUSOLVER=0 turns it off; KAPI_CUSOLVER=/path/to/libcusolver.so.N picks the library.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..._memory.array import Array
from . import _vendor

_PREFIX = {
    np.dtype(np.float32): "S",
    np.dtype(np.float64): "D",
    np.dtype(np.complex64): "C",
    np.dtype(np.complex128): "Z",
}
_OP_T = 1  # CUBLAS_OP_T
_FILL_UPPER = 1  # CUBLAS_FILL_MODE_UPPER
_HANDLES: dict = {}  # dev_id -> cusolverDnHandle_t
FAILURES: list = []  # (call, status) of calls that failed (the kernels ran instead)


def _lib():
    return _vendor.load("KAPI_CUSOLVER", "libcusolver", ("12", "11", "10"),
                        ("nvidia.cusolver", "nvidia.cu13", "nvidia.cu12"))  # fmt: skip


def available() -> bool:
    return _lib() is not None


def _start(*arrays):
    """(lib, handle) with the arrays' device context current and their queues idle, or None."""
    x = arrays[0]
    if x.dtype not in _PREFIX or x.device.backend != "cuda":
        return None
    lib = _lib()
    if lib is None:
        return None
    dev_id = _vendor.device_id(x)
    if not _vendor.context(dev_id):
        return None
    h = _HANDLES.get(dev_id)
    if h is None:
        h = ctypes.c_void_p()
        r = lib.cusolverDnCreate(ctypes.byref(h))
        if r != 0:
            FAILURES.append(("cusolverDnCreate", r))
            return None
        _HANDLES[dev_id] = h
    for a in arrays:
        a.sycl_queue.wait()
    return lib, h


def _call(lib, name: str, *args) -> bool:
    r = getattr(lib, name)(*args)
    if r != 0:
        FAILURES.append((name, r))
        return False
    return True


def _ptr(a: Array, z: int, per: int):
    return ctypes.c_void_p(a._ptr + z * per * a.itemsize)


def _workspace(a: Array, lwork: int) -> Array:
    return Array._allocate((max(int(lwork), 1),), a.dtype, a.sycl_queue, "device")


def getrf(a3: Array):
    """LU with partial pivoting of each a3[z] (B, n, n) C-contiguous, in place: it factors the
    stored column-major A^T (P A^T = L U), whose determinant is A's. Returns (ipiv (B, n)
    int32 device array, 1-based, info numpy int32: > 0 where U has a zero pivot) or None."""
    s = _start(a3)
    if s is None:
        return None
    lib, h = s
    bsz, n, _ = a3.shape
    p = _PREFIX[a3.dtype]
    q = a3.sycl_queue
    lwork = ctypes.c_int()
    if not _call(lib, f"cusolverDn{p}getrf_bufferSize", h, n, n, _ptr(a3, 0, 0), n,
                 ctypes.byref(lwork)):  # fmt: skip
        return None
    work = _workspace(a3, lwork.value)
    ipiv = Array._allocate((max(bsz, 1), max(n, 1)), np.dtype(np.int32), q, "device")
    info = Array._allocate((max(bsz, 1),), np.dtype(np.int32), q, "device")
    w = ctypes.c_void_p(work._ptr)
    for z in range(bsz):
        iz = ctypes.c_void_p(info._ptr + 4 * z)
        pz = ctypes.c_void_p(ipiv._ptr + 4 * max(n, 1) * z)
        if not _call(lib, f"cusolverDn{p}getrf", h, n, n, _ptr(a3, z, n * n), n, w, pz, iz):
            return None
    if not _vendor.synchronise():
        return None
    return ipiv, info.asnumpy()[:bsz].copy()


def solve(a3: Array, bt3: Array):
    """Solves a3[z] x = b for each z: a3 (B, n, n) C-contiguous (overwritten by its LU), bt3
    (B, k, n) C-contiguous holding the right-hand sides transposed (overwritten by the
    solutions, transposed). Returns the per-matrix info (numpy int32; > 0: singular), or None
    where cuSOLVER cannot run (the kernels then start afresh from new copies)."""
    r = getrf(a3)
    if r is None:
        return None
    ipiv, bad = r
    lib, h = _start(a3, bt3)
    bsz, n, _ = a3.shape
    k = bt3.shape[1]
    p = _PREFIX[a3.dtype]
    info = Array._allocate((max(bsz, 1),), np.dtype(np.int32), a3.sycl_queue, "device")
    if k:
        for z in range(bsz):
            if bad[z]:
                continue
            iz = ctypes.c_void_p(info._ptr + 4 * z)
            pz = ctypes.c_void_p(ipiv._ptr + 4 * max(n, 1) * z)
            if not _call(lib, f"cusolverDn{p}getrs", h, _OP_T, n, k, _ptr(a3, z, n * n), n,
                         pz, _ptr(bt3, z, n * k), n, iz):  # fmt: skip
                return None
        if not _vendor.synchronise():
            return None
    return bad


def cholesky(a3: Array):
    """Factors each Hermitian positive definite a3[z] (B, n, n) C-contiguous in place: its
    lower triangle becomes L (a3 = L L^H); the strict upper triangle is left as it was.
    Returns the per-matrix info (numpy int32; > 0: not positive definite) or None."""
    s = _start(a3)
    if s is None:
        return None
    lib, h = s
    bsz, n, _ = a3.shape
    p = _PREFIX[a3.dtype]
    lwork = ctypes.c_int()
    if not _call(lib, f"cusolverDn{p}potrf_bufferSize", h, _FILL_UPPER, n, _ptr(a3, 0, 0), n,
                 ctypes.byref(lwork)):  # fmt: skip
        return None
    work = _workspace(a3, lwork.value)
    info = Array._allocate((max(bsz, 1),), np.dtype(np.int32), a3.sycl_queue, "device")
    for z in range(bsz):
        iz = ctypes.c_void_p(info._ptr + 4 * z)
        if not _call(lib, f"cusolverDn{p}potrf", h, _FILL_UPPER, n, _ptr(a3, z, n * n), n,
                     ctypes.c_void_p(work._ptr), lwork.value, iz):  # fmt: skip
            return None
    if not _vendor.synchronise():
        return None
    return info.asnumpy()[:bsz].copy()


_EIG_VECTOR, _EIG_NOVECTOR = 1, 0  # cusolverEigMode_t


def eigh(a3: Array, vectors: bool):
    """Eigenvalues (ascending) and, with vectors, eigenvectors of each Hermitian a3[z]
    (B, n, n) C-contiguous, overwritten. The stored matrix is the column-major A^T = conj(A);
    its triangle read is the upper one, i.e. A's lower triangle, as numpy.linalg.eigh reads.
    conj(A) has A's eigenvalues and the conjugate eigenvectors V', which syevd/heevd leave as
    the columns of the column-major buffer: its row-major view is V'^T, so A's eigenvectors
    (as columns) are conj(view)^T, formed by the caller. Returns (w (B, n) real, info numpy
    int32) or None where cuSOLVER cannot run."""
    s = _start(a3)
    if s is None:
        return None
    lib, h = s
    bsz, n, _ = a3.shape
    p = _PREFIX[a3.dtype]
    name = "syevd" if p in "SD" else "heevd"
    rt = np.dtype(np.float32 if p in "SC" else np.float64)
    q = a3.sycl_queue
    w = Array._allocate((max(bsz, 1), max(n, 1)), rt, q, "device")
    jobz = _EIG_VECTOR if vectors else _EIG_NOVECTOR
    lwork = ctypes.c_int()
    if not _call(lib, f"cusolverDn{p}{name}_bufferSize", h, jobz, _FILL_UPPER, n,
                 _ptr(a3, 0, 0), n, ctypes.c_void_p(w._ptr), ctypes.byref(lwork)):  # fmt: skip
        return None
    work = _workspace(a3, lwork.value)
    info = Array._allocate((max(bsz, 1),), np.dtype(np.int32), q, "device")
    for z in range(bsz):
        wz = ctypes.c_void_p(w._ptr + z * n * rt.itemsize)
        iz = ctypes.c_void_p(info._ptr + 4 * z)
        if not _call(lib, f"cusolverDn{p}{name}", h, jobz, _FILL_UPPER, n, _ptr(a3, z, n * n),
                     n, wz, ctypes.c_void_p(work._ptr), lwork.value, iz):  # fmt: skip
            return None
    if not _vendor.synchronise():
        return None
    return w, info.asnumpy()[:bsz].copy()


def gesvd(buf3: Array, m: int, n: int, jobu: bytes, jobvt: bytes):
    """The SVD of each column-major m x n matrix (m >= n, as gesvd needs) held in buf3
    (B, n, m) C-contiguous (overwritten): (s (B, n) real, u (B, ucols, m), vt (B, n, n),
    info numpy int32), u and vt column-major (their row-major views are U^T and VT^T), None
    for what jobu/jobvt b"N" leaves out; or None where cuSOLVER cannot run."""
    s = _start(buf3)
    if s is None:
        return None
    lib, h = s
    bsz = buf3.shape[0]
    p = _PREFIX[buf3.dtype]
    rt = np.dtype(np.float32 if p in "SC" else np.float64)
    q = buf3.sycl_queue
    k = min(m, n)
    ucols = {b"A": m, b"S": k, b"N": 0}[jobu]
    vrows = {b"A": n, b"S": k, b"N": 0}[jobvt]
    sv = Array._allocate((max(bsz, 1), max(k, 1)), rt, q, "device")
    u = Array._allocate((max(bsz, 1), max(ucols, 1), m), buf3.dtype, q, "device")
    vt = Array._allocate((max(bsz, 1), n, n), buf3.dtype, q, "device")
    rwork = Array._allocate((max(k - 1, 1),), rt, q, "device")
    lwork = ctypes.c_int()
    if not _call(lib, f"cusolverDn{p}gesvd_bufferSize", h, m, n, ctypes.byref(lwork)):
        return None
    work = _workspace(buf3, lwork.value)
    info = Array._allocate((max(bsz, 1),), np.dtype(np.int32), q, "device")
    for z in range(bsz):
        if not _call(lib, f"cusolverDn{p}gesvd", h, ctypes.c_char(jobu), ctypes.c_char(jobvt),
                     m, n, _ptr(buf3, z, m * n), m,
                     ctypes.c_void_p(sv._ptr + z * k * rt.itemsize),
                     _ptr(u, z, max(ucols, 1) * m), m, _ptr(vt, z, n * n), n,
                     ctypes.c_void_p(work._ptr), lwork.value, ctypes.c_void_p(rwork._ptr),
                     ctypes.c_void_p(info._ptr + 4 * z)):  # fmt: skip
            return None
    if not _vendor.synchronise():
        return None
    return (sv, u if ucols else None, vt if vrows else None, info.asnumpy()[:bsz].copy())


def geqrf(buf3: Array, m: int, n: int):
    """Householder QR of each column-major m x n matrix in buf3 (B, n, m) C-contiguous, in
    place (R on and above the diagonal, the reflectors below): (tau (B, k), info numpy int32),
    or None where cuSOLVER cannot run."""
    s = _start(buf3)
    if s is None:
        return None
    lib, h = s
    bsz = buf3.shape[0]
    p = _PREFIX[buf3.dtype]
    k = min(m, n)
    q = buf3.sycl_queue
    tau = Array._allocate((max(bsz, 1), max(k, 1)), buf3.dtype, q, "device")
    lwork = ctypes.c_int()
    if not _call(lib, f"cusolverDn{p}geqrf_bufferSize", h, m, n, _ptr(buf3, 0, 0), m,
                 ctypes.byref(lwork)):  # fmt: skip
        return None
    work = _workspace(buf3, lwork.value)
    info = Array._allocate((max(bsz, 1),), np.dtype(np.int32), q, "device")
    for z in range(bsz):
        if not _call(lib, f"cusolverDn{p}geqrf", h, m, n, _ptr(buf3, z, m * n), m,
                     _ptr(tau, z, max(k, 1)), ctypes.c_void_p(work._ptr), lwork.value,
                     ctypes.c_void_p(info._ptr + 4 * z)):  # fmt: skip
            return None
    if not _vendor.synchronise():
        return None
    return tau, info.asnumpy()[:bsz].copy()


def orgqr(buf3: Array, m: int, ncols: int, k: int, tau: Array):
    """Q's first ncols columns from geqrf's k reflectors, in place in buf3 (B, ncols, m)
    C-contiguous (column-major m x ncols): info (numpy int32) or None."""
    s = _start(buf3, tau)
    if s is None:
        return None
    lib, h = s
    bsz = buf3.shape[0]
    p = _PREFIX[buf3.dtype]
    name = "orgqr" if p in "SD" else "ungqr"
    lwork = ctypes.c_int()
    if not _call(lib, f"cusolverDn{p}{name}_bufferSize", h, m, ncols, k, _ptr(buf3, 0, 0), m,
                 _ptr(tau, 0, 0), ctypes.byref(lwork)):  # fmt: skip
        return None
    work = _workspace(buf3, lwork.value)
    info = Array._allocate((max(bsz, 1),), np.dtype(np.int32), buf3.sycl_queue, "device")
    per_tau = tau.shape[1]
    for z in range(bsz):
        if not _call(lib, f"cusolverDn{p}{name}", h, m, ncols, k, _ptr(buf3, z, m * ncols), m,
                     _ptr(tau, z, per_tau), ctypes.c_void_p(work._ptr), lwork.value,
                     ctypes.c_void_p(info._ptr + 4 * z)):  # fmt: skip
            return None
    if not _vendor.synchronise():
        return None
    return info.asnumpy()[:bsz].copy()
