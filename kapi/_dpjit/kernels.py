"""dpjit's kernels: a prange body rewritten as kernel code (reductions into private
accumulators, small trip counts compiled in) and wrapped as one kernel per shape ("range",
"tree", "blocks") and bounds form, compiled as closures (_factory). Built from analysis.py's
_Loop; launching.py generates each on the first launch that needs it."""

from __future__ import annotations

import ast
import copy
import itertools
import textwrap
import types

import numpy as np

from .._memory.array import Array
from .analysis import UnsupportedPrangeError, _Loop, _outer_jumps, _Resolver, _walk_scope
from .arraytyped import expand_with_ndims

_ITEM = "__kapi_item"
_API = "__kapi_api"
_GOP = "__kapi_gop"
_NP = "__kapi_np"
_LINALG = "__kapi_linalg"


def _linalg_module():
    from . import linalg

    return linalg


def _linalg_kind(fn) -> str | None:
    """ "inv" / "solve" for NumPy's and kapi's np.linalg.inv / solve, else None."""
    from .._numeric.array_api import linear_algebra as _la

    if fn is np.linalg.inv or fn is _la.inv:
        return "inv"
    if fn is np.linalg.solve or fn is _la.solve:
        return "solve"
    return None


def _private_allocators() -> dict:
    """The allocation functions a prange body may call for an iteration's own array ->
    whether they zero it: NumPy's and kapi's (also under dpnp's names, `import kapi as
    dpnp`). In the kernel each becomes a PrivateArray of that shape."""
    from .._memory import array as _array

    return {np.empty: False, np.zeros: True, _array.empty: False, _array.zeros: True}


def _name(id_, ctx=None):
    return ast.Name(id=id_, ctx=ctx or ast.Load())


