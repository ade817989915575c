"""kapi's scalar type names (`kapi.int32`, `kapi.float64`, `kapi.void`, ...), as numba-dpex
exports them: in numba-dpex they are Numba types, so ported code both converts with them and
builds signatures from them. Each name here is a NumPy scalar type that can also do the
latter:

    kapi.int32(3.7)                      # np.int32(3), in Python and in kernels
    kapi.int64(kapi.int64, kapi.int64)   # a signature object for @device_func / @kernel
    kapi.float32[::1]                    # a C-contiguous 1-D array type for signatures
    np.zeros(4, dtype=kapi.float32)      # a dtype

Numba is imported only when Numba itself asks for a name's type (`_numba_type_`).
"""

from __future__ import annotations

import numpy as np

from .numba_sig import Signature, is_numba_object


def _is_type(obj) -> bool:
    if isinstance(obj, ScalarType | str):
        return isinstance(obj, ScalarType) or obj.startswith(("array(", "item(", "nditem("))
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return True
    return is_numba_object(obj)


def _slice_layout(key) -> tuple[int, str]:
    """(ndim, layout) of Numba's array-type subscript: [:] A, [::1] C, [:, ::1] C, [::1, :] F."""
    key = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(k, slice) and k.start is None and k.stop is None for k in key):
        raise TypeError("array types are written with slices: T[:], T[::1], T[:, ::1], ...")
    steps = [k.step for k in key]
    if any(s not in (None, 1) for s in steps) or steps.count(1) > 1:
        raise TypeError("only the first or the last dimension may be ::1")
    if steps[-1] == 1:
        return len(key), "C"
    if steps[0] == 1 and len(key) > 1:
        return len(key), "F"
    return len(key), "A"


class ScalarType:
    """One scalar type name: a NumPy scalar type (`.type`, `.dtype`) that also builds
    signatures and array types, as Numba's types do."""

    __slots__ = ("type", "name")

    def __init__(self, nptype, name: str):
        self.type = nptype
        self.name = name

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.type)

    @property
    def _numba_type_(self):
        """What Numba's typeof reads (pyfront's typing of `kapi.int32(x)` in kernels): the
        NumPy type's class type. Numba is imported only when asked, by typing."""
        from numba import typeof

        return typeof(self.type)

    def __call__(self, *args):
        if args and all(_is_type(a) for a in args):
            return Signature(self, args)
        return self.type(*args)

    def __getitem__(self, key) -> str:
        from .types import array_kir

        ndim, layout = _slice_layout(key)
        return array_kir(self.type, ndim, layout)

    def __eq__(self, other):
        if isinstance(other, ScalarType):
            return self.type is other.type
        return other is self.type

    def __hash__(self):
        return hash(self.type)

    def __repr__(self) -> str:
        return f"kapi.{self.name}"


class VoidType:
    """`kapi.void` / `kapi.none`: `void(args...)` is a signature without a result."""

    __slots__ = ()

    def __call__(self, *args):
        return Signature(None, args)

    def __repr__(self) -> str:
        return "kapi.void"


def scalar_names() -> dict:
    """numba-dpex's scalar names (numba_dpex.core.types) and kapi's extra NumPy widths."""
    out = {}
    for name, t in (
        ("bool_", np.bool_),
        ("int8", np.int8),
        ("int16", np.int16),
        ("int32", np.int32),
        ("int64", np.int64),
        ("uint8", np.uint8),
        ("uint16", np.uint16),
        ("uint32", np.uint32),
        ("uint64", np.uint64),
        ("float32", np.float32),
        ("float64", np.float64),
    ):
        out[name] = ScalarType(t, name)
    out["boolean"] = out["b1"] = out["bool_"]
    for alias, name in (("i4", "int32"), ("i8", "int64"), ("u4", "uint32"), ("u8", "uint64")):
        out[alias] = out[name]
    out["f4"] = out["float_"] = out["float32"]
    out["f8"] = out["double"] = out["float64"]
    out["void"] = out["none"] = VoidType()
    return out


# The one table kapi/__init__.py binds its names from (module import is serialised, so every
# thread sees the same objects: kapi.i4 is kapi.int32).
SCALARS = scalar_names()
