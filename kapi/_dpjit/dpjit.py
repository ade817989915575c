"""@kapi.dpjit: numba-dpex's prange offload. Each `for x in prange(...)` loop of the function is
outlined into a @kapi.kernel over a Range (nested pranges give 2-D/3-D ranges) and the loop is
replaced by a launch (done once, on the first call); the function around the loops is then
compiled by Numba's njit per argument types (_dpjit_host.py); where Numba cannot compile it,
the call raises HostCompileError, or (host="python") runs in CPython. Each loop's kernel is
generated per shape on the first launch needing it (_kernel_def).
Loops with reductions or last values run over the linearised nest: on GPUs as a 1-D nd-range
kernel (a grid-stride loop, a work-group tree per reduction, one partial per group, in host
memory), on the CPU device as a barrier-free Range kernel of contiguous blocks (one partial
per work-item); small bodies fold into several independent accumulators (_fold_loop); the
host combines the partials, from a per-loop plan (_Plan) and kept arrays (_Buffers). Small
trip counts of the body's range() loops are compiled into per-value kernels (_trip_vars,
_ShapeBounds). The others run one work-item per iteration. Loops whose
results the host does not read go to the queue without a wait (_async_loops): the pending
launches live in a per-call context (_Calls) that the launchers share, outside the launch's
Numba-typed signature."""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import functools
import inspect
import os
import sys
import textwrap
import threading
import types
import warnings

import numpy as np

from .._errors import KapiError
from .._kernel.dispatcher import kernel as _kernel_decorator
from .._kernel.launch import call_kernel, call_kernel_async, wait_all
from .._kernel.ranges import NdRange, Range
from .._memory import array as _array
from .._memory.array import Array, empty
from .._memory.device import default_device

_MAX_DIMS = 3
_ITEM = "__kapi_item"
_API = "__kapi_api"
_LAUNCH = "__kapi_launch"
_GOP = "__kapi_gop"
# Options meaning what dpjit always does (numba.jit's nopython/parallel); others are ignored.
_IMPLIED = {"nopython": True, "parallel": True}


class UnsupportedPrangeError(KapiError, NotImplementedError):
    """A construct dpjit does not offload (break/return in a prange body, `//=` reductions,
    a conditional assignment of a variable read after the loop, ...); the message names it at
    its file:line."""

    __module__ = "kapi"


def _where(filename: str, node: ast.AST) -> str:
    return f"{filename}:{getattr(node, 'lineno', '?')}"


# -- recognising prange loops ---------------------------------------------------------------


def _is_prange_object(obj, spelled: str) -> bool:
    numba = sys.modules.get("numba")
    if numba is not None and obj is getattr(numba, "prange", None):
        return True
    # kapi.prange is the builtin range (so it stays usable everywhere); a call spelled
    # `range` is an ordinary sequential loop, any other spelling of it (prange, dpex.prange)
    # is a prange.
    return obj is builtins.range and spelled != "range"


class _Resolver:
    """Resolves a loop's iterator call to a prange through the function's globals/closure."""

    def __init__(self, fn, host_locals: set[str]):
        self.globals = fn.__globals__
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))
        self.host_locals = host_locals

    def _lookup(self, name: str):
        if name in self.host_locals:
            raise LookupError(name)
        cell = self.cells.get(name)
        if cell is not None:
            return cell.cell_contents
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name)

    def _value(self, node):
        if isinstance(node, ast.Name):
            return self._lookup(node.id), node.id
        if isinstance(node, ast.Attribute):
            base, _ = self._value(node.value)
            return getattr(base, node.attr), node.attr
        raise LookupError("not a name")

    def is_builtin(self, name: str) -> bool:
        """Whether `name` in the body means the builtin of that name (not a shadowing one)."""
        try:
            return self._lookup(name) is getattr(builtins, name)
        except (LookupError, AttributeError):
            return False

    def is_prange(self, node) -> bool:
        if not isinstance(node, ast.For) or not isinstance(node.iter, ast.Call):
            return False
        try:
            obj, spelled = self._value(node.iter.func)
        except (LookupError, AttributeError, ValueError):
            return False
        return _is_prange_object(obj, spelled)


# -- name analysis --------------------------------------------------------------------------

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _walk_scope(nodes):
    """ast.walk over statements, not entering nested functions, lambdas, classes."""
    todo = list(nodes)
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))


def _bound_name(n) -> str | None:
    """The name a def/class, an import alias or `except ... as` binds, else None."""
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return n.name
    if isinstance(n, ast.alias):
        return (n.asname or n.name).split(".")[0]
    if isinstance(n, ast.ExceptHandler):
        return n.name
    return None


def _names(nodes) -> tuple[set[str], set[str]]:
    """Names stored and names loaded by exactly these nodes (no walking into children)."""
    stores, loads = set(), set()
    for n in nodes:
        if isinstance(n, ast.Name):
            (loads if isinstance(n.ctx, ast.Load) else stores).add(n.id)
        elif (bound := _bound_name(n)) is not None:
            stores.add(bound)
    return stores, loads


def _stores_loads(nodes) -> tuple[set[str], set[str]]:
    return _names(_walk_scope(nodes))


def _bindings(nodes) -> set[str]:
    """Names bound other than by assignment: def/class, import, except ... as."""
    return {b for n in _walk_scope(nodes) if (b := _bound_name(n)) is not None}


def _comprehension_names(nodes) -> set[str]:
    """Names bound by comprehensions (their own scope): not host locals."""
    out = set()
    for n in _walk_scope(nodes):
        if isinstance(n, ast.comprehension):
            out |= _stores_loads([n.target])[0]
    return out


# -- one prange loop nest -------------------------------------------------------------------


