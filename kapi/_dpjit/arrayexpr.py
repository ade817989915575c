"""Array statements of a prange body written as element loops, before the body becomes a
kernel (kernels work on array elements, not on slices): what Numba's parfor pass does for the
same statements on the CPU.

Two forms are rewritten, both spelled with explicit slices `a:b` (`:`, `a:`, `:b`; no step,
no negative bounds) of named arrays:

- a dot product of two slices with one sliced axis each, `np.dot(x[..], y[..])` or
  `x[..] @ y[..]`, becomes an accumulation loop before the statement (its dtype is the first
  operand's);
- a whole reduction of an element-wise expression of slices with the same number of sliced
  axes, `np.sum(e)`, `np.prod`, `np.max` / `np.amax`, `np.min` / `np.amin`, `np.mean` or the
  method form `e.sum()`, ..., becomes an accumulation loop nest before the statement (a sum or
  product starts at zero or one of the first slice's dtype; max and min start at the first
  element, so the slice must not be empty);
- an assignment to a slice, `t[..] = expr` or `t[..] op= expr`, where every slice expr reads
  has as many sliced axes as the target, becomes nested sequential loops assigning element by
  element (slices of other arrays are walked in step with the target's; element reads of the
  target array itself are taken once, before the loop, as NumPy evaluates the right side
  before assigning).

An index that is itself a one-axis slice of an index array (`x[cols[a:b]]`, a gather) counts
as a sliced axis; a name the body binds once to a slice (`cols = col[row[i]:row[i + 1]]`, with
bounds the body does not assign, read nowhere else in the function) is replaced by the slice
where it is read, as the view it is.

In an assignment to a one-axis slice, `u[..] @ m[..]` with a one-axis and a two-axis slice
(or the matrix first) becomes a product per element; a chained assignment to several slices
assigns the value to each in turn.

Anything else is left as written: the kernel compiler then names the construct it refuses.
Slice bounds are taken as given (NumPy clips a bound past the end; here it must be in range).
"""

from __future__ import annotations

import ast
import copy
import itertools

_PREFIX = "_kapi_ax"


def _negative(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return True
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float) and node.value < 0


def _axes(sub):
    """For `name[idx]`: the index items as ("i", expr) or ("s", lower, upper), or None when
    the subscript is not of that simple form."""
    if not isinstance(sub, ast.Subscript) or not isinstance(sub.value, ast.Name):
        return None
    idx = sub.slice
    items = idx.elts if isinstance(idx, ast.Tuple) else [idx]
    out = []
    for it in items:
        if isinstance(it, ast.Slice):
            if it.step is not None or _negative(it.lower) or _negative(it.upper):
                return None
            out.append(("s", it.lower, it.upper))
        elif isinstance(it, ast.Starred) or (isinstance(it, ast.Constant) and it.value is Ellipsis):
            return None
        elif (inner := _axes(it)) is not None and _nslices(inner) > 0:
            if _nslices(inner) != 1:
                return None
            out.append(("g", it, inner))  # x[idx[a:b]]: a gather through a slice
        else:
            out.append(("i", it))
    return out


def _nslices(axes) -> int:
    return sum(a[0] != "i" for a in axes)


def _extents(sub, axes) -> list[ast.expr]:
    """The length of each sliced axis: (upper or name.shape[k]) - (lower or 0)."""
    out = []
    for k, ax in enumerate(axes):
        if ax[0] == "g":
            out.extend(_extents(ax[1], ax[2]))
            continue
        if ax[0] != "s":
            continue
        _, lo, hi = ax
        if hi is None:
            hi = ast.Subscript(
                value=ast.Attribute(
                    value=ast.Name(sub.value.id, ast.Load()), attr="shape", ctx=ast.Load()
                ),
                slice=ast.Constant(k),
                ctx=ast.Load(),
            )
        else:
            hi = copy.deepcopy(hi)
        out.append(hi if lo is None else ast.BinOp(hi, ast.Sub(), copy.deepcopy(lo)))
    return out


