"""dpjit's analysis of a function's prange loops: which loops are pranges (_Resolver), what
the host code and the loop bodies bind and read, and each loop nest (_Loop) with its free,
reduction, private and last-value variables; what dpjit refuses raises UnsupportedPrangeError.
The first step of dpjit.py's transform: kernels.py builds each nest's kernels from it."""

from __future__ import annotations

import ast
import builtins
import sys

from .._errors import KapiError

_MAX_DIMS = 3


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
        self.shape_vars: set[str] = set()  # free variables private arrays' shapes read
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
        if _stores_without(inner.body, inner.target.id):
            break  # iterations would write one element side by side: a sequential loop
        loops.append(inner)
    return _Loop(loops, loops[-1].body)


def _stores_without(body, var: str) -> bool:
    """Whether the body stores to (or updates) an array element or slice whose index does not
    read var: the iterations of an inner prange over var would then write the same elements,
    so it stays a loop inside the kernel (as Numba runs inner pranges). A name the body
    assigns from var (`k = i * m + j`) counts as var."""
    nodes = list(_walk_scope(body))
    dep = {var}
    while True:  # the names computed from var, to a fixed point
        more = {
            t.id
            for n in nodes
            if isinstance(n, ast.Assign | ast.AugAssign)
            and {x.id for x in ast.walk(n.value) if isinstance(x, ast.Name)} & dep
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Name)
        }
        if more <= dep:
            break
        dep |= more
    for n in nodes:
        if not isinstance(n, ast.Assign | ast.AugAssign):
            continue
        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Subscript) and not isinstance(sub.ctx, ast.Load):
                    reads = {x.id for x in ast.walk(sub.slice) if isinstance(x, ast.Name)}
                    if not reads & dep:
                        return True
    return False


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
