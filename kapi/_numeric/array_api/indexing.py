"""Indexing on the device: take, take_along_axis, and kapi arrays' integer-array and
boolean-mask indexing (x[idx], x[mask], x[mask] = v), as gather and scatter kernels."""

from __future__ import annotations

import builtins
import operator

import numpy as np

from ..._memory.array import Array
from .. import ufunc as _ufunc
from . import _core as C

_GATHER = """
def _gather(item, x, idx, out, N):
    p = item.get_id(0)
    j = item.get_id(1)
    q = item.get_id(2)
    k = idx[j] % N
    out[p, j, q] = x[p, k, q]
"""

# one axis alone (a 1-d take): its Range in dimension 0, which holds 2^31 - 1 work-groups on
# CUDA where dimensions 1 and 2 hold 65535 (_GATHER's Range(1, m, 1) failed from there on)
_GATHER_1D = """
def _gather_1d(item, x, idx, out, N):
    j = item.get_id(0)
    out[j] = x[idx[j] % N]
"""

# Index spaces whose dimension 1 or 2 the device might not launch (CUDA holds 65535 groups
# there: ufunc.fits) run flat, in dimension 0, with the position divided out.

_GATHER_FLAT = """
def _gather_flat(item, x, idx, out, N, M, POST):
    t = item.get_id(0)
    r = t // POST
    q = t - r * POST
    p = r // M
    j = r - p * M
    k = idx[j] % N
    out[p, j, q] = x[p, k, q]
"""

_GATHER_ROWS = """
def _gather_rows(item, x, idx, out, N):
    b = item.get_id(0)
    j = item.get_id(1)
    k = idx[b, j] % N
    out[b, j] = x[b, k]
"""

_GATHER_ROWS_FLAT = """
def _gather_rows_flat(item, x, idx, out, N, M):
    t = item.get_id(0)
    b = t // M
    j = t - b * M
    k = idx[b, j] % N
    out[b, j] = x[b, k]
"""

_SCATTER = """
def _scatter(item, x, idx, v, N):
    j = item.get_id(0)
    q = item.get_id(1)
    k = idx[j] % N
    x[k, q] = v[j, q]
"""

_SCATTER_FLAT = """
def _scatter_flat(item, x, idx, v, N, POST):
    t = item.get_id(0)
    j = t // POST
    q = t - j * POST
    k = idx[j] % N
    x[k, q] = v[j, q]
"""


def _index_array(indices, what: str) -> Array:
    if not isinstance(indices, Array):
        raise TypeError(f"{what}: indices must be a kapi array")
    if indices.dtype.kind not in "iu":
        raise IndexError(f"{what}: indices must be integers, not {indices.dtype}")
    return indices


def _gather3(x3: Array, idx: Array, n: int) -> Array:
    """out[p, j, q] = x3[p, idx[j], q]: x3 (pre, n, post), idx (m,) int."""
    from ..._kernel.ranges import Range
    from ..replay import launch

    pre, _, post = x3.shape
    m = idx.shape[0]
    out = C.allocate((pre, m, post), x3.dtype, x3)
    if out.size and pre == 1 and post == 1:
        o1 = out.reshape((m,))
        launch(C.kernel(_GATHER_1D, "_gather_1d"), Range(m), x3.reshape((n,)), idx, o1, np.int64(n))
    elif out.size and not _ufunc.fits(out.device, (pre, m, post)):
        launch(C.kernel(_GATHER_FLAT, "_gather_flat"), Range(out.size), x3, idx, out, np.int64(n),
               np.int64(m), np.int64(post))  # fmt: skip
    elif out.size:
        launch(C.kernel(_GATHER, "_gather"), Range(pre, m, post), x3, idx, out, np.int64(n))
    return out


def take(x, indices, /, *, axis=None):
    C.check(x, "take")
    indices = _index_array(indices, "take")
    if indices.ndim != 1:
        raise ValueError("take: indices must be 1-D")
    C.check_devices([x, indices], "take")
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis is needed for arrays of more than one dimension")
        axis = 0
    ax = C.normalise_axis(axis, x.ndim)
    shape = x.shape
    pre = int(np.prod(shape[:ax], dtype=np.int64))
    post = int(np.prod(shape[ax + 1 :], dtype=np.int64))
    n = shape[ax]
    x3 = C.contiguous(x).reshape((pre, n, post))
    idx = C.contiguous(indices.astype(np.int64) if indices.dtype != np.int64 else indices)
    if n == 0 and indices.size:
        raise IndexError("take: index out of range for an empty axis")
    out = _gather3(x3, idx, n)
    return out.reshape(shape[:ax] + (indices.shape[0],) + shape[ax + 1 :])


