"""The Python array API standard (2024.12) on kapi arrays: `kapi.array_api`, the namespace
`x.__array_namespace__()` returns. Every function runs on the device where its arrays live
(kernels of kapi's array library), never through a silent copy to the host.

Modules: creation, elementwise, manipulation, indexing (take, x[int arrays], x[mask]),
searching, sets, statistics (and the utility functions all, any, diff), dtypes, linalg
(with the linalg extension), fft (the fft extension); _core holds what they share.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..sort import argsort as _argsort
from ..sort import sort as _sort
from . import (  # noqa: F401  (_array completes kapi.Array)
    _array,
    creation,
    dtypes,
    elementwise,
    fourier,
    indexing,
    linear_algebra,
    manipulation,
    searching,
    sets,
    statistics,
)
from . import _core as C

__array_api_version__ = "2024.12"

e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None

NAMESPACE: dict = dict(C.API_DTYPES)


def _sorting(x, axis, descending, stable, values: bool):
    C.check(x, "sort" if values else "argsort")
    if x.ndim == 0:
        if axis not in (-1, 0):
            raise np.exceptions.AxisError(axis, 0)
        return (
            C.concrete(x.astype(x.dtype, copy=True)) if values else C.scalar_array(0, np.int64, x)
        )
    if x.size == 0:
        return C.allocate(x.shape, x.dtype if values else np.int64, x)
    f = _sort if values else _argsort
    return f(C.concrete(x), axis=axis, descending=builtins.bool(descending), stable=stable)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """x sorted along axis (a stable radix sort on x's device; NaNs last)."""
    return _sorting(x, axis, descending, stable, True)


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """The int64 indices that sort x along axis (stable; on x's device)."""
    return _sorting(x, axis, descending, stable, False)


class _Info:
    """__array_namespace_info__(): what kapi's namespace offers on which devices."""

    def capabilities(self):
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": None,
        }

    def default_device(self):
        return C.queue_of(None).device

    def devices(self):
        from ..._memory.device import devices

        return list(devices())

    def default_dtypes(self, *, device=None):
        q = C.queue_of(device)
        return {
            "real floating": C.default_float(q),
            "complex floating": C.default_complex(q),
            "integral": C.INT64,
            "indexing": C.INT64,
        }

    def dtypes(self, *, device=None, kind=None):
        q = C.queue_of(device)
        names = dict(C.API_DTYPES)
        if not q.device.has_aspect_fp64:
            names.pop("float64")
            names.pop("complex128")
        if kind is None:
            return names
        return {n: d for n, d in names.items() if dtypes.isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()


class _Extension:
    """A namespace of extension functions (linalg, fft)."""

    def __init__(self, name: str, funcs: dict):
        self.__name__ = f"kapi.array_api.{name}"
        for k, v in funcs.items():
            setattr(self, k, v)
        self.__all__ = sorted(funcs)

    def __repr__(self) -> str:
        return f"<namespace {self.__name__}>"


NAMESPACE.update(
    e=e, inf=inf, nan=nan, pi=pi, newaxis=newaxis, sort=sort, argsort=argsort,
    __array_api_version__=__array_api_version__,
    __array_namespace_info__=__array_namespace_info__,
)  # fmt: skip
for _mod, _names in (
    (creation, "arange asarray empty empty_like eye from_dlpack full full_like linspace "
     "meshgrid ones ones_like tril triu zeros zeros_like"),
    (dtypes, "astype can_cast finfo iinfo isdtype result_type"),
    (indexing, "take take_along_axis"),
    (manipulation, "broadcast_arrays broadcast_to concat expand_dims flip moveaxis "
     "permute_dims repeat reshape roll squeeze stack tile unstack"),
    (searching, "argmax argmin count_nonzero nonzero searchsorted where"),
    (sets, "unique_all unique_counts unique_inverse unique_values"),
    (statistics, "cumulative_sum cumulative_prod max mean min prod std sum var all any diff"),
    (linear_algebra, "matmul tensordot vecdot"),
):  # fmt: skip
    for _n in _names.split():
        NAMESPACE[_n] = getattr(_mod, _n)
NAMESPACE["matrix_transpose"] = manipulation.matrix_transpose
NAMESPACE.update(elementwise.FUNCTIONS)
NAMESPACE["linalg"] = _Extension("linalg", linear_algebra.LINALG)
NAMESPACE["fft"] = _Extension("fft", fourier.FFT)

globals().update(NAMESPACE)
__all__ = sorted(n for n in NAMESPACE if not n.startswith("__"))
