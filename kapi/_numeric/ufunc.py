"""Elementwise NumPy ufuncs and operators on kapi arrays, run as generated kapi kernels.

`x * 4`, `np.sin(x)`, `np.add(x, y, out=z)` and fused expressions (kapi.fuse, kapi/_numeric/fuse.py)
all end here: an expression tree of ufunc calls over leaves (arrays and scalars) becomes the
source of one kernel, `out[i, j] = np.multiply(a0[i, j], s1)`, compiled through the normal
@kapi.kernel pipeline (pyfront/emit_ufuncs.py lowers np.<ufunc> on scalars) and cached per
source; the dispatcher then specialises it per argument types. Types follow NumPy 2
(`ufunc.resolve_dtypes`, Python scalars weak as NEP 50 says); shapes broadcast as in NumPy.
The launch runs where the arrays live: arrays of different devices are an error, never a
silent copy.
"""

from __future__ import annotations

import numbers
import os

import numpy as np

from .. import _native
from .._errors import ExecutionQueueInferenceError, UnsupportedDtypeError
from .._memory import array as _array
from .._memory.array import Array, _span
from .._memory.dtypes import DTYPE_TO_KIR
from . import lazy as _lazy
from . import replay as _replay

_KERNELS: dict[str, object] = {}  # kernel source -> KernelDispatcher
_IDX = "ijk"
# A launch of 2 or 3 dimensions runs its last axis in dimension 0 of its index space when that
# axis has at least INNER_FIRST elements: consecutive work-items on consecutive elements
# (vector loads and stores on the CPU device, coalesced ones on GPUs). With the first axis in
# dimension 0 instead, as before, `x - x[:, :1]` of a (4096, 4096) float32 array took 155 ms on
# 2 Zen 4 cores (NumPy 13 ms; now 3.6 ms), and a (2^20, 3) array plus a row 16.6 ms (now 7.9):
# bench/elementwise_layout.py. Past the device's group count in dimension 1 (CUDA's 65535),
# a 2-d launch gives each work-item several rows; any other launch the device might not
# launch (_launchable) is an N-d one (_plan_nd) instead.
INNER_FIRST = int(os.environ.get("KAPI_ELEMENTWISE_INNER_FIRST", "2"))


def supported_ufuncs() -> frozenset[str]:
    """Names of the ufuncs kapi arrays run on the device (those kernels support on scalars;
    two-output ufuncs are not supported on arrays)."""
    from pyfront.emit_ufuncs import supported_ufuncs as names

    return frozenset(n for n in names() if n != "divmod")


_SUPPORTED: frozenset[str] | None = None


def check_ufunc(ufunc) -> None:
    global _SUPPORTED
    if _SUPPORTED is None:
        _SUPPORTED = supported_ufuncs()
    if not isinstance(ufunc, np.ufunc) or ufunc.__name__ not in _SUPPORTED:
        name = getattr(ufunc, "__name__", repr(ufunc))
        raise TypeError(
            f"numpy.{name} is not supported on kapi arrays; supported ufuncs: "
            + ", ".join(sorted(_SUPPORTED))
        )
    if ufunc.nout != 1:
        raise TypeError(f"numpy.{ufunc.__name__} has {ufunc.nout} outputs; kapi arrays "
                        "support one-output ufuncs")  # fmt: skip


# -- operands ------------------------------------------------------------------------------


def operand(x):
    """x as an Array, a NumPy scalar (strong type) or a Python scalar (weak type); None for
    an object kapi's ufuncs do not take (the operator then returns NotImplemented)."""
    if isinstance(x, Array):
        return x
    if isinstance(x, bool):
        return np.bool_(x)
    if isinstance(x, (int, float, complex)):
        return x
    if isinstance(x, np.generic):
        return x
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return x[()]
    if isinstance(x, numbers.Number):
        return x
    return None


def resolve_type(x):
    """What ufunc.resolve_dtypes takes for x: a dtype, or int/float/complex when weak."""
    if isinstance(x, Array):
        return x.dtype
    if isinstance(x, np.generic):
        return x.dtype
    for t in (int, float, complex):
        if isinstance(x, t):
            return t
    return np.asarray(x).dtype


_LOOPS: dict = {}  # (ufunc, operand types) -> loop dtypes