class _BodyRewriter(ast.NodeTransformer):
    """Inside the kernel: a reduction statement updates the work-item's private accumulator
    (kept in the reduction variable's own name, in the accumulator's dtype); inner pranges
    become range."""

    def __init__(self, red_stmts, resolver, lasts=(), free=(), body=(), filename=""):
        self.red_stmts = red_stmts
        self.resolver = resolver
        self.lasts = set(lasts)
        self.allocators = _private_allocators()
        self.shape_names: set[str] = set()  # names read by private arrays' shapes
        self.free = set(free)
        self.filename = filename
        self.counter = 0
        self.alloc_shapes = self._alloc_shapes(body)

    def _alloc_shapes(self, body) -> dict:
        """name -> the shape (a tuple expression) of the body's arrays allocated by
        np.zeros / np.empty, where every binding of the name allocates that shape."""
        shapes: dict = {}
        for n in _walk_scope(body):
            if not isinstance(n, ast.Assign | ast.AnnAssign):
                continue  # `x op= e` updates x in place: its shape stays
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for m in ast.walk(t):
                    if isinstance(m, ast.Name) and not isinstance(m.ctx, ast.Load):
                        shape = self._alloc_shape(n.value) if t is m else None
                        old = shapes.get(m.id, shape)
                        same = old is not None and shape is not None
                        shapes[m.id] = shape if same and ast.dump(old) == ast.dump(shape) else None
        return {k: v for k, v in shapes.items() if v is not None}

    def _alloc_shape(self, value):
        if not isinstance(value, ast.Call) or not (value.args or value.keywords):
            return None
        try:
            fn, _ = self.resolver._value(value.func)
            if self.allocators.get(fn) is None:
                return None
        except (LookupError, AttributeError, TypeError, ValueError):
            return None
        shape = (
            value.args[0]
            if value.args
            else next((k.value for k in value.keywords if k.arg == "shape"), None)
        )
        if isinstance(shape, ast.Tuple):
            return shape
        return None if shape is None else ast.Tuple([shape], ast.Load())

    def _matrix_shape(self, e, what: str, call):
        """The shape of np.linalg's operand e as a tuple expression: of an array the body
        allocates, or of a free array (its axes compiled in, _ShapeBounds)."""
        if isinstance(e, ast.Name) and e.id in self.alloc_shapes:
            return copy.deepcopy(self.alloc_shapes[e.id])
        if isinstance(e, ast.Name) and e.id in self.free:
            axes = (0, 1)  # a free right-hand side b is 2-d; a 1-d one the body allocates
            return ast.Tuple(
                [
                    ast.Subscript(
                        value=ast.Attribute(value=_name(e.id), attr="shape", ctx=ast.Load()),
                        slice=ast.Constant(k),
                        ctx=ast.Load(),
                    )
                    for k in axes
                ],
                ast.Load(),
            )
        from .analysis import _where

        raise UnsupportedPrangeError(
            f"{_where(self.filename, call)}: dpjit: np.linalg's operands in a prange body must be "
            f"named arrays the body allocates (np.zeros / np.empty) or arrays from outside "
            f"the loop; bind the expression to a name first"
        )

    def _linalg(self, node):
        """`x = np.linalg.inv(a)` / `x = np.linalg.solve(a, b)`: x (and a work copy of a) as
        private arrays of a's dtype, filled by linalg.py's device functions."""
        call = node.value
        kind = None
        if (
            isinstance(call, ast.Call)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and not call.keywords
        ):
            try:
                fn, _ = self.resolver._value(call.func)
                kind = _linalg_kind(fn)
            except (LookupError, AttributeError, TypeError, ValueError):
                kind = None
        if kind is None or len(call.args) != (1 if kind == "inv" else 2):
            return None
        a = call.args[0]
        ashape = self._matrix_shape(a, "a", call)
        if kind == "inv":
            xshape, func, args = copy.deepcopy(ashape), "inv_into", [a]
        else:
            b = call.args[1]
            xshape = self._matrix_shape(b, "b", call)
            func = "solve_into" if len(xshape.elts) == 2 else "solve_vec_into"
            args = [a, b]
        self.counter += 1
        work = f"__kapi_law{self.counter}"
        dtype = ast.Attribute(value=copy.deepcopy(a), attr="dtype", ctx=ast.Load())
        private = ast.Attribute(value=_name(_API), attr="PrivateArray", ctx=ast.Load())
        out = []
        for target, shape in ((work, ashape), (node.targets[0].id, xshape)):
            bases = {
                id(n.value) for n in ast.walk(shape) if isinstance(n, ast.Attribute)
            }  # `b.shape[k]`: compiled in through _ShapeBounds
            for n in ast.walk(shape):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in bases:
                    self.shape_names.add(n.id)
            alloc = ast.Call(
                func=private,
                args=[shape, copy.deepcopy(dtype), ast.Constant(False)],
                keywords=[],
            )
            out.append(ast.Assign(targets=[_name(target, ast.Store())], value=alloc))
        fcall = ast.Call(
            func=ast.Attribute(value=_name(_LINALG), attr=func, ctx=ast.Load()),
            args=[*copy.deepcopy(args), _name(work), _name(node.targets[0].id)],
            keywords=[],
        )
        out.append(ast.Expr(fcall))
        for s in out:
            ast.copy_location(s, node)
            for n in ast.walk(s):
                if "lineno" in n._attributes:
                    ast.copy_location(n, node)
        return out

    def visit_Call(self, node):
        node = self.generic_visit(node)
        try:
            fn, _ = self.resolver._value(node.func)
            zero = self.allocators.get(fn)
        except (LookupError, AttributeError, TypeError, ValueError):
            return node
        if zero is None:
            return node
        return ast.copy_location(self._private_array(node, zero), node)

    def _private_array(self, node, zero: bool):
        """`np.empty(shape, dtype)` / `np.zeros(...)` in the body: the iteration's own array,
        a PrivateArray of that shape (compiled in: _private_shape_vars) and dtype (float64 by
        default, as NumPy's)."""
        args = dict(zip(("shape", "dtype"), node.args, strict=False))
        args.update((k.arg, k.value) for k in node.keywords if k.arg in ("shape", "dtype"))
        if "shape" not in args:
            return node  # the call's own error, from the kernel compiler
        dtype = args.get("dtype") or ast.Attribute(value=_name(_NP), attr="float64", ctx=ast.Load())
        for n in ast.walk(args["shape"]):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                self.shape_names.add(n.id)
        private = ast.Attribute(value=_name(_API), attr="PrivateArray", ctx=ast.Load())
        return ast.Call(func=private, args=[args["shape"], dtype, ast.Constant(zero)], keywords=[])

    def _keep_type(self, node):
        """`v = x` / `v op= x` of a last-value variable, converted to v's dtype (the type of
        its value before the loop) so the kernel variable keeps one type."""
        name = node.targets[0].id if isinstance(node, ast.Assign) else node.target.id
        value = self.visit(node.value)
        if isinstance(node, ast.AugAssign):
            value = ast.BinOp(left=_name(name), op=node.op, right=value)
        conv = ast.Attribute(
            value=ast.Attribute(value=_name(_last(name)), attr="dtype", ctx=ast.Load()),
            attr="type",
            ctx=ast.Load(),
        )
        new = ast.Assign(
            targets=[_name(name, ast.Store())],
            value=ast.Call(func=conv, args=[value], keywords=[]),
        )
        return ast.copy_location(new, node)

    def _is_last(self, node):
        if isinstance(node, ast.AugAssign):
            return isinstance(node.target, ast.Name) and node.target.id in self.lasts
        return (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in self.lasts
        )

    def _reduce(self, node):
        red = self.red_stmts[id(node)]
        acc, value = _name(red.name), self.visit(red.value)
        if isinstance(red.op, str):
            new = ast.Call(func=_name(red.op), args=[acc, value], keywords=[])
        else:
            new = ast.BinOp(left=acc, op=red.op, right=value)
        # converted back to the accumulator's dtype (int32 + int32 is int64 in kernels)
        conv = ast.Attribute(
            value=ast.Attribute(value=_name(_part(red.name)), attr="dtype", ctx=ast.Load()),
            attr="type",
            ctx=ast.Load(),
        )
        new = ast.Call(func=conv, args=[new], keywords=[])
        return ast.copy_location(
            ast.Assign(targets=[_name(red.name, ast.Store())], value=new), node
        )

    def visit_AugAssign(self, node):
        if id(node) in self.red_stmts:
            return self._reduce(node)
        if self._is_last(node):
            return self._keep_type(node)
        return self.generic_visit(node)

    def visit_Assign(self, node):
        if id(node) in self.red_stmts:
            return self._reduce(node)
        if self._is_last(node):
            return self._keep_type(node)
        linalg = self._linalg(node)
        if linalg is not None:
            return linalg
        return self.generic_visit(node)

    def visit_For(self, node):
        node = self.generic_visit(node)
        if self.resolver.is_prange(node):
            node.iter.func = ast.copy_location(_name("range"), node.iter.func)
        return node

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