class _Loop:
    """A prange nest: its loops (outermost first), the innermost body and the analysis."""

    def __init__(self, loops, body):
        self.loops = loops
        self.body = body
        self.targets = [lp.target.id for lp in loops]
        self.free: list[str] = []
        self.reductions: list[str] = []
        self.red_kinds: dict[str, str] = {}
        self.red_stmts: dict = {}  # id(statement) -> _Reduction
        self.red_divides: set[str] = set()  # reductions with a `/=`: float accumulators only
        self.lasts: list[str] = []  # body variables the host reads: they leave a last value
        self.kbody: list[ast.stmt] = []  # the body as kernel code (_kernel_body)
        self.last_targets: list[str] = []  # loop variables the host reads
        self.trip_vars: set[str] = set()  # free variables read only in range() bounds
        self.dims: list[tuple[str, str, int]] = []  # (name, array, axis): `a.shape[k]` bounds
        self.kbody_dims: list[ast.stmt] = []  # kbody reading those as the names

    @property
    def ndrange(self) -> bool:
        """Whether the loop runs as the nd-range kernel (reductions, last values)."""
        return bool(self.reductions or self.lasts)


def _collect_nest(outer: ast.For, resolver: _Resolver, filename: str) -> _Loop:
    loops = [outer]
    while True:
        lp = loops[-1]
        _check_loop_header(lp, filename)
        inner = lp.body[0] if len(lp.body) == 1 else None
        if len(loops) == _MAX_DIMS or inner is None or not resolver.is_prange(inner):
            break
        # an inner range whose bounds use an outer loop variable is not rectangular: it stays a
        # sequential loop inside the kernel
        _, bound_loads = _stores_loads(inner.iter.args)
        if bound_loads & {x.target.id for x in loops if isinstance(x.target, ast.Name)}:
            break
        if inner.orelse:
            raise UnsupportedPrangeError(
                f"{_where(filename, inner)}: dpjit: `else:` on a prange loop is not supported"
            )
        loops.append(inner)
    return _Loop(loops, loops[-1].body)


def _check_loop_header(lp: ast.For, filename: str) -> None:
    where = _where(filename, lp)
    if lp.orelse:
        raise UnsupportedPrangeError(f"{where}: dpjit: `else:` on a prange loop is not supported")
    if not isinstance(lp.target, ast.Name):
        raise UnsupportedPrangeError(
            f"{where}: dpjit: a prange loop variable must be a single name"
        )
    call = lp.iter
    if (
        call.keywords
        or not 1 <= len(call.args) <= 3
        or any(isinstance(a, ast.Starred) for a in call.args)
    ):
        raise UnsupportedPrangeError(
            f"{where}: dpjit: prange takes (stop), (start, stop) or (start, stop, step)"
        )


def _check_body(body, filename: str) -> None:
    """Refuses what leaves the prange body early (break of the prange loop, return, yield,
    await) and global/nonlocal declarations; break of an inner loop and continue are fine."""

    def visit(nodes, in_loop: bool):
        for n in nodes:
            if isinstance(n, _SCOPES):
                continue
            if isinstance(n, ast.Break) and not in_loop:
                raise UnsupportedPrangeError(
                    f"{_where(filename, n)}: dpjit: `break` out of a prange loop is not "
                    f"supported (its iterations run in parallel)"
                )
            if isinstance(n, ast.Return):
                raise UnsupportedPrangeError(
                    f"{_where(filename, n)}: dpjit: `return` inside a prange loop body is not "
                    f"supported (its iterations run in parallel)"
                )
            if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
                word = {ast.Yield: "yield", ast.YieldFrom: "yield from"}.get(type(n), "await")
                raise UnsupportedPrangeError(
                    f"{_where(filename, n)}: dpjit: `{word}` inside a "
                    f"prange loop body is not supported"
                )
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                raise UnsupportedPrangeError(
                    f"{_where(filename, n)}: dpjit: `{type(n).__name__.lower()}` inside a "
                    f"prange loop body is not supported"
                )
            if isinstance(n, (ast.For, ast.While)):
                visit([n.iter if isinstance(n, ast.For) else n.test], in_loop)
                visit(n.body, True)
                visit(n.orelse, in_loop)
            else:
                visit(list(ast.iter_child_nodes(n)), in_loop)

    visit(body, False)


# Reduction kinds, keyed by the GroupOp name that combines them across work-items.
_AUG_KINDS = {
    ast.Add: "ADD",
    ast.Sub: "ADD",  # s -= x sums the -x: the partials are added to s
    ast.Mult: "MUL",
    ast.Div: "MUL",  # s /= x multiplies by 1/x: the partial products multiply s
    ast.BitAnd: "AND",
    ast.BitOr: "OR",
    ast.BitXor: "XOR",
}
_COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)
_SUPPORTED = "`+=`, `-=`, `*=`, `/=`, `&=`, `|=`, `^=`, `s = min(s, x)` and `s = max(s, x)`"


class _Reduction:
    """One reduction statement of a prange body: `name op= value`, `name = name op value` or
    `name = min/max(name, value)`; kind is the GroupOp name combining the partial results."""

    def __init__(self, name, kind, op, value, selfref):
        self.name = name
        self.kind = kind
        self.op = op  # an ast operator, or "min"/"max"
        self.value = value
        self.selfref = selfref  # the Name node(s) of `name` the statement itself uses


def _mentions(node, name) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _as_reduction(n, host_locals, resolver) -> _Reduction | None:
    """The reduction n states, or None when n is not of a reduction's form."""
    if isinstance(n, ast.AugAssign):
        if not isinstance(n.target, ast.Name) or n.target.id not in host_locals:
            return None
        kind = _AUG_KINDS.get(type(n.op))
        return _Reduction(n.target.id, kind, n.op, n.value, [n.target])
    if not (
        isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and n.targets[0].id in host_locals
    ):
        return None
    name, v = n.targets[0].id, n.value
    if isinstance(v, ast.BinOp) and type(v.op) in _AUG_KINDS:
        for mine, other in ((v.left, v.right), (v.right, v.left)):
            if mine is v.right and not isinstance(v.op, _COMMUTATIVE):
                break
            if isinstance(mine, ast.Name) and mine.id == name and not _mentions(other, name):
                kind = _AUG_KINDS[type(v.op)]
                return _Reduction(name, kind, v.op, other, [n.targets[0], mine])
        return None
    if (
        isinstance(v, ast.Call)
        and isinstance(v.func, ast.Name)
        and v.func.id in ("min", "max")
        and len(v.args) == 2
        and not v.keywords
        and resolver.is_builtin(v.func.id)
    ):
        for mine, other in ((v.args[0], v.args[1]), (v.args[1], v.args[0])):
            if isinstance(mine, ast.Name) and mine.id == name and not _mentions(other, name):
                red = _Reduction(name, v.func.id.upper(), v.func.id, other, [n.targets[0], mine])
                red.selfref.append(v.func)
                return red
    return None


