"""Parallel primitives on kapi arrays with any binary operation: kapi.reduce, kapi.scan and
kapi.cumsum / kapi.cumprod, generated as kapi kernels on the array's device.

The operation is a binary `@kapi.device_func` (or a name: "add", "mul", "min", "max", "and",
"or", "xor", or the NumPy ufuncs np.add, np.multiply, np.minimum, np.maximum, ...). Its
result is stored in the array's dtype. The kernels are built once per (kind, operation) and
specialised per dtype by the kernel dispatcher.

reduce: the reduced axis is moved last ((rows, n), as kapi/_numeric/reduce.py does); each row is
folded by `groups` work-groups (every work-item folds a strided part privately, then the
group combines in local memory, in order of work-item ids); a second launch with one group
per row folds the partials. No identity is needed: work-items without elements carry a
"nothing yet" flag. The strided fold means the operation must be associative and
commutative, as for any parallel reduction.

scan (reduce-then-scan, three phases): each work-group owns a contiguous segment of a row;
phase 1 writes each segment's total, phase 2 scans the totals (recursively, the same
function), phase 3 scans each segment in chunks of one element per work-item (Hillis-Steele
in local memory, order preserving) starting from the scanned total of the segments before
it. The operation needs only to be associative. On GPUs a chunk is SCAN_ITEMS elements per
work-item (runs folded in order, one sub-group scan per chunk), the next chunk's loads are in
flight while a chunk is scanned, and phase 1 of the named operations (all commutative) is a
plain reduction of each segment (four strided accumulators per work-item, no barriers).
An exclusive scan writes each inclusive value one place to the right and the identity first.
On kapi's CPU device each work-item scans a contiguous block sequentially instead (no
barriers).
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


def _fold_serial(x2: Array, fn, key) -> Array:
    """Each row of x2 (rows, n) folded in order by blocks, one per work-item (kapi's CPU
    device: no barriers), then the blocks' values by one work-item per row."""
    from .._kernel.ranges import Range
    from .replay import launch as call_kernel  # recorded while a plan is traced

    rows, n = x2.shape
    k = kernel_of(_SCAN_SERIAL_SUMS_SRC, "_scan_serial_sums", {"OP": fn}, key)
    while True:
        T = min(256, max(1, n // 4096))
        B = -(-n // T)
        T = -(-n // B)  # every block has at least one element
        part = Array._allocate((rows, T), x2.dtype, x2.sycl_queue, x2.usm_type)
        for r0 in range(0, rows, _MAX_ROWS):
            r1 = min(rows, r0 + _MAX_ROWS)
            call_kernel(k, Range(r1 - r0, T), x2[r0:r1], part[r0:r1], np.int64(n), np.int64(B))
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


# -- scan -----------------------------------------------------------------------------------

# One chunk of L consecutive elements (one per work-item, `cnt` of them valid) scanned
# inclusively and in order: after it, t is this work-item's inclusive value within the chunk
# and tot the chunk's total. Items past cnt only ever read items before them, so the valid
# ones never see their garbage and no identity is needed.
# By work-groups: Hillis-Steele in local memory.
_CHUNK_GROUP = """
        K.group_barrier(g)
        slm[lid] = v
        t = v
        off = 1
        while off < L:
            K.group_barrier(g)
            t = slm[lid]
            if lid >= off:
                t = OP(slm[lid - off], t)
            K.group_barrier(g)
            slm[lid] = t
            off *= 2
        K.group_barrier(g)
        tot = slm[cnt - 1]
"""
# By sub-groups (GPUs): Hillis-Steele by shuffles within each sub-group, then the last valid
# item of each sub-group shares its value and every item folds those of the sub-groups before
# its own (sub-groups all have S items: S divides L). Two barriers per chunk.
_CHUNK_SUBGROUP = """
        sg = it.get_sub_group()
        lane = sg.get_local_linear_id()
        S = sg.get_local_linear_range()
        sgid = sg.get_group_linear_id()
        t = v
        off = 1
        while off < S:
            u = K.shift_group_right(sg, t, off)
            if lane >= off:
                t = OP(u, t)
            off *= 2
        K.group_barrier(g)
        if lid < cnt and (lane == S - 1 or lid == cnt - 1):
            slm[sgid] = t
        K.group_barrier(g)
        tot = slm[0]
        pre = tot
        w = 1
        while w <= (cnt - 1) // S:
            sw = slm[w]
            if w < sgid:
                pre = OP(pre, sw)
            tot = OP(tot, sw)
            w += 1
        if sgid > 0:
            t = OP(pre, t)
"""

_SCAN_SUMS_SRC = """
def _scan_sums(it, x, sums, n, seg, slm):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    carry = x[row, start]
    c = start
    while c < end:
        cnt = min(L, end - c)
        v = x[row, c + lid] if lid < cnt else x[row, c]
CHUNK
        if c == start:
            carry = tot
        else:
            carry = OP(carry, tot)
        c += L
    if lid == 0:
        sums[row, gid] = carry
"""

_SCAN_APPLY_SRC = """
def _scan_apply(it, x, out, pre, n, seg, slm, ident, EXCL):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    has = gid > 0
    carry = pre[row, gid - 1] if has else x[row, start]
    c = start
    while c < end:
        cnt = min(L, end - c)
        v = x[row, c + lid] if lid < cnt else x[row, c]
CHUNK
        if lid < cnt:
            r = OP(carry, t) if has else t
            if EXCL != 0:
                if c + lid + 1 < n:
                    out[row, c + lid + 1] = r
            else:
                out[row, c + lid] = r
        if has:
            carry = OP(carry, tot)
        else:
            carry = tot
            has = True
        c += L
    if EXCL != 0 and gid == 0 and lid == 0:
        out[row, 0] = ident
"""


# The GPU run compares shapes by these (bench/RESULTS.md): KAPI_SCAN_SUMS=scan runs phase 1
# of the named operations as the order-keeping _scan_sums_b (default "reduce": _scan_sums_r);
# KAPI_SCAN_GROUPS caps the work-groups (segments) per row of the GPUs' scan;
# KAPI_SCAN_ITEMS (a power of two, 1 to 32) is SCAN_ITEMS.
SCAN_ITEMS = int(os.environ.get("KAPI_SCAN_ITEMS", "8"))  # elements per work-item per chunk
if SCAN_ITEMS not in (1, 2, 4, 8, 16, 32):
    raise ValueError(f"KAPI_SCAN_ITEMS must be 1, 2, 4, 8, 16 or 32, not {SCAN_ITEMS}")
SCAN_SUMS = os.environ.get("KAPI_SCAN_SUMS", "reduce")
SCAN_GROUPS = int(os.environ.get("KAPI_SCAN_GROUPS", "4096"))


# The GPUs' scan ("subgroup"): a chunk is L * SCAN_ITEMS elements, loaded coalesced into
# local memory (stg, one pad slot per 32 so that a work-item's run of SCAN_ITEMS is read
# without bank conflicts); each work-item folds its own run of SCAN_ITEMS consecutive
# elements in order, the runs' totals go through CHUNK (one sub-group scan and two barriers
# per chunk rather than per L elements), and _scan_apply_b writes each run's scan back to
# local memory, then out coalesced. The next chunk's SCAN_ITEMS loads per work-item are
# issued before this chunk is scanned (PREFETCH, into registers p0, p1, ...; indices clamped
# to the segment, so no load is conditional and all are in flight together while the
# barriers and the sub-group scan of this chunk run): a work-group is never waiting on one
# load at a time.
def _prefetch(pad: str, first: str) -> str:
    """Lines loading the chunk at c (its elements e * L + lid, clamped to end - 1) into
    p0 .. p{SCAN_ITEMS-1}; `first`: the chunk's start expression."""
    return "\n".join(
        f"{pad}p{e} = x[row, min({first} + {e} * L + lid, end - 1)]" for e in range(SCAN_ITEMS)
    )


def _stage_runs() -> str:
    pad = " " * 8
    lines = [f"{pad}K.group_barrier(g)"]
    for e in range(SCAN_ITEMS):  # garbage past m is never read (stg holds a whole chunk)
        q = f"{e} * L + lid"
        lines.append(f"{pad}stg[{q} + ({q}) // 32] = p{e}")
    lines += [
        f"{pad}if c + L * SCAN_ITEMS < end:",
        _prefetch(pad + "    ", "c + L * SCAN_ITEMS"),
        f"{pad}K.group_barrier(g)",
        f"{pad}b0 = lid * SCAN_ITEMS",
        f"{pad}v = stg[b0 + b0 // 32] if b0 < m else stg[0]",
        f"{pad}e = 1",
        f"{pad}while e < SCAN_ITEMS:",
        f"{pad}    q = b0 + e",
        f"{pad}    if q < m:",
        f"{pad}        v = OP(v, stg[q + q // 32])",
        f"{pad}    e += 1",
        f"{pad}cnt = (m + SCAN_ITEMS - 1) // SCAN_ITEMS",
    ]
    return "\n".join(lines)


_SCAN_SUMS_B_SRC = """
def _scan_sums_b(it, x, sums, n, seg, slm, stg):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    carry = x[row, start]
    c = start
PREFETCH
    while c < end:
        m = min(L * SCAN_ITEMS, end - c)
STAGE
CHUNK
        if c == start:
            carry = tot
        else:
            carry = OP(carry, tot)
        c += L * SCAN_ITEMS
    if lid == 0:
        sums[row, gid] = carry
"""

# Phase 1 on GPUs for the named operations (all commutative): a segment's total needs no
# order, so it is folded as kapi.reduce folds a row: each work-item strides through the
# segment with four independent accumulators (four loads in flight, no barriers), then the
# group combines them in local memory. Reading is all this pass does, at reduction speed.
_SCAN_SUMS_R_SRC = """
def _scan_sums_r(it, x, sums, n, seg, slm, ident):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    j = start + lid
    a0 = ident
    a1 = ident
    a2 = ident
    a3 = ident
    while j + 3 * L < end:
        a0 = OP(a0, x[row, j])
        a1 = OP(a1, x[row, j + L])
        a2 = OP(a2, x[row, j + 2 * L])
        a3 = OP(a3, x[row, j + 3 * L])
        j += 4 * L
    while j < end:
        a0 = OP(a0, x[row, j])
        j += L
    slm[lid] = OP(OP(a0, a1), OP(a2, a3))
    s = L // 2
    while s > 0:
        K.group_barrier(g)
        if lid < s:
            slm[lid] = OP(slm[lid], slm[lid + s])
        s //= 2
    if lid == 0:
        sums[row, gid] = slm[0]
"""

_SCAN_APPLY_B_SRC = """
def _scan_apply_b(it, x, out, pres, n, seg, slm, ident, EXCL, stg):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    has = gid > 0
    carry = pres[row, gid - 1] if has else x[row, start]
    c = start
PREFETCH
    while c < end:
        m = min(L * SCAN_ITEMS, end - c)
STAGE
CHUNK
        # the runs before this work-item's: the previous lane's value, or for a sub-group's
        # first lane the sub-groups before it (pre, from the chunk scan); no local memory,
        # no barrier
        u = K.shift_group_right(sg, t, 1)
        ex = u if lane > 0 else pre
        b0 = lid * SCAN_ITEMS
        if b0 < m:
            p = carry
            if lid > 0:
                p = OP(carry, ex) if has else ex
            r = stg[b0 + b0 // 32]
            if has or lid > 0:
                r = OP(p, r)
            stg[b0 + b0 // 32] = r
            e = 1
            while e < SCAN_ITEMS:
                q = b0 + e
                if q < m:
                    r = OP(r, stg[q + q // 32])
                    stg[q + q // 32] = r
                e += 1
        K.group_barrier(g)
        e = 0
        while e < SCAN_ITEMS:
            q = e * L + lid
            if q < m:
                r = stg[q + q // 32]
                if EXCL != 0:
                    if c + q + 1 < n:
                        out[row, c + q + 1] = r
                else:
                    out[row, c + q] = r
            e += 1
        if has:
            carry = OP(carry, tot)
        else:
            carry = tot
            has = True
        c += L * SCAN_ITEMS
    if EXCL != 0 and gid == 0 and lid == 0:
        out[row, 0] = ident
"""


# kapi's CPU device runs barriers as one loop over the group per stretch between them, so a
# scan there is better sequential: each work-item owns a contiguous block of a row (phase 1:
# its total; phase 3: its scan from the carried total), no barriers.
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

_SCAN_SERIAL_APPLY_SRC = """
def _scan_serial_apply(item, x, out, pre, n, B, ident, EXCL):
    row = item.get_id(0)
    t = item.get_id(1)
    i = t * B
    end = min(n, i + B)
    acc = OP(pre[row, t - 1], x[row, i]) if t > 0 else x[row, i]
    while True:
        if EXCL != 0:
            if i + 1 < n:
                out[row, i + 1] = acc
        else:
            out[row, i] = acc
        i += 1
        if i >= end:
            break
        acc = OP(acc, x[row, i])
    if EXCL != 0 and t == 0:
        out[row, 0] = ident
"""

SCAN = None  # "subgroup" (GPUs), "group" or "serial" (kapi's CPU device); None: by device


def _scan_serial(x2: Array, out: Array, fn, key, excl: bool, ident) -> None:
    from .._kernel.ranges import Range
    from .replay import launch as call_kernel  # recorded while a plan is traced

    rows, n = x2.shape
    T = min(256, max(1, n // 4096))
    B = -(-n // T)
    T = -(-n // B)  # every block has at least one element
    q, ut = x2.sycl_queue, x2.usm_type
    env = {"OP": fn}
    pre = Array._allocate((rows, T), x2.dtype, q, ut)
    if T > 1:
        sums = Array._allocate((rows, T), x2.dtype, q, ut)
        ks = kernel_of(_SCAN_SERIAL_SUMS_SRC, "_scan_serial_sums", env, key)
        for r0 in range(0, rows, _MAX_ROWS):
            r1 = min(rows, r0 + _MAX_ROWS)
            call_kernel(ks, Range(r1 - r0, T), x2[r0:r1], sums[r0:r1], np.int64(n), np.int64(B))
        _scan_rows(sums, pre, fn, key, False, ident)
    ka = kernel_of(_SCAN_SERIAL_APPLY_SRC, "_scan_serial_apply", env, key)
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        call_kernel(
            ka, Range(r1 - r0, T), x2[r0:r1], out[r0:r1], pre[r0:r1], np.int64(n), np.int64(B),
            x2.dtype.type(ident), np.int32(excl),
        )  # fmt: skip


def _scan_kind(dev) -> str:
    sizes = dev.sub_group_sizes or [1]
    if max(sizes) > 1 and all(WG % s == 0 for s in sizes):
        return "subgroup"
    return "serial" if dev.device_type == "cpu" else "group"


def _scan_rows(x2: Array, out: Array, fn, key, excl: bool, ident, events=None) -> None:
    """Scans each row of x2 (rows, n) into out (rows, n), inclusively or exclusively. With
    events (a list; not on kapi's CPU device's serial scan), the launches do not wait: their
    Events go into the list (the caller waits, after later launches on the same in-order
    queue)."""
    kind = SCAN or _scan_kind(x2.device)
    if kind == "serial":
        _scan_serial(x2, out, fn, key, excl, ident)
        return
    from kapi_lang import kernel_api as K

    from .._kernel.ranges import NdRange
    from .replay import launch  # recorded while a plan is traced

    def call_kernel(kern, nd, *args):
        launch(kern, nd, *args, events=events)

    rows, n = x2.shape
    runs = kind == "subgroup"
    per = WG * SCAN_ITEMS if runs else WG  # elements per chunk
    groups = _groups_for(x2, n)
    if runs:  # GPUs: as many segments as a reduction's groups (more loads in flight)
        cap = min(SCAN_GROUPS, 32 * max(1, x2.device.max_compute_units))
        groups = max(1, min(cap, -(-n // (WG * _PER_ITEM))))
    seg = -(-n // groups)
    seg = -(-seg // per) * per  # whole chunks
    groups = -(-n // seg)  # every group has at least one element
    slm = K.LocalAccessor(WG, x2.dtype)
    q, ut = x2.sycl_queue, x2.usm_type
    env = {"OP": fn}
    chunk = (_CHUNK_SUBGROUP if runs else _CHUNK_GROUP).strip("\n")
    extra = ()
    sums_extra = ()
    if runs:
        stage, pf = _stage_runs(), _prefetch(" " * 4, "c")
        sums_src = _SCAN_SUMS_B_SRC.replace("STAGE", stage).replace("CHUNK", chunk)
        apply_src = _SCAN_APPLY_B_SRC.replace("STAGE", stage).replace("CHUNK", chunk)
        sums_src = sums_src.replace("PREFETCH", pf).replace("SCAN_ITEMS", str(SCAN_ITEMS))
        apply_src = apply_src.replace("PREFETCH", pf).replace("SCAN_ITEMS", str(SCAN_ITEMS))
        names = ("_scan_sums_b", "_scan_apply_b")
        stg = K.LocalAccessor(per + per // 32, x2.dtype)
        sums_extra = (stg,)
        ident_r = named_identity(key, x2.dtype) if isinstance(key, str) else None
        if SCAN_SUMS == "reduce" and ident_r is not None:  # a named (commutative) operation
            sums_src, names = _SCAN_SUMS_R_SRC, ("_scan_sums_r", names[1])
            sums_extra = (x2.dtype.type(ident_r),)
    else:
        sums_src = _SCAN_SUMS_SRC.replace("CHUNK", chunk)
        apply_src = _SCAN_APPLY_SRC.replace("CHUNK", chunk)
        names = ("_scan_sums", "_scan_apply")
    if groups > 1:
        sums = Array._allocate((rows, groups), x2.dtype, q, ut)
        pre = Array._allocate((rows, groups), x2.dtype, q, ut)
        ks = kernel_of(sums_src, names[0], env, key)
    else:
        pre = Array._allocate((rows, 1), x2.dtype, q, ut)  # not read: group 0 has no carry
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        nd = NdRange((r1 - r0, groups * WG), (1, WG))
        if groups > 1:
            call_kernel(
                ks, nd, x2[r0:r1], sums[r0:r1], np.int64(n), np.int64(seg), slm, *sums_extra
            )
    if groups > 1:
        _scan_rows(sums, pre, fn, key, False, ident, events)
    ka = kernel_of(apply_src, names[1], env, key)
    if runs:
        extra = (stg,)
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        nd = NdRange((r1 - r0, groups * WG), (1, WG))
        call_kernel(
            ka,
            nd,
            x2[r0:r1],
            out[r0:r1],
            pre[r0:r1],
            np.int64(n),
            np.int64(seg),
            slm,
            x2.dtype.type(ident),
            np.int32(excl),
            *extra,
        )


def scan(a, op="add", axis=None, inclusive=True, identity=None, dtype=None):
    """Prefix scan of a with the binary operation op along axis (None: the flattened
    array, as np.cumsum), on a's device.

    Inclusive: out[i] = a[0] op ... op a[i]; exclusive: out[0] = identity,
    out[i] = a[0] op ... op a[i-1] (the named operations know their identity; a device
    function needs identity= for an exclusive scan). op needs to be associative (the order of
    operands is kept). dtype as for kapi.reduce (cumsum's dtype for "add"/"mul").
    """
    if (
        type(a) is Array
        and a._shape
        and a.size
        and identity is None
        and (axis is None or type(axis) is int)
        and (dtype is None or isinstance(dtype, (np.dtype, type)))
        and type(inclusive) is bool
    ):
        # the host path once per key; later calls replay its launches (kapi/_numeric/replay.py)
        key = ("scan", op, a._shape, a._strides, a._dtype, axis, inclusive, dtype, a._queue)
        key += (a._usm_type, SCAN, SCAN_SUMS, SCAN_GROUPS, SCAN_ITEMS)
        return _replay.call(key, _PLANS, a, _scan, a, op, axis, inclusive, None, dtype)
    return _scan(a, op, axis, inclusive, identity, dtype)


def _scan(a, op, axis, inclusive, identity, dtype):
    name, fn = resolve_op(op, "kapi.scan")
    check_array(a, "kapi.scan")
    dt = _result_dtype(name, a.dtype, dtype)
    if identity is None:
        identity = named_identity(name, dt)
    if not inclusive and identity is None:
        raise ValueError("kapi.scan: an exclusive scan with this op needs identity=...")
    x = _as_uint8(a if a.dtype == dt else a.astype(dt))
    if a.ndim == 0 and axis is None:
        x = x.reshape(1)
    x2, moved, ax = rows_view(x, axis)
    out = Array._allocate(x2.shape, x2.dtype, a.sycl_queue, a.usm_type)
    if out.size:
        key = op if name is None else name
        _scan_rows(x2, out, fn, key, not inclusive, identity if identity is not None else 0)
    r = from_rows(out, moved, ax, max(1, x.ndim) if axis is not None else 1)
    return r.astype(dt) if dt == np.bool_ else r


def cumsum(a, axis=None, dtype=None, out=None):
    """np.cumsum on a's device: axis=None scans the flattened array; small integers and
    bools sum in int64 (uint64 for unsigned), as NumPy."""
    r = scan(a, "add", axis=axis, dtype=dtype)
    return _into(r, out, "cumsum")


def cumprod(a, axis=None, dtype=None, out=None):
    """np.cumprod on a's device (NumPy's axis and dtype rules)."""
    r = scan(a, "mul", axis=axis, dtype=dtype)
    return _into(r, out, "cumprod")


def _into(r: Array, out, what: str) -> Array:
    if out is None:
        return r
    if not isinstance(out, Array) or out.shape != r.shape:
        raise ValueError(f"{what}: out must be a kapi array of shape {r.shape}")
    out[...] = r if out.dtype == r.dtype else r.astype(out.dtype)
    return out
