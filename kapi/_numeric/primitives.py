"""Parallel primitives on kapi arrays with any binary operation: kapi.reduce, and what it shares
with kapi.scan / kapi.cumsum / kapi.cumprod (scan.py): the operations, the kernels built once
from generated source, the (rows, n) views and the cache of recorded launch plans.

The operation is a binary `@kapi.device_func` (or a name: "add", "mul", "min", "max", "and",
"or", "xor", or the NumPy ufuncs np.add, np.multiply, np.minimum, np.maximum, ...). Its
result is stored in the array's dtype. The kernels are built once per (kind, operation) and
specialised per dtype by the kernel dispatcher.

reduce: the reduced axis is moved last ((rows, n), as kapi/_numeric/reduce.py does); each row is
folded by `groups` work-groups (every work-item folds a strided part privately, then the
group combines in local memory, in order of work-item ids); a second launch with one group
per row folds the partials. No identity is needed: work-items without elements carry a
"nothing yet" flag. The strided fold means the operation must be associative and
commutative, as for any parallel reduction. On kapi's CPU device (no barriers: a work-group
per block, which the driver's threads balance) each work-item folds a contiguous block with
several independent accumulators (_FOLD_WIDE_SRC), then one work-item folds the blocks'
values.
"""

from __future__ import annotations

import inspect
import operator
import os

import numpy as np

from .._memory.array import Array
from . import replay as _replay

WG = 256  # work-items per group
_PER_ITEM = 16  # elements a work-item handles before another group is worth launching
_MAX_ROWS = 65535  # a grid dimension other than CUDA's x holds at most 65535 groups
_KERNELS: dict = {}
_PLANS = _replay.plans()  # reduce/scan call key -> its recorded launches (kapi/_numeric/replay.py)


def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _min(a, b):
    return np.minimum(a, b)  # NaN propagates, as np.minimum.reduce


def _max(a, b):
    return np.maximum(a, b)


def _and(a, b):
    return a & b


def _or(a, b):
    return a | b


def _xor(a, b):
    return a ^ b


_NAMED = {
    "add": _add,
    "mul": _mul,
    "min": _min,
    "max": _max,
    "and": _and,
    "or": _or,
    "xor": _xor,
}
_ALIASES = {
    "sum": "add",
    "prod": "mul",
    "multiply": "mul",
    "minimum": "min",
    "maximum": "max",
    "bitwise_and": "and",
    "bitwise_or": "or",
    "bitwise_xor": "xor",
}
for _f in _NAMED.values():
    _f.__kapi_device_func__ = True
    _f.__kapi_device_options__ = {}


def resolve_op(op, what: str):
    """(name or None, device function) of op: a name, a NumPy ufunc or a device function."""
    if isinstance(op, np.ufunc):
        op = op.__name__
    if isinstance(op, str):
        name = _ALIASES.get(op, op)
        if name not in _NAMED:
            raise ValueError(
                f"{what}: unknown operation {op!r}; use one of {', '.join(sorted(_NAMED))} "
                "or a binary @kapi.device_func"
            )
        return name, _NAMED[name]
    if callable(op) and getattr(op, "__kapi_device_func__", False):
        try:
            inspect.signature(op).bind(0, 0)
        except TypeError:
            raise TypeError(
                f"{what}: the operation {op.__name__}{inspect.signature(op)} must take two "
                "arguments"
            ) from None
        return None, op
    raise TypeError(
        f"{what}: op must be a binary @kapi.device_func or one of "
        f"{', '.join(sorted(_NAMED))}, not {type(op).__name__}"
    )


def named_identity(name, dt: np.dtype):
    """The identity of a named operation in dtype dt (None where it has none)."""
    if name is None:
        return None
    if name == "add" or name in ("or", "xor"):
        return dt.type(0)
    if name == "mul":
        return dt.type(1)
    if name == "and":
        if dt.kind == "f":
            return None
        return dt.type(True) if dt == np.bool_ else dt.type(-1 if dt.kind == "i" else ~dt.type(0))
    big = name == "min"
    if dt.kind == "f":
        return dt.type(np.inf if big else -np.inf)
    if dt == np.bool_:
        return np.bool_(big)
    info = np.iinfo(dt)
    return dt.type(info.max if big else info.min)