def _first_assignment(body, name):
    """The body's top-level `name = ...` that runs, in every iteration, before anything else
    mentions `name` (no `continue` of the prange loop before it), or None."""
    for s in body:
        if (
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and s.targets[0].id == name
            and not _mentions(s.value, name)
        ):
            return s
        if _mentions(s, name) or any(isinstance(n, ast.Continue) for n in _outer_jumps([s])):
            return None
    return None


def _check_privates(loop, other, host_locals, host_loads, fixed, filename):
    """Variables the body assigns that the host also uses: private to each iteration when
    the host does not read them, else they leave the last iteration's value (loop.lasts)."""
    stores = [n for n in other if not isinstance(n.ctx, ast.Load)]
    loads = {n.id for n in other if isinstance(n.ctx, ast.Load)}
    for n in stores:
        if n.id in fixed:
            raise UnsupportedPrangeError(
                f"{_where(filename, n)}: dpjit: the prange loop body assigns `{n.id}`, a "
                f"global, nonlocal or closure variable of the function; use an array element "
                f"or a reduction"
            )
    for name in sorted(_bindings(loop.body) & (host_locals | host_loads)):
        raise UnsupportedPrangeError(
            f"{_where(filename, loop.loops[0])}: dpjit: the prange loop body binds `{name}` "
            f"(def, class, import or except ... as), which the function also uses outside it"
        )
    lasts = []
    for name in sorted({n.id for n in stores} & (host_locals | host_loads)):
        first_store = min((n for n in stores if n.id == name), key=lambda n: n.lineno)
        where = _where(filename, first_store)
        first = _first_assignment(loop.body, name)
        if name not in host_loads:
            if name in loads and first is None:
                raise UnsupportedPrangeError(
                    f"{where}: dpjit: the prange loop body may read `{name}` before assigning "
                    f"it, so it would see the value from before the loop or from another "
                    f"iteration; assign it first (`{name} = ...` at the top of the body) to "
                    f"make it private"
                )
            continue  # private to each iteration
        if first is None:
            raise UnsupportedPrangeError(
                f"{where}: dpjit: `{name}` is read after the prange loop, so it takes the last "
                f"iteration's value; that needs an unconditional `{name} = ...` at the top "
                f"of the body, before any `continue` (here it is assigned conditionally or "
                f"read first)"
            )
        bad = [n for n in stores if n.id == name and not _plain_store(loop.body, n)]
        if bad:
            raise UnsupportedPrangeError(
                f"{_where(filename, bad[0])}: dpjit: `{name}` leaves a last value; the body "
                f"may assign it only with `{name} = ...` or `{name} op= ...`"
            )
        if name not in host_locals:
            raise UnsupportedPrangeError(
                f"{where}: dpjit: `{name}` is read after the prange loop but has no value "
                f"before it; give it one (its type is that value's)"
            )
        lasts.append(name)
    loop.lasts = lasts


def _plain_store(body, target) -> bool:
    for n in _walk_scope(body):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and n.targets[0] is target:
            return True
        if isinstance(n, ast.AugAssign) and n.target is target:
            return True
    return False


def _analyse(
    loop: _Loop,
    host_locals: set[str],
    host_loads: set[str],
    fixed: set[str],
    filename: str,
    resolver,
) -> None:
    """Free variables (host locals the body reads) and reductions; rejects the rest."""
    reds: dict[str, list[tuple[ast.stmt, _Reduction]]] = {}
    for n in _walk_scope(loop.body):
        red = _as_reduction(n, host_locals, resolver)
        # a variable each iteration assigns first is the iteration's own, not a reduction
        if red is not None and _first_assignment(loop.body, red.name) is None:
            reds.setdefault(red.name, []).append((n, red))
    own = {id(x) for rs in reds.values() for _, r in rs for x in r.selfref}
    other = [n for n in _walk_scope(loop.body) if isinstance(n, ast.Name) and id(n) not in own]
    stores = {n.id for n in other if not isinstance(n.ctx, ast.Load)}
    stores |= _bindings(loop.body)
    loads = {n.id for n in other if isinstance(n.ctx, ast.Load)}
    for name, stmts in reds.items():
        stmts.sort(key=lambda sr: (sr[0].lineno, sr[0].col_offset))
        for s, r in stmts:
            if r.kind is None:
                raise UnsupportedPrangeError(
                    f"{_where(filename, s)}: dpjit: the reduction `{name} "
                    f"{_OPS.get(type(s.op), '?')}= ...` is not supported; prange reductions are "
                    f"{_SUPPORTED}"
                )
        kinds = {r.kind for _, r in stmts}
        if len(kinds) > 1:
            raise UnsupportedPrangeError(
                f"{_where(filename, stmts[1][0])}: dpjit: `{name}` is reduced with different "
                f"operators in one prange loop ({', '.join(sorted(kinds))}); a reduction "
                f"variable takes one operator (`+=` and `-=` count as one, as do `*=` and `/=`)"
            )
        if name in stores or name in loads:
            first = next(n for n in other if n.id == name)
            raise UnsupportedPrangeError(
                f"{_where(filename, first)}: dpjit: `{name}` is a reduction variable of the "
                f"prange loop (line {stmts[0][0].lineno}) and may not be otherwise read or "
                f"assigned in its body"
            )
    _check_privates(loop, other, host_locals, host_loads, fixed, filename)
    targets = set(loop.targets)
    loop.free = sorted((loads & host_locals) - stores - targets)
    loop.reductions = sorted(reds)
    loop.red_kinds = {name: stmts[0][1].kind for name, stmts in reds.items()}
    loop.red_divides = {
        name for name, stmts in reds.items() if any(isinstance(r.op, ast.Div) for _, r in stmts)
    }
    loop.red_stmts = {id(s): r for rs in reds.values() for s, r in rs}


