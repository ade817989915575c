"""Array creation functions of the array API, each making its array on the device= asked
for (kapi's default device otherwise)."""

from __future__ import annotations

import builtins
import operator

import numpy as np

from ..._memory import array as _array
from ..._memory.array import Array
from ..._memory.interop import from_dlpack as _from_dlpack
from . import _core as C


def _dt(dtype, q, value=None):
    if dtype is not None:
        return C.dtype_of(dtype)
    if value is None or isinstance(value, float):
        return C.default_float(q)
    if isinstance(value, bool):
        return C.BOOL
    if isinstance(value, int):
        return C.INT64
    if isinstance(value, complex):
        return C.default_complex(q)
    return C.dtype_of(np.asarray(value).dtype)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """A kapi array from a kapi array (itself, or a copy with copy=True or on another
    device), a DLPack or USM producer, a Python scalar or nested sequence, or host data
    (copied into device memory)."""
    if isinstance(obj, Array) and obj.ndim >= 0:
        a = obj
        if device is not None:
            q = C.queue_of(device)
            if q.device != a.device:
                if copy is False:
                    raise ValueError("asarray(copy=False): the array is on another device")
                a = a.to_device(q)
                copy = None if dtype is None else copy
        if dtype is not None and C.dtype_of(dtype) != a.dtype:
            if copy is False:
                raise ValueError("asarray(copy=False) cannot change the dtype")
            return C.concrete(a.astype(dtype))
        if copy is True:
            out = C.allocate(a.shape, a.dtype, a)
            C.copy_into(out, a)
            return out
        return a
    if isinstance(obj, (list, tuple)) and _has_arrays(obj):
        return _from_nested(obj, dtype, device, copy)
    q = C.queue_of(device)
    if isinstance(obj, (bool, int, float, complex)) and dtype is None:
        dt = _dt(None, q, obj)
        if isinstance(obj, int) and not isinstance(obj, bool):
            info = np.iinfo(dt)
            if not info.min <= obj <= info.max:
                raise OverflowError(f"Python integer {obj} does not fit the default integer {dt}")
        return _array.asarray(np.asarray(obj, dtype=dt), queue=q, copy=copy)
    if dtype is None and isinstance(obj, (list, tuple)):
        host = np.asarray(obj)
        if host.dtype == np.float64 and not q.device.has_aspect_fp64:
            host = host.astype(np.float32)
        elif host.dtype == np.complex128 and not q.device.has_aspect_fp64:
            host = host.astype(np.complex64)
        return _array.asarray(host, queue=q, copy=copy)
    dt = C.dtype_of(dtype) if dtype is not None else None
    return _array.asarray(obj, dtype=dt, queue=q, copy=copy)


def _has_arrays(seq) -> bool:
    return builtins.any(
        isinstance(e, Array) or (isinstance(e, (list, tuple)) and _has_arrays(e)) for e in seq
    )


def _from_nested(obj, dtype, device, copy):
    """A nested sequence holding kapi arrays: stacked on their device."""
    from .manipulation import stack

    parts = [asarray(e, dtype=dtype, device=device) for e in obj]
    return stack(parts)


def empty(shape, *, dtype=None, device=None):
    q = C.queue_of(device)
    return Array._allocate(shape, _dt(dtype, q), q, "device")


def zeros(shape, *, dtype=None, device=None):
    return full(shape, 0, dtype=_dt(dtype, C.queue_of(device)), device=device)


def ones(shape, *, dtype=None, device=None):
    return full(shape, 1, dtype=_dt(dtype, C.queue_of(device)), device=device)


def full(shape, fill_value, *, dtype=None, device=None):
    q = C.queue_of(device)
    if isinstance(fill_value, Array):
        fill_value = fill_value._scalar()
    dt = _dt(dtype, q, fill_value)
    a = Array._allocate(shape, dt, q, "device")
    if a.size:
        a.fill(fill_value)
    return a


def _like(x, dtype, device):
    C.check(x, "a *_like function")
    q = C.queue_of(device) if device is not None else x.sycl_queue
    return q, C.dtype_of(dtype) if dtype is not None else x.dtype


def empty_like(x, /, *, dtype=None, device=None):
    q, dt = _like(x, dtype, device)
    return Array._allocate(x.shape, dt, q, x.usm_type)


def zeros_like(x, /, *, dtype=None, device=None):
    q, dt = _like(x, dtype, device)
    return full(x.shape, 0, dtype=dt, device=q)


