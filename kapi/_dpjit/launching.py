"""dpjit's launches: each prange loop's launch function (_launcher), which the host function
calls in place of the loop: it picks the loop's kernel (_Kernels, from kernels.py), works out a
per-loop plan (_Plan) and partial-result arrays (_Buffers), and combines the partials on the
host. Launches without a wait go through asynchronous.py's per-call context."""

from __future__ import annotations

import copy
import functools
import os
import types

import numpy as np

from .._kernel.dispatcher import kernel as _kernel_decorator
from .._kernel.ranges import NdRange, Range
from .._memory.array import Array, empty, full
from .._memory.device import default_device
from .analysis import UnsupportedPrangeError, _Loop
from .arraytyped import expand_with_ndims, needs_ndims
from .asynchronous import _Calls, _settle, _submit
from .kernels import _dim_values, _factory, _free_names, _kernel_def, _make_function, _trip_consts

_GROUP = 256  # work-items per group of a reduction kernel (every driver allows 1024)
_MAX_GROUPS = 1024  # partial results per reduction; more iterations loop in each work-item
_UFUNCS = {
    "ADD": np.add,
    "MUL": np.multiply,
    "MIN": np.minimum,
    "MAX": np.maximum,
    "AND": np.bitwise_and,
    "OR": np.bitwise_or,
    "XOR": np.bitwise_xor,
}


def _acc_dtype(name: str, kind: str, value, where: str, divides=False) -> np.dtype:
    """The accumulator's dtype: the reduction variable's type before the loop (Python int ->
    int64, float -> float64, a NumPy scalar -> its dtype)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{where}: dpjit: reduction variable `{name}` is a bool; use a number")
    if isinstance(value, int):
        dt = np.dtype(np.int64)
    elif isinstance(value, float):
        dt = np.dtype(np.float64)
    elif isinstance(value, np.generic) and value.dtype.kind in "iuf":
        dt = value.dtype
    else:
        raise TypeError(
            f"{where}: dpjit: reduction variable `{name}` holds {type(value).__name__}; a "
            f"prange reduction needs an int, a float or a NumPy integer/float scalar"
        )
    if divides and dt.kind != "f":
        raise TypeError(
            f"{where}: dpjit: reduction variable `{name}` holds an integer; a `/=` reduction "
            f"needs a float (start it at a float value)"
        )
    if kind in ("AND", "OR", "XOR") and dt.kind == "f":
        raise TypeError(
            f"{where}: dpjit: reduction variable `{name}` is a float; `&`, `|` and `^` "
            f"reductions need an integer"
        )
    return dt


def _identity(kind: str, dt: np.dtype):
    """The operator's identity in dtype dt: each work-item's accumulator starts there."""
    if dt.kind == "f":
        ids = {"MUL": 1.0, "MIN": np.inf, "MAX": -np.inf}
    else:
        info = np.iinfo(dt)
        ids = {"MUL": 1, "MIN": info.max, "MAX": info.min, "AND": info.max if info.min == 0 else -1}
    return dt.type(ids.get(kind, 0))


def _placement(args):
    """The queue a loop's launch runs on, as call_kernel picks it: the first kapi array's;
    None for NumPy arrays (the CPU device, with NumPy host arrays for the extra outputs);
    else the default device's."""
    for a in args:
        if isinstance(a, Array):
            return a._queue
    for a in args:
        if isinstance(a, np.ndarray):
            return None
    return default_device().default_queue


def _allocator(q):
    """(make(n, dtype), has_fp64, cpu_units) of a reduction's partial and last-value arrays on
    queue q (None: NumPy arrays), cpu_units being the CPU device's compute units (None on a
    GPU). On a GPU they are host memory the kernel writes through (pinned, device-mapped):
    the host reads the results in place after the launch's one wait, no copy after it."""
    if q is None:
        return (lambda n, dt: np.empty(n, dt)), True, _cpu_units(None)
    dev = q.device
    if dev.is_cpu:
        return (lambda n, dt: empty(n, dtype=dt, queue=q)), dev.has_aspect_fp64, _cpu_units(dev)
    make = functools.partial(_host_array, q)
    return make, dev.has_aspect_fp64, None


def _host_array(q, n: int, dt) -> Array:
    return empty(n, dtype=dt, queue=q, usm_type="host")


