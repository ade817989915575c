"""Searching functions of the array API on the device: argmax/argmin (reductions),
count_nonzero, nonzero (a scan and a scatter), searchsorted (a binary search per element)
and where."""

from __future__ import annotations

import numpy as np

from ..._memory.array import Array
from .. import reduce as _reduce
from .. import ufunc as _ufunc
from ..scan import scan
from . import _core as C


def _arg(op, x, axis, keepdims):
    C.check(x, op)
    if x.dtype.kind == "c":
        raise TypeError(f"{op} does not take complex arrays")
    if x.ndim == 0:
        if axis not in (None, 0, -1):
            raise np.exceptions.AxisError(axis, 0)
        return C.scalar_array(0, np.int64, x)
    r = _reduce.reduce(op, C.concrete(x), axis=axis, keepdims=False)
    if keepdims:
        shape = [1] * x.ndim if axis is None else list(x.shape)
        if axis is not None:
            shape[C.normalise_axis(axis, x.ndim)] = 1
        r = r.reshape(tuple(shape))
    return r


def argmax(x, /, *, axis=None, keepdims=False):
    return _arg("argmax", x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    return _arg("argmin", x, axis, keepdims)


def count_nonzero(x, /, *, axis=None, keepdims=False):
    from .statistics import sum as _sum

    C.check(x, "count_nonzero")
    return _sum(_ufunc.apply(np.not_equal, (x, 0)), axis=axis, dtype=np.int64, keepdims=keepdims)


_COMPACT = """
def _compact(item, x, pos, out):
    i = item.get_id(0)
    if x[i] != 0:
        out[pos[i]] = i
"""


def nonzero(x, /):
    """The indices of x's nonzero elements, one int64 array per dimension (C order)."""
    C.check(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero does not take 0-d arrays")
    n = x.size
    flat = C.contiguous(x).reshape((n,))
    if n == 0:
        return tuple(C.allocate((0,), np.int64, x) for _ in range(x.ndim))
    f = C.concrete(_ufunc.apply(np.not_equal, (flat, 0)).astype(np.int64))
    pos = scan(f, "add", inclusive=False)
    count = int(pos[n - 1]) + int(f[n - 1])
    out = C.allocate((count,), np.int64, x)
    if count:
        C.launch(C.kernel(_COMPACT, "_compact"), n, f, pos, out)
    if x.ndim == 1:
        return (out,)
    res = []
    stride = n
    for d in range(x.ndim):
        stride //= x.shape[d]
        res.append(
            C.concrete((out // stride) % x.shape[d]) if count else C.allocate((0,), np.int64, x)
        )
    return tuple(res)


_SEARCH = """
def _search(item, a, v, out, n, RIGHT):
    i = item.get_id(0)
    t = v[i]
    lo = np.int64(0)
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        m = a[mid]
        if RIGHT != 0:
            go = not (t < m or (m != m and t == t))
        else:
            go = m < t or (t != t and m == m)
        if go:
            lo = mid + 1
        else:
            hi = mid
    out[i] = lo
"""


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    C.check(x1, "searchsorted")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', not {side!r}")
    if x1.ndim != 1:
        raise ValueError("searchsorted: x1 must be 1-D")
    if not isinstance(x2, Array):
        x2 = C.scalar_array(x2, x1.dtype, x1)
    C.check_devices([x1, x2], "searchsorted")
    if sorter is not None:
        from .indexing import take

        x1 = take(x1, sorter)
    dt = np.result_type(x1.dtype, x2.dtype)
    a = C.contiguous(x1.astype(dt) if x1.dtype != dt else x1)
    v = C.contiguous(x2.astype(dt) if x2.dtype != dt else x2)
    out = C.allocate(x2.shape, np.int64, x2)
    n = v.size
    if n:
        if a.size == 0:
            out.fill(0)
        else:
            C.launch(C.kernel(_SEARCH, "_search"), n, a, v.reshape((n,)), out.reshape((n,)),
                     np.int64(a.size), np.int32(side == "right"))  # fmt: skip
    return out


def where(condition, x1, x2, /):
    if not isinstance(condition, Array):
        raise TypeError("where: condition must be a kapi array")
    if condition.dtype != np.bool_:
        condition = condition.astype(np.bool_)
    r = _ufunc.where(condition, x1, x2)
    return r
