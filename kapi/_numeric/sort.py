"""kapi.sort, kapi.argsort, kapi.topk and kapi.unique: an LSD radix sort generated as kapi
kernels on the array's device (sort_radix.py; its kernels' sources in sort_kernels.py).

This module takes arrays of any shape and axis to the radix sort of one contiguous 1-D run of
keys (_sorted_flat): 2-D arrays sort along the last axis by sorting everything by value, then
stably by row; topk takes the head of a descending sort, unique flags and compacts a sorted
copy."""

from __future__ import annotations

import numpy as np

from .._memory.array import Array
from . import primitives as P
from .scan import scan
from .sort_kernels import _KEYS_OUT_SRC
from .sort_radix import (
    _as_dtype,
    _kernel,
    _key_consts,
    _keys,
    _keys_in_place,
    _mode,
    _radix_passes,
    _uint_of,
)


def _sorted_flat(x: Array, want_values: bool, want_indices: bool, descending=False):
    """(sorted values or None, sorting indices or None) of the 1-D contiguous array x."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import Range

    dt = x.dtype
    if dt == np.bool_:
        x = _as_dtype(x, np.dtype(np.uint8))
    k, v, vary, hist = _keys(x, want_indices, descending, want_indices and dt.kind == "f")
    in_place = _keys_in_place(x, want_indices, descending)  # k is x's memory
    k, v = _radix_passes(
        k,
        v,
        vary,
        dt.itemsize * 8,
        keep_input=in_place,
        hist=hist,
        fresh=want_indices,
        keys_out=want_values,
    )
    vals = None
    if want_values and in_place:
        vals = k if k.dtype == dt else _as_dtype(k, dt)  # the keys are the values
    elif want_values:
        vals = Array._allocate((x.size,), dt, x.sycl_queue, x.usm_type)
        sign, _, _, allb = _key_consts(x.dtype)
        call_kernel(
            _kernel(_KEYS_OUT_SRC, "_keys_out"),
            Range(x.size),
            k,
            _as_dtype(vals, _uint_of(dt)),
            np.int32(_mode(x.dtype)),
            np.int32(descending),
            sign,
            allb,
        )
    return vals, v


def _check(a, what: str) -> Array:
    P.check_array(a, what, float16=True)  # keys are bits: float16 sorts as the other floats
    return a


_ROWKEY_SRC = """
def _rowkey(item, v, rk, m):
    i = item.get_id(0)
    rk[i] = v[i] // m
"""

_GATHER_SRC = """
def _gather(item, x, v, out, m, ROWS):
    i = item.get_id(0)
    j = v[i]
    if ROWS != 0:
        out[i] = j % m
    else:
        out[i] = x[j]
"""


def _sort_rows(x2: Array, want_values: bool, descending: bool) -> Array:
    """Sorts (or argsorts) each row of x2 (rows, m): every element by value, then stably by
    row; returns the (rows, m) values or indices within rows."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import Range

    rows, m = x2.shape
    flat = x2.reshape(x2.size)
    dt = flat.dtype
    if dt == np.bool_:
        flat = _as_dtype(flat, np.dtype(np.uint8))
    k, v, vary, hist = _keys(flat, True, descending, dt.kind == "f")
    in_place = _keys_in_place(flat, True, descending)  # k is flat's memory
    _, v = _radix_passes(
        k, v, vary, dt.itemsize * 8, keep_input=in_place, hist=hist, fresh=True, keys_out=False
    )
    rk = Array._allocate((flat.size,), np.dtype(np.uint64), flat.sycl_queue, flat.usm_type)
    call_kernel(_kernel(_ROWKEY_SRC, "_rowkey"), Range(flat.size), v, rk, np.int64(m))
    rk, v = _radix_passes(rk, v, (1 << (rows - 1).bit_length()) - 1, 64)
    out = Array._allocate(
        (flat.size,), dt if want_values else np.dtype(np.int64), flat.sycl_queue, flat.usm_type
    )
    src = x2.reshape(x2.size)
    call_kernel(
        _kernel(_GATHER_SRC, "_gather"),
        Range(flat.size),
        src,
        v,
        out,
        np.int64(m),
        np.int32(not want_values),
    )
    return out.reshape(rows, m)


def _sort_impl(a, axis, want_values: bool, what: str, descending=False) -> Array:
    _check(a, what)
    if axis is None:
        x = P.contiguous(a).reshape(a.size)
        axis = 0
    else:
        x = a
    if x.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    x2, moved, ax = P.rows_view(x, axis)
    rows, m = x2.shape
    if x2.size == 0:
        out = Array._allocate(
            x2.shape, a.dtype if want_values else np.dtype(np.int64), a.sycl_queue, a.usm_type
        )
    elif rows == 1:
        vals, idx = _sorted_flat(x2.reshape(m), want_values, not want_values, descending)
        out = (vals if want_values else idx).reshape(1, m)
    else:
        out = _sort_rows(x2, want_values, descending)
    return P.from_rows(out, moved, ax, x.ndim)


