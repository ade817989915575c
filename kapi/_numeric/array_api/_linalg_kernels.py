"""The linalg extension's solvers where the arrays are not in host memory (or KAPI_LINALG=kernel):
cuSOLVER on NVIDIA GPUs for solve, inv and cholesky when it loads (cusolver.py), else kapi
kernels, one work-item per matrix, in place on a copy.

LU with partial pivoting gives solve (and inv, the solve against the identity), det and
slogdet; Cholesky gives cholesky. Errors are NumPy's: numpy.linalg.LinAlgError for a
singular system ("Singular matrix") or a matrix that is not positive definite, found from a
per-matrix info array read back after the launch.
"""

from __future__ import annotations

import math

import numpy as np

from ..._memory.array import Array
from . import _core as C

_LU = """
def _lu(it, a, b, info, sgn, logabs, n, m):
    z = it.get_id(0)
    bad = 0
    s = ONE
    for k in range(n):
        if bad == 0:
            p = k
            best = abs(a[z, k, k])
            for i in range(k + 1, n):
                v = abs(a[z, i, k])
                if v > best:
                    best = v
                    p = i
            if best == RZERO:
                bad = k + 1
            else:
                if p != k:
                    s = -s
                    for j in range(n):
                        t = a[z, k, j]
                        a[z, k, j] = a[z, p, j]
                        a[z, p, j] = t
                    for j in range(m):
                        t = b[z, k, j]
                        b[z, k, j] = b[z, p, j]
                        b[z, p, j] = t
                piv = a[z, k, k]
                for i in range(k + 1, n):
                    f = a[z, i, k] / piv
                    a[z, i, k] = f
                    for j in range(k + 1, n):
                        a[z, i, j] -= f * a[z, k, j]
                    for j in range(m):
                        b[z, i, j] -= f * b[z, k, j]
    info[z] = bad
    la = RZERO
    if bad == 0:
        for k in range(n):
            d = a[z, k, k]
            r = abs(d)
            s = s * (d / r)
            la += math.log(r)
        for j in range(m):
            i = n - 1
            while i >= 0:
                acc = b[z, i, j]
                for q in range(i + 1, n):
                    acc -= a[z, i, q] * b[z, q, j]
                b[z, i, j] = acc / a[z, i, i]
                i -= 1
    else:
        s = ZERO
        la = -RINF
    sgn[z] = s
    logabs[z] = la
"""

_CHOL = """
def _chol(it, a, info, n):
    z = it.get_id(0)
    bad = 0
    for j in range(n):
        if bad == 0:
            d = DIAG(a[z, j, j])
            for k in range(j):
                d -= NORM2(a[z, j, k])
            if not (d > RZERO):
                bad = j + 1
            else:
                r = math.sqrt(d)
                a[z, j, j] = r
                for i in range(j + 1, n):
                    acc = a[z, i, j]
                    for k in range(j):
                        acc -= a[z, i, k] * CONJ(a[z, j, k])
                    a[z, i, j] = acc / r
    for i in range(n):
        for j in range(i + 1, n):
            a[z, i, j] = ZERO
    info[z] = bad
"""


def _source(src: str, dt: np.dtype) -> str:
    """src for dtype dt: DIAG(x) (the real part), NORM2(x) (|x|^2) and CONJ(x) spelled out."""
    import re

    arg = r"(a\[z, [a-z], [a-z]\])"
    if dt.kind == "c":
        src = re.sub(r"DIAG\(" + arg + r"\)", r"\1.real", src)
        src = re.sub(r"NORM2\(" + arg + r"\)", r"(\1.real * \1.real + \1.imag * \1.imag)", src)
        src = re.sub(r"CONJ\(" + arg + r"\)", r"\1.conjugate()", src)
    else:
        src = re.sub(r"(?:DIAG|CONJ)\(" + arg + r"\)", r"\1", src)
        src = re.sub(r"NORM2\(" + arg + r"\)", r"(\1 * \1)", src)
    return src + f"# {dt.name}\n"  # C.kernel keeps one kernel per source text


def _env(dt: np.dtype) -> dict:
    rt = np.dtype(np.float32 if dt in (np.float32, np.complex64) else np.float64).type
    return dict(ZERO=dt.type(0), ONE=dt.type(1), RZERO=rt(0), RINF=rt(math.inf), math=math)


def _launch(k, bsz: int, *args) -> None:
    from ..._kernel.ranges import Range
    from ..replay import launch

    if bsz:
        launch(k, Range(bsz), *args)


