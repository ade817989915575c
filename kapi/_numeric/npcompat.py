"""NumPy- and dpnp-named functions on kapi arrays (`import kapi as dpnp`, and NumPy's own
functions called on kapi arrays through __array_function__): each runs on the device of its
array operands, built on the array API namespace (kapi/_numeric/array_api); NumPy's names,
argument names and defaults. `IMPLEMENTED` maps NumPy's functions to these."""

from __future__ import annotations

import builtins
import operator

import numpy as np

from .._memory.array import Array
from . import array_api as xp
from . import histogram as _histogram
from . import ufunc as _ufunc
from .array_api import _core as C
from .array_api import fourier as _fft
from .array_api import linear_algebra as _linalg
from .array_api import manipulation as M
from .array_api import statistics as S


def _arr(a, what: str = "this function") -> Array:
    if isinstance(a, Array):
        return a
    raise TypeError(
        f"kapi.{what} takes kapi arrays, not {type(a).__name__}; make one with "
        "kapi.asarray(x, device=...)"
    )


def _no(kwargs: dict, what: str) -> None:
    bad = [k for k, v in kwargs.items() if v is not None and v is not np._NoValue]
    if bad:
        raise TypeError(f"kapi.{what} does not take " + ", ".join(f"{k}=" for k in bad))


def _out(r: Array, out, what: str) -> Array:
    if out is None:
        return C.concrete(r) if isinstance(r, Array) else r
    if isinstance(out, tuple):
        out = out[0]
    _ufunc.check_out(out, r.shape, r.dtype, what, "unsafe")
    C.copy_into(out, r)
    return out


# -- host transfer and creation ---------------------------------------------------------------


def asnumpy(a, order="C"):
    """A NumPy copy of a kapi array on the host (dpnp.asnumpy); other objects through
    numpy.asarray."""
    if isinstance(a, Array):
        r = a.asnumpy()
        return np.asarray(r, order=order) if order in ("C", "F") else r
    return np.asarray(a, order=order)


def _queue(device, sycl_queue, queue=None):
    from .._memory.device import as_queue

    return as_queue(device, queue if queue is not None else sycl_queue)


def array(
    obj, dtype=None, *, copy=True, order="K", ndmin=0, device=None, usm_type=None,
    sycl_queue=None,
):  # fmt: skip
    """dpnp.array: a kapi array of obj (a copy unless copy=False allows a view)."""
    from .._memory.array import asarray as _asarray

    a = _asarray(obj, dtype=dtype, order=order, device=device, usm_type=usm_type,
                 sycl_queue=sycl_queue, copy=True if copy else None)  # fmt: skip
    if ndmin > a.ndim:
        a = a.reshape((1,) * (ndmin - a.ndim) + a.shape)
    return a


def copy(a, order="K"):
    return _arr(a, "copy").copy("F" if order == "F" else "C")


def linspace(
    start, stop, /, num=50, *, dtype=None, device=None, usm_type=None, sycl_queue=None,
    endpoint=True, retstep=False, axis=0,
):  # fmt: skip
    q = _queue(device, sycl_queue)
    r = xp.linspace(start, stop, num, dtype=dtype, device=q, endpoint=endpoint)
    if axis != 0:
        raise TypeError("kapi.linspace takes scalar start and stop (axis=0 only)")
    if retstep:
        return r, (stop - start) / ((num - 1) if endpoint else num)
    return r


def eye(N, M=None, /, *, k=0, dtype=None, order="C", device=None, usm_type=None,
        sycl_queue=None):  # fmt: skip
    return xp.eye(N, M, k=k, dtype=dtype, device=_queue(device, sycl_queue))


def identity(n, /, dtype=None, *, device=None, usm_type=None, sycl_queue=None):
    return xp.eye(n, dtype=dtype, device=_queue(device, sycl_queue))


def meshgrid(*xi, indexing="xy"):
    return xp.meshgrid(*xi, indexing=indexing)