def kernel_of(source: str, entry: str, env: dict, key=None, options=None):
    """The kernel `entry` defined by source (our own generated text), built once per
    (source, key, options); env holds its globals (device functions it calls); options are
    @kapi.kernel's (max_registers=...)."""
    ck = (source, key) if not options else (source, key, tuple(sorted(options.items())))
    k = _KERNELS.get(ck)
    if k is None:
        from kapi_lang import kernel_api as K

        from .._kernel.dispatcher import kernel

        g = {"np": np, "K": K, **env}
        exec(compile(source, f"<kapi {entry}>", "exec"), g)  # noqa: S102 - our own source
        k = _KERNELS[ck] = kernel(g[entry], **(options or {}))
    return k


def check_array(x, what: str, float16: bool = False) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{what} takes a kapi array, not {type(x).__name__}")
    dt = x.dtype
    if dt.kind == "c" or (dt == np.float16 and not float16) or dt.kind == "V":
        raise TypeError(f"{what} does not support dtype {dt}")
    return x


def _as_uint8(x: Array) -> Array:
    """A bool array's memory seen as uint8 (local memory holds no bools); the operation
    sees 0 and 1, and results are converted back to bool (nonzero is True)."""
    if x.dtype != np.bool_:
        return x
    u8 = np.dtype(np.uint8)
    return Array._make(
        x._owner, x._ptr, x.shape, x.strides, u8, x.sycl_queue, x.usm_type, x._host_ok
    )


def contiguous(x: Array) -> Array:
    """x itself when C-contiguous, else a C-contiguous copy on its device."""
    return x if x.layout == "C" or x.size == 0 else x.copy()


def rows_view(x: Array, axis) -> tuple[Array, tuple[int, ...], int]:
    """x as a C-contiguous (rows, n) array with `axis` last (axis None: all of x as one
    row); its shape with that axis last; the normalised axis (None: flattened)."""
    if axis is None:
        c = contiguous(x)
        return c.reshape(1, c.size), (c.size,), None
    if isinstance(axis, tuple):
        raise TypeError("kapi primitives take axis=None or one integer axis, not a tuple")
    ax = operator.index(axis)
    if not -x.ndim <= ax < x.ndim:
        raise np.exceptions.AxisError(ax, x.ndim)
    ax %= x.ndim
    perm = [d for d in range(x.ndim) if d != ax] + [ax]
    t = x._permuted(perm)
    n = x.shape[ax]
    rows = 1
    for d in perm[:-1]:
        rows *= x.shape[d]
    if t.size == 0:
        return Array._allocate((rows, n), t.dtype, t.sycl_queue, t.usm_type), t.shape, ax
    t = contiguous(t)
    return t.reshape(rows, n), t.shape, ax


def from_rows(r: Array, moved_shape, ax, ndim: int) -> Array:
    """The inverse of rows_view: r (rows, n) back to the original axis order."""
    perm = [d for d in range(ndim) if d != ax] + [ax] if ax is not None else []
    inv = [perm.index(d) for d in range(ndim)] if ax is not None else []
    if r.size == 0:  # (an empty array's layout is not "C": reshape would refuse it)
        shape = moved_shape if ax is None else tuple(moved_shape[d] for d in inv)
        return Array._allocate(shape, r.dtype, r.sycl_queue, r.usm_type)
    t = r.reshape(moved_shape)
    if ax is None or ax == ndim - 1:
        return t
    v = t._permuted(inv)
    return v.copy()


# -- reduce ---------------------------------------------------------------------------------

