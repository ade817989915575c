"""Data type functions of the array API on NumPy dtypes (kapi arrays' dtypes)."""

from __future__ import annotations

import numpy as np

from ..._memory.array import Array
from . import _core as C


def astype(x, dtype, /, *, copy=True, device=None):
    C.check(x, "astype")
    dt = C.dtype_of(dtype)
    if device is not None:
        q = C.queue_of(device)
        if q.device != x.device:
            x = x.to_device(q)
            copy = False
    if dt == x.dtype and not copy:
        return x
    return C.concrete(x.astype(dt, copy=True))


def _dtype_arg(x) -> np.dtype:
    if isinstance(x, Array):
        return x.dtype
    return np.dtype(x)


def can_cast(from_, to, /):
    return bool(np.can_cast(_dtype_arg(from_), np.dtype(to), "safe"))


class finfo_object:
    """The array API's finfo: bits, eps, max, min, smallest_normal, dtype (Python floats)."""

    def __init__(self, dt: np.dtype):
        f = np.finfo(dt)
        self.bits = int(f.bits)
        self.eps = float(f.eps)
        self.max = float(f.max)
        self.min = float(f.min)
        self.smallest_normal = float(f.smallest_normal)
        self.dtype = np.dtype(f.dtype)

    def __repr__(self) -> str:
        return f"finfo(bits={self.bits}, eps={self.eps}, max={self.max}, dtype={self.dtype})"


class iinfo_object:
    def __init__(self, dt: np.dtype):
        i = np.iinfo(dt)
        self.bits = int(i.bits)
        self.max = int(i.max)
        self.min = int(i.min)
        self.dtype = np.dtype(dt)

    def __repr__(self) -> str:
        return f"iinfo(bits={self.bits}, min={self.min}, max={self.max}, dtype={self.dtype})"


def finfo(type, /):
    dt = _dtype_arg(type)
    if dt.kind not in "fc":
        raise ValueError(f"finfo takes a floating-point dtype, not {dt}")
    return finfo_object(dt)


def iinfo(type, /):
    dt = _dtype_arg(type)
    if dt.kind not in "iu":
        raise ValueError(f"iinfo takes an integer dtype, not {dt}")
    return iinfo_object(dt)


_KINDS = {
    "bool": lambda d: d.kind == "b",
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: d.kind == "f",
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iufc",
}


def isdtype(dtype, kind):
    dt = np.dtype(dtype) if not isinstance(dtype, np.dtype) else dtype
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; one of {', '.join(_KINDS)}")
        return _KINDS[kind](dt)
    return dt == np.dtype(kind)


def result_type(*arrays_and_dtypes):
    """The dtype the array API's promotion gives (NumPy 2's rules; Python scalars weak)."""
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    strong = []
    weak = []
    for a in arrays_and_dtypes:
        if isinstance(a, Array):
            strong.append(a.dtype)
        elif isinstance(a, (bool, int, float, complex)):
            weak.append(a)
        else:
            strong.append(np.dtype(a))
    if not strong:
        raise ValueError("result_type needs at least one array or dtype")
    dt = np.result_type(*strong)
    for w in weak:
        dt = np.result_type(dt, w)
    C.dtype_of(dt)
    return dt
