"""Manipulation functions of the array API: views where strides allow (reshape,
permute_dims, expand_dims, squeeze, flip, broadcast_to), device copies otherwise (concat,
stack, roll, tile, repeat)."""

from __future__ import annotations

import operator

import numpy as np

from ..._memory.array import Array
from . import _core as C


def broadcast_to(x, /, shape):
    C.check(x, "broadcast_to")
    shape = tuple(operator.index(s) for s in shape)
    if len(shape) < x.ndim:
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to {shape}")
    pad = len(shape) - x.ndim
    strides = []
    for d, n in enumerate(shape):
        if d < pad:
            strides.append(0)
            continue
        m = x.shape[d - pad]
        if m == n:
            strides.append(x.strides[d - pad])
        elif m == 1:
            strides.append(0)
        else:
            raise ValueError(f"cannot broadcast an array of shape {x.shape} to {shape}")
    return C.view(x, shape, strides)


def broadcast_arrays(*arrays):
    for a in arrays:
        C.check(a, "broadcast_arrays")
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def reshape(x, /, shape, *, copy=None):
    C.check(x, "reshape")
    shape = tuple(operator.index(s) for s in shape) if not isinstance(shape, int) else (shape,)
    return C.concrete(x).reshape(shape, copy=copy)


def permute_dims(x, /, axes):
    C.check(x, "permute_dims")
    axes = tuple(C.normalise_axis(a, x.ndim) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"permute_dims: axes {axes} are not a permutation of {x.ndim} axes")
    return C.concrete(x)._permuted(axes)