_OPS = {
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
}


# -- building the kernel ---------------------------------------------------------------------


def _name(id_, ctx=None):
    return ast.Name(id=id_, ctx=ctx or ast.Load())


class _BodyRewriter(ast.NodeTransformer):
    """Inside the kernel: a reduction statement updates the work-item's private accumulator
    (kept in the reduction variable's own name, in the accumulator's dtype); inner pranges
    become range."""

    def __init__(self, red_stmts, resolver, lasts=()):
        self.red_stmts = red_stmts
        self.resolver = resolver
        self.lasts = set(lasts)

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


def _kernel_body(loop: _Loop, resolver: _Resolver) -> list[ast.stmt]:
    """The prange body as kernel code (reductions update private accumulators, inner pranges
    become range); each kernel shape takes a deep copy of it."""
    rewriter = _BodyRewriter(loop.red_stmts, resolver, loop.lasts)
    return [rewriter.visit(s) for s in loop.body]


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

    def visit_For(self, node):
        node = self.generic_visit(node)
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            it.args = [self._bound(a) for a in it.args]
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


def _trip_consts(trips, args) -> tuple:
    """((name, value), ...) of the trip-count variables (trips: (index in args, name)) whose
    values are small enough to compile in."""
    return tuple(
        (n, args[k]) for k, n in trips if type(args[k]) is int and 0 <= args[k] <= _TRIP_CONST_MAX
    )


def _free_names(loop: _Loop, dims: bool) -> list[str]:
    return [*loop.free, *(n for n, _, _ in loop.dims)] if dims else loop.free


def _kernel_def(
    loop: _Loop, kname: str, shape: str, form: str, fixed=(), dims=False
) -> ast.FunctionDef:
    build = {"range": _range_stmts, "tree": _tree_stmts, "blocks": _block_stmts}[shape]
    first = loop.loops[0]
    args = ast.arguments(
        posonlyargs=[],
        args=[ast.arg(arg=p) for p in _kernel_params(loop, shape, fixed, dims)],
        kwonlyargs=[],
        kw_defaults=[],
        defaults=[],
    )
    stmts = build(loop, copy.deepcopy(loop.kbody_dims if dims else loop.kbody), form)
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


def _outer_jumps(body):
    """Statements of the body not inside a nested loop or scope."""
    todo = list(body)
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (*_SCOPES, ast.For, ast.While)):
                todo.append(c)
            elif isinstance(c, (ast.For, ast.While)):
                todo.extend(c.orelse)


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


# -- launching -------------------------------------------------------------------------------


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


class _Kernels:
    """The kernels of one prange loop, one per (shape, bounds form) launched so far, each
    generated on the first launch that needs it."""

    def __init__(self, loop: _Loop, kname: str, qualname: str, fn, cells: dict, filename: str):
        self.loop, self.kname, self.qualname = loop, kname, qualname
        self.fn, self.cells, self.filename = fn, cells, filename
        self.made: dict[tuple[str, bool], object] = {}

    def get(self, shape: str, form: str, consts: tuple = (), dims: bool = False):
        """consts: ((name, value), ...) of free variables the kernel takes as constants;
        dims: whether it takes loop.dims (_ShapeBounds)."""
        kern = self.made.get((shape, form, consts, dims))
        if kern is None:
            fixed = [n for n, _ in consts]
            defn = _kernel_def(self.loop, self.kname, shape, form, fixed, dims)
            cells = dict(self.cells)
            cells.update((n, types.CellType(v)) for n, v in consts)
            kcode = _factory(defn, list(cells), self.filename)
            kfunc = _make_function(kcode, self.fn, cells)
            kfunc.__qualname__ = self.qualname
            kern = self.made[(shape, form, consts, dims)] = _kernel_decorator(kfunc)
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
    trip_names = loop.trip_vars | {n for n, _, _ in loop.dims}
    trips = [
        [(k, n) for k, n in enumerate(_free_names(loop, dims)) if n in trip_names]
        for dims in (False, True)
    ]

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
        consts = ()
        if trips[dims]:
            consts = _trip_consts(trips[dims], args)
            if consts:
                fixed = {n for n, _ in consts}
                names = _free_names(loop, dims)
                args = tuple(a for a, n in zip(args, names, strict=True) if n not in fixed)
        variant = (consts, dims)
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


# -- NumPy allocation following the argument's type ----------------------------------------


def _np_like(np_fn, kapi_fn):
    """np.empty_like & co. in host code: a kapi array for a kapi array (on its device, as
    numba-dpex's dpjit gives a dpnp array), NumPy's result for anything else."""

    def like(a, *args, **kwargs):
        return (kapi_fn if isinstance(a, Array) else np_fn)(a, *args, **kwargs)

    like.__name__ = like.__qualname__ = np_fn.__name__
    like.np_function = np_fn
    return like


NP_LIKE = {
    id(getattr(np, n)): _np_like(getattr(np, n), getattr(_array, n))
    for n in ("empty_like", "zeros_like", "ones_like", "full_like")
}


class _RouteNumpy(ast.NodeTransformer):
    """Host code's references to NP_LIKE's NumPy functions become their kapi-aware versions
    (cells named __kapi_np_<name>)."""

    def __init__(self, resolver, cells):
        self.resolver = resolver
        self.cells = cells

    def _route(self, node):
        if not isinstance(node.ctx, ast.Load):
            return node
        try:
            obj, _ = self.resolver._value(node)
        except (LookupError, AttributeError, ValueError):
            return None
        like = NP_LIKE.get(id(obj))
        if like is None:
            return None
        name = f"__kapi_np_{like.__name__}"
        self.cells[name] = types.CellType(like)
        return ast.copy_location(_name(name), node)

    def visit_Name(self, node):
        return self._route(node) or node

    def visit_Attribute(self, node):
        return self._route(node) or self.generic_visit(node)

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