# Kernel shapes. A loop's kernel is generated per shape (on the first launch that needs it):
# - "range": one work-item per iteration (loops without reductions or last values);
# - "tree": a 1-D nd-range kernel, grid-stride loop, work-group tree per reduction (GPUs);
# - "blocks": a barrier-free Range kernel, each work-item a contiguous block of iterations
#   and its own partial results (the CPU device: no per-group region cost, sequential
#   accesses per thread, as Numba's parallel loops);
# each for one form of the bounds (_bounds_form): "zero" (prange(n): every start 0, step 1)
# indexes with the ids themselves, as a hand-written kernel does; "unit" (starts >= 0, steps
# 1: prange(a, b)) with `(start & _NONNEG) + id`, known non-negative; in both, indexing needs
# no negative-index wraparound and the innermost index has unit stride, so the CPU finaliser
# vectorises the work-item loop as for a hand-written kernel. "any" takes the general form
# (start + id * step, Python's negative indices).
_NONNEG = 0x7FFFFFFFFFFFFFFF  # `x & _NONNEG` is x for x >= 0, and known >= 0 by pyfront


def _kernel_params(loop: _Loop, shape: str, fixed=(), dims=False) -> list[str]:
    """fixed: free variables the kernel sees as constants (_trip_consts), not parameters;
    dims: the kernel takes loop.dims after the free variables (_ShapeBounds)."""
    n = len(loop.loops)
    bounds = [f"__kapi_{w}{d}" for d in range(n) for w in ("start", "step")]
    free = [v for v in _free_names(loop, dims) if v not in fixed]
    if shape == "range":
        return [_ITEM, *free, *bounds]
    if shape == "arrays":
        return [_ITEM, *free, *[_rbuf(r) for r in loop.reductions], *bounds]
    return [
        _ITEM,
        *free,
        *[_part(r) for r in loop.reductions],
        *[f"__kapi_init_{r}" for r in loop.reductions],
        *[_last(v) for v in loop.lasts],
        *[f"__kapi_init_{v}" for v in loop.lasts],
        "__kapi_total",
        *(["__kapi_chunk"] if shape == "blocks" else []),
        *[f"__kapi_count{d}" for d in range(n)],
        *bounds,
    ]


def _kernel_body(loop: _Loop, resolver: _Resolver, filename: str = "") -> list[ast.stmt]:
    """The prange body as kernel code (reductions update private accumulators, inner pranges
    become range, arrays allocated per iteration private arrays); each kernel shape takes a
    deep copy of it. Sets loop.shape_vars."""
    rewriter = _BodyRewriter(loop.red_stmts, resolver, loop.lasts, loop.free, loop.body, filename)
    body = []
    for s in loop.body:
        new = rewriter.visit(s)  # a statement, or a list of them (np.linalg's calls)
        body.extend(new if isinstance(new, list) else [new])
    body = _split_joins(body, itertools.count())
    loop.shape_vars = rewriter.shape_names & set(loop.free)
    return body