def loop_dtypes(ufunc, types) -> tuple[np.dtype, ...]:
    """NumPy 2's loop for these operand types (inputs..., output)."""
    key = (ufunc, *types)
    loop = _LOOPS.get(key)
    if loop is None:
        loop = tuple(ufunc.resolve_dtypes(tuple(types) + (None,) * ufunc.nout))
        if len(_LOOPS) < 4096:
            _LOOPS[key] = loop
    return loop


def result_shape(shapes) -> tuple[int, ...]:
    """NumPy's broadcast of the shapes (quickly when they are all equal)."""
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    return np.broadcast_shapes(*shapes)


def check_kapi_dtype(dt: np.dtype, what: str) -> None:
    if dt not in DTYPE_TO_KIR:
        raise UnsupportedDtypeError(f"{what} would have dtype {dt}, which kapi arrays do not have")


def common_queue(arrays, what: str):
    """The queue of the arrays' device; arrays on two devices raise."""
    first = None
    for a in arrays:
        if first is None:
            first = a
        elif a.device != first.device:
            raise ExecutionQueueInferenceError(
                f"{what}: operands live on different devices ('{first.device.filter_string}' "
                f"and '{a.device.filter_string}'); a kapi array operation runs where its arrays "
                "are: move one with .to_device(...) or kapi.asarray(x, device=...)"
            )
        elif a.sycl_queue is not first.sycl_queue:
            raise ExecutionQueueInferenceError(
                f"{what}: operands are on two different queues of one device "
                f"('{first.device.filter_string}'): the operation runs on one queue, and work "
                "still pending on the other would not be ordered before it; allocate them on "
                "one queue, or wait for the other queue (queue.wait()) and rebind its array "
                "with .to_device(queue)"
            )
    return first.sycl_queue if first is not None else None


# -- shapes --------------------------------------------------------------------------------