def tril(m, /, k=0):
    return xp.tril(m, k=k)


def triu(m, /, k=0):
    return xp.triu(m, k=k)


# -- manipulation -----------------------------------------------------------------------------


def reshape(a, /, newshape=None, order="C", copy=None, *, shape=None):
    shape = shape if shape is not None else newshape
    return _arr(a, "reshape").reshape(shape, order=order, copy=copy)


def ravel(a, order="C"):
    return _arr(a, "ravel").reshape((-1,), order="F" if order == "F" else "C")


def transpose(a, axes=None):
    a = _arr(a, "transpose")
    return a.T if axes is None else M.permute_dims(a, tuple(axes))


def swapaxes(a, axis1, axis2):
    a = _arr(a, "swapaxes")
    perm = list(range(a.ndim))
    i, j = C.normalise_axis(axis1, a.ndim), C.normalise_axis(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return M.permute_dims(a, tuple(perm))


def moveaxis(a, source, destination):
    return M.moveaxis(a, source, destination)


def expand_dims(a, axis):
    return M.expand_dims(a, axis=axis)


def squeeze(a, axis=None):
    a = _arr(a, "squeeze")
    if axis is None:
        axis = tuple(d for d in range(a.ndim) if a.shape[d] == 1)
    return M.squeeze(a, axis)


def concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    r = M.concat(list(arrays), axis=axis)
    if dtype is not None:
        r = C.concrete(r.astype(dtype))
    return _out(r, out, "concatenate")


def stack(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    r = M.stack(list(arrays), axis=axis)
    if dtype is not None:
        r = C.concrete(r.astype(dtype))
    return _out(r, out, "stack")


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [a if a.ndim else a.reshape((1,)) for a in tup]
    return concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [a.reshape((1, -1)) if a.ndim < 2 else a for a in tup]
    return concatenate(arrs, axis=0, dtype=dtype)


def flip(m, axis=None):
    return M.flip(m, axis=axis)


def roll(a, shift, axis=None):
    return M.roll(a, shift, axis=axis)


def tile(A, reps):
    return M.tile(A, reps if isinstance(reps, (tuple, list)) else (reps,))


def repeat(a, repeats, axis=None):
    return M.repeat(a, repeats, axis=axis)


def broadcast_to(array, shape, subok=False):
    return M.broadcast_to(array, tuple(shape) if not isinstance(shape, int) else (shape,))


def broadcast_arrays(*args, subok=False):
    return M.broadcast_arrays(*args)


def atleast_1d(*arys):
    r = [a if a.ndim >= 1 else a.reshape((1,)) for a in arys]
    return r[0] if len(r) == 1 else r


def atleast_2d(*arys):
    r = [a if a.ndim >= 2 else a.reshape((1,) * (2 - a.ndim) + a.shape) for a in arys]
    return r[0] if len(r) == 1 else r


# -- element-wise: NumPy's ufunc names ----------------------------------------------------------

_UFUNC_NAMES = (
    "add subtract multiply divide true_divide floor_divide power float_power remainder mod "
    "fmod negative positive absolute fabs sign sqrt square cbrt exp exp2 expm1 log log2 log10 "
    "log1p logaddexp logaddexp2 sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh "
    "arcsinh arccosh arctanh hypot floor ceil trunc rint maximum minimum fmax fmin "
    "logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor invert "
    "left_shift right_shift equal not_equal less less_equal greater greater_equal isnan isinf "
    "isfinite signbit copysign reciprocal conjugate conj deg2rad rad2deg degrees radians "
    "gcd lcm ldexp"
).split()


def _ufunc_function(uf):
    def f(*args, out=None, where=True, casting="same_kind", order="K", dtype=None, **kw):
        if where is not True:
            raise TypeError(f"kapi.{uf.__name__} does not take where=")
        if kw:
            raise TypeError(f"kapi.{uf.__name__} does not take " + ", ".join(kw))
        if isinstance(out, tuple):
            out = out[0]
        if not builtins.any(isinstance(a, Array) for a in args):
            raise TypeError(
                f"kapi.{uf.__name__} takes kapi arrays (with scalars), not "
                + ", ".join(type(a).__name__ for a in args)
            )
        r = _ufunc.apply(uf, args, out=out, casting=casting)
        if dtype is not None and r.dtype != np.dtype(dtype):
            r = r.astype(dtype)
        return r

    f.__name__ = f.__qualname__ = uf.__name__
    f.__doc__ = f"numpy.{uf.__name__} on the device of its kapi array operands."
    return f


UFUNCS = {n: _ufunc_function(getattr(np, n)) for n in _UFUNC_NAMES}
UFUNCS["abs"] = UFUNCS["absolute"]
UFUNCS["bitwise_not"] = UFUNCS["invert"]
UFUNCS["bitwise_invert"] = UFUNCS["invert"]
globals().update(UFUNCS)


def around(a, decimals=0, out=None):
    a = _arr(a, "around")
    if decimals == 0:
        r = xp.round(a)
    else:
        s = 10.0**decimals
        r = _ufunc.apply(np.true_divide, (_ufunc.apply(np.rint, (a * s,)), s))
        if a.dtype.kind in "iu":
            r = r.astype(a.dtype)
    return _out(r, out, "around")


round = around  # noqa: A001


def real(val):
    return xp.real(_arr(val, "real"))


def imag(val):
    return xp.imag(_arr(val, "imag"))


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    return _out(xp.clip(_arr(a, "clip"), lo, hi), out, "clip")


# -- reductions and statistics ------------------------------------------------------------------


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no({"initial": initial, "where": where}, "sum")
    return _out(S.sum(_arr(a, "sum"), axis=_axis(axis), dtype=dtype, keepdims=keepdims), out,
                "sum")  # fmt: skip


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no({"initial": initial, "where": where}, "prod")
    return _out(S.prod(_arr(a, "prod"), axis=_axis(axis), dtype=dtype, keepdims=keepdims), out,
                "prod")  # fmt: skip


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _no({"where": where}, "mean")
    a = _arr(a, "mean")
    if dtype is not None:
        a = a.astype(dtype)
    elif a.dtype.kind in "iub":
        a = a.astype(C.default_float(a.sycl_queue))
    return _out(S.mean(a, axis=_axis(axis), keepdims=keepdims), out, "mean")


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):  # fmt: skip
    _no({"where": where, "mean": mean}, "var")
    a = _arr(a, "var")
    if dtype is not None:
        a = a.astype(dtype)
    elif a.dtype.kind in "iub":
        a = a.astype(C.default_float(a.sycl_queue))
    corr = correction if correction is not None else ddof
    return _out(S.var(a, axis=_axis(axis), correction=corr, keepdims=keepdims), out, "var")


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):  # fmt: skip
    v = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _out(xp.sqrt(v), out, "std")