def _private_binds(stmts) -> set[str]:
    """Names the statements (not nested blocks) bind to a new private array."""
    out = set()
    for st in stmts:
        if (
            isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
            and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Attribute)
            and st.value.func.attr == "PrivateArray"
        ):
            out.add(st.targets[0].id)
    return out


def _split_joins(block, counter) -> list[ast.stmt]:
    """An `if` both of whose branches bind a name to a private array (`x = np.linalg.inv(a)`
    / `x = np.linalg.solve(a, b)`, of different shapes) that the statements after it read:
    those statements move into each branch, where the name is renamed per branch, since one
    kernel variable cannot refer to either array."""
    out: list[ast.stmt] = []
    for pos, st in enumerate(block):
        for field in ("body", "orelse"):
            if isinstance(st, ast.For | ast.While | ast.If | ast.With) and hasattr(st, field):
                setattr(st, field, _split_joins(getattr(st, field), counter))
        if isinstance(st, ast.If) and st.orelse:
            tail = block[pos + 1 :]
            both = _private_binds(st.body) & _private_binds(st.orelse)
            read = {n.id for t in tail for n in ast.walk(t) if isinstance(n, ast.Name)}
            names = sorted(both & read)
            if names and not any(
                isinstance(n, ast.Break | ast.Return) for t in tail for n in ast.walk(t)
            ):
                for field in ("body", "orelse"):
                    k = next(counter)
                    ren = _Renamer({n: f"{n}__kapi_b{k}" for n in names})
                    new = [ren.visit(x) for x in [*getattr(st, field), *copy.deepcopy(tail)]]
                    setattr(st, field, _split_joins(new, counter))
                out.append(st)
                return out
        out.append(st)
    return out


# Trip counts as constants: a free variable the body reads only in range() bounds (`dims` in
# `for k in range(dims)`) whose value at a launch is a small non-negative int is compiled into
# the kernel as a constant, one kernel per value: the short inner loop is then unrolled, where
# a run-time count of 3 cost the CPU device more per iteration of the prange loop than Numba's
# loop (bench/RESULTS.md, issue 14). Larger values take the general kernel.
_TRIP_CONST_MAX = 16


def _trip_vars(loop: _Loop, resolver: _Resolver) -> set[str]:
    """Free variables of the loop every read of which is inside the bounds of a `for ... in
    range(...)` (or an inner prange) of the body."""
    total: dict[str, int] = {}
    in_bounds: dict[str, int] = {}
    for n in _walk_scope(loop.body):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            total[n.id] = total.get(n.id, 0) + 1
        if not (isinstance(n, ast.For) and isinstance(n.iter, ast.Call)):
            continue
        func = n.iter.func
        ranged = isinstance(func, ast.Name) and func.id == "range" and resolver.is_builtin("range")
        if ranged or resolver.is_prange(n):
            for m in _walk_scope(n.iter.args):
                if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Load):
                    in_bounds[m.id] = in_bounds.get(m.id, 0) + 1
    return {v for v in loop.free if total.get(v) and in_bounds.get(v) == total[v]}


class _ShapeBounds(ast.NodeTransformer):
    """In the bounds of the body's range loops, `a.shape[k]` of a free variable `a` (k a
    constant) becomes a name the launch passes (and may compile in, as a trip count)."""

    def __init__(self, free):
        self.free = set(free)
        self.dims: dict[tuple[str, int], str] = {}
        self.shaped: set[str] = set()  # dims read by private arrays' shapes

    def visit_For(self, node):
        node = self.generic_visit(node)
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            it.args = [self._bound(a) for a in it.args]
        return node

    def visit_Call(self, node):
        """A private array's shape (_BodyRewriter: np.linalg's results): its axes too."""
        node = self.generic_visit(node)
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "PrivateArray"
            and isinstance(f.value, ast.Name)
            and f.value.id == _API
            and node.args
            and isinstance(node.args[0], ast.Tuple)
        ):
            before = set(self.dims.values())
            node.args[0].elts = [self._bound(e) for e in node.args[0].elts]
            self.shaped |= set(self.dims.values()) - before
        return node

    def _bound(self, e):
        if (
            isinstance(e, ast.Subscript)
            and isinstance(e.value, ast.Attribute)
            and e.value.attr == "shape"
            and isinstance(e.value.value, ast.Name)
            and e.value.value.id in self.free
            and isinstance(e.slice, ast.Constant)
            and type(e.slice.value) is int
            and e.slice.value >= 0
        ):
            key = (e.value.value.id, e.slice.value)
            name = self.dims.setdefault(key, f"__kapi_dim{key[1]}_{key[0]}")
            return ast.copy_location(_name(name), e)
        if isinstance(e, (ast.BinOp, ast.UnaryOp)):
            for field in ("left", "right", "operand"):
                if hasattr(e, field):
                    setattr(e, field, self._bound(getattr(e, field)))
        return e

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


