"""kapi.concatenate: arrays joined along an axis on their device (what Dask's reductions and
results need of a chunk type), each part copied into its slice by an elementwise kernel."""

from __future__ import annotations

import operator

import numpy as np

from .._memory.array import Array, _check_dtype, asarray
from . import ufunc as _ufunc


def concatenate(arrays, axis=0, out=None, dtype=None) -> Array:
    """NumPy's concatenate for kapi arrays of one device (NumPy's result dtype); parts that are
    not kapi arrays are copied to that device first. axis=None joins the flattened parts."""
    parts = list(arrays)
    if not parts:
        raise ValueError("need at least one array to concatenate")
    queue = _ufunc.common_queue([p for p in parts if isinstance(p, Array)], "concatenate")
    parts = [p if isinstance(p, Array) else asarray(p, queue=queue) for p in parts]
    queue = queue or parts[0].sycl_queue
    if axis is None:
        parts = [p.reshape(-1) if p.layout == "C" else p.copy().reshape(-1) for p in parts]
        axis = 0
    ndim = parts[0].ndim
    if ndim == 0 or any(p.ndim != ndim for p in parts):
        raise ValueError(
            "concatenate needs arrays of one number of dimensions (at least 1), got "
            + ", ".join(str(p.ndim) for p in parts)
        )
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    axis %= ndim
    for p in parts:
        if (
            p.shape[:axis] + p.shape[axis + 1 :]
            != parts[0].shape[:axis] + parts[0].shape[axis + 1 :]
        ):
            raise ValueError(
                f"concatenate: shapes {[q.shape for q in parts]} differ outside axis {axis}"
            )
    dt = _check_dtype(dtype) if dtype is not None else np.result_type(*(p.dtype for p in parts))
    shape = list(parts[0].shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    fresh = out is None
    if fresh:
        out = Array._allocate(tuple(shape), dt, queue, parts[0].usm_type)
    else:
        out = _ufunc.check_out(out, tuple(shape), dt, "concatenate", casting="unsafe")
    start = 0
    for p in parts:
        stop = start + p.shape[axis]
        view = out[(slice(None),) * axis + (slice(start, stop),)]
        if p.size:
            leaf = p if p.dtype == dt else p.astype(dt)
            _ufunc.launch("l0", [leaf], view, "concatenate", fresh=fresh)
        start = stop
    return out
