"""Kernel argument types: Python values and signature entries -> KIR type strings.

A kernel specialisation is keyed by the KIR type strings of its arguments (docs/kir.md), so
the same strings serve as dispatch-cache keys, as pyfront's argtypes and in inspection.
"""

from __future__ import annotations

import re

import numpy as np

from .._errors import InvalidKernelSpecializationError, UnsupportedDtypeError
from .._memory.dtypes import DTYPE_TO_KIR, KERNEL_MAX_NDIM, SCALAR_KIR, SUPPORTED_DTYPES
from .numba_sig import (
    Signature,
    is_numba_object,
    is_numba_signature,
    numba_signature_parts,
    numba_type_to_kir,
)

_ADDRSPACES = ("global", "local", "private")
_ARRAY_RE = re.compile(
    r"^array\(\s*(\w+)\s*,\s*(\d)\s*(?:,\s*([CFA])\s*)?(?:,\s*(global|local)\s*)?"
    r"((?:,\s*\d+\s*)*)\)$"
)
_LOCAL_SHAPE_RE = re.compile(r"^(array\(\w+,\d,C,local)(?:,\d+)+\)$")
_INDEX_RE = re.compile(r"^(item|nditem)\(\s*([123])\s*\)$")


def kir_scalar(dtype) -> str:
    """KIR scalar type of a NumPy dtype (or a Numba scalar type), or UnsupportedDtypeError
    naming the supported ones."""
    try:
        npdt = np.dtype(str(dtype) if is_numba_object(dtype) else dtype)
    except TypeError:
        npdt = None
    kir = DTYPE_TO_KIR.get(npdt) if npdt is not None else None
    if kir is None:
        names = ", ".join(str(d) for d in SUPPORTED_DTYPES)
        what = f"dtype {npdt}" if npdt is not None else f"{dtype!r} ({type(dtype).__name__})"
        raise UnsupportedDtypeError(f"{what} is not supported by kapi kernels; use one of: {names}")
    return kir


def array_layout(flags_c: bool, flags_f: bool) -> str:
    if flags_c:
        return "C"
    if flags_f:
        return "F"
    return "A"


def array_kir(dtype, ndim: int, layout: str, space: str = "global") -> str:
    if not 1 <= ndim <= KERNEL_MAX_NDIM:
        raise UnsupportedDtypeError(
            f"kernels take arrays of 1 to {KERNEL_MAX_NDIM} dimensions, got {ndim}; reshape "
            "the array first"
        )
    return f"array({kir_scalar(dtype)},{ndim},{layout},{space})"


def array(dtype, ndim: int, layout: str = "C") -> str:
    """Signature helper: the KIR type of a global array argument, e.g. array(np.float32, 2)."""
    if layout not in ("C", "F", "A"):
        raise InvalidKernelSpecializationError(
            f"array layout must be 'C', 'F' or 'A', not {layout!r}"
        )
    return array_kir(dtype, ndim, layout)


def _scalar_name(s: str) -> str | None:
    """KIR scalar name for a KIR or NumPy scalar name ("f32", "float32"), else None."""
    if s in SCALAR_KIR:
        return s
    try:
        return DTYPE_TO_KIR.get(np.dtype(s))
    except (TypeError, ValueError):
        return None


def local_kir(dtype, shape) -> str:
    """KIR type of a LocalAccessor argument: a local array specialised on its shape, so that
    the compiler indexes it with constant extents (docs/kir.md)."""
    dims = "".join(f",{int(d)}" for d in shape)
    return f"array({kir_scalar(dtype)},{len(shape)},C,local{dims})"


def without_local_shapes(argtypes) -> tuple:
    """The argument types with static local shapes dropped (array(T,N,C,local)): what a
    signature declared without shapes accepts."""
    return tuple(
        m.group(1) + ")" if isinstance(t, str) and (m := _LOCAL_SHAPE_RE.match(t)) else t
        for t in argtypes
    )


_PLAIN_ARRAY_RE = re.compile(r"^array\((\w+),(\d),([CFA]),(global|local)\)$")


def declared_match(argtypes, signatures):
    """The declared signature a call's argument types fit with Numba's array conversions (a
    C or F array where the signature says A, same element type, dims and memory: one ABI),
    or None. Other types must match exactly."""

    def fits(got, want):
        if got == want:
            return True
        g, w = _PLAIN_ARRAY_RE.match(got), _PLAIN_ARRAY_RE.match(want)
        return bool(g and w and w.group(3) == "A" and g.group(1, 2, 4) == w.group(1, 2, 4))

    for sig in sorted(signatures):
        if len(sig) == len(argtypes) and all(map(fits, argtypes, sig)):
            return sig
    return None


def normalize_type(t) -> str:
    """One signature entry (KIR string, NumPy dtype or scalar type, Python type, Numba type)
    -> KIR."""
    if is_numba_object(t):
        return numba_type_to_kir(t, array_kir, kir_scalar)
    if isinstance(t, str):
        s = t.strip()
        if s in SCALAR_KIR or _INDEX_RE.match(s):
            return s
        m = _ARRAY_RE.match(s)
        elem = _scalar_name(m.group(1)) if m else None
        if elem is not None:
            layout = m.group(3) or "C"
            space = m.group(4) or "global"
            dims = "".join(f",{int(d)}" for d in m.group(5).replace(",", " ").split())
            return f"array({elem},{m.group(2)},{layout},{space}{dims})"
        elem = _scalar_name(s)
        if elem is not None:
            return elem
        raise InvalidKernelSpecializationError(
            f"unknown type {t!r} in a kernel signature; use KIR types such as 'f32', 'i64', "
            f"'array(f32,2,C)' or 'item(1)' (see docs/kir.md), or NumPy dtypes"
        )
    if t is bool:
        return "bool"
    if t is int:
        return "i64"
    if t is float:
        return "f64"
    if t is complex:
        return "c128"
    try:
        return kir_scalar(t)
    except UnsupportedDtypeError:
        raise InvalidKernelSpecializationError(
            f"unknown type {t!r} in a kernel signature; use KIR type strings or NumPy dtypes"
        ) from None