def _shape_bounds(loop: _Loop, resolver: _Resolver) -> None:
    """loop.dims and loop.kbody_dims (see _ShapeBounds), when the body has such bounds."""
    if not resolver.is_builtin("range"):
        return
    t = _ShapeBounds(loop.free)
    body = [t.visit(s) for s in copy.deepcopy(loop.kbody)]
    if t.dims:
        loop.dims = [(name, a, k) for (a, k), name in t.dims.items()]
        loop.kbody_dims = body
        loop.shape_vars = loop.shape_vars | t.shaped  # compiled in: a private array's size


def _dim_values(loop: _Loop, args):
    """The values of loop.dims for the launch's free values, or None where one is not an
    array with that axis (the kernel then reads `a.shape[k]` itself, or fails to compile
    with the body's own error)."""
    out = []
    for _, a, k in loop.dims:
        x = args[loop.free.index(a)]
        if not isinstance(x, (Array, np.ndarray)) or x.ndim <= k:
            return None
        out.append(x.shape[k])
    return out


def _trip_consts(trips, args, shape_vars=frozenset(), where="") -> tuple:
    """((name, value), ...) of the trip-count variables (trips: (index in args, name)) whose
    values are small enough to compile in, and of the variables private arrays' shapes read
    (always compiled in: a private array's size is part of the kernel)."""
    out = []
    for k, n in trips:
        v = args[k]
        if n in shape_vars:
            if not isinstance(v, (int, np.integer)) or not 0 <= v <= _PRIVATE_MAX:
                what = (
                    f"{n} = {v!r} is not an integer from 0 to {_PRIVATE_MAX}"
                    if isinstance(v, (int, np.integer))
                    else f"it reads {n}, a {type(v).__name__}, not an integer variable"
                )
                raise UnsupportedPrangeError(
                    f"{where}: dpjit: the size of an array allocated in a prange body is "
                    f"compiled into its kernel, and {what}; pass the size as an integer "
                    f"argument, or allocate the array before the loop (one row per "
                    f"iteration) instead"
                )
            out.append((n, int(v)))
        elif type(v) is int and 0 <= v <= _TRIP_CONST_MAX:
            out.append((n, v))
    return tuple(out)


_PRIVATE_MAX = 1 << 16  # elements: private arrays live in registers or the stack


def _free_names(loop: _Loop, dims: bool) -> list[str]:
    return [*loop.free, *(n for n, _, _ in loop.dims)] if dims else loop.free


def _kernel_def(
    loop: _Loop, kname: str, shape: str, form: str, fixed=(), dims=False, ndims=()
) -> ast.FunctionDef:
    """ndims: ((name, ndim), ...) of the free variables (0: not an array) where the body's
    array statements need them (arraytyped.py)."""
    build = {
        "range": _range_stmts,
        "arrays": _array_red_stmts,
        "tree": _tree_stmts,
        "blocks": _block_stmts,
    }[shape]
    first = loop.loops[0]
    args = ast.arguments(
        posonlyargs=[],
        args=[ast.arg(arg=p) for p in _kernel_params(loop, shape, fixed, dims)],
        kwonlyargs=[],
        kw_defaults=[],
        defaults=[],
    )
    body = copy.deepcopy(loop.kbody_dims if dims else loop.kbody)
    if shape == "arrays":
        body = [_ArrayReductions(loop.reductions).visit(s) for s in body]
    if ndims:
        body = expand_with_ndims(body, dict(ndims), set(loop.lasts) | set(loop.reductions))
    stmts = build(loop, body, form)
    fdef = ast.FunctionDef(name=kname, args=args, body=stmts, decorator_list=[])
    return ast.copy_location(fdef, first)


def _unit_starts(loop: _Loop) -> str:
    return "".join(
        f"__kapi_s{d} = __kapi_start{d} & {_NONNEG:#x}\n" for d in range(len(loop.loops))
    )