def _broadcast_strides(a: Array, shape) -> tuple[int, ...]:
    """a's strides in elements, broadcast to shape (0 where a is broadcast)."""
    pad = len(shape) - a.ndim
    st = [0] * pad + [s // a.itemsize for s in a.strides]
    dims = [1] * pad + list(a.shape)
    return tuple(0 if d == 1 and n != 1 else s for s, d, n in zip(st, dims, shape, strict=True))


def _collapse(shape, stride_sets):
    """Merges adjacent dimensions that every operand walks as one (C-contiguous operands
    become 1-D), so the kernel sees at most 3 dimensions in the common cases."""
    shape = list(shape)
    sts = [list(s) for s in stride_sets]
    d = len(shape) - 2
    while d >= 0:
        if all(st[d] == st[d + 1] * shape[d + 1] for st in sts):
            shape[d + 1] *= shape[d]
            del shape[d]
            for st in sts:
                del st[d]
        d -= 1
    if not shape:
        shape, sts = [1], [[0] for _ in sts]
    return tuple(shape), [tuple(s) for s in sts]


def _strided_view(a: Array, shape, strides) -> Array:
    i = a.itemsize
    return Array._make(
        a._owner,
        a._ptr,
        shape,
        tuple(s * i for s in strides),
        a.dtype,
        a.sycl_queue,
        a.usm_type,
        a._host_ok,
    )


def _overlaps(a: Array, b: Array) -> bool:
    alo, ahi = _span(a.shape, a.strides, a.itemsize)
    blo, bhi = _span(b.shape, b.strides, b.itemsize)
    return a._ptr + alo < b._ptr + bhi and b._ptr + blo < a._ptr + ahi


# -- kernels -------------------------------------------------------------------------------


def _kernel_for(source: str, env: dict | None = None, cache: dict | None = None):
    """The kernel of source (cached in cache, default the module's); env adds globals (a
    device function that the source calls)."""
    cache = _KERNELS if cache is None else cache
    k = cache.get(source)
    if k is None:
        from kapi_lang import kernel_api as K

        from .._kernel.dispatcher import kernel

        g = {"np": np, "K": K, **(env or {})}
        exec(compile(source, "<kapi elementwise>", "exec"), g)  # noqa: S102 - our own source
        k = cache[source] = kernel(g["_elementwise"])
    return k


def kernel_source(
    expr: str, leaves, ndim: int, defs=(), inner_first: bool = False, fold: bool = False
) -> str:
    """The kernel computing expr (which names leaves l0, l1, ...) into out[idx]; leaves: an
    Array (read at idx), a scalar, or None for a leaf that defs (lines `lN = ...`) compute.
    inner_first: the index space's dimension 0 is the last axis (its Range the shape
    reversed), else the first. fold (2 dimensions, inner_first): a work-item of dimension 1
    takes every row its range's length apart of the R (one more parameter), for a row count
    past the device's groups.
    (On the CPU device a large result is written by streaming stores: the kernel only writes
    out, so the CPU driver builds it a streaming entry, KAPI_HOST_STREAMS.)"""
    idx = ", ".join(_IDX[:ndim])
    params = "".join(f", a{n}" for n, x in enumerate(leaves) if x is not None)
    lines = [f"def _elementwise(item, out{params}{', R' if fold else ''}):"]
    dims = [ndim - 1 - d for d in range(ndim)] if inner_first else list(range(ndim))
    body = []
    for n, x in enumerate(leaves):
        if x is not None:
            body.append(f"l{n} = a{n}[{idx}]" if isinstance(x, Array) else f"l{n} = a{n}")
    body += list(defs)
    body.append(f"out[{idx}] = {expr}")
    if fold:  # rows a range's length apart: neighbouring work-items on neighbouring rows
        lines += ["    j = item.get_id(0)"]
        lines.append("    for i in range(item.get_id(1), R, item.get_range(1)):")
        lines += [f"        {b}" for b in body]
    else:
        lines += [f"    {_IDX[d]} = item.get_id({dims[d]})" for d in range(ndim)]
        lines += [f"    {b}" for b in body]
    return "\n".join(lines) + "\n"


LAUNCHES = 0  # elementwise kernels launched (tests count them to check fusion)


def _inline_pending(leaves) -> tuple[list, list[str]]:
    """Pending (lazy) leaves become expressions over their own leaves, appended: one kernel."""
    if not any(type(x) is _lazy._Pending for x in leaves):
        return list(leaves), []
    leaves = list(leaves)
    g = _lazy.Gen(len(leaves))
    defs = []
    for n, x in enumerate(leaves):
        if type(x) is _lazy._Pending:
            defs.append(f"l{n} = {g.expr(x._expr)}")
            leaves[n] = None
    return leaves + g.leaves, defs


_LAUNCH_PLANS: dict = {}  # launch key -> (kernel, range, views' (shape, strides, descriptor))


def launch(
    expr: str, leaves, out: Array, what: str, env=None, cache=None, fresh: bool = False
) -> None:
    """Runs out[...] = expr over the broadcast leaves (Arrays, pending ones included, or
    scalars already converted to their loop dtypes). fresh: out is a new array, which no
    input and no pending expression can be reading."""
    global LAUNCHES
    if out.size == 0:
        return
    if not fresh:
        _lazy.before_write(out)  # pending expressions reading out's memory run first
    leaves, defs = _inline_pending(leaves)
    if not fresh:
        # An output that overlaps an input in any other way than element for element would
        # be read after it is written: such inputs are copied first, as NumPy does.
        leaves = [
            x.copy()
            if isinstance(x, Array)
            and _overlaps(x, out)
            and (x._ptr != out._ptr or x.strides != out.strides or x.shape != out.shape)
            else x
            for x in leaves
        ]
    # The kernel, its range and the views' shapes and strides depend on the expression and
    # the operands' shapes, strides and types, and (for an index table past 3 dimensions) on
    # out's queue: worked out once per such key.
    key = None
    if env is None and cache is None:
        key = (expr, *defs, out._queue, out._shape, out._strides, out._dtype)
        key += tuple(
            (x._shape, x._strides, x._dtype) if isinstance(x, Array) else type(x) for x in leaves
        )
        plan = _LAUNCH_PLANS.get(key)
    if key is None or plan is None:
        plan = _plan_launch(expr, leaves, defs, out, what, env, cache)
        if key is not None:
            if len(_LAUNCH_PLANS) >= 4096:
                _LAUNCH_PLANS.pop(next(iter(_LAUNCH_PLANS)))
            _LAUNCH_PLANS[key] = plan
    kernel, rng, specs, extra = plan
    argdesc = _native.ext().ArgDesc
    args = []
    k = 0
    for x in (out, *leaves):
        if isinstance(x, Array):
            shape, strides, desc, off = specs[k]
            k += 1
            q, ptr = x._queue, x._ptr + off
            v = Array._make(x._owner, ptr, shape, strides, x._dtype, q, x._usm_type, x._host_ok)
            v._kd = argdesc(("A", desc[0], q.device.index, q._native, ptr, shape, desc[1]))
            args.append(v)
        elif x is not None:
            args.append(x)
    args += extra
    LAUNCHES += 1
    with _lazy.internal():
        _replay.launch(kernel, rng, *args)


def _plan_launch(expr, leaves, defs, out, what, env, cache):
    """(kernel, range, [(shape, strides in bytes, (type key, strides in elements))] of the
    views of out and of each array leaf) of a launch (see launch)."""
    from .._kernel.ranges import Range
    from .._memory.array import _desc_parts

    arrays = [x for x in leaves if isinstance(x, Array)]
    shape = out.shape
    strides = [_broadcast_strides(out, shape)] + [_broadcast_strides(a, shape) for a in arrays]
    cshape, cstrides = _collapse(shape, strides)
    inner_first = len(cshape) > 1 and cshape[-1] >= INNER_FIRST
    dims = tuple(reversed(cshape)) if inner_first else cshape
    counts = _group_counts(out.sycl_queue.device)
    fold = len(cshape) == 2 and inner_first and dims[1] > counts[1]
    extra = ()
    if fold:
        # rows at once: the most the count allows, in 64s (a row count with no divisor up to a
        # work-group's size gave GPU work-groups of one row: 3 work-items for (2^24, 3))
        dims, extra = (dims[0], counts[1] // 64 * 64 or counts[1]), (np.int64(cshape[0]),)
    if len(cshape) > 3 or not _launchable(counts, dims):
        return _plan_nd(expr, leaves, defs, out, arrays, cshape, cstrides, env, cache)
    specs = []
    for a, st in zip([out, *arrays], cstrides, strict=True):
        i = a.itemsize
        bst = tuple(s * i for s in st)
        specs.append((cshape, bst, _desc_parts(a.dtype, cshape, bst), 0))
    src = kernel_source(expr, leaves, len(cshape), defs, inner_first, fold)
    return _kernel_for(src, env, cache), Range(*dims), tuple(specs), extra


def _group_counts(device) -> tuple:
    """The work-groups device launches in each dimension at most."""
    return device.info["max_group_count"]


def fits(device, dims) -> bool:
    """Whether a Range of dims launches on device whatever work-group size the runtime picks
    (kapi's other generated kernels ask this too)."""
    return _launchable(_group_counts(device), dims)


def _launchable(counts, dims) -> bool:
    """Whether a Range of dims launches on a device of max_group_count counts whatever
    work-group size the runtime picks (CUDA's dimensions 1 and 2 hold 65535 work-groups: a
    prime extent past that cannot)."""
    return all(n <= c for n, c in zip(dims[1:], counts[1:], strict=False))


_TABLES: dict = {}  # (queue, table bytes) -> the device copy of an N-D launch's table


def _table(queue, rows) -> Array:
    """An int64 (rows, columns) array on queue's device holding rows: the shape and strides
    an N-D elementwise kernel decomposes its flat index with (made once per layout)."""
    host = np.asarray(rows, dtype=np.int64)
    key = (queue, host.shape, host.tobytes())
    t = _TABLES.get(key)
    if t is None:
        if len(_TABLES) >= 4096:
            _TABLES.pop(next(iter(_TABLES)))
        t = Array._allocate(host.shape, host.dtype, queue, "device")
        t._assign(host)
        t = _TABLES[key] = _replay.constant(t)
    return t


def nd_source(expr: str, leaves, defs=()) -> str:
    """The kernel computing expr into out over any number of dimensions: every array is a
    1-D run of its memory (from its lowest address), and work-item i finds its elements'
    offsets from the flat C-order index i by the table tb (row 0: the extents; row k + 1:
    array k's strides in elements, then its offset of element 0)."""
    arrays = [n for n, x in enumerate(leaves) if isinstance(x, Array)]
    params = "".join(f", a{n}" for n, x in enumerate(leaves) if x is not None)
    lines = [f"def _elementwise(item, out{params}, tb, ND):", "    i = item.get_id(0)"]
    lines.append("    rem = i")
    lines.append("    o = tb[1, ND]")
    lines += [f"    o{n} = tb[{k + 2}, ND]" for k, n in enumerate(arrays)]
    lines += ["    d = ND - 1", "    while d >= 0:", "        n = tb[0, d]", "        c = rem % n"]
    lines += ["        rem = rem // n", "        o += c * tb[1, d]"]
    lines += [f"        o{n} += c * tb[{k + 2}, d]" for k, n in enumerate(arrays)]
    lines.append("        d -= 1")
    for n, x in enumerate(leaves):
        if x is not None:
            lines.append(f"    l{n} = a{n}[o{n}]" if isinstance(x, Array) else f"    l{n} = a{n}")
    lines += [f"    {d}" for d in defs]
    lines.append(f"    out[o] = {expr}")
    return "\n".join(lines) + "\n"


def _plan_nd(expr, leaves, defs, out, arrays, cshape, cstrides, env, cache):
    """_plan_launch for more than 3 dimensions: 1-D runs of memory and an index table."""
    from .._kernel.ranges import Range
    from .._memory.array import _desc_parts

    specs = []
    rows = [list(cshape) + [0]]
    for a, st in zip([out, *arrays], cstrides, strict=True):
        i = a.itemsize
        lo = sum((n - 1) * s for n, s in zip(cshape, st, strict=True) if s < 0)
        hi = sum((n - 1) * s for n, s in zip(cshape, st, strict=True) if s > 0)
        span = hi - lo + 1
        specs.append(((span,), (i,), _desc_parts(a.dtype, (span,), (i,)), lo * i))
        rows.append(list(st) + [-lo])
    size = 1
    for n in cshape:
        size *= n
    tb = _table(out.sycl_queue, rows)
    src = nd_source(expr, leaves, defs)
    extra = (tb, np.int64(len(cshape)))
    return _kernel_for(src, env, cache), Range(size), tuple(specs), extra


def check_out(out, shape, dtype, ufunc_name: str, casting: str = "same_kind") -> Array:
    if not isinstance(out, Array):
        raise TypeError(f"{ufunc_name}: out= must be a kapi array, not {type(out).__name__}")
    if out.shape != tuple(shape):
        raise ValueError(
            f"{ufunc_name}: out has shape {out.shape}, but the result has shape {tuple(shape)}"
        )
    if not np.can_cast(dtype, out.dtype, casting):
        raise TypeError(
            f"Cannot cast ufunc '{ufunc_name}' output from dtype('{np.dtype(dtype)}') to "
            f"dtype('{out.dtype}') with casting rule '{casting}'"
        )
    return out


def apply(ufunc, inputs, out=None, casting="same_kind") -> Array:
    """ufunc(*inputs, out=out) on kapi arrays and scalars."""
    check_ufunc(ufunc)
    name = ufunc.__name__
    if len(inputs) != ufunc.nin:
        raise TypeError(f"{name}() takes {ufunc.nin} positional arguments, got {len(inputs)}")
    ops = []
    for x in inputs:
        o = operand(x)
        if o is None:
            raise TypeError(
                f"numpy.{name} on kapi arrays takes kapi arrays and scalars, not "
                f"{type(x).__name__}; copy host data with kapi.asarray(x, device=...)"
            )
        ops.append(o)
    arrays = [o for o in ops if isinstance(o, Array)]
    if out is not None:
        arrays.append(out)
    queue = arrays[0]._queue if arrays else None
    if any(a._queue is not queue for a in arrays):  # (error messages are built only here)
        queue = common_queue(arrays, f"numpy.{name}")
    types = [resolve_type(o) for o in ops]
    loop = loop_dtypes(ufunc, types)
    res_dt = loop[-1]
    if res_dt not in DTYPE_TO_KIR:
        check_kapi_dtype(res_dt, f"numpy.{name}'s result")
    shapes = [a._shape for a in ops if isinstance(a, Array)]
    shape = result_shape(shapes)
    if out is not None:
        # a pending output gets its memory first: operands that are out itself then read
        # it as a concrete array instead of recomputing its expression
        _lazy.realize(out)
    leaves = []
    for o, dt in zip(ops, loop, strict=False):
        # a Python int out of the loop type's range raises OverflowError, as in NumPy 2
        leaves.append(_lazy.arg(o) if isinstance(o, Array) else _to_dtype(o, dt))
    tree = _lazy._Tree(name, leaves, loop[: ufunc.nin], res_dt)
    if out is None:
        first = next(a for a in ops if isinstance(a, Array))
        return _lazy.make(tree, shape, queue, first.usm_type)
    check_out(out, shape, res_dt, name, casting)
    _lazy.evaluate_into(tree, out, f"numpy.{name}")
    return out


def astype(x: Array, dt: np.dtype) -> Array:
    """x.astype(dt): NumPy's unsafe conversion, elementwise on x's device."""
    if x.dtype.kind == "c" and dt.kind not in "cb":
        import warnings

        warnings.warn(
            "Casting complex values to real discards the imaginary part",
            np.exceptions.ComplexWarning,
            stacklevel=3,
        )
    tree = _lazy._Tree("astype", [_lazy.arg(x)], [dt], dt)
    return _lazy.make(tree, x.shape, x.sycl_queue, x.usm_type)


def where(cond, x, y) -> Array:
    """kapi.where(cond, x, y): x where cond is true, else y (NumPy's np.where), on the
    device of the kapi operands; a result dtype by NumPy 2's rules for x and y."""
    ops = []
    for v in (cond, x, y):
        o = operand(v)
        if o is None:
            raise TypeError(
                f"kapi.where takes kapi arrays and scalars, not {type(v).__name__}; copy host "
                "data with kapi.asarray(x, device=...)"
            )
        ops.append(o)
    arrays = [o for o in ops if isinstance(o, Array)]
    if not arrays:
        raise TypeError("kapi.where needs at least one kapi array operand")
    queue = common_queue(arrays, "kapi.where")
    vals = [o.dtype if isinstance(o, (Array, np.generic)) else o for o in ops[1:]]
    res_dt = np.result_type(*vals)
    check_kapi_dtype(res_dt, "kapi.where's result")
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    c, xv, yv = ops
    args = [
        _lazy.arg(c) if isinstance(c, Array) else np.bool_(c),
        _lazy.arg(xv) if isinstance(xv, Array) else _to_dtype(xv, res_dt),
        _lazy.arg(yv) if isinstance(yv, Array) else _to_dtype(yv, res_dt),
    ]
    tree = _lazy._Tree("where", args, [np.dtype(np.bool_), res_dt, res_dt], res_dt)
    return _lazy.make(tree, shape, queue, arrays[0].usm_type)


def cast(expr: str, have: np.dtype, want: np.dtype) -> str:
    """expr converted to the loop's input type where the kernel's typing could pick another
    loop than NumPy (np.true_divide(uint8, uint8) computes in float64 in NumPy)."""
    if have == want:
        return expr
    name = "bool_" if want == np.bool_ else want.type.__name__
    return f"np.{name}({expr})"


def _to_dtype(x, dt: np.dtype):
    if isinstance(x, int) and not isinstance(x, bool) and dt.kind in "iu":
        info = np.iinfo(dt)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python integer {x} out of bounds for {dt}")
    return dt.type(x)


def copy_into(dst: Array, src) -> None:
    """dst[...] = src on dst's device: src an array there (broadcast to dst's shape, converted
    to its dtype as NumPy's astype does) or a scalar."""
    if isinstance(src, Array):
        shape = np.broadcast_shapes(src.shape, dst.shape)
        if shape != dst.shape:
            raise ValueError(
                f"could not broadcast input array from shape {src.shape} into shape {dst.shape}"
            )
        if src.device != dst.device:
            raise ExecutionQueueInferenceError(
                f"copy from '{src.device.filter_string}' to '{dst.device.filter_string}': "
                "move the array with .to_device(...) first"
            )
        launch(_lazy._cast("l0", src.dtype, dst.dtype), [src], dst, "copy")
    else:
        launch("l0", [np.asarray(src).astype(dst.dtype)[()]], dst, "fill")


_array._convert = astype  # Array.astype's kernel (arrays sit below the array library)
_array._copy_into = copy_into  # device copies between views (Array._assign, fill)
