"""Kernel argument types: Python values and signature entries -> KIR type strings.

A kernel specialisation is keyed by the KIR type strings of its arguments (docs/kir.md), so
the same strings serve as dispatch-cache keys, as pyfront's argtypes and in inspection.
"""

from __future__ import annotations

import re

import numpy as np

from .._errors import InvalidKernelSpecializationError, UnsupportedDtypeError
from .._memory.dtypes import DTYPE_TO_KIR, SCALAR_KIR, SUPPORTED_DTYPES
from .numba_sig import (
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
    if not 1 <= ndim <= 3:
        raise UnsupportedDtypeError(
            f"kernels take arrays of 1 to 3 dimensions, got {ndim}; reshape the array first"
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
def DpnpNdArray(ndim, dtype, layout="C", **ignored) -> str:  # noqa: N802 - numba-dpex's name
    """A global array argument type (usm_type, device and queue are not part of kapi's key)."""
    return array(dtype, ndim, layout)


USMNdArray = usm_ndarray = DpnpNdArray


def ItemType(ndim) -> str:  # noqa: N802 - numba-dpex's name
    return f"item({int(ndim)})"


def NdItemType(ndim) -> str:  # noqa: N802 - numba-dpex's name
    return f"nditem({int(ndim)})"