def _range_stmts(loop: _Loop, body, form: str) -> list[ast.stmt]:
    """One work-item per iteration: per loop of the nest `i = id` ("zero" bounds), `i =
    start + id` ("unit") or `i = start + id * step` ("any")."""
    ndim = len(loop.loops)
    prologue = []
    for k, lp in enumerate(loop.loops):
        gid = f"{_ITEM}.get_id({ndim - 1 - k})"  # the innermost loop varies fastest: dim 0
        if form == "zero":
            value = gid
        elif form == "unit":
            value = f"(__kapi_start{k} & {_NONNEG:#x}) + {gid}"
        else:
            value = f"__kapi_start{k} + {gid} * __kapi_step{k}"
        prologue += _located(f"{lp.target.id} = {value}\n", lp)
    if any(isinstance(n, ast.Continue) for n in _outer_jumps(body)):
        # `continue` of the prange loop ends the work-item: a one-trip loop gives it a target
        once = ast.For(
            target=_name("__kapi_once", ast.Store()),
            iter=ast.Call(func=_name("range"), args=[ast.Constant(1)], keywords=[]),
            body=body,
            orelse=[],
        )
        body = [ast.copy_location(once, loop.body[0])]
    return prologue + body


def _rbuf(name: str) -> str:
    return f"__kapi_rbuf_{name}"


class _ArrayReductions(ast.NodeTransformer):
    """Reductions into arrays (the "arrays" kernel): `P = type(P op value)` (_BodyRewriter's
    form of `P op= value`) becomes `buf[lin] op= value`, the iteration's own row of the
    launch's [iterations, *P.shape] buffer (at the operator's identity), which the host then
    reduces along its first axis into P (launching.py)."""

    def __init__(self, names):
        self.names = set(names)

    def visit_Assign(self, node):
        t, v = node.targets[0], node.value
        if not (
            len(node.targets) == 1
            and isinstance(t, ast.Name)
            and t.id in self.names
            and isinstance(v, ast.Call)
            and len(v.args) == 1
        ):
            return self.generic_visit(node)
        inner = v.args[0]
        if not (isinstance(inner, ast.BinOp) and isinstance(inner.left, ast.Name)):
            raise UnsupportedPrangeError(
                f"line {node.lineno}: dpjit: a reduction into the array `{t.id}` must be "
                f"`{t.id} op= value` (+=, -=, *=, /=)"
            )
        row = ast.Subscript(value=_name(_rbuf(t.id)), slice=_name("__kapi_lin"), ctx=ast.Store())
        new = ast.AugAssign(target=row, op=inner.op, value=inner.right)
        return ast.copy_location(new, node)

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


def _array_red_stmts(loop: _Loop, body, form: str) -> list[ast.stmt]:
    """A range kernel whose work-item also knows its linear id (its buffer row)."""
    stmts = _range_stmts(loop, body, form)
    return _located(f"__kapi_lin = {_ITEM}.get_linear_id()\n", loop.loops[0]) + stmts


def _part(name: str) -> str:
    return f"__kapi_part_{name}"


def _last(name: str) -> str:
    return f"__kapi_last_{name}"


def _located(src: str, where: ast.AST) -> list[ast.stmt]:
    """Statements parsed from src, every node placed at `where`'s line (the prange header),
    so errors in generated code point at the loop."""
    stmts = ast.parse(textwrap.dedent(src)).body
    for s in stmts:
        for n in ast.walk(s):
            if "lineno" in n._attributes:
                ast.copy_location(n, where)
                n.end_lineno, n.end_col_offset = where.lineno, where.col_offset
    return stmts


def _index_src(loop: _Loop, form: str) -> str:
    """The loop variables from the linear index __kapi_lin (innermost loop fastest)."""
    n = len(loop.loops)
    out = ["__kapi_rest = __kapi_lin\n"]
    for d in range(n - 1, -1, -1):
        target = loop.loops[d].target.id
        start = {"zero": "", "unit": f"__kapi_s{d} + "}.get(form, f"__kapi_start{d} + ")
        step = "" if form in ("zero", "unit") else f" * __kapi_step{d}"
        if d:
            out.append(
                f"{target} = {start}(__kapi_rest % __kapi_c{d}){step}\n"
                f"__kapi_rest = __kapi_rest // __kapi_c{d}\n"
            )
        else:
            out.append(f"{target} = {start}__kapi_rest{step}\n")
    return "".join(out)


def _reduction_prologue(loop: _Loop, form: str) -> str:
    """Accumulators at their identities, last values at theirs; the bounds as non-negative
    values (counts and totals are, so indexing by them needs no wraparound)."""
    src = "".join(f"{r} = __kapi_init_{r}\n" for r in [*loop.reductions, *loop.lasts])
    for k in range(1, _unroll_factor(loop)):
        src += "".join(f"{_acc(r, k)} = __kapi_init_{r}\n" for r in loop.reductions)
    src += f"__kapi_n = __kapi_total & {_NONNEG:#x}\n"
    for d in range(1, len(loop.loops)):
        src += f"__kapi_c{d} = __kapi_count{d} & {_NONNEG:#x}\n"
    return src + (_unit_starts(loop) if form == "unit" else "")