def _element(sub, axes, ts, ctx) -> ast.Subscript:
    """name[...] with its k-th sliced axis indexed by lower + ts[k]."""
    idx, k = [], 0
    for ax in axes:
        if ax[0] == "i":
            idx.append(copy.deepcopy(ax[1]))
            continue
        if ax[0] == "g":
            idx.append(_element(ax[1], ax[2], [ts[k]], ast.Load()))
            k += 1
            continue
        t = ast.Name(ts[k], ast.Load())
        k += 1
        idx.append(t if ax[1] is None else ast.BinOp(copy.deepcopy(ax[1]), ast.Add(), t))
    index = idx[0] if len(idx) == 1 else ast.Tuple(idx, ast.Load())
    return ast.Subscript(value=ast.Name(sub.value.id, ast.Load()), slice=index, ctx=ctx)


def _zero(sub) -> ast.expr:
    """`name.dtype.type(0)`: an accumulator's start, in the array's dtype."""
    dtype = ast.Attribute(value=ast.Name(sub.value.id, ast.Load()), attr="dtype", ctx=ast.Load())
    return ast.Call(
        func=ast.Attribute(value=dtype, attr="type", ctx=ast.Load()),
        args=[ast.Constant(0)],
        keywords=[],
    )


def _walk_key(axes):
    """Which axes are sliced and from where: two slices of one array with the same key visit
    the same elements in step, or (other indices on the unsliced axes) disjoint ones."""
    return tuple(
        (k, ax[0], ast.dump(ax[1]) if ax[1] is not None else None)
        for k, ax in enumerate(axes)
        if ax[0] != "i"
    )


# the whole reductions written as loops: name -> how the accumulator goes
_REDUCTIONS = {
    "sum": "sum",
    "prod": "prod",
    "max": "max",
    "amax": "max",
    "min": "min",
    "amin": "min",
    "mean": "mean",
}


# calls whose value may be an array where no slice shows it (an axis reduction, a reshape)
_ARRAY_VALUED = frozenset({*_REDUCTIONS, "reshape", "copy", "dot"})


def _sliced_reads(expr) -> tuple[list, int]:
    """The sliced subscripts an element-wise expression reads and their common number of
    sliced axes; ([], 0) when it reads none, has subscripts of different numbers of sliced
    axes (a broadcast) or holds what is not element-wise (a lambda, a starred value, a nested
    dot product or reduction)."""
    reads, n = [], None
    for node in ast.walk(expr):
        if isinstance(node, ast.Subscript):
            axes = _axes(node)
            if axes is None or _nslices(axes) == 0:
                continue
            if n is not None and _nslices(axes) != n:
                return [], 0
            n = _nslices(axes)
            reads.append(node)
        elif isinstance(node, ast.Starred | ast.Lambda | ast.NamedExpr):
            return [], 0
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return [], 0
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _REDUCTIONS or node.func.attr in ("dot", "copy", "reshape"):
                return [], 0
    # a slice inside another sliced subscript's index is a gather (_axes's "g"): counted once
    inner = {id(x) for r in reads for x in ast.walk(r.slice)}
    reads = [r for r in reads if id(r) not in inner]
    return reads, n or 0


def _elementwise(expr, read_ids, ts):
    """A copy of expr with each read of read_ids replaced by its element at the indices ts."""

    class T(ast.NodeTransformer):
        def visit_Subscript(self, sub):
            if id(sub) in read_ids:
                return _element(sub, _axes(sub), ts, ast.Load())
            return self.generic_visit(sub)

    return T().visit(expr)  # in place: the reduction call holding expr is replaced


def _free_operands(value, known) -> bool:
    """Whether value has an operand that is a bare name of the function's (not one the body
    binds or loops over): an array or a scalar, which only the values' ndims tell."""
    skip = set()
    for node in ast.walk(value):
        if isinstance(node, ast.Subscript):
            skip.update(id(x) for x in ast.walk(node))
        elif isinstance(node, ast.Attribute):
            skip.add(id(node.value))
        elif isinstance(node, ast.Call):
            skip.add(id(node.func))
    return any(
        isinstance(node, ast.Name) and id(node) not in skip and node.id not in known
        for node in ast.walk(value)
    )