def matrix_transpose(x, /):
    C.check(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError("matrix_transpose takes arrays of at least 2 dimensions")
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return C.concrete(x)._permuted(perm)


def expand_dims(x, /, axis=0):
    C.check(x, "expand_dims")
    n = x.ndim + 1
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = sorted(C.normalise_axis(a, n + len(axes) - 1) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError("expand_dims: repeated axis")
    shape, strides = list(x.shape), list(x.strides)
    for a in axes:
        shape.insert(a, 1)
        strides.insert(a, 0)
    return C.view(x, shape, strides)


def squeeze(x, /, axis):
    C.check(x, "squeeze")
    axes = C.normalise_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has length {x.shape[a]}, not 1")
    keep = [d for d in range(x.ndim) if d not in axes]
    return C.view(x, [x.shape[d] for d in keep], [x.strides[d] for d in keep])


def flip(x, /, *, axis=None):
    C.check(x, "flip")
    axes = C.normalise_axes(axis, x.ndim)
    off = 0
    strides = list(x.strides)
    for a in axes:
        if x.shape[a] > 0:
            off += (x.shape[a] - 1) * strides[a]
        strides[a] = -strides[a]
    return C.view(x, x.shape, strides, off)


def moveaxis(x, source, destination, /):
    C.check(x, "moveaxis")
    src = source if isinstance(source, (tuple, list)) else (source,)
    dst = destination if isinstance(destination, (tuple, list)) else (destination,)
    src = [C.normalise_axis(a, x.ndim) for a in src]
    dst = [C.normalise_axis(a, x.ndim) for a in dst]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: source and destination must be distinct axes, as many")
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def _result_dtype(arrays, what: str) -> np.dtype:
    from .dtypes import result_type

    return result_type(*arrays)


def concat(arrays, /, *, axis=0):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("concat needs at least one array")
    for a in arrays:
        C.check(a, "concat")
    C.check_devices(arrays, "concat")
    dt = _result_dtype(arrays, "concat")
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    first = arrays[0]
    if first.ndim == 0:
        raise ValueError("concat takes arrays of at least 1 dimension")
    ax = C.normalise_axis(axis, first.ndim)
    for a in arrays:
        if a.ndim != first.ndim or any(
            a.shape[d] != first.shape[d] for d in range(a.ndim) if d != ax
        ):
            raise ValueError(f"concat: shapes {first.shape} and {a.shape} differ off axis {ax}")
    shape = list(first.shape)
    shape[ax] = sum(a.shape[ax] for a in arrays)
    out = C.allocate(shape, dt, first)
    pos = 0
    for a in arrays:
        n = a.shape[ax]
        if n and a.size:
            key = (slice(None),) * ax + (slice(pos, pos + n),)
            C.copy_into(out[key], a)
        pos += n
    return out


def stack(arrays, /, *, axis=0):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("stack needs at least one array")
    for a in arrays:
        C.check(a, "stack")
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        raise ValueError("stack: the arrays must have one shape")
    ax = C.normalise_axis(axis, len(shape) + 1)
    return concat([expand_dims(a, axis=ax) for a in arrays], axis=ax)


def unstack(x, /, *, axis=0):
    C.check(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack takes arrays of at least 1 dimension")
    ax = C.normalise_axis(axis, x.ndim)
    key = (slice(None),) * ax
    return tuple(x[key + (i,)] for i in range(x.shape[ax]))


def roll(x, /, shift, *, axis=None):
    C.check(x, "roll")
    if axis is None:
        flat = reshape(x, (-1,))
        return reshape(roll(flat, shift, axis=0), x.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis must have the same length")
    total = {}
    for s, a in zip(shifts, axes, strict=True):
        a = C.normalise_axis(a, x.ndim)
        total[a] = total.get(a, 0) + operator.index(s)
    src = C.concrete(x)
    out = C.allocate(x.shape, x.dtype, x)
    if x.size == 0:
        return out
    # each axis splits into two blocks; the 2^k combinations are copied once each
    pieces = [((), ())]
    for d in range(x.ndim):
        n = x.shape[d]
        s = total.get(d, 0) % n if n else 0
        new = []
        for skey, dkey in pieces:
            if s == 0:
                new.append((skey + (slice(None),), dkey + (slice(None),)))
            else:
                new.append((skey + (slice(0, n - s),), dkey + (slice(s, n),)))
                new.append((skey + (slice(n - s, n),), dkey + (slice(0, s),)))
        pieces = new
    for skey, dkey in pieces:
        C.copy_into(out[dkey], src[skey])
    return out


def tile(x, repetitions, /):
    C.check(x, "tile")
    reps = tuple(operator.index(r) for r in repetitions)
    nd = max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - x.ndim) + x.shape
    xs = reshape(x, shape)
    # (r0, d0, r1, d1, ...) broadcast, copied, then merged
    inter, bshape = [], []
    for r, d in zip(reps, shape, strict=True):
        inter += [1, d]
        bshape += [r, d]
    v = broadcast_to(reshape(xs, tuple(inter)), tuple(bshape))
    out = C.allocate(bshape, x.dtype, x)
    if out.size:
        C.copy_into(out, v)
    return out.reshape(tuple(r * d for r, d in zip(reps, shape, strict=True)))


def repeat(x, repeats, /, *, axis=None):
    C.check(x, "repeat")
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    ax = C.normalise_axis(axis, x.ndim)
    n = x.shape[ax]
    if isinstance(repeats, Array) and repeats.ndim == 0:
        repeats = int(repeats)
    if not isinstance(repeats, Array):
        r = operator.index(repeats)
        if r < 0:
            raise ValueError("repeat: repeats must be non-negative")
        # (…, n, 1, …) broadcast to (…, n, r, …), then merged
        v = expand_dims(x, axis=ax + 1)
        shape = list(v.shape)
        shape[ax + 1] = r
        b = broadcast_to(v, tuple(shape))
        out = C.allocate(b.shape, x.dtype, x)
        if out.size:
            C.copy_into(out, b)
        final = list(x.shape)
        final[ax] = n * r
        return out.reshape(tuple(final))
    if repeats.ndim != 1 or repeats.shape[0] not in (1, n):
        raise ValueError(f"repeat: repeats must have length 1 or {n}")
    if repeats.shape[0] == 1:
        return repeat(x, int(repeats[0]), axis=ax)
    from .indexing import take
    from .searching import searchsorted
    from .statistics import cumulative_sum

    ends = C.concrete(cumulative_sum(repeats.astype(np.int64)))
    total = int(ends[n - 1]) if n else 0
    from .creation import arange

    pos = arange(total, dtype=np.int64, device=x.sycl_queue)
    src = searchsorted(ends, pos, side="right")
    return take(x, src, axis=ax)


def _index_grid(x: Array, axis: int) -> Array:
    """The int64 indices along axis, shaped to broadcast against x (1 on every other
    axis)."""
    from .creation import arange

    n = x.shape[axis]
    idx = arange(n, dtype=np.int64, device=x.sycl_queue)
    shape = [1] * x.ndim
    shape[axis] = n
    return idx.reshape(tuple(shape))