def _split_top_level(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def parse_signature(sig) -> tuple[tuple[str, int] | None, tuple[str, ...]]:
    """A signature (tuple of types, or a string "(item(1), array(f32,1), f32)") ->
    (index or None, argument KIR types). The index entry, if present, must come first. A Numba
    signature object (`void(types.int32[::1])`) gives its argument types."""
    if is_numba_signature(sig):
        sig = numba_signature_parts(sig)[0]
    if isinstance(sig, str):
        s = sig.strip()
        if s.startswith("void"):
            s = s[4:].strip()
        if s.startswith("(") and s.endswith(")"):
            s = s[1:-1]
        entries = _split_top_level(s)
    elif isinstance(sig, (tuple, list)):
        entries = list(sig)
    else:
        raise InvalidKernelSpecializationError(
            f"a kernel signature is a tuple of types or a string, not {type(sig).__name__}"
        )
    types = [normalize_type(e) for e in entries]
    index = None
    if types and _INDEX_RE.match(types[0]):
        m = _INDEX_RE.match(types.pop(0))
        index = (m.group(1), int(m.group(2)))
    for t in types:
        if _INDEX_RE.match(t):
            raise InvalidKernelSpecializationError(
                f"{t} may only be the first entry of a kernel signature"
            )
    return index, tuple(types)


def format_signature(index, argtypes) -> str:
    head = [f"{index[0]}({index[1]})"] if index else []
    return "(" + ", ".join(head + list(argtypes)) + ")"


# numba-dpex's signature type constructors, so eager signatures port unchanged:
#   kapi.kernel((ItemType(1), DpnpNdArray(ndim=1, dtype=kapi.int64, layout="C"), ...))
#   kapi.kernel(void(ItemType(1), usm_ndarray(1, "C", kapi.int64)))
_ADDRSPACE_NAMES = {1: "global", 3: "local"}  # numba-dpex's AddressSpace values


class USMNdArray(str):
    """numba-dpex's array type, `USMNdArray(ndim, layout="C", dtype=None, usm_type="device",
    device=None, queue=None, readonly=False, name=None, aligned=True, addrspace=GLOBAL)`, with
    numba-dpex's argument order and checks. The value is the KIR type string, so it stands
    wherever a KIR string does; calling it builds a signature with it as the result type, as
    Numba's types do. usm_type, device and queue are kept but not part of kapi's key."""

    def __new__(
        cls,
        ndim,
        layout="C",
        dtype=None,
        usm_type="device",
        device=None,
        queue=None,
        readonly=False,
        name=None,
        aligned=True,
        addrspace=1,
    ):
        what = cls.__name__
        if device is not None and queue is not None:
            raise TypeError(f"{what}(): `device` and `queue` are exclusive keywords; give one")
        if device is not None and not isinstance(device, str):
            raise TypeError(f"{what}(): device must be a filter string such as 'gpu:0'")
        if queue is not None and type(queue).__name__ != "Queue":
            raise TypeError(f"{what}(): queue must be a kapi.Queue, not {type(queue).__name__}")
        if layout not in ("C", "F", "A"):
            raise ValueError(
                f"{what}(): layout must be 'C', 'F' or 'A', not {layout!r} (the arguments are "
                f"(ndim, layout, dtype), in numba-dpex's order)"
            )
        if addrspace not in _ADDRSPACE_NAMES:
            raise ValueError(
                f"{what}(): addrspace must be AddressSpace.GLOBAL (1) or LOCAL (3), not "
                f"{addrspace!r}"
            )
        dt = np.dtype(np.float64) if dtype is None else _np_dtype(dtype)
        self = super().__new__(cls, array_kir(dt, int(ndim), layout, _ADDRSPACE_NAMES[addrspace]))
        self.ndim, self.layout, self.dtype, self.usm_type = int(ndim), layout, dt, usm_type
        self._device, self.queue, self.readonly, self.aligned = device, queue, readonly, aligned
        self.addrspace = addrspace
        self.name = name or (
            f"{what}(dtype={dt}, ndim={int(ndim)}, layout={layout}, address_space={addrspace}, "
            f"usm_type={usm_type})"
        )
        return self

    @property
    def device(self) -> str:
        """The filter string of the device named, of the queue's, or of the default device."""
        if self.queue is not None:
            return self.queue.device.filter_string
        from .._memory.device import Device

        return Device(self._device).filter_string

    def __call__(self, *args):
        return Signature(self, args)

    def __repr__(self) -> str:
        return self.name

    __str__ = str.__str__
    __hash__ = str.__hash__
    __eq__ = str.__eq__


class DpnpNdArray(USMNdArray):
    """numba-dpex's type of dpnp arrays: kapi's arrays, the same as USMNdArray."""


usm_ndarray = USMNdArray


def _np_dtype(dtype) -> np.dtype:
    """The NumPy dtype of a dtype, NumPy or kapi scalar type or Numba type (the KIR type
    check names the supported ones)."""
    kir_scalar(dtype)
    if is_numba_object(dtype):
        return np.dtype(str(dtype))
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.dtype(dtype.dtype)  # kapi.int64 and the other scalar names


def ItemType(ndim) -> str:  # noqa: N802 - numba-dpex's name
    return f"item({int(ndim)})"


def NdItemType(ndim) -> str:  # noqa: N802 - numba-dpex's name
    return f"nditem({int(ndim)})"