def take_along_axis(x, indices, /, *, axis=-1):
    from .manipulation import broadcast_to, moveaxis

    C.check(x, "take_along_axis")
    indices = _index_array(indices, "take_along_axis")
    if x.ndim != indices.ndim:
        raise ValueError("take_along_axis: x and indices must have the same number of dimensions")
    ax = C.normalise_axis(axis, x.ndim)
    xm = moveaxis(x, ax, -1)
    im = moveaxis(indices, ax, -1)
    batch = np.broadcast_shapes(xm.shape[:-1], im.shape[:-1])
    n, m = xm.shape[-1], im.shape[-1]
    xb = C.contiguous(broadcast_to(xm, batch + (n,)))
    ib = C.contiguous(broadcast_to(im.astype(np.int64), batch + (m,)))
    b = int(np.prod(batch, dtype=np.int64))
    out = C.allocate((b, m), x.dtype, x)
    if out.size:
        from ..._kernel.ranges import Range
        from ..replay import launch

        args = (xb.reshape((b, n)), ib.reshape((b, m)), out, np.int64(n))
        if not _ufunc.fits(out.device, (b, m)):
            launch(C.kernel(_GATHER_ROWS_FLAT, "_gather_rows_flat"), Range(b * m), *args,
                   np.int64(m))  # fmt: skip
        else:
            launch(C.kernel(_GATHER_ROWS, "_gather_rows"), Range(b, m), *args)
    return moveaxis(out.reshape(batch + (m,)), -1, ax)


# -- x[key] for integer arrays and boolean masks ----------------------------------------------


def is_advanced(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (Array, list, np.ndarray)) or isinstance(k, bool) for k in keys)


def _flat_positions(x: Array, key) -> tuple[Array, int, tuple]:
    """For a key of integers and integer arrays (one per leading axis): the int64 flat
    positions into x's first k axes (shape: the broadcast index shape), and k."""
    keys = key if isinstance(key, tuple) else (key,)
    if builtins.any(k is Ellipsis for k in keys):
        if keys[-1] is not Ellipsis or builtins.sum(k is Ellipsis for k in keys) > 1:
            raise IndexError(
                "kapi arrays take integer-array indices for leading axes: an ellipsis may "
                "only end the index"
            )
        keys = keys[:-1]
    k = len(keys)
    if k > x.ndim:
        raise IndexError(f"too many indices for an array of {x.ndim} dimensions")
    arrays = []
    for d, key_d in enumerate(keys):
        if isinstance(key_d, (list, np.ndarray)):
            key_d = _host_index(key_d, x, d)
        if isinstance(key_d, Array):
            if key_d.dtype.kind not in "iu":
                raise IndexError("kapi arrays index with integer arrays or one boolean mask")
            arrays.append(key_d)
        else:
            try:
                arrays.append(operator.index(key_d))
            except TypeError:
                raise IndexError(
                    "kapi arrays index with integers, slices, None, ..., integer arrays "
                    f"(with integers only) or one boolean mask, not {type(key_d).__name__}"
                ) from None
            n = x.shape[d]
            if not -n <= arrays[-1] < n:
                raise IndexError(f"index {arrays[-1]} is out of bounds for axis {d} of size {n}")
    C.check_devices([x, *[a for a in arrays if isinstance(a, Array)]], "indexing")
    shape = np.broadcast_shapes(*(a.shape for a in arrays if isinstance(a, Array)))
    # flat = sum over d of (idx_d wrapped) * stride_d, as one elementwise kernel
    flat = None
    stride = 1
    for d in range(k - 1, -1, -1):
        a = arrays[d]
        n = x.shape[d]
        if isinstance(a, Array):
            a64 = a.astype(np.int64) if a.dtype != np.int64 else a
            term = _ufunc.where(a64 < 0, a64 + n, a64) * stride
        else:
            term = (a % n if n else 0) * stride
        flat = term if flat is None else flat + term
        stride *= n
    if not isinstance(flat, Array):
        flat = C.scalar_array(flat, np.int64, x)
    from .manipulation import broadcast_to

    flat = C.contiguous(broadcast_to(flat, shape))
    return flat, k, shape