def _route_numpy(fdef, resolver, cells) -> None:
    fdef.body = [_RouteNumpy(resolver, cells).visit(s) for s in fdef.body]


# -- asynchronous launches ---------------------------------------------------------------------
# A loop whose results the host does not read (no reduction, no last value) is submitted
# without a wait when the host code after it, up to the next prange loop of the same block,
# cannot see the arrays' contents: then that next launch is queued behind it and the host waits
# once, at the first launch that is not followed so (or that has results). What the host may
# run in between: assignments of sizes and metadata (`n = a.shape[0] // 2`, `dt = a.dtype`),
# of plain names, and of new arrays (`kapi.empty_like(a)`, `np.zeros((n, 3))`); the next
# loop's bounds must be such sizes too. Anything else (a call, reading an element, an array
# expression, the end of the block, a return) waits first.

_METADATA = {"shape", "dtype", "size", "ndim", "itemsize", "strides", "device", "sycl_queue"}
_SIZE_CALLS = {"len", "min", "max", "int", "abs"}
_ALLOCS = {"empty", "zeros", "ones", "full"}  # and their _like forms
_CONSTANTS = (int, float, complex, np.generic, np.dtype, type)


class _AsyncRules:
    """Which host statements and loop bounds read no array contents (see above)."""

    def __init__(self, resolver: _Resolver, scalars: set[str]):
        self.resolver = resolver
        self.scalars = scalars  # names the host only ever assigns sizes to

    def _resolves(self, node, test) -> bool:
        try:
            obj, _ = self.resolver._value(node)
        except (LookupError, AttributeError, ValueError):
            return False
        return test(obj)

    def _is_module_value(self, node) -> bool:
        """`np.float64`, `math.pi`: a number or type that is an attribute of a module the
        function sees (not an array a module holds)."""
        return (
            isinstance(node, ast.Attribute)
            and self._resolves(node.value, lambda o: isinstance(o, types.ModuleType))
            and self._resolves(node, lambda o: isinstance(o, _CONSTANTS))
        )

    def size(self, e, names_ok: bool = False) -> bool:
        """An integer/float expression of constants, sizes and metadata (Names: only those
        known to hold sizes, or any when names_ok: loop bounds, which range() reads as ints)."""
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.Name):
            return names_ok or e.id in self.scalars
        if isinstance(e, ast.Attribute):
            return self.metadata(e) or self._is_module_value(e)
        if isinstance(e, ast.Subscript):
            return self.metadata(e.value) and self.size(e.slice, names_ok)
        if isinstance(e, ast.BinOp):
            return self.size(e.left, names_ok) and self.size(e.right, names_ok)
        if isinstance(e, ast.UnaryOp):
            return self.size(e.operand, names_ok)
        if isinstance(e, ast.Tuple):
            return all(self.size(x, names_ok) for x in e.elts)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and not e.keywords:
            return (
                e.func.id in _SIZE_CALLS
                and self.resolver.is_builtin(e.func.id)
                and (
                    all(self.size(a, names_ok) for a in e.args)
                    # len(x) reads x's length only
                    or (e.func.id == "len" and all(isinstance(a, ast.Name) for a in e.args))
                )
            )
        return False

    def metadata(self, e) -> bool:
        return isinstance(e, ast.Attribute) and e.attr in _METADATA and _is_name_chain(e.value)

    def _allocation(self, e) -> bool:
        if not isinstance(e, ast.Call) or any(isinstance(a, ast.Starred) for a in e.args):
            return False

        def is_alloc(obj):
            mod = getattr(obj, "__module__", "") or ""
            name = getattr(obj, "__name__", "")
            base = name[: -len("_like")] if name.endswith("_like") else name
            return base in _ALLOCS and (mod.startswith("kapi") or mod.startswith("numpy"))

        if not self._resolves(e.func, is_alloc):
            return False
        like = e.func.attr if isinstance(e.func, ast.Attribute) else e.func.id
        args = list(e.args)
        if like.endswith("_like"):
            if not args or not isinstance(args[0], ast.Name):
                return False
        elif args and not self.size(args[0], names_ok=True):  # a shape, read as integers
            return False
        kws = [k.value for k in e.keywords if k.arg != "shape"]
        shapes = [k.value for k in e.keywords if k.arg == "shape"]
        return all(self.size(v) for v in args[1:] + kws) and all(
            self.size(v, names_ok=True) for v in shapes
        )

    def statement(self, s) -> bool:
        if isinstance(s, ast.Pass):
            return True
        if not isinstance(s, ast.Assign):
            return False
        targets_ok = all(
            isinstance(t, ast.Name)
            or (isinstance(t, ast.Tuple) and all(isinstance(x, ast.Name) for x in t.elts))
            for t in s.targets
        )
        v = s.value
        return targets_ok and (
            isinstance(v, ast.Name) or self.size(v) or self.metadata(v) or self._allocation(v)
        )

    def bounds(self, loop: _Loop) -> bool:
        return all(self.size(a, names_ok=True) for lp in loop.loops for a in lp.iter.args)


def _is_name_chain(e) -> bool:
    """`x`, `np.float64`, `a.dtype`: names and attributes of names (no calls, no subscripts)."""
    while isinstance(e, ast.Attribute):
        e = e.value
    return isinstance(e, ast.Name)