class _Buffers:
    """One set of a launch's partial-result and last-value arrays, kept between the loop's
    launches of one geometry (allocating and freeing them cost a small reduction more than
    its kernel), with NumPy views of their host memory once read: a launch takes a set from
    its geometry's pool and gives it back once the host has read it; concurrent calls take
    different ones (list.pop and append are atomic)."""

    __slots__ = ("parts", "lasts", "views")
    KEEP = 4  # per geometry: enough for a few threads calling at once

    def __init__(self, plan, nparts: int):
        self.parts = [plan.make(nparts, dt) for dt in plan.part_dts]
        self.lasts = [plan.make(1, dt) for dt in plan.last_dts]
        self.views = None

    def read(self) -> list[np.ndarray]:
        """The arrays' values (after the launch that wrote them was waited for): host memory
        read in place (the CPU device, host USM on GPUs, NumPy arrays), else a copy."""
        views = self.views
        if views is None:
            views = [_host_values(a) for a in (*self.parts, *self.lasts)]
            if all(isinstance(a, np.ndarray) or a._host_ok for a in (*self.parts, *self.lasts)):
                self.views = views  # in place: valid for every later launch too
        return views


def _host_values(a) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    return a._host_view() if a._host_ok else a.asnumpy()


def _cpu_units(dev) -> int:
    if dev is None:
        from .._memory.device import devices

        dev = next((d for d in devices() if d.is_cpu), None)
    return max(1, dev.max_compute_units if dev is not None else 1)


def _reduce_shape(on_cpu: bool, forced) -> str:
    """The shape of reduction / last-value kernels: blocks on the CPU device, a work-group
    tree on GPUs, unless KAPI_DPJIT_REDUCE (forced) names one (to compare them)."""
    if forced in (None, ""):
        return "blocks" if on_cpu else "tree"
    if forced not in ("tree", "blocks"):
        raise ValueError(f"KAPI_DPJIT_REDUCE must be 'tree' or 'blocks', not {forced!r}")
    return forced


# Work-items of a "blocks" kernel per CPU compute unit: the driver makes groups of 16 of them,
# so four groups per thread, enough to balance the pool when threads are disturbed (on 2 cores:
# 32 to 4096 work-items ran 2^24 iterations alike, 8 used one thread).
_BLOCKS_PER_UNIT = 64
# Iterations a tree kernel's work-item folds at least before another group is worth launching
# (its loop is unrolled _UNROLL times), as kapi/_numeric/reduce.py's GPU scheme.
_PER_ITEM = 16


def _last_dtype(name: str, value, where: str, fp64: bool) -> np.dtype:
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return np.dtype(np.int64)
    if isinstance(value, float):
        return np.dtype(np.float64 if fp64 else np.float32)
    if isinstance(value, np.generic) and value.dtype.kind in "iufc":
        return value.dtype
    raise TypeError(
        f"{where}: dpjit: `{name}` is read after the prange loop, so the loop leaves its last "
        f"value, which needs a number before the loop (its type); it holds "
        f"{type(value).__name__}"
    )


def _last_value(value, host: np.ndarray):
    x = host[0]
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return type(value)(x.item())
    return value.dtype.type(x)


_F64 = np.dtype(np.float64)
_SCALAR_SAFE = {np.add: float.__add__, np.multiply: float.__mul__}


def _combine(ufunc, value, part: np.ndarray):
    """value (the variable before the loop) combined once with the group partials, in the
    accumulator's dtype; a Python int/float stays one. Called under np.errstate(all="ignore"):
    integers wrap, as in the kernel."""
    dt = part.dtype
    total = ufunc.reduce(part, dtype=dt)
    if type(value) is float and dt == _F64 and ufunc in _SCALAR_SAFE:
        return float(_SCALAR_SAFE[ufunc](value, total))  # the same float64 operation
    if isinstance(value, (int, float)):
        out = ufunc(dt.type(value), total, dtype=dt).item()
        return float(out) if isinstance(value, float) else int(out)
    return ufunc(value, total, dtype=value.dtype)


def _bounds_form(starts) -> str:
    """ "zero": every start 0 and step 1 (the loop variables are the ids); "unit": starts >= 0,
    steps 1; "any": the general kernel (see _NONNEG)."""
    if all(st == 1 for st in starts[1::2]):
        if not any(starts[::2]):
            return "zero"
        if all(s0 >= 0 for s0 in starts[::2]):
            return "unit"
    return "any"


def _bounds(bounds):
    counts, starts = [], []
    for b in bounds:
        r = range(*b)  # the errors of range: step 0, non-integers
        counts.append(len(r))
        starts += [r.start, r.step]
    return counts, starts


def _ndims_key(names, args) -> tuple:
    """((name, ndim), ...) of a launch's free values (0 for a scalar)."""
    return tuple((n, getattr(a, "ndim", 0)) for n, a in zip(names, args, strict=True))