_REDUCE_SRC = """
def _reduce(it, x, out, n, slm, flg):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    j = g.get_group_id(1) * L + lid
    step = g.get_group_range(1) * L
    acc = x[row, 0]
    has = 0
    if j < n:
        acc = x[row, j]
        has = 1
        j += step
    while j < n:
        acc = OP(acc, x[row, j])
        j += step
    slm[lid] = acc
    flg[lid] = has
    s = 1
    while s < L:
        K.group_barrier(g)
        if lid % (2 * s) == 0 and lid + s < L:
            if flg[lid + s] != 0:
                if flg[lid] != 0:
                    slm[lid] = OP(slm[lid], slm[lid + s])
                else:
                    slm[lid] = slm[lid + s]
                    flg[lid] = 1
        s *= 2
    if lid == 0:
        out[row, g.get_group_id(1)] = slm[0]
"""


def _reduce_rows(x2: Array, fn, key, groups: int) -> Array:
    from kapi_lang import kernel_api as K

    from .._kernel.ranges import NdRange
    from .replay import launch as call_kernel  # recorded while a plan is traced

    rows, n = x2.shape
    out = Array._allocate((rows, groups), x2.dtype, x2.sycl_queue, x2.usm_type)
    k = kernel_of(_REDUCE_SRC, "_reduce", {"OP": fn}, key)
    slm = K.LocalAccessor(WG, x2.dtype)
    flg = K.LocalAccessor(WG, np.int32)
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        call_kernel(
            k,
            NdRange((r1 - r0, groups * WG), (1, WG)),
            x2[r0:r1],
            out[r0:r1],
            np.int64(n),
            slm,
            flg,
        )
    return out


REDUCE = None  # "group" (work-groups) or "serial" (kapi's CPU device); None: by device


# Each work-item folds a contiguous block of a row in order (kapi's CPU device: no
# barriers): the serial reduction below, and phase 1 of the serial scan (scan.py).
_SCAN_SERIAL_SUMS_SRC = """
def _scan_serial_sums(item, x, sums, n, B):
    row = item.get_id(0)
    t = item.get_id(1)
    i = t * B
    end = min(n, i + B)
    acc = x[row, i]
    i += 1
    while i < end:
        acc = OP(acc, x[row, i])
        i += 1
    sums[row, t] = acc
"""


# kapi's CPU device: a work-item folds its contiguous block with U independent accumulators
# (element i of the block into accumulator i % U), which the vectoriser widens and which keep
# U compare-and-selects (min/max) or adds in flight instead of one chain: the order of the
# operands changes, which a reduction allows (its op is commutative) and so does phase 1 of
# the named operations' scans (each commutative). Blocks shorter than 2 U fold in order. The
# extents go through `& 0x7FFFFFFFFFFFFFFF` (never negative), so that pyfront knows the indices
# are and the loads stay contiguous (no wrap-around selects).
_FOLD_WIDE_SRC = """
def _fold_wide(item, x, sums, n, B):
    row = item.get_global_id(0)
    t = item.get_global_id(1)
    i = t * (B & 0x7FFFFFFFFFFFFFFF)
    end = min(n & 0x7FFFFFFFFFFFFFFF, i + (B & 0x7FFFFFFFFFFFFFFF))
    acc = x[row, i]
    i += 1
    if end - i >= 2 * U:
INIT
        i += U
        while i + U <= end:
FOLD
            i += U
        acc = OP(acc, COMBINE)
    while i < end:
        acc = OP(acc, x[row, i])
        i += 1
    sums[row, t] = acc
"""