# Independent accumulators of a reduction kernel's loop: each reduction variable gets _UNROLL
# copies, iterations j, j + s, j + 2s, j + 3s go to different ones (s: the stride), so a
# work-item has that many loads in flight and no serial chain of adds (a GPU stalls on each
# load of a single chain; the CPU device's adds wait on each other), as kapi/_numeric/reduce.py
# folds.
# The body is repeated that many times, so only small loop-free bodies are unrolled.
_UNROLL = 4
_CHAINS = 8
_UNROLL_MAX_NODES = 200


def _acc(name: str, k: int) -> str:
    return name if k == 0 else f"__kapi_acc{k}_{name}"


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node):
        new = self.names.get(node.id)
        if new is not None:
            node.id = new
        return node


def _unroll_factor(loop: _Loop) -> int:
    """Copies of a small loop-free body with reductions: about _CHAINS independent
    accumulators in all (several reductions are independent chains already, and each copy
    of each costs a GPU work-item registers), at most _UNROLL; else 1."""
    if not loop.reductions:
        return 1
    nodes = list(_walk_scope(loop.kbody))
    if len(nodes) > _UNROLL_MAX_NODES or any(isinstance(n, (ast.For, ast.While)) for n in nodes):
        return 1
    return max(1, min(_UNROLL, _CHAINS // len(loop.reductions)))


def _fold_loop(loop: _Loop, body, form: str, stride: str | None) -> list[ast.stmt]:
    """The loop of a reduction kernel: __kapi_lin runs from __kapi_j (a non-negative start
    assigned before) while below __kapi_end, by `stride` (None: 1); the body runs in order of
    the index, so the last iteration a work-item runs is its highest (its last values). The
    unrolled loop folds into _unroll_factor accumulators, combined after it; a remainder loop
    runs the rest into the first."""
    first = loop.loops[0]
    u = _unroll_factor(loop)
    step = "1" if stride is None else stride
    jumps = any(isinstance(n, ast.Continue) for n in _outer_jumps(body))

    def iteration(lin: str, stmts, advance: str = "") -> list[ast.stmt]:
        head = _located(f"__kapi_lin = {lin}\n{advance}" + _index_src(loop, form), first)
        if jumps and not advance:
            # `continue` of the prange loop ends the iteration: a one-trip loop is its target
            (once,) = _located("for __kapi_once in range(1):\n    pass\n", first)
            once.body = stmts
            stmts = [once]
        return head + stmts

    out = []
    if u > 1:
        span = f"{u - 1} * {step}" if stride is not None else str(u - 1)
        pre = f"__kapi_ustep = {u} * {stride}\n" if stride is not None else ""
        out += _located(pre, first)
        (unrolled,) = _located(f"while __kapi_j + {span} < __kapi_end:\n    pass\n", first)
        stmts = []
        for k in range(u):
            b = copy.deepcopy(body)
            if k:
                names = {r: _acc(r, k) for r in loop.reductions}
                b = [_Renamer(names).visit(s) for s in b]
            off = "" if k == 0 else (f" + {k} * {stride}" if stride is not None else f" + {k}")
            stmts += iteration(f"__kapi_j{off}", b)
        nxt = "__kapi_ustep" if stride is not None else str(u)
        unrolled.body = stmts + _located(f"__kapi_j = __kapi_j + {nxt}\n", first)
        out.append(unrolled)
    (rest,) = _located("while __kapi_j < __kapi_end:\n    pass\n", first)
    # the index advances first, so that `continue` in the body goes on to the next one
    rest.body = iteration("__kapi_j", copy.deepcopy(body), f"__kapi_j = __kapi_j + {step}\n")
    out.append(rest)
    combine = []
    for r in loop.reductions if u > 1 else ():
        names = [_acc(r, k) for k in range(u)]
        kind = loop.red_kinds[r]
        while len(names) > 1:  # pairwise: (a0 op a1) op (a2 op a3)
            names = [_combine_src(kind, names[k], names[k + 1]) for k in range(0, len(names), 2)]
        combine.append(f"{r} = {_part(r)}.dtype.type({names[0]})\n")
    return out + _located("".join(combine), first)


_COMBINE_OPS = {"ADD": "+", "MUL": "*", "AND": "&", "OR": "|", "XOR": "^"}


def _combine_src(kind: str, a: str, b: str) -> str:
    if kind in ("MIN", "MAX"):
        return f"{kind.lower()}({a}, {b})"
    return f"({a} {_COMBINE_OPS[kind]} {b})"


def _tree_stmts(loop: _Loop, body, form: str) -> list[ast.stmt]:
    """A 1-D nd-range kernel: each work-item folds a strided part of the linearised iteration
    space (items next to each other read next iterations: coalesced) into private
    accumulators (the reduction variables, starting at the operator's identity; unrolled into
    several, _fold_loop), then each work-group combines them with reduce_over_group and its
    first work-item writes the group's partial result; the host combines the partials and the
    variable's value before the loop. A last-value variable is written by the work-item that
    ran the last iteration (the highest linear index, the last of its stride)."""
    first = loop.loops[0]
    head = (
        f"__kapi_end = __kapi_n\n"
        f"__kapi_j = {_ITEM}.get_global_id(0)\n"
        f"__kapi_stride = {_ITEM}.get_global_range(0)\n"
    )
    combine = [f"__kapi_group = {_ITEM}.get_group()\n"]
    if loop.lasts:
        combine.append(
            f"if {_ITEM}.get_global_id(0) == (__kapi_n - 1) % {_ITEM}.get_global_range(0):\n"
        )
        combine += [f"    {_last(v)}[0] = {v}\n" for v in loop.lasts]
    for r in loop.reductions:
        combine.append(
            f"{r} = {_API}.reduce_over_group(__kapi_group, {r}, {_GOP}.{loop.red_kinds[r]})\n"
        )
    if loop.reductions:
        combine.append(f"if {_ITEM}.get_local_id(0) == 0:\n")
    for r in loop.reductions:
        combine.append(f"    {_part(r)}[__kapi_group.get_group_linear_id()] = {r}\n")
    return [
        *_located(_reduction_prologue(loop, form) + head, first),
        *_fold_loop(loop, body, form, "__kapi_stride"),
        *_located("".join(combine), first),
    ]


def _block_stmts(loop: _Loop, body, form: str) -> list[ast.stmt]:
    """A Range kernel without barriers: work-item g runs iterations [g * chunk, (g + 1) *
    chunk) of the linearised space in order into private accumulators (unrolled into several,
    _fold_loop) and writes them as partial g; the work-item whose block holds the last
    iteration writes the last values."""
    first = loop.loops[0]
    head = (
        f"__kapi_g = {_ITEM}.get_id(0)\n"
        f"__kapi_j = __kapi_g * (__kapi_chunk & {_NONNEG:#x})\n"
        f"__kapi_end = min(__kapi_j + (__kapi_chunk & {_NONNEG:#x}), __kapi_n)\n"
    )
    tail = []
    if loop.lasts:
        tail.append("if __kapi_end == __kapi_n:\n")
        tail += [f"    {_last(v)}[0] = {v}\n" for v in loop.lasts]
    tail += [f"{_part(r)}[__kapi_g] = {r}\n" for r in loop.reductions]
    return [
        *_located(_reduction_prologue(loop, form) + head, first),
        *_fold_loop(loop, body, form, None),
        *_located("".join(tail), first),
    ]


def _factory(defn: ast.FunctionDef, cellnames: list[str], filename: str):
    """Code object of `defn` compiled as a closure over `cellnames` (so its free variables are
    cells we supply: the original closure's and our helpers')."""
    pre = [ast.Assign(targets=[_name(c, ast.Store())], value=ast.Constant(None)) for c in cellnames]
    outer = ast.FunctionDef(
        name="__kapi_factory",
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[*pre, defn, ast.Return(value=_name(defn.name))],
        decorator_list=[],
    )
    ast.copy_location(outer, defn)
    for s in pre:
        ast.copy_location(s, defn)
    outer.body[-1] = ast.copy_location(outer.body[-1], defn)
    mod = ast.Module(body=[outer], type_ignores=[])
    ast.fix_missing_locations(mod)
    code = compile(mod, filename, "exec")
    fcode = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return next(
        c for c in fcode.co_consts if isinstance(c, types.CodeType) and c.co_name == defn.name
    )


def _make_function(code, fn, cells: dict, name=None, defaults=None, kwdefaults=None):
    closure = tuple(cells[n] for n in code.co_freevars)
    f = types.FunctionType(code, fn.__globals__, name or code.co_name, defaults, closure)
    if kwdefaults:
        f.__kwdefaults__ = dict(kwdefaults)
    return f