def _copy3(x: Array, batch, rows: int, cols: int, dt: np.dtype) -> Array:
    """A fresh C-contiguous (B, rows, cols) copy of x broadcast to batch + (rows, cols)."""
    from .manipulation import broadcast_to, reshape

    v = broadcast_to(x.astype(dt), tuple(batch) + (rows, cols))
    c = C.concrete(v.astype(dt, copy=True))
    c = C.contiguous(c)
    return reshape(c, (math.prod(batch), rows, cols))


def _vendor_ok(a: Array) -> bool:
    """Whether to try cuSOLVER: a CUDA array, and KAPI_LINALG is not "kernel"."""
    import os

    return a.device.backend == "cuda" and os.environ.get("KAPI_LINALG", "") != "kernel"


def _check_info(info: Array, name: str, what: str) -> None:
    _check_bad(info.asnumpy(), name, what)


def _check_bad(bad: np.ndarray, name: str, what: str) -> None:
    if bad.size and bad.any():
        raise np.linalg.LinAlgError(f"{what} (linalg.{name}, matrix {int(np.argmax(bad != 0))})")


def lu(a3: Array, b3: Array, m=None):
    """LU with partial pivoting of each a3[z] (in place), b3[z] overwritten by the solution;
    returns (info, sign, logabsdet) arrays of length B (info nonzero: singular)."""
    bsz, n, _ = a3.shape
    m = b3.shape[2] if m is None else m
    dt = a3.dtype
    rt = np.dtype(np.float32 if dt in (np.float32, np.complex64) else np.float64)
    q = a3.sycl_queue
    info = Array._allocate((bsz,), np.dtype(np.int64), q, "device")
    sgn = Array._allocate((bsz,), dt, q, "device")
    logabs = Array._allocate((bsz,), rt, q, "device")
    k = C.kernel(_source(_LU, dt), "_lu", **_env(dt))
    _launch(k, bsz, a3, b3, info, sgn, logabs, np.int64(n), np.int64(m))
    return info, sgn, logabs


def float_dtype(*arrays) -> np.dtype:
    from .dtypes import result_type

    dt = np.dtype(result_type(*arrays))
    if dt.kind not in "fc":
        dt = C.default_float(arrays[0].sycl_queue)
    return dt


def solve(x1: Array, x2: Array) -> Array:
    from .manipulation import reshape

    if x1.ndim < 2 or x1.shape[-1] != x1.shape[-2]:
        raise ValueError(f"linalg.solve: x1 must be square matrices, not of shape {x1.shape}")
    n = x1.shape[-1]
    dt = float_dtype(x1, x2)
    vector = x2.ndim == 1
    if vector:
        if x2.shape[0] != n:
            raise ValueError(f"linalg.solve: x2 of shape {x2.shape} does not fit x1 {x1.shape}")
        batch = x1.shape[:-2]
        b = reshape(x2, (n, 1))
        k = 1
    else:
        if x2.shape[-2] != n:
            raise ValueError(f"linalg.solve: x2 of shape {x2.shape} does not fit x1 {x1.shape}")
        batch = np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
        b = x2
        k = x2.shape[-1]
    shape = tuple(batch) + ((n,) if vector else (n, k))
    a3 = _copy3(x1, batch, n, n, dt)
    if _vendor_ok(a3):
        from . import cusolver
        from .manipulation import matrix_transpose

        bt3 = _copy3(matrix_transpose(b), batch, k, n, dt)  # column-major right-hand sides
        bad = cusolver.solve(a3, bt3)
        if bad is not None:
            _check_bad(bad, "solve", "Singular matrix")
            return reshape(C.contiguous(matrix_transpose(bt3)), shape)
        a3 = _copy3(x1, batch, n, n, dt)  # cuSOLVER did not finish: the kernels, afresh
    b3 = _copy3(b, batch, n, k, dt)
    info, _, _ = lu(a3, b3)
    _check_info(info, "solve", "Singular matrix")
    return reshape(b3, shape)


def inv(x: Array) -> Array:
    from .creation import eye

    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.inv: x must be square matrices, not of shape {x.shape}")
    dt = float_dtype(x)
    e = eye(x.shape[-1], dtype=dt, device=x.sycl_queue)
    return solve(x.astype(dt), e)


