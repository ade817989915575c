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