def _minmax(f, name):
    def g(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        _no({"initial": initial, "where": where}, name)
        return _out(f(_arr(a, name), axis=_axis(axis), keepdims=keepdims), out, name)

    g.__name__ = name
    return g


amax = max = _minmax(S.max, "max")  # noqa: A001
amin = min = _minmax(S.min, "min")  # noqa: A001


def argmax(a, axis=None, out=None, *, keepdims=False):
    return _out(xp.argmax(_arr(a, "argmax"), axis=axis, keepdims=keepdims), out, "argmax")


def argmin(a, axis=None, out=None, *, keepdims=False):
    return _out(xp.argmin(_arr(a, "argmin"), axis=axis, keepdims=keepdims), out, "argmin")


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    _no({"where": where}, "all")
    return _out(S.all(_arr(a, "all"), axis=_axis(axis), keepdims=keepdims), out, "all")


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    _no({"where": where}, "any")
    return _out(S.any(_arr(a, "any"), axis=_axis(axis), keepdims=keepdims), out, "any")


def count_nonzero(a, axis=None, *, keepdims=False):
    return xp.count_nonzero(_arr(a, "count_nonzero"), axis=_axis(axis), keepdims=keepdims)


def nonzero(a):
    return xp.nonzero(_arr(a, "nonzero"))


def argwhere(a):
    return xp.stack(list(xp.nonzero(_arr(a, "argwhere"))), axis=1)


def searchsorted(a, v, side="left", sorter=None):
    return xp.searchsorted(_arr(a, "searchsorted"), v, side=side, sorter=sorter)


def _in_weights_type(hist: Array, w: Array) -> Array:
    """Sums of weights in NumPy's result type, the weights' own."""
    return hist if hist.dtype == w.dtype else xp.astype(hist, w.dtype)


def histogram(a, bins=10, range=None, density=None, weights=None):
    """NumPy's histogram of a kapi array on its device: `bins` equal bins over `range` (the
    data's minimum to maximum by default; the last bin includes its right edge), or the bin
    edges themselves as a 1-d array; with `weights`, each value counts its weight. Returns
    (hist, bin_edges), both kapi arrays."""
    a = _arr(a, "histogram").reshape((-1,))
    q = a.sycl_queue
    if isinstance(bins, str):
        raise TypeError("kapi.histogram takes a number of bins or their edges, not a rule name")
    if isinstance(bins, int | np.integer):
        n = int(bins)
        if n < 1:
            raise ValueError(f"kapi.histogram: bins must be a positive integer, not {n}")
        if range is not None:
            lo, hi = (float(v) for v in range)
            if lo > hi:
                raise ValueError("kapi.histogram: max must be larger than min in range parameter.")
        elif a.size:
            lo, hi = float(S.min(a)), float(S.max(a))
        else:
            lo, hi = 0.0, 1.0
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        ftype = np.result_type(a.dtype, np.float16) if a.dtype.kind == "f" else np.float64
        scale = n / (hi - lo)  # the counts' estimate of a value's bin (else a search)
        equal = (lo, scale) if np.isfinite(scale) and scale > 0 and np.isfinite(lo) else None
        edges = xp.linspace(lo, hi, n + 1, dtype=np.dtype(np.float64), device=q)
        edges = xp.astype(edges, ftype) if ftype != np.float64 else edges
    else:
        edges = bins if isinstance(bins, Array) else xp.asarray(np.asarray(bins), device=q)
        if edges.ndim != 1 or edges.shape[0] < 2:
            raise ValueError("kapi.histogram: bins must be an integer or a 1-d array of edges")
        n = edges.shape[0] - 1
        equal = None
    w = None
    if weights is not None:
        w = _arr(weights, "histogram").reshape((-1,))
        if w.shape != a.shape:
            raise ValueError("kapi.histogram: weights should have the same shape as a.")
        C.check_devices([a, w], "histogram")
    common = _histogram.supported(a, edges, w)
    if common is not None:  # counts or sums without sorting (histogram.py)
        if w is None:
            hist = _histogram.counts(a, edges, common, equal)
        else:
            hist = _in_weights_type(_histogram.sums(a, w, edges, common, equal), w)
        if density:
            hist = _density(hist, edges)
        return hist, edges
    # bin of each value: the last edge below or at it (the right edge closes the last bin);
    # values outside get bin n and are not counted
    idx = xp.searchsorted(edges, a, side="right") - 1
    last = _ufunc.apply(np.equal, (a, edges[n : n + 1]))
    idx = xp.where(last, xp.asarray(n - 1, device=q), idx)
    outside = _ufunc.apply(np.logical_or, (idx < 0, idx >= n))
    idx = xp.where(outside, xp.asarray(n, device=q), idx)
    order = xp.argsort(idx)
    bounds = xp.searchsorted(xp.take(idx, order), xp.arange(n + 1, dtype=idx.dtype, device=q))
    if weights is None:
        hist = xp.astype(bounds[1:] - bounds[:-1], np.dtype(np.int64))
    else:
        # running sums in the widest float: their differences cancel (float32's lost 1e-4
        # of a bin at 2^22 values)
        wide = {"f": C.default_float(q), "c": C.default_complex(q)}.get(w.dtype.kind)
        sums = xp.cumulative_sum(xp.take(w, order), include_initial=True, dtype=wide)
        per_bin = C.concrete(xp.take(sums, bounds[1:]) - xp.take(sums, bounds[:-1]))
        hist = _in_weights_type(per_bin, w)
    if density:
        hist = _density(hist, edges)
    return hist, edges


def _density(hist, edges):
    widths = xp.astype(edges[1:] - edges[:-1], np.dtype(np.float64))
    return C.concrete(hist / widths / S.sum(hist))


def diff(a, n=1, axis=-1, prepend=None, append=None):
    return xp.diff(_arr(a, "diff"), axis=axis, n=n, prepend=prepend, append=append)


def take(a, indices, axis=None, out=None, mode="wrap"):
    a = _arr(a, "take")
    if axis is None:
        a = a.reshape((-1,))
        axis = 0
    idx = indices if isinstance(indices, Array) else xp.asarray(indices, device=a.sycl_queue)
    flat = idx.reshape((-1,))
    r = xp.take(a, flat, axis=axis)
    ax = C.normalise_axis(axis, a.ndim)
    return _out(r.reshape(a.shape[:ax] + idx.shape + a.shape[ax + 1 :]), out, "take")


def take_along_axis(arr, indices, axis):
    return xp.take_along_axis(arr, indices, axis=axis)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a = a if isinstance(a, Array) else _arr(b, "isclose").dtype.type(a)
    diff = xp.abs(_ufunc.apply(np.subtract, (a, b)))
    tol = _ufunc.apply(np.add, (atol, _ufunc.apply(np.multiply, (rtol, xp.abs(b)))))
    close = _ufunc.apply(np.less_equal, (diff, tol))
    same = _ufunc.apply(np.equal, (a, b))  # infinities of one sign
    r = _ufunc.apply(np.logical_or, (close, same))
    if equal_nan:
        both = _ufunc.apply(np.logical_and, (_ufunc.apply(np.isnan, (a,)),
                                             _ufunc.apply(np.isnan, (b,))))  # fmt: skip
        r = _ufunc.apply(np.logical_or, (r, both))
    return C.concrete(r)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(S.all(isclose(a, b, rtol, atol, equal_nan)))


def array_equal(a1, a2, equal_nan=False):
    a1, a2 = _arr(a1, "array_equal"), _arr(a2, "array_equal")
    if a1.shape != a2.shape:
        return False
    eq = _ufunc.apply(np.equal, (a1, a2))
    if equal_nan:
        eq = _ufunc.apply(np.logical_or, (eq, _ufunc.apply(np.logical_and, (
            _ufunc.apply(np.isnan, (a1,)), _ufunc.apply(np.isnan, (a2,))))))  # fmt: skip
    return bool(S.all(eq))


def where(condition, x=None, y=None):
    if x is None and y is None:
        return nonzero(condition)
    return _ufunc.where(condition, x, y)


# -- linear algebra -----------------------------------------------------------------------------


def matmul(x1, x2, /, out=None, **kwargs):
    if kwargs:
        raise TypeError("kapi.matmul does not take " + ", ".join(kwargs))
    return _out(_linalg.matmul(_arr(x1, "matmul"), _arr(x2, "matmul")), out, "matmul")


def dot(a, b, out=None):
    a, b = _arr(a, "dot"), _arr(b, "dot")
    if a.ndim == 0 or b.ndim == 0:
        r = _ufunc.apply(np.multiply, (a, b))
    elif b.ndim <= 2:
        r = _linalg.matmul(a, b)
    else:
        r = _linalg.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))
    return _out(r, out, "dot")