def _loop(var: str, extent: ast.expr, body: list[ast.stmt]) -> ast.For:
    call = ast.Call(func=ast.Name("range", ast.Load()), args=[extent], keywords=[])
    return ast.For(target=ast.Name(var, ast.Store()), iter=call, body=body, orelse=[])


class _Rewriter:
    def __init__(self, known=frozenset()):
        self.counter = itertools.count()
        self.known = known  # names the body binds or loops over: not free arrays

    def name(self, kind: str) -> str:
        return f"{_PREFIX}_{kind}{next(self.counter)}"

    # -- dot products ---------------------------------------------------------------------

    def _dot_operands(self, node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            ops = [node.left, node.right]
        elif (
            isinstance(node, ast.Call)
            and len(node.args) == 2
            and not node.keywords
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "dot")
                or (isinstance(node.func, ast.Name) and node.func.id == "dot")
            )
        ):
            ops = list(node.args)
        else:
            return None
        axes = [_axes(o) for o in ops]
        if any(a is None or _nslices(a) != 1 for a in axes):
            return None
        return ops, axes

    # -- whole reductions of slice expressions --------------------------------------------

    def _reduction_operand(self, node):
        """(kind, operand) for `np.sum(e)` / `e.sum()` and the other _REDUCTIONS (the function
        form with one argument, the method form with none; no axis, no keywords), else None."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            return None
        kind = _REDUCTIONS.get(node.func.attr)
        if kind is None or node.keywords:
            return None
        if len(node.args) == 1 and isinstance(node.func.value, ast.Name):
            return kind, node.args[0]  # np.max(e): any module name (numpy, dpnp, kapi)
        if not node.args:
            return kind, node.func.value  # e.max()
        return None

    def reduction(self, node, pre: list[ast.stmt]):
        """A whole reduction of an element-wise expression of slices with the same number of
        sliced axes (walked in step with the first's) -> its accumulator's name, the loops
        computing it appended to pre; None when node is not one."""
        found = self._reduction_operand(node)
        if found is None:
            return None
        kind, expr = found
        reads, n = _sliced_reads(expr)
        if not reads:
            return None
        ts = [self.name("t") for _ in range(n)]
        elem = _elementwise(expr, {id(r) for r in reads}, ts)
        acc = self.name("red")
        accn = ast.Name(acc, ast.Load())
        if kind in ("max", "min"):
            # the first element starts the accumulator (NumPy refuses an empty one)
            pre.extend(
                ast.Assign(targets=[ast.Name(t, ast.Store())], value=ast.Constant(0)) for t in ts
            )
            pre.append(ast.Assign(targets=[ast.Name(acc, ast.Store())], value=copy.deepcopy(elem)))
            step = ast.Call(func=ast.Name(kind, ast.Load()), args=[accn, elem], keywords=[])
            body = [ast.Assign(targets=[ast.Name(acc, ast.Store())], value=step)]
        else:
            start = _zero(reads[0])
            if kind == "prod":
                start = ast.BinOp(start, ast.Add(), ast.Constant(1))
            pre.append(ast.Assign(targets=[ast.Name(acc, ast.Store())], value=start))
            op = ast.Mult() if kind == "prod" else ast.Add()
            body = [ast.AugAssign(target=ast.Name(acc, ast.Store()), op=op, value=elem)]
        extents = _extents(reads[0], _axes(reads[0]))
        for t, ext in reversed(list(zip(ts, extents, strict=True))):
            body = [_loop(t, ext, body)]
        pre.extend(body)
        if kind == "mean":
            count = extents[0]
            for ext in extents[1:]:
                count = ast.BinOp(count, ast.Mult(), ext)
            return ast.BinOp(ast.Name(acc, ast.Load()), ast.Div(), copy.deepcopy(count))
        return ast.Name(acc, ast.Load())

    def dots(self, expr, pre: list[ast.stmt]):
        """expr with each dot product of slices and each whole reduction of slices replaced by
        an accumulator name; the loops computing them are appended to pre."""
        rewriter = self

        class T(ast.NodeTransformer):
            def generic_visit(self, node):
                node = super().generic_visit(node)
                red = rewriter.reduction(node, pre)
                if red is not None:
                    return red
                found = rewriter._dot_operands(node)
                if found is None:
                    return node
                (u, v), (ua, va) = found
                acc, t = rewriter.name("dot"), rewriter.name("t")
                zero = _zero(u)
                prod = ast.BinOp(
                    _element(u, ua, [t], ast.Load()), ast.Mult(), _element(v, va, [t], ast.Load())
                )
                pre.append(ast.Assign(targets=[ast.Name(acc, ast.Store())], value=zero))
                add = ast.AugAssign(target=ast.Name(acc, ast.Store()), op=ast.Add(), value=prod)
                pre.append(_loop(t, _extents(u, ua)[0], [add]))
                return ast.Name(acc, ast.Load())

        return T().visit(expr)

    # -- assignments to slices ------------------------------------------------------------

    def _matvecs(self, value, n, ts, inner: list[ast.stmt]):
        """In an element loop over n == 1 sliced axes: `u[..] @ X[..]` (a one-axis slice times
        a two-axis one) and `X[..] @ u[..]` replaced by their element at the loop index, each
        an accumulation loop appended to inner (run per element)."""
        if n != 1:
            return value
        rewriter = self

        class T(ast.NodeTransformer):
            def visit_BinOp(self, node):
                node = self.generic_visit(node)
                if not isinstance(node.op, ast.MatMult):
                    return node
                la, ra = _axes(node.left), _axes(node.right)
                if la is None or ra is None:
                    return node
                if (_nslices(la), _nslices(ra)) == (1, 2):
                    u, ua, m, ma, vec_first = node.left, la, node.right, ra, True
                elif (_nslices(la), _nslices(ra)) == (2, 1):
                    u, ua, m, ma, vec_first = node.right, ra, node.left, la, False
                else:
                    return node
                acc, k = rewriter.name("mv"), rewriter.name("t")
                mel = _element(m, ma, [k, ts[0]] if vec_first else [ts[0], k], ast.Load())
                prod = ast.BinOp(_element(u, ua, [k], ast.Load()), ast.Mult(), mel)
                inner.append(ast.Assign(targets=[ast.Name(acc, ast.Store())], value=_zero(u)))
                add = ast.AugAssign(target=ast.Name(acc, ast.Store()), op=ast.Add(), value=prod)
                inner.append(_loop(k, _extents(u, ua)[0], [add]))
                return ast.Name(acc, ast.Load())

        return T().visit(value)

    def slice_assign(self, s, targets, value, pre: list[ast.stmt]):
        """The loops for `t1 = t2 = ... = value` (or `t1 op= value`) with sliced targets of
        the same number of sliced axes (walked in step with the first's), or None."""
        all_axes = [_axes(t) for t in targets]
        if any(a is None or _nslices(a) == 0 for a in all_axes):
            return None
        n = _nslices(all_axes[0])
        if any(_nslices(a) != n for a in all_axes):
            return None
        if len(targets) == 1 and _free_operands(value, self.known):
            return None  # a free name may be an array: arraytyped.py, with the ndims
        keys = {}
        for t, a in zip(targets, all_axes, strict=True):
            keys.setdefault(t.value.id, set()).add(_walk_key(a))
        ts = [self.name("t") for _ in range(n)]
        inner: list[ast.stmt] = []
        value = self._matvecs(value, n, ts, inner)
        reads = []
        for node in ast.walk(value):
            if isinstance(node, ast.Subscript):
                axes = _axes(node)
                if axes is None or _nslices(axes) == 0:
                    continue
                if _nslices(axes) != n:
                    return None  # a broadcast or a reduction: not an element loop
                if node.value.id in keys and keys[node.value.id] != {_walk_key(axes)}:
                    # a slice of a target shifted against it: an element written early
                    # would be read later (NumPy reads the whole right side first)
                    return None
                reads.append(node)
            elif isinstance(node, ast.Starred | ast.Lambda | ast.NamedExpr):
                return None
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in _ARRAY_VALUED:
                    return None  # an array value of its own (arraytyped.py, with the ndims)
        for st in inner:  # the products' own reads of a target
            for node in ast.walk(st):
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                    if node.value.id in keys:
                        return None
        read_ids = {id(r) for r in reads}
        rewriter = self

        class T(ast.NodeTransformer):
            def visit_Subscript(self, node):
                if id(node) in read_ids:
                    return _element(node, _axes(node), ts, ast.Load())
                if isinstance(node.value, ast.Name) and node.value.id in keys:
                    # an element of a target read on the right: its value before the loop
                    tmp = rewriter.name("v")
                    pre.append(ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=node))
                    return ast.Name(tmp, ast.Load())
                return self.generic_visit(node)

        new_value = T().visit(value)
        elems = [_element(t, a, ts, ast.Store()) for t, a in zip(targets, all_axes, strict=True)]
        if isinstance(s, ast.AugAssign):
            body = [*inner, ast.AugAssign(target=elems[0], op=s.op, value=new_value)]
        elif len(elems) == 1:
            body = [*inner, ast.Assign(targets=elems, value=new_value)]
        else:  # the value once, then each target in turn (Python's chained assignment)
            tmp = self.name("e")
            body = [*inner, ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=new_value)]
            body += [ast.Assign(targets=[e], value=ast.Name(tmp, ast.Load())) for e in elems]
        for t, ext in reversed(list(zip(ts, _extents(targets[0], all_axes[0]), strict=True))):
            body = [_loop(t, ext, body)]
        return body

    # -- statements -----------------------------------------------------------------------

    def stmt(self, s) -> list[ast.stmt]:
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list) and not isinstance(
                s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
            ):
                setattr(s, field, self.block(getattr(s, field)))
        if isinstance(s, ast.Try):
            for h in s.handlers:
                h.body = self.block(h.body)
        if not isinstance(s, ast.Assign | ast.AugAssign | ast.Expr | ast.Return):
            return [s]
        pre: list[ast.stmt] = []
        if s.value is not None:
            s.value = self.dots(s.value, pre)
        out = None
        if isinstance(s, ast.AugAssign):
            out = self.slice_assign(s, [s.target], s.value, pre)
        elif isinstance(s, ast.Assign):
            out = self.slice_assign(s, s.targets, s.value, pre)
        new = [*pre, *(out if out is not None else [s])]
        for n in new:
            for child in ast.walk(n):
                ast.copy_location(child, s)
        return new

    def block(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out = []
        for s in body:
            out.extend(self.stmt(s))
        return out


def _slice_names(body, outside: set[str]) -> dict:
    """Names the body binds once, at its top level, to a slice (`cols = a[lo:hi]`) whose
    bounds read nothing the body assigns, and that nothing outside the body reads: name ->
    its statement (the slice is a view: reading the name later is reading the slice)."""
    stores: dict[str, int] = {}
    for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, ast.FunctionDef | ast.ClassDef | ast.Lambda | ast.Global):
            return {}
    out = {}
    for st in body:
        if not (
            isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
        ):
            continue
        name, v = st.targets[0].id, st.value
        axes = _axes(v)
        if axes is None or _nslices(axes) == 0 or stores.get(name) != 1 or name in outside:
            continue
        reads = {n.id for n in ast.walk(v) if isinstance(n, ast.Name)}
        if reads & set(stores) or reads & set(out):
            continue
        out[name] = st
    return out


def expand_array_statements(
    body: list[ast.stmt], outside=frozenset(), targets=()
) -> list[ast.stmt]:
    """The prange body with its dot products of slices and assignments to slices written as
    element loops (see the module's docstring); other statements unchanged. Names bound to a
    slice (see _slice_names; `outside`: the names the function reads elsewhere) are replaced
    by the slice where they are read."""
    names = _slice_names(body, set(outside))
    if names:
        subst = {name: st.value for name, st in names.items()}

        class Sub(ast.NodeTransformer):
            def visit_Name(self, node):
                if isinstance(node.ctx, ast.Load) and node.id in subst:
                    return ast.copy_location(copy.deepcopy(subst[node.id]), node)
                return node

        drop = {id(st) for st in names.values()}
        body = [Sub().visit(st) for st in body if id(st) not in drop]
    known = {
        n.id
        for n in ast.walk(ast.Module(body=list(body), type_ignores=[]))
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    return _Rewriter(known | set(targets)).block(body)
