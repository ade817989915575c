"""What the array API adds to kapi.Array: __array_namespace__, mT, matrix
multiplication operators, to_device's signature, and integer-array and boolean-mask
indexing (gathers and scatters on the device)."""

from __future__ import annotations

import sys

from ..._memory.array import Array
from . import indexing
from . import linear_algebra as linalg

_basic_getitem = Array.__getitem__
_basic_setitem = Array.__setitem__
_BASIC_KEYS = frozenset((int, slice, type(Ellipsis)))


def __array_namespace__(self, /, *, api_version=None):
    if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12", "2024.12"):
        raise ValueError(f"kapi.array_api implements the 2024.12 standard, not {api_version!r}")
    return sys.modules[__package__]


def __getitem__(self, key):
    if type(key) in _BASIC_KEYS:  # the common a[i], a[lo:hi], a[...] without a scan
        return _basic_getitem(self, key)
    if indexing.is_advanced(key):
        return indexing.getitem(self, key)
    return _basic_getitem(self, key)


def __setitem__(self, key, value) -> None:
    if type(key) in _BASIC_KEYS:
        _basic_setitem(self, key, value)
        return
    if indexing.is_advanced(key):
        indexing.setitem(self, key, value)
        return
    _basic_setitem(self, key, value)


def _matmul(self, other):
    if not isinstance(other, Array):
        return NotImplemented
    return linalg.matmul(self, other)


def _rmatmul(self, other):
    if not isinstance(other, Array):
        return NotImplemented
    return linalg.matmul(other, self)


def _imatmul(self, other):
    if not isinstance(other, Array):
        return NotImplemented
    r = linalg.matmul(self, other)
    if r.shape != self.shape:
        raise ValueError(f"x @= y: the result's shape {r.shape} is not x's {self.shape}")
    self[...] = r
    return self


def install(cls) -> None:
    cls.__array_namespace__ = __array_namespace__
    cls.__getitem__ = __getitem__
    cls.__setitem__ = __setitem__
    cls.__matmul__ = _matmul
    cls.__rmatmul__ = _rmatmul
    cls.__imatmul__ = _imatmul
    cls.mT = property(lambda self: linalg.matrix_transpose(self))


install(Array)