def vdot(a, b):
    a, b = _arr(a, "vdot").reshape((-1,)), _arr(b, "vdot").reshape((-1,))
    return _linalg.vecdot(a, b)


def inner(a, b):
    a, b = _arr(a, "inner"), _arr(b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return C.concrete(_ufunc.apply(np.multiply, (a, b)))
    return _linalg.tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def outer(a, b, out=None):
    return _out(_linalg.outer(_arr(a, "outer").reshape((-1,)), _arr(b, "outer").reshape((-1,))),
                out, "outer")  # fmt: skip


def tensordot(a, b, axes=2):
    return _linalg.tensordot(a, b, axes=axes)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    a = _arr(a, "trace")
    m = M.moveaxis(a, (axis1, axis2), (-2, -1))
    return _out(_linalg.trace(m, offset=offset, dtype=dtype), out, "trace")


def cumsum(a, axis=None, dtype=None, out=None):
    from .scan import cumsum as _cumsum

    return _cumsum(_arr(a, "cumsum"), axis=axis, dtype=dtype, out=out)


def cumprod(a, axis=None, dtype=None, out=None):
    from .scan import cumprod as _cumprod

    return _cumprod(_arr(a, "cumprod"), axis=axis, dtype=dtype, out=out)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    from .sort import sort as _sort

    return _sort(_arr(a, "sort"), axis=axis, kind=kind, order=order)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    from .sort import argsort as _argsort

    return _argsort(_arr(a, "argsort"), axis=axis, kind=kind, order=order)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True):  # fmt: skip
    if axis is not None:
        raise TypeError("kapi.unique does not take axis= (it flattens the array)")
    from .sort import unique as _unique

    if not (return_index or return_inverse):
        return _unique(_arr(ar, "unique"), return_counts=return_counts)
    r = xp.unique_all(_arr(ar, "unique"))
    out = [r.values]
    if return_index:
        out.append(r.indices)
    if return_inverse:
        out.append(r.inverse_indices)
    if return_counts:
        out.append(r.counts)
    return tuple(out)


