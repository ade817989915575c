"""Range and NdRange: the index spaces of a launch, with numba-dpex's names and members.

Unlike numba-dpex, extents are checked for what they are: any integer (NumPy included) is
accepted, zero or negative extents are errors instead of silently dropping dimensions.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

from .._errors import (
    InvalidRangeError,
    UnmatchedNumberOfRangeDimsError,
    UnsupportedGroupWorkItemSizeError,
)

_MAX_EXTENT = 2**63 - 1


def _extent(value, what: str) -> int:
    if isinstance(value, bool):
        raise InvalidRangeError(f"{what} must be a positive integer, got the bool {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise InvalidRangeError(
            f"{what} must be a positive integer, got {type(value).__name__} {value!r}"
        ) from None
    if n <= 0:
        raise InvalidRangeError(f"{what} must be a positive integer, got {n}")
    if n > _MAX_EXTENT:
        raise InvalidRangeError(f"{what} is too large: {n}")
    return n


class Range(tuple):
    """A 1-, 2- or 3-dimensional index space: `Range(n)`, `Range(n, m)`, `Range(n, m, k)`.

    Dimension 0 is the fastest-varying hardware dimension (numba-dpex's convention), so put the
    contiguous array index on `item.get_id(0)`.
    """

    def __new__(cls, dim0, dim1=None, dim2=None):
        dims = [_extent(dim0, "Range dimension 0")]
        if dim1 is not None:
            dims.append(_extent(dim1, "Range dimension 1"))
        if dim2 is not None:
            if dim1 is None:
                raise InvalidRangeError("Range dimension 2 given without dimension 1")
            dims.append(_extent(dim2, "Range dimension 2"))
        return super().__new__(cls, dims)

    def get(self, index: int) -> int:
        return self[index]

    def size(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    @property
    def ndim(self) -> int:
        return len(self)

    @property
    def dim0(self) -> int:
        return self[0]

    @property
    def dim1(self) -> int:
        return self[1] if len(self) > 1 else -1

    @property
    def dim2(self) -> int:
        return self[2] if len(self) > 2 else -1

    def __repr__(self) -> str:
        return f"Range({', '.join(str(d) for d in self)})"

    __str__ = __repr__

    def __reduce__(self):
        return (Range, tuple(self))


def _as_range(value, what: str) -> Range:
    if isinstance(value, Range):
        return value
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        dims = list(value)
        if not 1 <= len(dims) <= 3:
            raise InvalidRangeError(f"{what} must have 1 to 3 dimensions, got {len(dims)}")
        return Range(*dims)
    try:
        return Range(value)
    except InvalidRangeError:
        raise InvalidRangeError(
            f"{what} must be a Range, a tuple of 1 to 3 positive integers or an integer, "
            f"got {type(value).__name__} {value!r}"
        ) from None


class NdRange:
    """A global index space split into work-groups: `NdRange(global_size, local_size)`.

    Both sizes are required, have the same number of dimensions, and each local extent must
    divide the global one.
    """

    __slots__ = ("_global_range", "_local_range")

    def __init__(self, global_size, local_size):
        g = _as_range(global_size, "NdRange global size")
        lo = _as_range(local_size, "NdRange local size")
        if g.ndim != lo.ndim:
            raise UnmatchedNumberOfRangeDimsError(
                f"NdRange global size {tuple(g)} has {g.ndim} dimension(s) but local size "
                f"{tuple(lo)} has {lo.ndim}; give both the same number"
            )
        for d in range(g.ndim):
            if g[d] % lo[d] != 0:
                raise UnsupportedGroupWorkItemSizeError(
                    f"NdRange local size {lo[d]} does not divide global size {g[d]} in "
                    f"dimension {d}; round the global size up to a multiple of the local size "
                    f"(and skip the extra work-items in the kernel)"
                )
        self._global_range = g
        self._local_range = lo

    @property
    def global_range(self) -> Range:
        return self._global_range

    @property
    def local_range(self) -> Range:
        return self._local_range

    def get_global_range(self) -> Range:
        return self._global_range

    def get_local_range(self) -> Range:
        return self._local_range

    @property
    def ndim(self) -> int:
        return self._global_range.ndim

    def __eq__(self, other) -> bool:
        if not isinstance(other, NdRange):
            return NotImplemented
        return self._global_range == other._global_range and self._local_range == other._local_range

    def __hash__(self) -> int:
        return hash((tuple(self._global_range), tuple(self._local_range)))

    def __repr__(self) -> str:
        return f"NdRange(global_range={self._global_range!r}, local_range={self._local_range!r})"

    def __str__(self) -> str:
        return f"(global_range: {self._global_range}, local_range: {self._local_range})"

    def __reduce__(self):
        return (NdRange, (tuple(self._global_range), tuple(self._local_range)))