def sort(a, axis=-1, kind=None, order=None, *, descending=False, stable=True):
    """np.sort on a's device: a sorted copy along axis (-1: the last; None: flattened).

    A stable LSD radix sort for bool, int8..int64, uint8..uint64, float32 and float64;
    NaNs sort last (first with descending=True), as NumPy. kind is accepted and ignored
    (the sort is always stable); order= (structured dtypes) is not supported.
    """
    if order is not None:
        raise ValueError("kapi.sort: order= (structured arrays) is not supported")
    return _sort_impl(a, axis, True, "kapi.sort", descending)


def argsort(a, axis=-1, kind=None, order=None, *, descending=False, stable=True):
    """np.argsort on a's device (int64 indices along axis), stable: equal elements keep
    their order (as np.argsort(kind="stable")); NaNs last, -0.0 equal to 0.0."""
    if order is not None:
        raise ValueError("kapi.argsort: order= (structured arrays) is not supported")
    return _sort_impl(a, axis, False, "kapi.argsort", descending)


def topk(a, k: int):
    """The k largest elements of the 1-D array a and their indices: (values, indices), both
    in descending order of value; equal values in order of index; NaN counts as largest."""
    import operator

    _check(a, "kapi.topk")
    if a.ndim != 1:
        raise ValueError(f"kapi.topk takes a 1-D array, not {a.ndim}-D")
    k = operator.index(k)
    if not 0 <= k <= a.size:
        raise ValueError(f"kapi.topk: k={k} is out of range for an array of size {a.size}")
    x = P.contiguous(a)
    if a.size == 0 or k == 0:
        q, ut = a.sycl_queue, a.usm_type
        return (
            Array._allocate((0,), a.dtype, q, ut),
            Array._allocate((0,), np.dtype(np.int64), q, ut),
        )
    vals, idx = _sorted_flat(x, True, True, descending=True)
    return vals[:k].copy(), idx[:k].copy()


_UNIQUE_FLAGS_SRC = """
def _uflags(item, s, f, ISF):
    i = item.get_id(0)
    if i == 0:
        f[i] = np.int64(1)
    else:
        a = s[i - 1]
        b = s[i]
        same = a == b
        if ISF != 0 and a != a and b != b:
            same = True
        f[i] = np.int64(0) if same else np.int64(1)
"""

_UNIQUE_SCATTER_SRC = """
def _uscatter(item, s, f, pos, out, starts, n):
    i = item.get_id(0)
    if f[i] != 0:
        j = pos[i]
        out[j] = s[i]
        starts[j] = i
"""

_COUNTS_SRC = """
def _ucounts(item, starts, cnt, n, u):
    j = item.get_id(0)
    nxt = starts[j + 1] if j + 1 < u else n
    cnt[j] = nxt - starts[j]
"""


def unique(a, return_counts: bool = False):
    """np.unique on a's device: the sorted unique values of the flattened a (NaNs collapsed
    into one, as NumPy 2's equal_nan=True); with return_counts, also how often each occurs
    (int64)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import Range

    _check(a, "kapi.unique")
    q, ut = a.sycl_queue, a.usm_type
    n = a.size
    if n == 0:
        e = Array._allocate((0,), a.dtype, q, ut)
        return (e, Array._allocate((0,), np.dtype(np.int64), q, ut)) if return_counts else e
    s, _ = _sorted_flat(P.contiguous(a).reshape(n), True, False)
    f = Array._allocate((n,), np.dtype(np.int64), q, ut)
    call_kernel(
        _kernel(_UNIQUE_FLAGS_SRC, "_uflags"), Range(n), s, f, np.int32(a.dtype.kind == "f")
    )
    pos = scan(f, "add", inclusive=False)
    u = int(pos[n - 1]) + int(f[n - 1])
    out = Array._allocate((u,), a.dtype, q, ut)
    starts = Array._allocate((u,), np.dtype(np.int64), q, ut)
    call_kernel(
        _kernel(_UNIQUE_SCATTER_SRC, "_uscatter"), Range(n), s, f, pos, out, starts, np.int64(n)
    )
    if not return_counts:
        return out
    cnt = Array._allocate((u,), np.dtype(np.int64), q, ut)
    call_kernel(_kernel(_COUNTS_SRC, "_ucounts"), Range(u), starts, cnt, np.int64(n), np.int64(u))
    return out, cnt