def _scalar_names(host_nodes, params: set[str], rules: _AsyncRules) -> set[str]:
    """Names whose every host assignment is a size expression (a fixpoint, so `m = n // 2`
    counts when `n = a.shape[0]` does); parameters may hold anything, so are not."""
    stores: dict[str, list] = {}
    simple = set()  # the Name targets of `name = value` statements
    for n in host_nodes:
        if isinstance(n, ast.Assign) and all(isinstance(t, ast.Name) for t in n.targets):
            for t in n.targets:
                stores.setdefault(t.id, []).append(n.value)
                simple.add(id(t))
    bad = set(params)  # and names bound otherwise: tuple, for, with targets, `+=`, ...
    bad |= {
        n.id
        for n in host_nodes
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and id(n) not in simple
    }
    cand = set(stores) - bad
    while True:
        rules.scalars = cand
        keep = {name for name in cand if all(rules.size(v) for v in stores[name])}
        if keep == cand:
            return cand
        cand = keep


def _statement_lists(nodes):
    """Every statement list of the function's body (not entering nested scopes)."""
    todo = [list(nodes)]
    while todo:
        block = todo.pop()
        yield block
        for s in block:
            if isinstance(s, _SCOPES):
                continue
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    todo.append(sub)
            for h in getattr(s, "handlers", ()):
                todo.append(h.body)
            for c in getattr(s, "cases", ()):
                todo.append(c.body)


def _async_loops(body, nests, rules: _AsyncRules) -> set[int]:
    """ids of the prange For nodes launched without a wait (see the rules above)."""
    by_id = {id(node): nest for node, nest in nests}
    out = set()
    for block in _statement_lists(body):
        for i, s in enumerate(block):
            nest = by_id.get(id(s))
            if nest is None or nest.ndrange:
                continue
            for t in block[i + 1 :]:
                nxt = by_id.get(id(t))
                if nxt is not None:
                    if rules.bounds(nxt):
                        out.add(id(s))
                    break
                if not rules.statement(t):
                    break
    return out


class _Stats:
    """Per dpjit function: kernels launched and host waits for them (tests read these)."""

    def __init__(self):
        self.launches = 0
        self.waits = 0


class _Calls(threading.local):
    """Per dpjit function and thread: the launches not waited for yet of each running call
    (a stack: a call may run inside another, by recursion). The Python-side wrapper around
    the host function opens a call's list and settles it however the call ends (`running`);
    the launchers take the innermost one. A function without asynchronous loops keeps none:
    its launches wait at once."""

    def __init__(self, stats: _Stats, asynchronous: bool):
        self.stats = stats
        self.asynchronous = asynchronous
        self.stack: list[list] = []

    def pending(self):
        return self.stack[-1] if self.asynchronous and self.stack else None

    @contextlib.contextmanager
    def running(self):
        if not self.asynchronous:
            yield
            return
        pending: list = []
        self.stack.append(pending)
        try:
            yield
        finally:
            self.stack.pop()
            _settle(pending, self.stats)


def _queue_key(args):
    """The queue a launch with these arguments runs on, as call_kernel picks it."""
    for a in args:
        if isinstance(a, Array):
            q = a.sycl_queue
            return getattr(q, "_native", q)
    if any(isinstance(a, np.ndarray) for a in args):
        return "cpu"
    return "default"


def _settle(pending: list, stats: _Stats, event=None) -> None:
    """Waits for every pending launch (and `event`): one host wait. Waiting on each event
    raises what its kernel raised (a failed assert)."""
    events = [e for _, e in pending]
    if event is not None:
        events.append(event)
    pending.clear()
    if events:
        stats.waits += 1
        wait_all(events)


def _submit(kern, rng, args, pending, wait: bool, stats: _Stats) -> None:
    """Launches kern; without `wait` (pending is a list) queued behind the pending launches."""
    stats.launches += 1
    if pending is None:
        stats.waits += 1
        call_kernel(kern, rng, *args)
        return
    key = _queue_key(args)
    if pending and pending[0][0] != key:  # another queue: no order between them
        _settle(pending, stats)
    _, ev = call_kernel_async(kern, rng, (), *args)
    pending.append((key, ev))
    if wait:
        _settle(pending, stats)


# -- the host function -----------------------------------------------------------------------


class _HostRewriter(ast.NodeTransformer):
    def __init__(self, resolver, filename):
        self.resolver = resolver
        self.filename = filename
        self.nests: list[tuple[ast.For, _Loop]] = []

    def visit_For(self, node):
        if self.resolver.is_prange(node):
            nest = _collect_nest(node, self.resolver, self.filename)
            _check_body(nest.body, self.filename)
            self.nests.append((node, nest))
            return node  # replaced in a second pass, after the host-wide analysis
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


def _launch_stmts(k: int, loop: _Loop, node: ast.For) -> list[ast.stmt]:
    bounds = ast.Tuple(
        elts=[ast.Tuple(elts=list(lp.iter.args), ctx=ast.Load()) for lp in loop.loops],
        ctx=ast.Load(),
    )

    def names(ns):
        return ast.Tuple(elts=[_name(n) for n in ns], ctx=ast.Load())

    call = ast.Call(
        func=_name(f"{_LAUNCH}{k}"),
        args=[bounds, names(loop.free), names(loop.reductions), names(loop.lasts)],
        keywords=[],
    )
    out = "__kapi_out"
    stmts = [ast.copy_location(ast.Assign(targets=[_name(out, ast.Store())], value=call), node)]
    after = []
    # the protocol of _launcher's launch; written so that Numba types it too (no None)
    if loop.reductions:
        after.append(f"({', '.join(loop.reductions)},) = {out}[0]\n")
    if loop.lasts:
        after.append(f"if {out}[1]:\n    ({', '.join(loop.lasts)},) = {out}[2]\n")
    for d, t in enumerate(loop.targets):
        if t in loop.last_targets:
            after.append(f"if {out}[3][{d}]:\n    {t} = {out}[4][{d}]\n")
    return stmts + _located("".join(after), node)


class _Replace(ast.NodeTransformer):
    def __init__(self, replacements):
        self.replacements = replacements

    def visit_For(self, node):
        new = self.replacements.get(id(node))
        return new if new is not None else self.generic_visit(node)

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


