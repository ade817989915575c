"""What a Numba variable stands for while its function is emitted.

Scalars and arrays are KIR values; tuples are scalarised into their items; constants stay
Python values until used (so they become constants of the type they are used at); modules,
functions, classes, dtypes and Item/NdItem/Group are compile-time objects (Static).
"""

from dataclasses import dataclass, field


@dataclass
class Scalar:
    ref: str  # %name
    ty: object  # Numba type
    nonneg: bool = False  # known >= 0 (index-space ids), so indexing needs no wraparound


def cast_keeps_sign(val: Scalar, ty) -> bool:
    """Whether the integer (or bool) Scalar val cast to Numba integer type ty is known >= 0:
    a bool, an unsigned value widened, or a value known >= 0 cast to a type at least as wide
    (either keeps its value)."""
    from ._numba import types

    src = val.ty
    if not isinstance(ty, types.Integer):
        return False
    if isinstance(src, types.Boolean):
        return True
    if not isinstance(src, types.Integer):
        return False
    if not src.signed and ty.bitwidth > src.bitwidth:
        return True
    return bool(val.nonneg) and ty.bitwidth >= src.bitwidth and (src.signed or not ty.signed)


def nonneg_as(val, ty, kty) -> bool:
    """Whether val (Scalar or Const), converted to Numba integer type ty, is known >= 0;
    kty maps a Numba type to its KIR scalar name (a cast happens where they differ)."""
    from ._numba import types

    if isinstance(val, Const):
        return isinstance(val.value, int | bool) and val.value >= 0
    if not isinstance(val, Scalar):
        return False
    if kty(val.ty) == kty(ty):
        return val.nonneg or isinstance(val.ty, types.Boolean)
    return cast_keeps_sign(val, ty)


@dataclass
class Const:
    value: object  # int, float, bool
    ty: object  # Numba type


@dataclass
class Array:
    ref: str
    ty: object  # KArray (of the view, when prefix is set)
    prefix: tuple = ()  # i64 refs fixing the leading dimensions: a[i] of a 2-D a is a row view
    base: object = None  # KArray of the underlying array, for a view (prefix set)


@dataclass
class Tuple:
    items: list


@dataclass
class Static:
    value: object


@dataclass
class IndexSpace:
    kind: str  # "Item", "NdItem", "Group"
    ndim: int


@dataclass
class Bound:
    this: object  # the receiver's value
    attr: str


@dataclass
class RangeVal:
    start: object
    stop: object
    step: object
    ty: object  # the integer type of the range


@dataclass
class RangeIter:
    cur: str  # $slot
    stop: object
    step: object
    ty: object
    nonneg: bool = False  # the start is known >= 0


@dataclass
class Pair:
    first: object
    second: object


@dataclass
class AtomicRefVal:
    array: Array
    indices: list
    order: str
    scope: str
    extra: dict = field(default_factory=dict)


@dataclass
class Complex:
    re: object  # Scalar or Const of the part type (float32 or float64)
    im: object
    ty: object  # Numba complex type
