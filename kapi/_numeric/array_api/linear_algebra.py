"""Linear algebra of the array API: matmul, tensordot, vecdot and the linalg extension.

matmul runs where the arrays live: on kapi's CPU device (host memory) through the BLAS NumPy
links, reading and writing the arrays in place (no copy); on NVIDIA GPUs through cuBLAS when
libcublas can be loaded (kapi/_numeric/array_api/cublas.py); elsewhere as a tiled kapi
kernel. The decompositions and solvers of the extension (cholesky, det, eigh, inv, qr,
solve, svd, ...) run through NumPy's LAPACK on host-memory arrays. On other devices, solve,
inv, det, slogdet and cholesky run as kapi kernels (LU with partial pivoting and Cholesky,
one work-item per matrix: _linalg_kernels.py; KAPI_LINALG=kernel forces them on the CPU
device too); solve, inv, det, slogdet, cholesky, eigh, eigvalsh, svd, svdvals and qr through
cuSOLVER on NVIDIA GPUs where it loads (cusolver.py), and pinv, matrix_rank and
matrix_norm's 2-norms from svd and svdvals (its other orders are reductions, on any device).
Without cuSOLVER the ones it alone provides raise TypeError there, never copying to the host
silently.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from ..._memory.array import Array
from .. import ufunc as _ufunc
from . import _core as C
from .manipulation import broadcast_to, expand_dims, matrix_transpose, permute_dims, reshape

_TILE = 16
_MATMUL = """
def _matmul(it, a, b, c, n, m, kk, ta, tb):
    z = it.get_global_id(0)
    i = it.get_global_id(1)
    j = it.get_global_id(2)
    li = it.get_local_id(1)
    lj = it.get_local_id(2)
    acc = ZERO
    t = 0
    while t < kk:
        if i < n and t + lj < kk:
            ta[li, lj] = a[z, i, t + lj]
        else:
            ta[li, lj] = ZERO
        if j < m and t + li < kk:
            tb[li, lj] = b[z, t + li, j]
        else:
            tb[li, lj] = ZERO
        K.group_barrier(it.get_group())
        for q in range(TILE):
            acc += ta[li, q] * tb[q, lj]
        K.group_barrier(it.get_group())
        t += TILE
    if i < n and j < m:
        c[z, i, j] = acc