def _host_index(key, x: Array, axis: int = 0) -> Array:
    """A list or NumPy array used as an index: checked against x's extent on the host and
    copied to x's device (an index the caller wrote on the host, as NumPy takes lists)."""
    from .creation import asarray

    h = np.asarray(key)
    if h.dtype.kind not in "iub" or (h.dtype.kind == "b" and h.ndim == 0):
        raise IndexError(
            f"arrays used as indices must be of integer (or boolean) type, not {h.dtype}"
        )
    if h.dtype.kind in "iu" and h.size and axis < x.ndim:
        n = x.shape[axis]
        lo, hi = int(h.min()), int(h.max())
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    return asarray(h, device=x.sycl_queue)


def _mask_positions(mask: Array) -> Array:
    from .searching import nonzero

    flat = mask.reshape((-1,))
    return nonzero(flat)[0]


def _mask_key(x: Array, key):
    keys = key if isinstance(key, tuple) else (key,)
    keys = tuple(
        _host_index(k, x)
        if isinstance(k, (list, np.ndarray)) and np.asarray(k).dtype == np.bool_
        else k
        for k in keys
    )
    masks = [k for k in keys if isinstance(k, Array) and k.dtype == np.bool_]
    if not masks:
        return None
    if len(keys) != 1:
        raise IndexError("a boolean mask must be the only index of a kapi array")
    m = masks[0]
    if m.shape != x.shape[: m.ndim]:
        raise IndexError(f"boolean index of shape {m.shape} does not match {x.shape}")
    C.check_devices([x, m], "boolean indexing")
    return m


def getitem(x: Array, key):
    keys = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, bool) for k in keys):
        if len(keys) != 1:
            raise IndexError("a Python bool must be the only index of a kapi array")
        v = x[None]
        return v if keys[0] else v[0:0]
    m = _mask_key(x, key)
    if m is not None:
        if m.ndim == 0:
            v = x[None]
            return C.contiguous(v if bool(m) else v[0:0])
        pos = _mask_positions(m)
        rest = x.shape[m.ndim :]
        x2 = C.contiguous(x).reshape((-1,) + rest) if x.ndim else x
        return take(x2.reshape((x2.shape[0], -1)), pos, axis=0).reshape((pos.shape[0],) + rest)
    flat, k, shape = _flat_positions(x, key)
    rest = x.shape[k:]
    x2 = C.contiguous(x).reshape((int(np.prod(x.shape[:k], dtype=np.int64)), -1))
    out = take(x2, flat.reshape((-1,)), axis=0)
    return out.reshape(shape + rest)


def setitem(x: Array, key, value) -> None:
    from .manipulation import broadcast_to

    m = _mask_key(x, key)
    if m is not None and m.ndim == x.ndim and not isinstance(value, Array):
        # x = where(mask, value, x), elementwise in place
        v = np.asarray(value).astype(x.dtype)[()]
        C.copy_into(x, _ufunc.where(m, v, x))
        return
    if m is not None:
        pos = _mask_positions(m) if m.ndim else None
        if pos is None:
            if bool(m):
                x[...] = value
            return
        rest = x.shape[m.ndim :]
        shape = (pos.shape[0],) + rest
    else:
        flat, k, ishape = _flat_positions(x, key)
        pos = flat.reshape((-1,))
        rest = x.shape[k:]
        shape = ishape + rest
    if not isinstance(value, Array):
        value = C.scalar_array(value, x.dtype, x)
    v = C.contiguous(broadcast_to(value.astype(x.dtype), shape))
    target = x if x.layout == "C" else C.contiguous(x)
    n_lead = int(np.prod(x.shape[: x.ndim - len(rest)], dtype=np.int64))
    post = int(np.prod(rest, dtype=np.int64))
    t2 = target.reshape((n_lead, post))
    v2 = v.reshape((pos.shape[0], post))
    if v2.size:
        from ..._kernel.ranges import Range
        from ..replay import launch

        if not _ufunc.fits(v2.device, (pos.shape[0], post)):
            launch(C.kernel(_SCATTER_FLAT, "_scatter_flat"), Range(v2.size), t2, pos, v2,
                   np.int64(n_lead), np.int64(post))  # fmt: skip
        else:
            launch(C.kernel(_SCATTER, "_scatter"), Range(pos.shape[0], post), t2, pos, v2,
                   np.int64(n_lead))  # fmt: skip
    if target is not x:
        C.copy_into(x, target)