def _walk_host(nodes, skip):
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if id(n) in skip:
            continue
        yield n
        if not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))


def _transform(fn):
    filename = fn.__code__.co_filename
    if fn.__name__ == "<lambda>":
        return fn, [], [], _Calls(_Stats(), False)  # a lambda holds no loop: nothing to offload
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError) as e:
        raise UnsupportedPrangeError(
            f"{filename}:{fn.__code__.co_firstlineno}: dpjit needs the source of "
            f"{fn.__qualname__} to offload its prange loops, and it is not available ({e})"
        ) from None
    tree = ast.parse(textwrap.dedent(src))
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__code__.co_name:
        raise UnsupportedPrangeError(
            f"{filename}:{fn.__code__.co_firstlineno}: dpjit decorates functions defined "
            f"with `def`, not {fn.__qualname__}"
        )
    fdef.decorator_list = []
    code = fn.__code__
    host_locals = set(code.co_varnames) | set(code.co_cellvars)
    host_locals -= _comprehension_names(fdef.body)
    resolver = _Resolver(fn, host_locals)
    finder = _HostRewriter(resolver, filename)
    for s in fdef.body:
        finder.visit(s)
    nests = finder.nests

    # what host code (everything but the prange bodies and loop variables) assigns and reads
    skip = set()
    for _, nest in nests:
        skip |= {id(s) for s in nest.body} | {id(lp.target) for lp in nest.loops}
    host_stores, host_loads = _names(_walk_host(fdef.body, skip))
    for _, nest in nests:  # the inner loops' bounds are evaluated by the host too
        host_loads |= _stores_loads([lp.iter for lp in nest.loops[1:]])[1]
    nparams = code.co_argcount + code.co_kwonlyargcount
    nparams += bool(code.co_flags & inspect.CO_VARARGS)
    nparams += bool(code.co_flags & inspect.CO_VARKEYWORDS)
    host_assigned = (host_stores | set(code.co_varnames[:nparams])) & host_locals
    # names the body may not assign: the function's nonlocal/global names and closure cells
    fixed = {
        name
        for n in _walk_scope(fdef.body)
        if isinstance(n, (ast.Global, ast.Nonlocal))
        for name in n.names
    }
    fixed |= set(code.co_freevars) | set(code.co_cellvars)
    for _, nest in nests:
        nest.last_targets = [t for t in nest.targets if t in host_loads]
    cells = dict(zip(code.co_freevars, fn.__closure__ or (), strict=True))
    cells[_API] = types.CellType(_kernel_api())
    cells[_GOP] = types.CellType(_kernel_api().GroupOp)
    for _, nest in nests:
        _analyse(nest, host_assigned, host_loads, fixed, filename, resolver)
    rules = _AsyncRules(resolver, set())
    params = set(code.co_varnames[:nparams])
    _scalar_names(list(_walk_host(fdef.body, skip)), params, rules)
    no_wait = _async_loops(fdef.body, nests, rules) if not _is_generator(fn) else set()
    # the call's launches not waited for yet, settled by DpjitFunction however the call ends
    calls = _Calls(_Stats(), bool(no_wait))
    replacements = {}
    kernels = []
    launches = []  # (launch function, loop dimensions): the host function calls them
    for k, (node, nest) in enumerate(nests):
        nest.kbody = _kernel_body(nest, resolver)
        nest.trip_vars = _trip_vars(nest, resolver)
        _shape_bounds(nest, resolver)
        kname, qualname = f"{fn.__name__}__prange{k}", f"{fn.__qualname__}.<prange{k}>"
        kerns = _Kernels(nest, kname, qualname, fn, cells, filename)
        kernels.append(kerns)
        wait = id(node) not in no_wait
        launch = _launcher(kerns, nest, _where(filename, node), calls, wait)
        launches.append((launch, len(nest.loops)))
        cells[f"{_LAUNCH}{k}"] = types.CellType(launch)
        replacements[id(node)] = _launch_stmts(k, nest, node)
    fdef.body = [_Replace(replacements).visit(s) for s in fdef.body]
    flat = []
    for s in fdef.body:
        flat.extend(s if isinstance(s, list) else [s])
    fdef.body = flat
    _route_numpy(fdef, resolver, cells)
    hcode = _factory(fdef, list(cells), filename)
    host = _make_function(hcode, fn, cells, fn.__name__, fn.__defaults__, fn.__kwdefaults__)
    host.__qualname__ = fn.__qualname__
    return host, kernels, launches, calls


def _kernel_api():
    from kapi_lang import kernel_api

    return kernel_api


class HostFallbackWarning(UserWarning):
    """A `@dpjit(fallback=True)` function's host code (the code around its prange loops) could
    not be compiled by Numba for these argument types, so it runs in CPython; its prange loops
    are still offloaded. Turn it into an error with
    `warnings.simplefilter("error", kapi.HostFallbackWarning)`."""

    __module__ = "kapi"


class HostCompileError(KapiError, TypeError):
    """Numba cannot compile a dpjit function's host code (the code around its prange loops)
    for these argument types (numba-dpex raised Numba's TypingError): the message names the
    function's file:line, Numba's reason and the line it stopped at. `@dpjit(fallback=True)`
    runs such host code in CPython instead, with a HostFallbackWarning."""

    __module__ = "kapi"