"""


def _host(*arrays) -> bool:
    return builtins.all(a._host_ok for a in arrays)


def _np_view(a: Array) -> np.ndarray:
    """A NumPy view of a host-memory kapi array (its queue's work done first)."""
    return C.concrete(a)._host_view()


def _matmul_kernel(a3: Array, b3: Array, out3: Array) -> None:
    from kapi_lang import kernel_api as K

    from ..._kernel.ranges import NdRange
    from ..replay import launch

    bsz, n, kk = a3.shape
    m = b3.shape[2]
    dt = out3.dtype
    T = _TILE
    k = C.kernel(_MATMUL, "_matmul", ZERO=dt.type(0), TILE=T)
    ta = K.LocalAccessor((T, T), dt)
    tb = K.LocalAccessor((T, T), dt)
    rng = NdRange((bsz, -(-n // T) * T, -(-m // T) * T), (1, T, T))
    launch(k, rng, a3, b3, out3, np.int64(n), np.int64(m), np.int64(kk), ta, tb)


def _as3(x: Array, batch, rows: int, cols: int) -> Array:
    """x broadcast to batch + (rows, cols), seen as (B, rows, cols) (a view where the batch
    axes merge, else a copy)."""
    v = broadcast_to(x, tuple(batch) + (rows, cols))
    bsz = int(np.prod(batch, dtype=np.int64))
    nb = len(batch)
    st = v.strides[:nb]
    merged = None
    if nb == 0:
        merged = 0
    else:
        dims = [(n, s) for n, s in zip(batch, st, strict=True) if n != 1]
        if not dims:
            merged = 0
        elif builtins.all(s0 == s1 * n1 for (_, s0), (n1, s1) in zip(dims, dims[1:], strict=False)):
            merged = dims[-1][1]
    if merged is None:
        v = C.contiguous(v)
        merged = rows * cols * v.itemsize
    return C.view(v, (bsz, rows, cols), (merged, v.strides[-2], v.strides[-1]))


def matmul(x1, x2, /):
    C.check(x1, "matmul")
    C.check(x2, "matmul")
    C.check_devices([x1, x2], "matmul")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("matmul does not take 0-d arrays")
    from .dtypes import result_type

    dt = result_type(x1, x2)
    a = expand_dims(x1, axis=0) if x1.ndim == 1 else x1
    b = expand_dims(x2, axis=-1) if x2.ndim == 1 else x2
    n, k = a.shape[-2:]
    k2, m = b.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: shapes {x1.shape} and {x2.shape} do not align ({k} != {k2})")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = C.concrete(a.astype(dt) if a.dtype != dt else a)
    b = C.concrete(b.astype(dt) if b.dtype != dt else b)
    out = C.allocate(tuple(batch) + (n, m), dt, x1)
    if out.size:
        if k == 0:
            out.fill(0)
        elif _host(a, b, out):
            np.matmul(_np_view(a), _np_view(b), out=out._host_view())
        else:
            from . import cublas

            a3, b3, out3 = _as3(a, batch, n, k), _as3(b, batch, k, m), out.reshape((-1, n, m))
            if not cublas.matmul(a3, b3, out3):
                _matmul_kernel(a3, b3, out3)
    shape = tuple(batch) + ((n,) if x1.ndim > 1 else ()) + ((m,) if x2.ndim > 1 else ())
    return out.reshape(shape)


def tensordot(x1, x2, /, *, axes=2):
    C.check(x1, "tensordot")
    C.check(x2, "tensordot")
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError("tensordot: axes must be non-negative")
        a1 = list(range(x1.ndim - axes, x1.ndim))
        a2 = list(range(axes))
    else:
        a1, a2 = (list(a) for a in axes)
        a1 = [C.normalise_axis(a, x1.ndim) for a in a1]
        a2 = [C.normalise_axis(a, x2.ndim) for a in a2]
    if len(a1) != len(a2):
        raise ValueError("tensordot: the axes lists must have one length")
    for p, q in zip(a1, a2, strict=True):
        if x1.shape[p] != x2.shape[q] and x1.shape[p] != 1 and x2.shape[q] != 1:
            raise ValueError(f"tensordot: axis {p} of x1 and {q} of x2 differ in length")
    free1 = [d for d in range(x1.ndim) if d not in a1]
    free2 = [d for d in range(x2.ndim) if d not in a2]
    kshape = tuple(builtins.max(x1.shape[p], x2.shape[q]) for p, q in zip(a1, a2, strict=True))
    kn = int(np.prod(kshape, dtype=np.int64))
    s1 = tuple(x1.shape[d] for d in free1)
    s2 = tuple(x2.shape[d] for d in free2)
    t1 = broadcast_to(permute_dims(x1, tuple(free1 + a1)), s1 + kshape)
    t2 = broadcast_to(permute_dims(x2, tuple(a2 + free2)), kshape + s2)
    m1 = reshape(t1, (int(np.prod(s1, dtype=np.int64)), kn))
    m2 = reshape(t2, (kn, int(np.prod(s2, dtype=np.int64))))
    return reshape(matmul(m1, m2), s1 + s2)


def vecdot(x1, x2, /, *, axis=-1):
    from .elementwise import conj
    from .statistics import sum as _sum

    C.check(x1, "vecdot")
    C.check(x2, "vecdot")
    nd = builtins.max(x1.ndim, x2.ndim)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("vecdot does not take 0-d arrays")
    ax = operator.index(axis)
    if not -nd <= ax < nd:
        raise np.exceptions.AxisError(ax, nd)
    a1 = ax if ax < 0 else ax - nd
    if -a1 > x1.ndim or -a1 > x2.ndim or x1.shape[a1] != x2.shape[a1]:
        raise ValueError(f"vecdot: shapes {x1.shape} and {x2.shape} differ along axis {axis}")
    from .dtypes import result_type

    a = conj(x1) if x1.dtype.kind == "c" else x1
    return _sum(_ufunc.apply(np.multiply, (a, x2)), axis=a1, dtype=result_type(x1, x2))


# -- the linalg extension --------------------------------------------------------------------


def _lapack(name: str, fn, *arrays, float_only=True):
    for a in arrays:
        C.check(a, f"linalg.{name}")
    if not _host(*arrays):
        raise TypeError(
            f"kapi.array_api.linalg.{name} runs on host-memory arrays (kapi's CPU device) "
            f"through NumPy's LAPACK; this array is on '{arrays[0].device.filter_string}', "
            f"where kapi has no {name} (its device solvers are solve, inv, det, slogdet and "
            "cholesky; eigh, eigvalsh, qr, svd and the SVD's users through cuSOLVER on NVIDIA "
            "GPUs): copy it explicitly with kapi.asnumpy(x) and use "
            f"numpy.linalg.{name}"
        )
    views = [_np_view(a) for a in arrays]
    res = fn(*views)
    q = arrays[0].sycl_queue

    def back(r):
        if isinstance(r, tuple):
            return (
                type(r)(*(back(v) for v in r))
                if hasattr(r, "_fields")
                else tuple(back(v) for v in r)
            )
        r = np.asarray(r)
        from .creation import asarray

        return asarray(r, device=q)

    return back(res)


def _kernels(*arrays) -> bool:
    """Whether the solvers run as kapi kernels: arrays not in host memory, or KAPI_LINALG=kernel
    (which forces them on the CPU device too)."""
    import os

    for a in arrays:
        C.check(a, "linalg")
    C.check_devices(arrays, "linalg")
    return not _host(*arrays) or os.environ.get("KAPI_LINALG", "") == "kernel"


def cholesky(x, /, *, upper=False):
    if _kernels(x):
        from . import _linalg_kernels as LK

        return LK.cholesky(x, upper)

    def f(a):
        lo = np.linalg.cholesky(a)
        return np.conj(np.swapaxes(lo, -1, -2)) if upper else lo

    return _lapack("cholesky", f, x)


def det(x, /):
    if _kernels(x):
        from . import _linalg_kernels as LK

        return LK.det(x)
    return _lapack("det", np.linalg.det, x)


def eigh(x, /):
    from collections import namedtuple

    if _kernels(x):
        from . import _linalg_kernels as LK

        r = LK.eigh(x, True)
        if r is not None:
            return namedtuple("EighResult", "eigenvalues eigenvectors")(*r)
    r = _lapack("eigh", lambda a: tuple(np.linalg.eigh(a)), x)
    return namedtuple("EighResult", "eigenvalues eigenvectors")(*r)


def eigvalsh(x, /):
    if _kernels(x):
        from . import _linalg_kernels as LK

        r = LK.eigh(x, False)
        if r is not None:
            return r[0]
    return _lapack("eigvalsh", np.linalg.eigvalsh, x)


def inv(x, /):
    if _kernels(x):
        from . import _linalg_kernels as LK

        return LK.inv(x)
    return _lapack("inv", np.linalg.inv, x)


def pinv(x, /, *, rtol=None):
    if _kernels(x):
        from .elementwise import FUNCTIONS as F
        from .searching import where

        u, sv, vh = svd(x, full_matrices=False)
        keep = _ufunc.apply(np.greater, (sv, _cutoff(x, sv, rtol)))
        one = _ufunc.apply(np.divide, (1, sv))
        sinv = where(keep, one, _ufunc.apply(np.multiply, (sv, 0)))
        # pinv = V diag(1/s) U^H, s below the cutoff dropped
        vs = _ufunc.apply(
            np.multiply, (F["conj"](matrix_transpose(vh)), expand_dims(sinv, axis=-2))
        )
        return matmul(C.concrete(vs), C.contiguous(F["conj"](matrix_transpose(u))))
    return _lapack("pinv", lambda a: np.linalg.pinv(a, rtol=rtol), x)


def _cutoff(x, sv, rtol):
    """rtol * the largest singular value, per matrix (keepdims); rtol defaults to
    max(M, N) * eps of x's precision, as the standard says."""
    from .statistics import max as _max

    if rtol is None:
        rtol = builtins.max(x.shape[-2:]) * float(np.finfo(sv.dtype).eps)
    elif isinstance(rtol, Array):
        rtol = expand_dims(rtol, axis=-1)
    return _ufunc.apply(np.multiply, (_max(sv, axis=-1, keepdims=True), rtol))


def matrix_rank(x, /, *, rtol=None):
    if _kernels(x):
        from .searching import count_nonzero

        sv = svdvals(x)
        big = _ufunc.apply(np.greater, (sv, _cutoff(x, sv, rtol)))
        return C.concrete(count_nonzero(big, axis=-1))
    return _lapack("matrix_rank", lambda a: np.linalg.matrix_rank(a, rtol=rtol), x)


def qr(x, /, *, mode="reduced"):
    from collections import namedtuple

    if _kernels(x):
        from . import _linalg_kernels as LK

        r = LK.qr(x, mode)
        if r is not None:
            return namedtuple("QRResult", "Q R")(*r)
    r = _lapack("qr", lambda a: tuple(np.linalg.qr(a, mode=mode)), x)
    return namedtuple("QRResult", "Q R")(*r)


def slogdet(x, /):
    from collections import namedtuple

    if _kernels(x):
        from . import _linalg_kernels as LK

        return namedtuple("SlogdetResult", "sign logabsdet")(*LK.slogdet(x))
    r = _lapack("slogdet", lambda a: tuple(np.linalg.slogdet(a)), x)
    return namedtuple("SlogdetResult", "sign logabsdet")(*r)


def solve(x1, x2, /):
    if _kernels(x1, x2):
        from . import _linalg_kernels as LK

        return LK.solve(x1, x2)

    def f(a, b):
        if b.ndim == 1:
            return np.linalg.solve(a, b[..., None])[..., 0] if a.ndim > 2 else np.linalg.solve(a, b)
        return np.linalg.solve(a, b)

    return _lapack("solve", f, x1, x2)


def svd(x, /, *, full_matrices=True):
    from collections import namedtuple

    if _kernels(x):
        from . import _linalg_kernels as LK

        r = LK.svd(x, full_matrices, True)
        if r is not None:
            return namedtuple("SVDResult", "U S Vh")(*r)
    r = _lapack("svd", lambda a: tuple(np.linalg.svd(a, full_matrices=full_matrices)), x)
    return namedtuple("SVDResult", "U S Vh")(*r)


def svdvals(x, /):
    if _kernels(x):
        from . import _linalg_kernels as LK

        r = LK.svd(x, False, False)
        if r is not None:
            return r[1]
    return _lapack("svdvals", lambda a: np.linalg.svd(a, compute_uv=False), x)


def matrix_power(x, n, /):
    C.check(x, "linalg.matrix_power")
    n = operator.index(n)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError("matrix_power takes square matrices")
    if n < 0:
        return matrix_power(inv(x), -n)
    from .creation import eye

    result = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    if result is None:
        e = eye(x.shape[-1], dtype=x.dtype, device=x.sycl_queue)
        result = C.contiguous(broadcast_to(e, x.shape))
    return result


def diagonal(x, /, *, offset=0):
    C.check(x, "linalg.diagonal")
    if x.ndim < 2:
        raise ValueError("diagonal takes arrays of at least 2 dimensions")
    n, m = x.shape[-2:]
    offset = operator.index(offset)
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    length = builtins.max(0, builtins.min(n - r0, m - c0))
    s = x.strides
    off = r0 * s[-2] + c0 * s[-1] if length else 0
    return C.view(x, x.shape[:-2] + (length,), s[:-2] + (s[-2] + s[-1],), off)


def trace(x, /, *, offset=0, dtype=None):
    from .statistics import sum as _sum

    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def outer(x1, x2, /):
    C.check(x1, "linalg.outer")
    C.check(x2, "linalg.outer")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("outer takes 1-D arrays")
    return C.concrete(_ufunc.apply(np.multiply, (expand_dims(x1, axis=1), x2)))


def cross(x1, x2, /, *, axis=-1):
    from .manipulation import broadcast_arrays, stack

    C.check(x1, "linalg.cross")
    C.check(x2, "linalg.cross")
    a, b = broadcast_arrays(x1, x2)
    ax = C.normalise_axis(axis, a.ndim)
    if a.shape[ax] != 3:
        raise ValueError("cross takes vectors of length 3 along axis")

    def comp(v, i):
        return v[(slice(None),) * ax + (i,)]

    mul, sub = np.multiply, np.subtract

    def term(i, j):
        return _ufunc.apply(sub, (_ufunc.apply(mul, (comp(a, i), comp(b, j))),
                                  _ufunc.apply(mul, (comp(a, j), comp(b, i)))))  # fmt: skip

    return stack([C.concrete(term(1, 2)), C.concrete(term(2, 0)), C.concrete(term(0, 1))],
                 axis=ax)  # fmt: skip


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    from .elementwise import FUNCTIONS as F
    from .statistics import max as _max
    from .statistics import min as _min
    from .statistics import sum as _sum

    C.check(x, "linalg.vector_norm")
    a = F["abs"](x)
    if a.dtype.kind != "f":
        a = a.astype(C.default_float(x.sycl_queue))
    if axis is None and x.ndim > 0:
        a = reshape(C.concrete(a), (-1,))
        axis_ = 0
        res = vector_norm(a, axis=axis_, keepdims=False, ord=ord)
        if keepdims:
            res = reshape(res, (1,) * x.ndim)
        return res
    if x.ndim == 0:
        return C.concrete(a)
    if ord == np.inf:
        return _max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return _min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return C.concrete(_sum(_ufunc.apply(np.not_equal, (a, 0)), axis=axis,
                               keepdims=keepdims).astype(a.dtype))  # fmt: skip
    if ord == 1:
        return _sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        s = _sum(_ufunc.apply(np.multiply, (a, a)), axis=axis, keepdims=keepdims)
        return C.concrete(_ufunc.apply(np.sqrt, (s,)))
    p = float(ord)
    s = _sum(_ufunc.apply(np.power, (a, p)), axis=axis, keepdims=keepdims)
    return C.concrete(_ufunc.apply(np.power, (s, 1.0 / p)).astype(a.dtype))


def _device_matrix_norm(x, keepdims, ord):
    """matrix_norm off host memory: sums of |x| and their extremes for the 1 and inf orders,
    the singular values (svdvals: cuSOLVER) for 2, -2 and "nuc"."""
    from .elementwise import FUNCTIONS as F
    from .statistics import max as _max
    from .statistics import min as _min
    from .statistics import sum as _sum

    if ord in (1, -1, np.inf, -np.inf):
        a = F["abs"](x)
        if a.dtype.kind != "f":
            a = a.astype(C.default_float(x.sycl_queue))
        rows = _sum(a, axis=-2 if ord in (1, -1) else -1)
        r = (_max if ord in (1, np.inf) else _min)(rows, axis=-1)
    elif ord in (2, -2, "nuc"):
        sv = svdvals(x)
        r = {2: _max, -2: _min, "nuc": _sum}[ord](sv, axis=-1)
    else:
        raise ValueError(
            f'matrix_norm: ord must be "fro", "nuc", 1, -1, 2, -2, inf or -inf, not {ord!r}'
        )
    r = C.concrete(r)
    return reshape(r, r.shape + (1, 1)) if keepdims else r


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    if ord == "fro":
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims, ord=2)
    if _kernels(x):
        return _device_matrix_norm(x, keepdims, ord)
    return _lapack(
        "matrix_norm",
        lambda a: np.linalg.norm(a, ord=ord, axis=(-2, -1), keepdims=keepdims),
        x,
    )


LINALG = dict(
    cholesky=cholesky, cross=cross, det=det, diagonal=diagonal, eigh=eigh,
    eigvalsh=eigvalsh, inv=inv, matmul=matmul, matrix_norm=matrix_norm,
    matrix_power=matrix_power, matrix_rank=matrix_rank, matrix_transpose=matrix_transpose,
    outer=outer, pinv=pinv, qr=qr, slogdet=slogdet, solve=solve, svd=svd, svdvals=svdvals,
    tensordot=tensordot, trace=trace, vecdot=vecdot, vector_norm=vector_norm,
)  # fmt: skip