class _Kernels:
    """The kernels of one prange loop, one per (shape, bounds form) launched so far, each
    generated on the first launch that needs it."""

    def __init__(
        self, loop: _Loop, kname: str, qualname: str, fn, cells: dict, filename: str, options=None
    ):
        self.loop, self.kname, self.qualname = loop, kname, qualname
        self.fn, self.cells, self.filename = fn, cells, filename
        self.options = dict(options or {})  # @kapi.kernel options (dpjit's fastmath=)
        self.made: dict[tuple[str, bool], object] = {}

    def guard(self, dims: bool, ndims):
        """A function of the free values that raises ValueError where the body's array
        statements, written as loops for these ndims, would not do NumPy's broadcasting
        (extents that must be equal and are not); None where there is nothing to check."""
        checks: list = []
        body = copy.deepcopy(self.loop.kbody_dims if dims else self.loop.kbody)
        outside = set(self.loop.lasts) | set(self.loop.reductions)
        expand_with_ndims(body, dict(ndims), outside, checks)
        if not checks:
            return None
        names = _free_names(self.loop, dims)
        pairs = ", ".join(f"({left}), ({right})" for left, right, _ in checks)
        values = eval(compile(f"lambda {', '.join(names)}: ({pairs},)", self.filename, "eval"), {})
        filename = self.filename

        def check(args):
            got = values(*args)
            for k, (left, right, line) in enumerate(checks):
                a, b = got[2 * k], got[2 * k + 1]
                if a != b:
                    raise ValueError(
                        f"{filename}:{line}: dpjit: operands could not be broadcast together "
                        f"in a prange body: {left} is {a} and {right} is {b} (an axis "
                        f"broadcasts there only where its extent is a literal 1, as in "
                        f"x.reshape((1, n)))"
                    )

        return check

    def get(self, shape: str, form: str, consts: tuple = (), dims: bool = False, ndims=()):
        """consts: ((name, value), ...) of free variables the kernel takes as constants;
        dims: whether it takes loop.dims (_ShapeBounds); ndims: ((name, ndim), ...) of the
        free variables where the body's array statements need them (_ndims_key)."""
        kern = self.made.get((shape, form, consts, dims, ndims))
        if kern is None:
            fixed = [n for n, _ in consts]
            defn = _kernel_def(self.loop, self.kname, shape, form, fixed, dims, ndims)
            cells = dict(self.cells)
            cells.update((n, types.CellType(v)) for n, v in consts)
            kcode = _factory(defn, list(cells), self.filename)
            kfunc = _make_function(kcode, self.fn, cells)
            kfunc.__qualname__ = self.qualname
            kern = _kernel_decorator(kfunc, **self.options)
            self.made[(shape, form, consts, dims, ndims)] = kern
        return kern