def slogdet(x: Array):
    from .manipulation import reshape

    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.slogdet: x must be square matrices, not of shape {x.shape}")
    n = x.shape[-1]
    dt = float_dtype(x)
    batch = x.shape[:-2]
    a3 = _copy3(x, batch, n, n, dt)
    if _vendor_ok(a3):
        r = _cusolver_slogdet(a3)
        if r is not None:
            return reshape(r[0], batch), reshape(r[1], batch)
        a3 = _copy3(x, batch, n, n, dt)  # cuSOLVER did not finish: the kernel, afresh
    b3 = Array._allocate((a3.shape[0], 1, 1), dt, x.sycl_queue, "device")  # no right-hand side
    _, sgn, logabs = lu(a3, b3, m=0)
    return reshape(sgn, batch), reshape(logabs, batch)


def _cusolver_slogdet(a3: Array):
    """(sign, logabsdet), each (B,), from cuSOLVER's getrf of a3: the product of U's diagonal
    (its phases and the sum of log |u_ii|) and the parity of the row swaps; or None."""
    from .. import ufunc as _ufunc
    from . import cusolver
    from .creation import arange
    from .elementwise import FUNCTIONS as F
    from .searching import count_nonzero, where
    from .statistics import prod, sum

    bsz, n, _ = a3.shape
    r = cusolver.getrf(a3)
    if r is None:
        return None
    ipiv, _ = r  # a zero pivot is not an error here: the determinant is 0
    ipiv = ipiv[:bsz]
    d = C.view(a3, (bsz, n), (a3.strides[0], a3.strides[1] + a3.strides[2]), 0)
    absd = F["abs"](d)
    logabs = C.concrete(sum(F["log"](absd), axis=-1))
    zero = _ufunc.apply(np.equal, (absd, 0))
    unit = where(zero, _ufunc.apply(np.multiply, (d, 0)), _ufunc.apply(np.divide, (d, absd)))
    steps = arange(1, n + 1, dtype=np.int32, device=a3.sycl_queue)
    swaps = count_nonzero(_ufunc.apply(np.not_equal, (ipiv, steps)), axis=-1)
    odd = _ufunc.apply(np.remainder, (swaps, 2))
    flip = _ufunc.apply(np.subtract, (1, _ufunc.apply(np.multiply, (odd, 2))))
    sign = _ufunc.apply(np.multiply, (prod(unit, axis=-1), flip.astype(a3.dtype)))
    return C.concrete(sign.astype(a3.dtype)), logabs


def det(x: Array) -> Array:
    from .. import ufunc as _ufunc

    sgn, logabs = slogdet(x)
    e = _ufunc.apply(np.exp, (logabs,))
    return C.concrete(_ufunc.apply(np.multiply, (sgn, e)).astype(sgn.dtype))


def cholesky(x: Array, upper: bool) -> Array:
    from .elementwise import conj
    from .manipulation import matrix_transpose, reshape

    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.cholesky: x must be square matrices, not of shape {x.shape}")
    n = x.shape[-1]
    dt = float_dtype(x)
    batch = x.shape[:-2]
    a3 = _copy3(x, batch, n, n, dt)
    bad = None
    if _vendor_ok(a3):
        from . import cusolver

        bad = cusolver.cholesky(a3)
        if bad is None:
            a3 = _copy3(x, batch, n, n, dt)  # cuSOLVER did not finish: the kernel, afresh
    if bad is not None:
        from .creation import tril

        _check_bad(bad, "cholesky", "Matrix is not positive definite")
        lo = reshape(C.contiguous(tril(a3)), x.shape)
    else:
        info = Array._allocate((a3.shape[0],), np.dtype(np.int64), x.sycl_queue, "device")
        k = C.kernel(_source(_CHOL, dt), "_chol", **_env(dt))
        _launch(k, a3.shape[0], a3, info, np.int64(n))
        _check_info(info, "cholesky", "Matrix is not positive definite")
        lo = reshape(a3, x.shape)
    if not upper:
        return lo
    t = matrix_transpose(lo)
    return C.contiguous(conj(t) if dt.kind == "c" else t)


def eigh(x: Array, vectors: bool):
    """(eigenvalues, eigenvectors or None) through cuSOLVER, or None where it cannot run."""
    from .elementwise import conj
    from .manipulation import matrix_transpose, reshape

    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.eigh: x must be square matrices, not of shape {x.shape}")
    n = x.shape[-1]
    dt = float_dtype(x)
    batch = x.shape[:-2]
    if not _vendor_ok(x):
        return None
    a3 = _copy3(x, batch, n, n, dt)
    from . import cusolver

    r = cusolver.eigh(a3, vectors)
    if r is None:
        return None
    w, bad = r
    _check_bad(bad, "eigh", "Eigenvalues did not converge")
    w = reshape(C.contiguous(w[: a3.shape[0]]), tuple(batch) + (n,))
    if not vectors:
        return w, None
    v = matrix_transpose(a3)
    v = C.contiguous(conj(v) if dt.kind == "c" else v)
    return w, reshape(v, x.shape)