def ones_like(x, /, *, dtype=None, device=None):
    q, dt = _like(x, dtype, device)
    return full(x.shape, 1, dtype=dt, device=q)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    q, dt = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=dt, device=q)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    q = C.queue_of(device)
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    ints = builtins.all(isinstance(v, int) and not isinstance(v, bool) for v in (start, stop, step))
    dt = C.dtype_of(dtype) if dtype is not None else (C.INT64 if ints else C.default_float(q))
    n = builtins.max(0, int(np.ceil((stop - start) / step)))
    out = Array._allocate((n,), dt, q, "device")
    if n:
        # start + i * step, computed on the device in the result's type (float64 if wider)
        from .. import ufunc as _ufunc

        sdt = np.dtype(np.float64) if dt.kind in "fc" else np.dtype(np.int64)
        conv = "bool_" if dt == np.bool_ else dt.type.__name__
        # out[i] = start + i * step (i: the 1-D kernel's index), in float64 or int64
        expr = f"np.{conv}(l0 + i * l1)"
        _ufunc.launch(expr, [sdt.type(start), sdt.type(step)], out, "arange", fresh=True)
    return out


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    q = C.queue_of(device)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, not {num}")
    cplx = isinstance(start, complex) or isinstance(stop, complex)
    if dtype is None:
        dt = C.default_complex(q) if cplx else C.default_float(q)
    else:
        dt = C.dtype_of(dtype)
    out = Array._allocate((num,), dt, q, "device")
    if num == 0:
        return out
    div = (num - 1) if endpoint else num
    src = """
def _linspace(item, out, start, stop, step, div, N, END):
    i = item.get_id(0)
    if END != 0 and i == N - 1:
        out[i] = stop
    elif step != 0:
        out[i] = i * step + start
    elif div > 0:
        out[i] = start + (stop - start) * (i / div)
    else:
        out[i] = start
"""
    wide = np.dtype(np.complex128) if dt.kind == "c" else np.dtype(np.float64)
    k = C.kernel(src, "_linspace")
    C.launch(
        k,
        num,
        out,
        wide.type(start),
        wide.type(stop),
        # NumPy's i * step + start (start + (stop - start) * (i / div) rounded otherwise: a
        # histogram's integer edges came out a bit off on the GPU); step 0 as NumPy: i / div
        # times (stop - start)
        (wide.type(stop) - wide.type(start)) / div if div > 0 else wide.type(0),
        np.float64(div),
        np.int64(num),
        np.int32(bool(endpoint) and num > 1),  # NumPy: one point is start
    )
    return out


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    q = C.queue_of(device)
    n_cols = n_rows if n_cols is None else n_cols
    dt = _dt(dtype, q)
    out = zeros((n_rows, n_cols), dtype=dt, device=q)
    k = operator.index(k)
    r0, c0 = (0, k) if k >= 0 else (-k, 0)
    m = builtins.min(n_rows - r0, n_cols - c0)
    if m > 0:
        i = dt.itemsize
        diag = C.view(out, (m,), ((n_cols + 1) * i,), (r0 * n_cols + c0) * i)
        C.copy_into(diag, 1)
    return out


def from_dlpack(x, /, *, device=None, copy=None):
    a = _from_dlpack(x) if copy is not True else asarray(_from_dlpack(x), copy=True)
    if device is not None:
        a = asarray(a, device=device, copy=copy)
    return a


def meshgrid(*arrays, indexing="xy"):
    from .manipulation import broadcast_to

    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', not {indexing!r}")
    n = len(arrays)
    for a in arrays:
        C.check(a, "meshgrid")
        if a.ndim != 1:
            raise ValueError("meshgrid takes 1-D arrays")
    C.check_devices(arrays, "meshgrid")
    if n and len({a.dtype for a in arrays}) > 1:
        raise TypeError("meshgrid: the arrays must have one dtype")
    shape = [a.size for a in arrays]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for k, a in enumerate(arrays):
        s = [1] * n
        ax = k
        if indexing == "xy" and n >= 2 and k < 2:
            ax = 1 - k
        s[ax] = a.size
        v = broadcast_to(a.reshape(tuple(s)), tuple(shape))
        c = C.allocate(v.shape, v.dtype, v)
        C.copy_into(c, v)
        out.append(c)
    return out


def _tri(x, k, lower: bool):
    from .. import ufunc as _ufunc
    from .manipulation import _index_grid

    C.check(x, "tril" if lower else "triu")
    if x.ndim < 2:
        raise ValueError("tril/triu take arrays of at least 2 dimensions")
    k = operator.index(k)
    rows, cols = _index_grid(x, x.ndim - 2), _index_grid(x, x.ndim - 1)
    d = cols - rows
    mask = (d <= k) if lower else (d >= k)
    return C.concrete(_ufunc.where(mask, x, x.dtype.type(0)))


def tril(x, /, *, k=0):
    return _tri(x, k, True)


def triu(x, /, *, k=0):
    return _tri(x, k, False)
