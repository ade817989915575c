"""Statistical and utility functions of the array API on the device: reductions
(kapi/_numeric/reduce.py, which reads a lazy operand's expression as it reduces: var's
(x - mean)**2 is never stored), scans (kapi/_numeric/scan.py), complex sums by parts."""

from __future__ import annotations

import builtins

import numpy as np

from ..._memory.array import Array
from .. import reduce as _reduce
from .. import ufunc as _ufunc
from ..scan import scan
from . import _core as C


def _keep_shape(x: Array, axes) -> tuple:
    return tuple(1 if d in axes else n for d, n in enumerate(x.shape))


def _reduce_op(op, x, axis, keepdims):
    """reduce.py's op over axis; an empty axis tuple reduces nothing (a copy)."""
    axes = C.normalise_axes(axis, x.ndim)
    if x.ndim == 0 or (axis is not None and not axes):
        r = x
        if op in ("any", "all"):
            r = _ufunc.apply(np.not_equal, (x, 0))
        return C.concrete(r.astype(r.dtype, copy=True))
    res = _reduce.reduce(op, x, axis=axes if axis is not None else None, keepdims=keepdims)
    return res


def _complex_parts(x: Array):
    from .elementwise import imag, real

    return real(x), imag(x)


def _join_complex(re: Array, im: Array, dt) -> Array:
    out = C.allocate(re.shape, dt, re)
    from .elementwise import _part

    C.copy_into(_part(out, False), re)
    C.copy_into(_part(out, True), im)
    return out


def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    C.check(x, "sum")
    if dtype is not None:
        dt = C.dtype_of(dtype)
        if dt != x.dtype:
            x = x.astype(dt)
    if x.dtype.kind == "c":
        re, im = _complex_parts(C.concrete(x))
        return _join_complex(
            sum(re, axis=axis, keepdims=keepdims), sum(im, axis=axis, keepdims=keepdims), x.dtype
        )
    if x.dtype == np.float16:
        return C.concrete(sum(x.astype(np.float32), axis=axis, keepdims=keepdims).astype(x.dtype))
    r = _reduce_op("sum", x, axis, keepdims)
    want = _reduce._acc_dtype("sum", x.dtype) if dtype is None else C.dtype_of(dtype)
    return r if r.dtype == want else C.concrete(r.astype(want))


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    C.check(x, "prod")
    if dtype is not None:
        dt = C.dtype_of(dtype)
        if dt != x.dtype:
            x = x.astype(dt)
    if x.dtype.kind == "c":
        return _complex_prod(x, axis, keepdims)
    r = _reduce_op("prod", x, axis, keepdims)
    want = _reduce._acc_dtype("prod", x.dtype) if dtype is None else C.dtype_of(dtype)
    return r if r.dtype == want else C.concrete(r.astype(want))


_CPROD = """
def _cprod(item, x, out, n):
    r = item.get_id(0)
    acc = ONE
    j = 0
    while j < n:
        acc = acc * x[r, j]
        j += 1
    out[r] = acc
"""


def _complex_prod(x, axis, keepdims):
    """A complex product: each output element's factors multiplied in order by one
    work-item (the reductions' group collectives take real numbers only)."""
    from .manipulation import permute_dims, reshape

    axes = C.normalise_axes(axis, x.ndim)
    if x.ndim == 0 or (axis is not None and not axes):
        return C.concrete(x.astype(x.dtype, copy=True))
    keep = [d for d in range(x.ndim) if d not in axes]
    kept = tuple(x.shape[d] for d in keep)
    rows = int(np.prod(kept, dtype=np.int64))
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    x2 = reshape(C.contiguous(permute_dims(x, tuple(keep + list(axes)))), (rows, n))
    out = C.allocate((rows,), x.dtype, x)
    if rows:
        k = C.kernel(_CPROD.replace("ONE", f"np.{x.dtype.type.__name__}(1)"), "_cprod")
        C.launch(k, rows, x2, out, np.int64(n))
    r = out.reshape(kept)
    if keepdims:
        r = r.reshape(_keep_shape(x, axes))
    return r


def _minmax(op, x, axis, keepdims):
    C.check(x, op)
    if x.dtype.kind == "c":
        raise TypeError(f"{op} does not take complex arrays")
    axes = C.normalise_axes(axis, x.ndim)
    if x.size == 0 and axes and builtins.any(x.shape[d] == 0 for d in axes):
        raise ValueError(f"{op} of an empty array: the reduction has no identity")
    return _reduce_op(op, x, axis, keepdims)