class _Plan:
    """A reduction / last-value loop's launch for one queue, bounds form and the types of the
    variables' values before it: everything but the iteration count, worked out on its first
    launch (the launch path is per call, the host's fixed cost of a small loop)."""

    __slots__ = ("kern", "blocks", "width", "make", "part_dts", "inits", "ufuncs", "last_dts")

    def __init__(self, kernels, loop: _Loop, where: str, q, form, variant, forced, reds, lasts):
        make, fp64, cpu_units = _allocator(q)
        self.make = make
        self.blocks = _reduce_shape(cpu_units is not None, forced) == "blocks"
        # blocks forced on a GPU: as many work-items as the tree's largest launch
        self.width = _MAX_GROUPS * _GROUP if cpu_units is None else cpu_units * _BLOCKS_PER_UNIT
        self.kern = kernels.get("blocks" if self.blocks else "tree", form, *variant)
        self.part_dts, self.inits, self.ufuncs = [], [], []
        for name, v in zip(loop.reductions, reds, strict=True):
            kind = loop.red_kinds[name]
            dt = _acc_dtype(name, kind, v, where, name in loop.red_divides)
            if dt == np.float64 and isinstance(v, float) and not fp64:
                dt = np.dtype(np.float32)
            self.part_dts.append(dt)
            self.inits.append(_identity(kind, dt))
            self.ufuncs.append(_UFUNCS[kind])
        self.last_dts = [
            _last_dtype(n, v, where, fp64) for n, v in zip(loop.lasts, lasts, strict=True)
        ]

    def geometry(self, total: int):
        """(partial results, index space, the kernel's extra arguments) for total iterations."""
        if self.blocks:
            chunk = -(-total // self.width)
            nparts = -(-total // chunk)
            return nparts, Range(nparts), (chunk,)
        nparts = max(1, min(-(-total // (_GROUP * _PER_ITEM)), _MAX_GROUPS))
        return nparts, NdRange((nparts * _GROUP,), (_GROUP,)), ()


# Array reductions (`P += X` into an array P from before the loop): each iteration updates its
# own row of a [iterations, *P.shape] buffer (at the operator's identity), the host reduces the
# buffer along its first axis and updates P in place, as NumPy's `P += ...` does. The buffer
# holds a copy of P per iteration: for small arrays (per-iteration matrices) over modest loops.
_ARRAY_RED_MAX = 1 << 28  # bytes of buffer a loop may take
_ARRAY_RED_UFUNCS = {"ADD": np.add, "MUL": np.multiply}


def _array_reductions(
    kernels,
    loop,
    where,
    variant,
    form,
    counts,
    starts,
    total,
    args,
    red_values,
    last_values,
    pending,
    stats,
    idx,
):
    if loop.lasts:
        _settle_quietly(pending, stats)
        raise UnsupportedPrangeError(
            f"{where}: dpjit: a prange loop reducing into arrays may not also leave last "
            f"values ({', '.join(loop.lasts)})"
        )
    bufs, ufuncs = [], []
    q = _placement(args)
    for name, v in zip(loop.reductions, red_values, strict=True):
        kind = loop.red_kinds[name]
        if not isinstance(v, (Array, np.ndarray)) or kind not in _ARRAY_RED_UFUNCS:
            _settle_quietly(pending, stats)
            what = "an array" if isinstance(v, (Array, np.ndarray)) else type(v).__name__
            raise TypeError(
                f"{where}: dpjit: reduction variable `{name}` holds {what}; a prange loop "
                f"reducing into arrays takes only `+=`, `-=`, `*=` and `/=` reductions into "
                f"arrays"
            )
        nbytes = total * v.size * v.dtype.itemsize
        if nbytes > _ARRAY_RED_MAX:
            _settle_quietly(pending, stats)
            raise MemoryError(
                f"{where}: dpjit: the reduction into `{name}` (shape {v.shape}) over {total} "
                f"iterations needs a {nbytes} byte buffer (one copy per iteration), over "
                f"{_ARRAY_RED_MAX}; reduce over fewer iterations or into a smaller array"
            )
        ident = v.dtype.type(0 if kind == "ADD" else 1)
        shape = (total, *v.shape)
        # where the loop runs (a NumPy P is still updated on the host, after it)
        if q is None:
            buf = np.full(shape, ident, dtype=v.dtype)
        else:
            buf = full(shape, ident, dtype=v.dtype, queue=q)
        bufs.append(buf)
        ufuncs.append(_ARRAY_RED_UFUNCS[kind])
    consts, dims, nd = variant
    nd = (*nd, *((f"__kapi_rbuf_{r}", b.ndim) for r, b in zip(loop.reductions, bufs, strict=True)))
    kern = kernels.get("arrays", form, consts, dims, nd)
    _submit(kern, Range(*reversed(counts)), (*args, *bufs, *starts), pending, True, stats)
    for ufunc, v, buf in zip(ufuncs, red_values, bufs, strict=True):
        part = _host_values(buf)
        with np.errstate(all="ignore"):
            t = ufunc.reduce(part, axis=0)
            if isinstance(v, np.ndarray):
                ufunc(v, t, out=v, casting="unsafe")
            else:
                v[...] = ufunc(_host_values(v), t).astype(v.dtype, copy=False)
    return tuple(red_values), True, tuple(last_values), (True,) * len(loop.loops), idx


def _settle_quietly(pending, stats):
    if pending:
        _settle(pending, stats)


def _launcher(kernels: _Kernels, loop: _Loop, where: str, calls: _Calls, wait: bool):
    """The launch function of one loop. `wait` (whether the host may read the arrays after
    this loop, so it waits for every pending launch) is fixed per loop; the pending launches
    are the running call's (calls.pending()), so the launch's signature, which Numba types
    when the host code is compiled, carries only values."""
    stats = calls.stats
    plans: dict = {}  # (queue, form, value types) -> _Plan
    shapes: dict = {}  # (plan key, total) -> (geometry, pool of _Buffers)
    ndims = len(loop.loops)
    forced = os.environ.get("KAPI_DPJIT_REDUCE")  # read once per function: a launch is hot
    # the trip-count variables (index in the kernel's free values, name), without and with
    # loop.dims (those are read only in range bounds by construction)
    trip_names = loop.trip_vars | loop.shape_vars | {n for n, _, _ in loop.dims}
    trips = [
        [(k, n) for k, n in enumerate(_free_names(loop, dims)) if n in trip_names]
        for dims in (False, True)
    ]

    # the free variables' names where the kernel is generated per their ndims (arraytyped.py)
    names_nd = None
    if needs_ndims(loop.kbody):
        names_nd = [_free_names(loop, dims) for dims in (False, True)]
    guards: dict = {}  # (dims, ndims key) -> the broadcast guard of those kernels, or None

    def launch(bounds, args, red_values, last_values):
        """What the host assigns after the loop: (reduction values, whether the loop ran, the
        last values, which loop variables it set, their values). A loop that ran no iteration
        hands back the values from before it; a loop variable is set when its loop ran."""
        pending = calls.pending()
        b0 = bounds[0]
        if ndims == 1 and len(b0) == 1 and type(b0[0]) is int:  # prange(n): the usual one
            n = b0[0]
            total = n if n > 0 else 0
            counts, starts, idx = [total], [0, 1], (n - 1,)
        else:
            try:
                counts, starts = _bounds(bounds)
            except BaseException:
                if pending:
                    _settle(pending, stats)
                raise
            total = counts[0]
            for c in counts[1:]:
                total *= c
            idx = tuple(starts[2 * d] + (counts[d] - 1) * starts[2 * d + 1] for d in range(ndims))
        if not total:
            ran = tuple(all(counts[: d + 1]) for d in range(ndims))
            idx = tuple(i if r else 0 for i, r in zip(idx, ran, strict=True))
            if wait and pending:
                _settle(pending, stats)
            return tuple(red_values), False, tuple(last_values), ran, idx
        form = _bounds_form(starts)
        dims = False
        if loop.dims:
            extra = _dim_values(loop, args)
            if extra is not None:
                args, dims = (*args, *extra), True
        consts, args0 = (), args
        if trips[dims]:
            consts = _trip_consts(trips[dims], args, loop.shape_vars, where)
            if consts:
                fixed = {n for n, _ in consts}
                names = _free_names(loop, dims)
                args = tuple(a for a, n in zip(args, names, strict=True) if n not in fixed)
        variant = (consts, dims, _ndims_key(names_nd[dims], args0)) if names_nd else (consts, dims)
        if names_nd:
            gkey = (dims, variant[2])
            guard = guards.get(gkey, guards)
            if guard is guards:
                guard = guards[gkey] = kernels.guard(dims, variant[2])
            if guard is not None:
                try:
                    guard(args0)
                except BaseException:
                    if pending:
                        _settle(pending, stats)
                    raise
        if loop.reductions and any(isinstance(v, (Array, np.ndarray)) for v in red_values):
            nd = _ndims_key(_free_names(loop, dims), args0)
            return _array_reductions(
                kernels,
                loop,
                where,
                (consts, dims, nd),
                form,
                counts,
                starts,
                total,
                args,
                red_values,
                last_values,
                pending,
                stats,
                idx,
            )
        if not loop.ndrange:
            # the innermost loop (last in bounds) is dimension 0
            kern, rng = kernels.get("range", form, *variant), Range(*reversed(counts))
            _submit(kern, rng, (*args, *starts), pending, wait, stats)
            return (), True, (), (True,) * ndims, idx
        q = _placement(args)
        pkey = (q, form, variant, *map(type, red_values), *map(type, last_values))
        plan = plans.get(pkey)
        if plan is None:
            plan = _Plan(kernels, loop, where, q, form, variant, forced, red_values, last_values)
            plans[pkey] = plan
        shape = shapes.get((pkey, total))
        if shape is None:
            if len(shapes) > 64:
                shapes.clear()
            shape = shapes[(pkey, total)] = (plan.geometry(total), [])
        (nparts, rng, extra), pool = shape
        try:
            bufs = pool.pop()
        except IndexError:
            bufs = _Buffers(plan, nparts)
        last_inits = [dt.type(v) for dt, v in zip(plan.last_dts, last_values, strict=True)]
        kargs = (
            *args,
            *bufs.parts,
            *plan.inits,
            *bufs.lasts,
            *last_inits,
            total,
            *extra,
            *counts,
            *starts,
        )
        _submit(plan.kern, rng, kargs, pending, True, stats)  # the host reads the results
        views = bufs.read()
        with np.errstate(all="ignore"):  # integers wrap, as in the kernel
            reds = tuple(map(_combine, plan.ufuncs, red_values, views))
        out = tuple(map(_last_value, last_values, views[len(plan.ufuncs) :]))
        if len(pool) < _Buffers.KEEP:
            pool.append(bufs)
        return reds, True, out, (True,) * ndims, idx

    return launch