def full(shape, fill_value, dtype=None, order="C", *, like=None, device=None, usm_type="device",
         sycl_queue=None):  # fmt: skip
    from .._memory.array import full as _full

    return _full(shape, fill_value, dtype, order, device=device, usm_type=usm_type,
                 sycl_queue=sycl_queue)  # fmt: skip


# NumPy's functions that run on kapi arrays through __array_function__, by NumPy's name
IMPLEMENTED_NAMES = (
    "concatenate stack hstack vstack reshape ravel transpose swapaxes moveaxis expand_dims "
    "squeeze flip roll tile repeat broadcast_to broadcast_arrays atleast_1d atleast_2d around "
    "round real imag clip sum prod mean var std amax amin max min argmax argmin all any "
    "count_nonzero nonzero argwhere searchsorted diff take take_along_axis isclose allclose "
    "array_equal where matmul dot vdot inner outer tensordot trace cumsum cumprod sort "
    "argsort unique copy tril triu meshgrid histogram"
).split()


def _ns():
    g = globals()
    return {n: g[n] for n in IMPLEMENTED_NAMES}


IMPLEMENTED = {getattr(np, n): f for n, f in _ns().items() if hasattr(np, n)}
IMPLEMENTED.update({getattr(np.linalg, n): getattr(_linalg, n) for n in (
    "cholesky det eigh eigvalsh inv pinv qr slogdet solve svd matrix_rank matrix_power "
    "outer cross diagonal trace matrix_norm vector_norm tensordot vecdot matmul "
    "svdvals matrix_transpose").split() if hasattr(np.linalg, n)})  # fmt: skip
IMPLEMENTED.update({getattr(np.fft, n): getattr(_fft, n) for n in _fft.FFT})
_ = (operator, xp)