def max(x, /, *, axis=None, keepdims=False):
    return _minmax("max", x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False):
    return _minmax("min", x, axis, keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    C.check(x, "mean")
    if x.dtype.kind == "c":
        re, im = _complex_parts(C.concrete(x))
        return _join_complex(
            mean(re, axis=axis, keepdims=keepdims), mean(im, axis=axis, keepdims=keepdims),
            x.dtype,
        )  # fmt: skip
    if x.dtype.kind not in "f":
        raise TypeError(f"mean takes floating-point arrays, not {x.dtype}")
    axes = C.normalise_axes(axis, x.ndim)
    if x.ndim == 0 or (axis is not None and not axes):
        return C.concrete(x.astype(x.dtype, copy=True))
    return _reduce_op("mean", x, axis, keepdims)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    C.check(x, "var")
    if x.dtype.kind != "f":
        raise TypeError(f"var takes real floating-point arrays, not {x.dtype}")
    axes = C.normalise_axes(axis, x.ndim)
    n = 1
    for d in axes:
        n *= x.shape[d]
    m = mean(x, axis=axes, keepdims=True) if axes else x
    d = _ufunc.apply(np.subtract, (x, m))
    s = sum(_ufunc.apply(np.multiply, (d, d)), axis=axes, keepdims=keepdims)
    div = n - correction
    r = _ufunc.apply(np.true_divide, (s, float(div) if div > 0 else 0.0))
    return C.concrete(r.astype(x.dtype) if r.dtype != x.dtype else r)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return C.concrete(_ufunc.apply(np.sqrt, (var(x, axis=axis, correction=correction,
                                                  keepdims=keepdims),)))  # fmt: skip


def _cumulative(op, x, axis, dtype, include_initial):
    name = "cumulative_sum" if op == "add" else "cumulative_prod"
    C.check(x, name)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis is needed for arrays of more than one dimension")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"{name} does not take 0-d arrays")
    ax = C.normalise_axis(axis, x.ndim)
    if dtype is not None:
        dt = C.dtype_of(dtype)
    else:
        dt = _reduce._acc_dtype("sum", x.dtype)
    src = x.astype(dt) if x.dtype != dt else x
    if dt.kind == "c":
        if op != "add":
            raise TypeError(f"{name} does not take complex arrays")
        re, im = _complex_parts(C.concrete(src))
        r = _join_complex(
            _cumulative(op, re, ax, None, False), _cumulative(op, im, ax, None, False), dt
        )
    elif src.size == 0:
        r = C.allocate(src.shape, dt, src)
    else:
        r = scan(C.concrete(src), op, axis=ax)
        if r.dtype != dt:
            r = C.concrete(r.astype(dt))
    if include_initial:
        from .manipulation import concat

        shape = list(x.shape)
        shape[ax] = 1
        init = C.allocate(shape, dt, x)
        init.fill(0 if op == "add" else 1)
        r = concat([init, r], axis=ax)
    return r


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative("add", x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative("mul", x, axis, dtype, include_initial)


def all(x, /, *, axis=None, keepdims=False):
    C.check(x, "all")
    if x.dtype.kind == "c":
        x = _ufunc.apply(np.not_equal, (x, 0))
    return _reduce_op("all", x, axis, keepdims)


def any(x, /, *, axis=None, keepdims=False):
    C.check(x, "any")
    if x.dtype.kind == "c":
        x = _ufunc.apply(np.not_equal, (x, 0))
    return _reduce_op("any", x, axis, keepdims)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    from .manipulation import concat

    C.check(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff takes arrays of at least 1 dimension")
    ax = C.normalise_axis(axis, x.ndim)
    if n < 0:
        raise ValueError("diff: n must be non-negative")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=ax)
    for _ in range(n):
        m = x.shape[ax]
        if m == 0:
            break
        hi = (slice(None),) * ax + (slice(1, None),)
        lo = (slice(None),) * ax + (slice(None, m - 1),)
        if x.dtype == np.bool_:
            x = C.concrete(_ufunc.apply(np.not_equal, (x[hi], x[lo])))
        else:
            x = C.concrete(_ufunc.apply(np.subtract, (x[hi], x[lo])))
    return x if n else C.concrete(x.astype(x.dtype, copy=True))