def svd(x: Array, full_matrices: bool, compute_uv: bool):
    """(U, S, Vh) (U and Vh None without compute_uv) through cuSOLVER's gesvd, or None where
    it cannot run. gesvd takes column-major m x n with m >= n: a tall A (m >= n) is handed as
    its transpose's rows (column-major A); a wide one as it is (column-major A^T, tall), whose
    SVD A^T = U' S V'^H gives A = conj(V') S U'^T: U = the row-major view of V'^H, Vh = the
    row-major view of U'."""
    from .manipulation import matrix_transpose, reshape

    if x.ndim < 2:
        raise ValueError(f"linalg.svd: x must be matrices, not of shape {x.shape}")
    if not _vendor_ok(x):
        return None
    from . import cusolver

    m, n = x.shape[-2:]
    dt = float_dtype(x)
    batch = tuple(x.shape[:-2])
    k = min(m, n)
    job = (b"A" if full_matrices else b"S") if compute_uv else b"N"
    tall = m >= n
    if tall:
        buf = _copy3(matrix_transpose(x), batch, n, m, dt)
        r = cusolver.gesvd(buf, m, n, job, b"A" if compute_uv else b"N")
    else:
        buf = _copy3(x, batch, m, n, dt)
        r = cusolver.gesvd(buf, n, m, job, b"A" if compute_uv else b"N")
    if r is None:
        return None
    sv, u, vt, bad = r
    _check_bad(bad, "svd", "SVD did not converge")
    bsz = buf.shape[0]
    s = reshape(C.contiguous(sv[:bsz]), batch + (k,))
    if not compute_uv:
        return None, s, None
    if tall:
        uu = C.contiguous(matrix_transpose(u[:bsz]))  # (B, m, ucols)
        vh = C.contiguous(matrix_transpose(vt[:bsz]))  # (B, n, n)
    else:
        uu = C.contiguous(vt[:bsz])  # (B, m, m)
        vh = C.contiguous(u[:bsz])  # (B, ucols, n)
    return (reshape(uu, batch + uu.shape[1:]), s, reshape(vh, batch + vh.shape[1:]))


def qr(x: Array, mode: str):
    """(Q, R) through cuSOLVER's geqrf and orgqr/ungqr, or None where it cannot run. The
    column-major A is the C-contiguous transpose; R is the upper triangle of the factored
    buffer's transpose, Q the transpose of the buffer orgqr fills (widened to m columns for
    mode="complete")."""
    from .creation import triu, zeros
    from .manipulation import concat, matrix_transpose, reshape

    if x.ndim < 2:
        raise ValueError(f"linalg.qr: x must be matrices, not of shape {x.shape}")
    if mode not in ("reduced", "complete"):
        raise ValueError(f'linalg.qr: mode must be "reduced" or "complete", not {mode!r}')
    if not _vendor_ok(x):
        return None
    from . import cusolver

    m, n = x.shape[-2:]
    dt = float_dtype(x)
    batch = tuple(x.shape[:-2])
    k = min(m, n)
    buf = _copy3(matrix_transpose(x), batch, n, m, dt)  # column-major A: (B, n, m)
    r = cusolver.geqrf(buf, m, n)
    if r is None:
        return None
    tau, bad = r
    _check_bad(bad, "qr", "QR factorisation failed")
    rows = m if mode == "complete" else k
    R = C.contiguous(triu(matrix_transpose(buf)[..., :rows, :]))  # (B, rows, n)
    ncols = m if mode == "complete" else k
    if ncols <= n:
        qbuf = C.contiguous(buf[:, :ncols, :])
    else:
        pad = zeros((buf.shape[0], ncols - n, m), dtype=dt, device=buf.sycl_queue)
        qbuf = C.contiguous(concat([buf, pad], axis=1))
    bad = cusolver.orgqr(qbuf, m, ncols, k, tau)
    if bad is None:
        return None
    _check_bad(bad, "qr", "QR factorisation failed")
    Q = C.contiguous(matrix_transpose(qbuf))  # (B, m, ncols)
    return reshape(Q, batch + (m, ncols)), reshape(R, batch + (rows, n))