class DpjitFunction:
    """What @kapi.dpjit returns: calls run the function with its prange loops offloaded and
    the rest compiled by Numba's njit; where Numba cannot compile it, the call raises
    HostCompileError (or, with fallback=True, runs it in CPython with a HostFallbackWarning)."""

    def __init__(self, pyfunc, options, fallback: bool = False):
        if not inspect.isfunction(pyfunc):
            raise ValueError(f"@kapi.dpjit decorates a Python function, not {type(pyfunc)}")
        functools.update_wrapper(self, pyfunc)
        self.py_func = pyfunc
        self.options = dict(options)
        self.fallback = fallback
        self._host = None
        self._jit = None  # the Numba dispatcher of the host function
        self._sig = inspect.signature(pyfunc)
        self._nparams = pyfunc.__code__.co_argcount
        self._python: dict = {}  # argument types Numba refused -> the message saying why
        self._loops: list[_Kernels] = []
        self._calls = _Calls(_Stats(), False)

    @property
    def kernels(self) -> list:
        """The @kapi.kernel dispatchers launched so far, by loop: one per loop and kernel
        shape (prange.md: one work-item per iteration, a work-group tree, or blocks)."""
        return [k for loop in self._loops for k in loop.made.values()]

    @property
    def _stats(self) -> _Stats:
        """Kernels launched and host waits for them over every call (tests read these)."""
        return self._calls.stats

    def _compile(self):
        if self._host is None:
            host, self._loops, launches, self._calls = _transform(self.py_func)
            if _njit_able(self.py_func):
                from . import host as _dpjit_host

                for launch, ndims in launches:
                    _dpjit_host.register_launch(launch, ndims)
                self._jit = _dpjit_host.compile_host(host)
                self._numba_error = _dpjit_host.NumbaError
            self._host = host
        return self._host

    @property
    def host(self):
        """The Numba dispatcher compiling the host code (`.signatures`, `.inspect_types()`),
        or None where the function's form keeps it in CPython (a generator, keyword-only,
        *args or **kwargs parameters)."""
        self._compile()
        return self._jit

    @property
    def python_signatures(self) -> dict:
        """Argument types Numba cannot compile the host code for -> the message saying why
        (with fallback=True, their host code runs in CPython)."""
        return dict(self._python)

    def __call__(self, *args, **kwargs):
        host = self._host if self._host is not None else self._compile()
        if not self._calls.asynchronous:  # every launch waits: no pending ones to settle
            return self._run(host, args, kwargs)
        # the call's pending launches are settled however it ends (_Calls.running)
        with self._calls.running():
            return self._run(host, args, kwargs)

    def _run(self, host, args, kwargs):
        jit = self._jit
        if jit is None:
            return host(*args, **kwargs)
        if kwargs or len(args) != self._nparams:
            bound = self._sig.bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        if self._python and self._key(args) in self._python:
            return self._refused(host, args)
        try:
            return jit(*args)
        except self._numba_error as e:
            key = self._key(args)
            if key in jit.overloads:
                raise  # compiled: an error of the run (an objmode call), not of the compile
            self._python[key] = _refusal_message(self.py_func, key, e)
        return self._refused(host, args)

    def _key(self, args) -> tuple:
        return tuple(self._jit.typeof_pyval(a) for a in args)

    def _refused(self, host, args):
        """A call whose argument types Numba cannot compile the host code for: an error, or
        with fallback=True a run in CPython. Every such call warns (Python's filters show it
        once per call site), so an "error" filter refuses each one."""
        reason = self._python[self._key(args)]
        if not self.fallback:
            raise HostCompileError(
                f"{reason} (`@kapi.dpjit(fallback=True)` runs such host code in CPython)"
            )
        warnings.warn(
            f"{reason}; it runs in CPython (its prange loops are still offloaded)",
            HostFallbackWarning,
            3,
        )
        return host(*args)

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<kapi dpjit {self.__qualname__}>"


def _is_generator(fn) -> bool:
    flags = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
    return bool(fn.__code__.co_flags & flags)


def _njit_able(fn) -> bool:
    """Whether Numba's dispatcher can take the function's calls: not a generator, and no
    keyword-only, *args or **kwargs parameters (calls are bound to positional arguments)."""
    code = fn.__code__
    if _is_generator(fn):
        return False
    varargs = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
    return not (code.co_kwonlyargcount or code.co_flags & varargs)


def _refusal_message(fn, key, err) -> str:
    """The function's file:line, the argument types, Numba's reason and the line it stopped
    at (kapi's own typing reason where it gave one)."""
    where = f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    # Numba's message: a "Failed in ... pipeline" header, the reason, the source location
    reasons = [ln for ln in lines if not ln.startswith(("Failed in", "During:", "File "))]
    # a reason kapi's own typing gave (a dtype= it cannot read, ...) says more than Numba's
    # "No implementation of function ..." around it
    ours = [ln[ln.index("dpjit host code:") :] for ln in reasons if "dpjit host code:" in ln]
    first = (ours or reasons or [type(err).__name__])[0]
    at = [ln for ln in lines if ln.startswith("File ")]
    return (
        f"{where}: dpjit: Numba cannot compile the host code of {fn.__qualname__} for "
        f"arguments ({', '.join(map(str, key))}): {first}" + (f" ({at[-1]})" if at else "")
    )


def dpjit(*args, fallback: bool = False, **options):
    """numba-dpex's @dpjit: the function's prange loops are compiled as kernels and launched on
    the device of their arrays (compute follows data); the rest is compiled by Numba's njit.
    Where Numba cannot compile it, a call raises HostCompileError; with `fallback=True` (kapi's
    own option) it runs in CPython instead, with a HostFallbackWarning.

    Forms: `@dpjit`, `@dpjit(**options)`; signatures and numba.jit options are accepted and
    ignored with a warning (forceobj and pipeline_class are dropped, as numba-dpex did).
    """
    if not isinstance(fallback, bool):
        raise TypeError(f"dpjit's fallback= takes True or False, not {fallback!r}")
    for key, value in options.items():
        if _IMPLIED.get(key) is value:
            continue
        warnings.warn(
            f"dpjit option {key}={value!r} is ignored by kapi (prange loops are compiled as "
            f"kernels, the rest with numba.njit's defaults)",
            UserWarning,
            stacklevel=2,
        )
    if len(args) == 1 and inspect.isfunction(args[0]):
        return DpjitFunction(args[0], options, fallback)
    if args:
        warnings.warn(
            "dpjit signatures are ignored by kapi: prange kernels compile per argument types",
            UserWarning,
            stacklevel=2,
        )

    def wrap(pyfunc):
        return DpjitFunction(pyfunc, options, fallback)

    return wrap