def wide_unroll(key, dt: np.dtype) -> int:
    """Accumulators of a CPU work-item's fold (_FOLD_WIDE_SRC) for operation key in dtype
    dt: 64 bytes of them (16 of 4 bytes, 8 of 8: a max with 4 was latency-bound, as in
    kapi/_numeric/reduce.py), except float sums and products, which the vectoriser widens
    from 4."""
    if key in ("add", "mul") and dt.kind == "f":
        return 4
    return max(4, min(16, 64 // max(1, dt.itemsize)))


def fold_wide_source(u: int) -> str:
    """_FOLD_WIDE_SRC with u accumulators written out."""
    init = "\n".join(f"        a{k} = x[row, i + {k}]" for k in range(u))
    fold = "\n".join(f"            a{k} = OP(a{k}, x[row, i + {k}])" for k in range(u))
    names = [f"a{k}" for k in range(u)]
    while len(names) > 1:  # combined pairwise
        names = [f"OP({names[k]}, {names[k + 1]})" for k in range(0, len(names), 2)]
    src = _FOLD_WIDE_SRC.replace("INIT", init).replace("FOLD", fold)
    return src.replace("COMBINE", names[0]).replace("U", str(u))


def cpu_blocks(x: Array, n: int, per: int = 4096) -> tuple[int, int]:
    """(T, B): T blocks of B elements (the last may be shorter, none empty) over which kapi's
    CPU device folds or scans a row of n: per elements or more each, at most 256 (the
    partials' pass is one work-item), at least 4 per core where n allows."""
    cores = max(1, x.device.max_compute_units)
    T = min(256, max(1, n // per))
    T = max(T, min(4 * cores, max(1, n // 1024)))
    B = -(-n // T)
    return -(-n // B), B


def cpu_range(rows: int, T: int):
    """The launch of T work-items per row on kapi's CPU device: each its own work-group, so that
    the driver's threads balance the blocks (groups of 16 left one group per core on 16 cores)."""
    from .._kernel.ranges import NdRange

    return NdRange((rows, T), (1, 1))


def _fold_serial(x2: Array, fn, key) -> Array:
    """Each row of x2 (rows, n) folded by blocks, one per work-item (kapi's CPU device: no
    barriers), each with several accumulators (_FOLD_WIDE_SRC), then the blocks' values the
    same way by one work-item per row."""
    from .replay import launch as call_kernel  # recorded while a plan is traced

    rows, n = x2.shape
    k = kernel_of(fold_wide_source(wide_unroll(key, x2.dtype)), "_fold_wide", {"OP": fn}, key)
    while True:
        T, B = cpu_blocks(x2, n)
        part = Array._allocate((rows, T), x2.dtype, x2.sycl_queue, x2.usm_type)
        for r0 in range(0, rows, _MAX_ROWS):
            r1 = min(rows, r0 + _MAX_ROWS)
            call_kernel(k, cpu_range(r1 - r0, T), x2[r0:r1], part[r0:r1], np.int64(n), np.int64(B))
        if T == 1:
            return part
        x2, n = part, T


def _groups_for(x: Array, n: int) -> int:
    cap = min(1024, 32 * max(1, x.device.max_compute_units))  # enough groups to fill it
    return max(1, min(cap, -(-n // (WG * _PER_ITEM))))


def _result_dtype(name, dt: np.dtype, dtype) -> np.dtype:
    if dtype is not None:
        return np.dtype(dtype)
    if name in ("add", "mul") and (dt == np.bool_ or (dt.kind in "iu" and dt.itemsize < 8)):
        return np.dtype(np.uint64 if dt.kind == "u" else np.int64)  # NumPy's add.reduce
    return dt


def reduce(op, a, axis=None, identity=None, dtype=None, keepdims=False):
    """Reduces a with the binary operation op over axis (None: every axis) on a's device.

    op is a binary @kapi.device_func, assumed associative and commutative (the combining
    order is a tree), or a name ("add", "mul", "min", "max", "and", "or", "xor") or NumPy
    ufunc (np.add, np.minimum, ...). identity is the result for an empty reduction (the
    named operations know theirs); it is never combined into non-empty results. dtype
    (default: a's, or NumPy's add.reduce dtype for "add"/"mul" on small integers) is the
    dtype a is converted to and op computes in. Returns a kapi array (0-d for axis=None).
    """
    fast = _array_reduction(op, a, axis, dtype, keepdims)
    if fast is not None:
        return fast
    if (
        type(a) is Array
        and a.size
        and identity is None
        and (axis is None or type(axis) is int)
        and (dtype is None or isinstance(dtype, (np.dtype, type)))
        and type(keepdims) is bool
    ):
        # the host path once per key; later calls replay its launches (kapi/_numeric/replay.py)
        key = ("reduce", op, a._shape, a._strides, a._dtype, axis, dtype, keepdims, a._queue)
        key += (a._usm_type, REDUCE)
        return _replay.call(key, _PLANS, a, _reduce_general, op, a, axis, None, dtype, keepdims)
    return _reduce_general(op, a, axis, identity, dtype, keepdims)


# The named operations that the array methods' reductions (reduce.py: x.sum(), x.max(), ...)
# also compute: kapi.reduce takes their kernels (strided parts, four accumulators, groups sized
# to the device) when their result dtype is kapi.reduce's. KAPI_REDUCE_VIA_METHODS=0: kapi.reduce's
# own generic kernel for these too (the GPU run's A/B switch).
_METHOD_OPS = {"add": "sum", "mul": "prod", "min": "min", "max": "max"}
VIA_METHODS = os.environ.get("KAPI_REDUCE_VIA_METHODS", "1") != "0"


def _array_reduction(op, a, axis, dtype, keepdims):
    """kapi.reduce of a named operation through reduce.py, or None where that does not apply
    (device functions, empty arrays, bool or float16 data, dtypes it would accumulate in
    differently)."""
    if not VIA_METHODS or type(a) is not Array or not a.size or type(keepdims) is not bool:
        return None
    if isinstance(op, np.ufunc):
        op = op.__name__
    if not isinstance(op, str) or _ALIASES.get(op, op) not in _METHOD_OPS:
        return None
    if not (axis is None or type(axis) is int) or (dtype is not None and not _is_dtype(dtype)):
        return None
    name = _ALIASES.get(op, op)
    dt = _result_dtype(name, a.dtype, dtype)
    if dt.kind not in "iuf" or dt.itemsize < 4 or a.dtype.kind not in "biuf":
        return None
    from . import reduce as _red

    method = _METHOD_OPS[name]
    if _red._acc_dtype(method, a.dtype) == dt:
        x = a  # e.g. int32 sums accumulate in int64 there too
    elif _red._acc_dtype(method, dt) == dt:
        x = a.astype(dt)  # kapi.reduce computes in dtype: the input converted first
    else:
        return None
    return _red.reduce(method, x, axis=axis, keepdims=keepdims)


def _is_dtype(dtype) -> bool:
    try:
        np.dtype(dtype)
    except TypeError:
        return False
    return True


def _reduce_general(op, a, axis, identity, dtype, keepdims):
    name, fn = resolve_op(op, "kapi.reduce")
    check_array(a, "kapi.reduce")
    dt = _result_dtype(name, a.dtype, dtype)
    if identity is None:
        identity = named_identity(name, dt)
    x = _as_uint8(a if a.dtype == dt else a.astype(dt))
    if axis is None:
        x2 = contiguous(x).reshape(1, x.size)
        kept = ()
        ax = None
    else:
        x2, moved, ax = rows_view(x, axis)
        kept = moved[:-1]
    rows, n = x2.shape
    if n == 0:
        if identity is None:
            raise ValueError(
                "zero-size array to reduction operation which has no identity (pass identity=...)"
            )
        res = Array._allocate(kept, dt, a.sycl_queue, a.usm_type)
        res.fill(identity)
    elif rows == 0:
        res = Array._allocate(kept, dt, a.sycl_queue, a.usm_type)
    else:
        key = op if name is None else name
        if (REDUCE or ("serial" if a.device.device_type == "cpu" else "group")) == "serial":
            part = _fold_serial(x2, fn, key)
        else:
            groups = _groups_for(a, n)
            part = _reduce_rows(x2, fn, key, groups)
            if groups > 1:
                part = _reduce_rows(part, fn, key, 1)
        res = part.reshape(kept)
        if dt == np.bool_:
            res = res.astype(dt)
    if keepdims:
        full = list(a.shape)
        for d in range(a.ndim) if ax is None else (ax,):
            full[d] = 1
        res = res.reshape(tuple(full))
    return res
