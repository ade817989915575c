"""Array statements of a prange body written as element loops once the dimensions of the
loop's free arrays are known (the kernel is generated per their ndims, on the first launch
that needs it): what arrayexpr.py cannot do without them, as Numba's parfor pass does with
its array analysis.

- A subscript with fewer indices than its array's dimensions reads the rest whole (`x[i]` of a
  2-d x is `x[i, :]`); a free array's name alone is all of it.
- Array expressions: slices, element-wise operators and NumPy functions (`+`, `*`, `<`,
  `np.exp`, `np.maximum`, ...; NumPy's broadcasting: operands aligned on their last axes, an
  axis of extent 1 or missing repeated), `@` / `np.dot` of one- and two-axis operands,
  `.copy()`, `np.reshape(e, (..))` / `e.reshape(..)` (C order), and reductions along an axis
  (`np.sum(e, axis=k)`, `e.max(axis=k)`, ...).
- A name the body binds once to an array expression (`dHG = A[..] @ B[..]`,
  `inp = x[:, i:i + K].copy()`, `mask = (r1 <= r) & (r < r2)`) is read as that expression
  where it is used, when nothing after the binding changes what it reads.
- An assignment or update of a sliced target (`t[..] = e`, `t[..] += e`) becomes element
  loops over the target's axes; a whole reduction of an expression (`np.max(e)`, `e.mean()`,
  `np.dot(u, v)`) an accumulation loop before its statement; of a boolean-mask subscript,
  `data[mask].mean()`, a loop over the elements where the mask is true.

Each element of an expression is computed where it is read (a product of products recomputes
its operands: the loops do the work of the expression, not less). A statement not of these
forms is left as written (the kernel compiler then names what it refuses), as is one whose
value reads its own target (NumPy reads the whole right side first).
"""

from __future__ import annotations

import ast
import copy
import itertools

from .arrayexpr import _REDUCTIONS

_PREFIX = "_kapi_nd"
# NumPy functions that work element by element (on the elements of array operands)
_ELEMENTWISE = frozenset(
    {
        "abs",
        "absolute",
        "fabs",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "square",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "floor",
        "ceil",
        "trunc",
        "negative",
        "maximum",
        "minimum",
        "power",
        "arctan2",
        "hypot",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "isnan",
        "isinf",
        "isfinite",
        "where",
        "conj",
        "conjugate",
    }
)
_MASK_FUNCS = frozenset({"logical_and", "logical_or", "logical_not", "logical_xor", "isnan"})


def _one(e) -> bool:
    return isinstance(e, ast.Constant) and e.value == 1


def _c(v):
    return ast.Constant(v)


def _nm(n: str, ctx=None):
    return ast.Name(n, ctx or ast.Load())


def _assign(name: str, value) -> ast.Assign:
    return ast.Assign(targets=[_nm(name, ast.Store())], value=value)


def _for(var: str, extent, body) -> ast.For:
    call = ast.Call(func=_nm("range"), args=[extent], keywords=[])
    return ast.For(target=_nm(var, ast.Store()), iter=call, body=body, orelse=[])


def _binop(a, op, b):
    return ast.BinOp(a, op, b)


class _Arr:
    """An array expression: its extents (expressions, copied where used), how to write its
    element at index expressions (elem(idx, pre): statements it needs go to pre, run per
    element), and an array whose dtype starts its sums."""

    def __init__(self, extents, elem, dtype_of):
        self.extents, self.elem, self.dtype_of = extents, elem, dtype_of

    @property
    def rank(self) -> int:
        return len(self.extents)

    def ext(self, k):
        return copy.deepcopy(self.extents[k])


def _zero(arr: _Arr):
    """`a.dtype.type(0)` of the expression's first array (0 where it has none)."""
    if arr.dtype_of is None:
        return _c(0)
    dtype = ast.Attribute(value=_nm(arr.dtype_of), attr="dtype", ctx=ast.Load())
    fn = ast.Attribute(value=dtype, attr="type", ctx=ast.Load())
    return ast.Call(func=fn, args=[_c(0)], keywords=[])


class _Typed:
    def __init__(self, ndims: dict[str, int], stores: dict[str, int], outside: set[str]):
        self.ndims = {n: d for n, d in ndims.items() if d > 0}
        self.stores = stores  # name -> how many times the whole kernel body binds it
        self.outside = outside
        self.bound: dict[str, ast.expr] = {}
        self.private: set[str] = set()  # the body's own arrays (_private_ndims)
        self.shapes: dict[str, list[ast.expr]] = {}  # a private array's allocated extents
        # extents that must be equal for the statements written as loops to be NumPy's:
        # (left, right, line); the launch checks those it can (broadcast_checks)
        self.checks: list[tuple[ast.expr, ast.expr, int]] = []
        self.line = 0
        self.counter = itertools.count()

    def same(self, a, b):
        """Records that extents a and b must be equal (unless they are the same expression)."""
        if ast.dump(a) != ast.dump(b):
            self.checks.append((copy.deepcopy(a), copy.deepcopy(b), self.line))

    def name(self, kind: str) -> str:
        return f"{_PREFIX}_{kind}{next(self.counter)}"

    # -- subscripts of free arrays ---------------------------------------------------------

    def _view(self, sub) -> _Arr | None:
        """A subscript `x[...]` of a free array with at least one sliced axis (missing
        trailing indices are whole axes), or None."""
        if not (isinstance(sub.value, ast.Name) and sub.value.id in self.ndims):
            return None
        name, nd = sub.value.id, self.ndims[sub.value.id]
        items = list(sub.slice.elts) if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        if len(items) > nd or any(
            isinstance(it, ast.Starred)
            or (isinstance(it, ast.Constant) and it.value in (None, ...))
            for it in items
        ):
            return None
        axes = []
        for it in items:
            if isinstance(it, ast.Slice):
                if it.step is not None or _negative(it.lower) or _negative(it.upper):
                    return None
                axes.append(("s", it.lower, it.upper))
            elif self.arr(it) is not None:
                return None  # a mask or an index array: not an element-wise view
            else:
                axes.append(("i", it))
        axes += [("s", None, None)] * (nd - len(items))
        sliced = [k for k, a in enumerate(axes) if a[0] == "s"]
        if not sliced:
            return None
        extents = []
        for k in sliced:
            _, lo, hi = axes[k]
            if hi is None and name in self.shapes:
                hi = copy.deepcopy(self.shapes[name][k])
            elif hi is None:
                hi = ast.Subscript(
                    value=ast.Attribute(value=_nm(name), attr="shape", ctx=ast.Load()),
                    slice=_c(k),
                    ctx=ast.Load(),
                )
            extents.append(hi if lo is None else _binop(hi, ast.Sub(), lo))

        def elem(idx, pre, ctx=None):
            out, j = [], 0
            for a in axes:
                if a[0] == "i":
                    out.append(copy.deepcopy(a[1]))
                    continue
                t = copy.deepcopy(idx[j])
                j += 1
                out.append(t if a[1] is None else _binop(copy.deepcopy(a[1]), ast.Add(), t))
            index = out[0] if len(out) == 1 else ast.Tuple(out, ast.Load())
            return ast.Subscript(value=_nm(name), slice=index, ctx=ctx or ast.Load())

        return _Arr(extents, elem, name)

    # -- array expressions -----------------------------------------------------------------

    def arr(self, node) -> _Arr | None:
        """node as an array expression, or None (a scalar, or what is not written here)."""
        if isinstance(node, ast.Name):
            if node.id in self.bound:
                return self.arr(self.bound[node.id])
            if node.id in self.ndims:
                whole = ast.Subscript(value=_nm(node.id), slice=ast.Slice(), ctx=ast.Load())
                if self.ndims[node.id] > 1:
                    whole.slice = ast.Tuple([ast.Slice()] * self.ndims[node.id], ast.Load())
                return self._view(whole)
            return None
        if isinstance(node, ast.Subscript):
            return self._view(node)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult):
                return self._matmul(node.left, node.right)
            return self._elementwise([node.left, node.right], lambda a: _binop(a[0], node.op, a[1]))
        if isinstance(node, ast.UnaryOp):
            return self._elementwise([node.operand], lambda a: ast.UnaryOp(node.op, a[0]))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._elementwise(
                [node.left, node.comparators[0]],
                lambda a: ast.Compare(a[0], [node.ops[0]], [a[1]]),
            )
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _call(self, node) -> _Arr | None:
        f = node.func
        attr = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        module_form = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
        module_form = module_form and f.value.id not in self.ndims and f.value.id not in self.bound
        kw = {k.arg: k.value for k in node.keywords}
        if attr == "copy" and isinstance(f, ast.Attribute) and not node.args and not kw:
            return self.arr(f.value)
        if attr == "reshape" and not kw:
            if module_form and len(node.args) == 2:
                return self._reshape(node.args[0], node.args[1])
            if isinstance(f, ast.Attribute) and not module_form and node.args:
                shape = node.args[0] if len(node.args) == 1 else ast.Tuple(node.args, ast.Load())
                return self._reshape(f.value, shape)
            return None
        if attr == "dot" and module_form and len(node.args) == 2 and not kw:
            return self._matmul(*node.args)
        if attr in _REDUCTIONS and set(kw) == {"axis"}:
            operand = node.args[0] if module_form and len(node.args) == 1 else None
            if not module_form and isinstance(f, ast.Attribute) and not node.args:
                operand = f.value
            if operand is not None:
                return self._axis_reduction(_REDUCTIONS[attr], operand, kw["axis"])
            return None
        if attr in _ELEMENTWISE and (module_form or isinstance(f, ast.Name)) and not kw:

            def make(a):
                return ast.Call(func=copy.deepcopy(f), args=a, keywords=[])

            return self._elementwise(list(node.args), make)
        return None

    def _elementwise(self, operands, make) -> _Arr | None:
        arrs = [self.arr(o) for o in operands]
        if all(a is None for a in arrs):
            return None
        rank = max(a.rank for a in arrs if a is not None)
        extents = []
        for j in range(rank):  # from the left of the result: aligned on the right
            pick = None
            for a in arrs:
                k = j - (rank - a.rank) if a is not None else -1
                if a is None or k < 0:
                    continue
                if pick is None or (_one(pick) and not _one(a.extents[k])):
                    pick = a.extents[k]
            for a in arrs:
                k = j - (rank - a.rank) if a is not None else -1
                if a is not None and k >= 0 and not _one(a.extents[k]) and not _one(pick):
                    self.same(pick, a.extents[k])
            extents.append(pick)
        first = next(a for a in arrs if a is not None)

        def elem(idx, pre):
            vals = []
            for o, a in zip(operands, arrs, strict=True):
                if a is None:
                    vals.append(copy.deepcopy(o))
                    continue
                sub = idx[rank - a.rank :]
                sub = [
                    _c(0) if _one(a.extents[k]) and not _one(extents[rank - a.rank + k]) else t
                    for k, t in enumerate(sub)
                ]
                vals.append(a.elem(sub, pre))
            return make(vals)

        return _Arr(extents, elem, first.dtype_of)

    def _matmul(self, left, right) -> _Arr | None:
        a, b = self.arr(left), self.arr(right)
        if a is None or b is None or not (1 <= a.rank <= 2 and 1 <= b.rank <= 2):
            return None
        if a.rank == b.rank == 1:
            return None  # a scalar: a whole reduction (scalar())
        extents = [*a.extents[:-1], *b.extents[1:]]
        self.same(a.extents[-1], b.extents[0])
        rewriter = self

        def elem(idx, pre):
            acc, r = rewriter.name("mm"), rewriter.name("r")
            ia = [*idx[: a.rank - 1], _nm(r)]
            ib = [_nm(r), *idx[a.rank - 1 :]]
            inner: list[ast.stmt] = []
            prod = _binop(a.elem(ia, inner), ast.Mult(), b.elem(ib, inner))
            pre.append(_assign(acc, _zero(a)))
            add = ast.AugAssign(target=_nm(acc, ast.Store()), op=ast.Add(), value=prod)
            pre.append(_for(r, a.ext(a.rank - 1), [*inner, add]))
            return _nm(acc)

        return _Arr(extents, elem, a.dtype_of)

    def _reshape(self, operand, shape) -> _Arr | None:
        a = self.arr(operand)
        if a is None or not isinstance(shape, ast.Tuple) or not shape.elts:
            return None
        if any(isinstance(e, ast.Starred) or _negative(e) for e in shape.elts):
            return None
        new = list(shape.elts)
        rewriter = self

        def elem(idx, pre):
            # the C-order position of idx in the new shape, then its index in the operand's
            lin = None
            for t, e in zip(idx, new, strict=True):
                if _one(e):
                    continue
                t = copy.deepcopy(t)
                lin = (
                    t
                    if lin is None
                    else _binop(_binop(lin, ast.Mult(), copy.deepcopy(e)), ast.Add(), t)
                )
            rest = rewriter.name("lin")
            pre.append(_assign(rest, lin if lin is not None else _c(0)))
            out = [None] * a.rank
            for k in range(a.rank - 1, 0, -1):
                if _one(a.extents[k]):
                    out[k] = _c(0)
                    continue
                i = rewriter.name("i")
                pre.append(_assign(i, _binop(_nm(rest), ast.Mod(), a.ext(k))))
                pre.append(_assign(rest, _binop(_nm(rest), ast.FloorDiv(), a.ext(k))))
                out[k] = _nm(i)
            out[0] = _nm(rest)
            return a.elem(out, pre)

        return _Arr(new, elem, a.dtype_of)

    def _axis_reduction(self, kind, operand, axis) -> _Arr | None:
        a = self.arr(operand)
        if a is None or not isinstance(axis, ast.Constant | ast.UnaryOp):
            return None
        try:
            k = int(ast.literal_eval(axis))
        except (ValueError, TypeError):
            return None
        if not -a.rank <= k < a.rank:
            return None
        k %= a.rank
        extents = a.extents[:k] + a.extents[k + 1 :]
        rewriter = self

        def elem(idx, pre):
            r = rewriter.name("r")
            ia = [*idx[:k], _nm(r), *idx[k:]]
            return rewriter._accumulate(
                kind, a, [r], [a.ext(k)], lambda inner: a.elem(ia, inner), pre
            )

        return _Arr(extents, elem, a.dtype_of)

    def _accumulate(self, kind, a: _Arr, ts, extents, value, pre, mask=None):
        """An accumulator of kind over the loops ts (extents); value(inner) writes the element
        (its statements to inner); mask(inner), where given, the condition an element
        counts under. Returns the result's expression."""
        acc = self.name("acc")
        count = self.name("n") if kind == "mean" and mask is not None else None

        def body_of(step):
            inner: list[ast.stmt] = []
            v = value(inner)
            stmts = [*inner, *step(v)]
            if mask is not None:
                cond_pre: list[ast.stmt] = []
                cond = mask(cond_pre)
                stmts = [*cond_pre, ast.If(test=cond, body=stmts, orelse=[])]
            return stmts

        if kind in ("max", "min") and mask is None:
            for t in ts:
                pre.append(_assign(t, _c(0)))
            first: list[ast.stmt] = []
            v0 = value(first)
            pre.extend(first)
            pre.append(_assign(acc, v0))

            def step(v):
                call = ast.Call(func=_nm(kind), args=[_nm(acc), v], keywords=[])
                return [_assign(acc, call)]
        elif kind in ("max", "min"):
            return None
        else:
            start = _zero(a)
            if kind == "prod":
                start = _binop(start, ast.Add(), _c(1))
            pre.append(_assign(acc, start))
            op = ast.Mult() if kind == "prod" else ast.Add()

            def step(v):
                out = [ast.AugAssign(target=_nm(acc, ast.Store()), op=op, value=v)]
                if count is not None:
                    out.append(
                        ast.AugAssign(target=_nm(count, ast.Store()), op=ast.Add(), value=_c(1))
                    )
                return out

            if count is not None:
                pre.append(_assign(count, _c(0)))
        body = body_of(step)
        for t, e in reversed(list(zip(ts, extents, strict=True))):
            body = [_for(t, e, body)]
        pre.extend(body)
        if kind != "mean":
            return _nm(acc)
        if count is not None:
            return _binop(_nm(acc), ast.Div(), _nm(count))
        n = copy.deepcopy(extents[0])
        for e in extents[1:]:
            n = _binop(n, ast.Mult(), copy.deepcopy(e))
        return _binop(_nm(acc), ast.Div(), n)

    # -- scalars: whole reductions ---------------------------------------------------------

    def _masked(self, operand):
        """`data[mask]` (or a name bound to it) with a boolean-valued mask expression of
        data's dimensions: (data as an array expression, mask's) or None."""
        while isinstance(operand, ast.Name) and operand.id in self.bound:
            operand = self.bound[operand.id]
        if not (
            isinstance(operand, ast.Subscript)
            and isinstance(operand.value, ast.Name)
            and operand.value.id in self.ndims
            and _boolean(operand.slice, self.bound)
        ):
            return None
        data, mask = self.arr(operand.value), self.arr(operand.slice)
        if data is None or mask is None or mask.rank != data.rank:
            return None
        for d, m in zip(data.extents, mask.extents, strict=True):
            self.same(d, m)
        return data, mask

    def scalar(self, node, pre) -> ast.expr | None:
        """A whole reduction or a dot product of one-axis operands, written as loops into pre
        -> the result's expression; None when node is neither."""
        f = node.func if isinstance(node, ast.Call) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return self._dot(node.left, node.right, pre)
        if not isinstance(f, ast.Attribute) or node.keywords:
            return None
        module_form = isinstance(f.value, ast.Name) and f.value.id not in self.ndims
        module_form = module_form and f.value.id not in self.bound
        if f.attr == "dot" and module_form and len(node.args) == 2:
            return self._dot(*node.args, pre)
        kind = _REDUCTIONS.get(f.attr)
        if kind is None:
            return None
        if module_form and len(node.args) == 1:
            operand = node.args[0]
        elif not module_form and not node.args:
            operand = f.value
        else:
            return None
        masked = self._masked(operand)
        if masked is not None:
            data, mask = masked
            ts = [self.name("t") for _ in range(data.rank)]
            idx = [_nm(t) for t in ts]
            return self._accumulate(
                kind,
                data,
                ts,
                [data.ext(k) for k in range(data.rank)],
                lambda inner: data.elem(idx, inner),
                pre,
                mask=lambda inner: mask.elem(idx, inner),
            )
        a = self.arr(operand)
        if a is None:
            return None
        ts = [self.name("t") for _ in range(a.rank)]
        idx = [_nm(t) for t in ts]
        extents = [a.ext(k) for k in range(a.rank)]
        return self._accumulate(kind, a, ts, extents, lambda inner: a.elem(idx, inner), pre)

    def _dot(self, left, right, pre):
        a, b = self.arr(left), self.arr(right)
        if a is None or b is None or a.rank != 1 or b.rank != 1:
            return None
        self.same(a.extents[0], b.extents[0])
        t = self.name("t")

        def value(inner):
            return _binop(a.elem([_nm(t)], inner), ast.Mult(), b.elem([_nm(t)], inner))

        return self._accumulate("sum", a, [t], [a.ext(0)], value, pre)

    def scalars(self, expr, pre):
        """expr with its whole reductions and dot products replaced (innermost first)."""
        rewriter = self

        class T(ast.NodeTransformer):
            def generic_visit(self, node):
                node = super().generic_visit(node)
                if isinstance(node, ast.Call | ast.BinOp):
                    out = rewriter.scalar(node, pre)
                    if out is not None:
                        return out
                return node

        return T().visit(expr)

    # -- statements ------------------------------------------------------------------------

    def _target(self, s):
        t = s.targets[0] if isinstance(s, ast.Assign) else s.target
        if isinstance(s, ast.Assign) and len(s.targets) != 1:
            return None
        if isinstance(t, ast.Name) and t.id in self.ndims and t.id not in self.outside:
            # `a op= e` of an array updates it in place, as NumPy; `x = f(x, ..)` of a
            # private array (_private_ndims) is written in place too
            if isinstance(s, ast.AugAssign) or (
                t.id in self.private and _mentions_name(s.value, t.id)
            ):
                whole = [ast.Slice() for _ in range(self.ndims[t.id])]
                index = whole[0] if len(whole) == 1 else ast.Tuple(whole, ast.Load())
                return ast.Subscript(value=_nm(t.id), slice=index, ctx=ast.Store())
            return None
        return t if isinstance(t, ast.Subscript) else None

    def assign(self, s) -> list[ast.stmt] | None:
        target = self._target(s)
        if target is None:
            return None
        view = self._view(target)
        if view is None:
            return None
        name = target.value.id
        value = _substituted(s.value, self.bound)
        if isinstance(s.targets[0] if isinstance(s, ast.Assign) else s.target, ast.Name):
            value = _WholeReads(name, target.slice).visit(copy.deepcopy(value))
        pre: list[ast.stmt] = []
        value = self.scalars(value, pre)  # whole reductions: before the loops, as NumPy
        if not _reads_in_step(value, target, name):
            return None  # reads other elements of its target: NumPy reads the value first
        v = self.arr(value)
        if v is not None and v.rank > view.rank:
            return None
        if v is not None:
            for k, e in enumerate(v.extents):
                if not _one(e):
                    self.same(view.extents[view.rank - v.rank + k], e)
        ts = [self.name("t") for _ in range(view.rank)]
        inner: list[ast.stmt] = []
        if v is None:
            val = value
        else:
            sub = [_nm(t) for t in ts[view.rank - v.rank :]]
            sub = [
                _c(0)
                if _one(v.extents[k]) and not _one(view.extents[view.rank - v.rank + k])
                else t
                for k, t in enumerate(sub)
            ]
            val = v.elem(sub, inner)
        elem = view.elem([_nm(t) for t in ts], inner, ast.Store())
        if isinstance(s, ast.AugAssign):
            body = [*inner, ast.AugAssign(target=elem, op=s.op, value=val)]
        else:
            body = [*inner, ast.Assign(targets=[elem], value=val)]
        for t, k in reversed(list(zip(ts, range(view.rank), strict=True))):
            body = [_for(t, view.ext(k), body)]
        return [*pre, *body]

    def binding(self, s, later) -> bool:
        """Whether s binds a name to an array expression that can be read in its place in the
        statements after it (later); if so it is recorded in self.bound."""
        if not (
            isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
        ):
            return False
        name = s.targets[0].id
        if self.stores.get(name) != 1 or name in self.outside or name in self.ndims:
            return False
        value = _substituted(s.value, self.bound)
        if self.arr(value) is None and not _boolean_index(value, self.bound, self.ndims):
            return False
        reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        for st in later:
            for n in ast.walk(st):
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in reads:
                    return False
                if isinstance(n, ast.Subscript) and not isinstance(n.ctx, ast.Load):
                    if isinstance(n.value, ast.Name) and n.value.id in reads:
                        return False
        self.bound[name] = value
        return True

    def block(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[tuple[ast.stmt | None, list[ast.stmt]]] = []
        bindings = {}
        for pos, s in enumerate(body):
            for field in ("body", "orelse"):
                if isinstance(s, ast.For | ast.While | ast.If | ast.With) and hasattr(s, field):
                    setattr(s, field, self.block(getattr(s, field)))
            self.line, mark = getattr(s, "lineno", 0), len(self.checks)
            if self.binding(s, body[pos + 1 :]):
                del self.checks[mark:]  # made again where the bound name is read
                bindings[s.targets[0].id] = len(out)
                out.append((s, []))
                continue
            new = None
            if isinstance(s, ast.Assign | ast.AugAssign):
                new = self.assign(s)
            if new is None and isinstance(s, ast.Assign | ast.AugAssign | ast.Expr | ast.Return):
                if s.value is not None:
                    pre: list[ast.stmt] = []
                    value = self.scalars(_substituted(s.value, self.bound), pre)
                    if pre:
                        s.value = value
                        new = [*pre, s]
            if new is None:
                del self.checks[mark:]  # left as it was: Numba's rules apply to it
            out.append((None, new if new is not None else [s]))
        # a binding stays where a statement still reads its name (one not rewritten)
        stmts = []
        for s, new in out:
            if s is not None:
                stmts.append(s)
            else:
                stmts.extend(new)
        still = {
            n.id
            for st in stmts
            if st not in [b for b, _ in out if b is not None]
            for n in ast.walk(st)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        result = []
        for s, new in out:
            if s is not None:
                if s.targets[0].id in still:
                    result.append(s)
                continue
            result.extend(new)
        return result


def _reads_in_step(value, target, name: str) -> bool:
    """Whether value reads the target's array only as the target itself, element by element
    (no product, reshape or reduction around it): each element is then read before it is
    written, as NumPy's whole right side is."""
    meta = {
        id(n.value)
        for n in ast.walk(value)
        if isinstance(n, ast.Attribute) and n.attr in ("shape", "dtype", "ndim", "size")
    }
    reads = [
        n for n in ast.walk(value) if isinstance(n, ast.Name) and n.id == name and id(n) not in meta
    ]
    if not reads:
        return True
    same = ast.dump(target.slice)
    subs = [
        n
        for n in ast.walk(value)
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name
    ]
    if len(subs) != len(reads) or any(ast.dump(n.slice) != same for n in subs):
        return False
    for n in ast.walk(value):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            return False
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr in (*_REDUCTIONS, "reshape", "dot"):
                return False
    return True


def _negative(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return True
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float) and node.value < 0


def _boolean(node, bound) -> bool:
    """Whether an index expression is boolean by its form: a comparison, `&`/`|`/`~` of such,
    np.logical_* or np.isnan, or a name bound to one."""
    if isinstance(node, ast.Name):
        return node.id in bound and _boolean(bound[node.id], bound)
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr | ast.BitXor):
        return _boolean(node.left, bound) and _boolean(node.right, bound)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert | ast.Not):
        return _boolean(node.operand, bound)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in _MASK_FUNCS
    return False


def _boolean_index(value, bound, ndims) -> bool:
    """`data[mask]` of a free array by a boolean expression (a binding a masked whole
    reduction reads)."""
    return (
        isinstance(value, ast.Subscript)
        and isinstance(value.value, ast.Name)
        and value.value.id in ndims
        and _boolean(value.slice, bound)
    )


def _substituted(expr, bound):
    """A copy of expr with the bound names read as their expressions."""
    if not bound:
        return copy.deepcopy(expr)

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Load) and node.id in bound:
                return ast.copy_location(copy.deepcopy(bound[node.id]), node)
            return node

    return Sub().visit(copy.deepcopy(expr))


def needs_ndims(body) -> bool:
    """Whether the body holds what this module may write as loops (a slice, `@`, a reduction,
    a dot, a copy, a reshape or a private array): only such loops' kernels are generated per
    ndims."""
    names = {*_REDUCTIONS, "dot", "copy", "reshape", "PrivateArray"}
    for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        if isinstance(n, ast.Slice) or (isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult)):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in names:
            return True
    return False


def expand_with_ndims(
    body: list[ast.stmt], ndims: dict[str, int], outside=frozenset(), checks=None
):
    """The kernel body with the array statements it can write for these ndims of the free
    arrays (name -> ndim; 0 for scalars) written as element loops; others unchanged.
    checks: a list that receives (left, right, line) for each pair of extents those loops
    need equal (NumPy would broadcast or refuse them) and the launch can compute from the
    free variables (ndims' names): source expressions of them (broadcast_checks)."""
    stores: dict[str, int] = {}
    for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    private = _private_ndims(body, stores)
    typed = _Typed({**private, **ndims}, stores, set(outside))
    typed.private = set(private) - set(ndims)
    typed.shapes = _private_shapes(body, typed.private)
    new = typed.block(copy.deepcopy(body))
    for st in new:
        for child in ast.walk(st):
            if not hasattr(child, "lineno"):
                ast.copy_location(child, body[0])
    if checks is not None:
        seen = set()
        for left, right, line in typed.checks:
            names = {n.id for e in (left, right) for n in ast.walk(e) if isinstance(n, ast.Name)}
            pair = (ast.unparse(left), ast.unparse(right), line)
            if names <= set(ndims) and pair not in seen:
                seen.add(pair)
                checks.append(pair)
    return ast.fix_missing_locations(ast.Module(body=new, type_ignores=[])).body


def _private_shapes(body, private: set[str]) -> dict[str, list[ast.expr]]:
    """name -> the extents a private array is allocated with (its PrivateArray call's shape),
    where every allocation of it gives the same ones."""
    found: dict[str, set[str]] = {}
    shapes: dict[str, list[ast.expr]] = {}
    for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
            continue
        t, v = n.targets[0], n.value
        if not (isinstance(t, ast.Name) and t.id in private and isinstance(v, ast.Call)):
            continue
        if not (isinstance(v.func, ast.Attribute) and v.func.attr == "PrivateArray" and v.args):
            continue
        shape = v.args[0]
        extents = list(shape.elts) if isinstance(shape, ast.Tuple) else [shape]
        found.setdefault(t.id, set()).add(ast.dump(ast.Tuple(extents, ast.Load())))
        shapes[t.id] = extents
    return {name: shapes[name] for name, dumps in found.items() if len(dumps) == 1}


def _private_ndims(body, stores: dict[str, int]) -> dict[str, int]:
    """name -> ndim of the body's private arrays (`x = np.zeros((n, m), ...)` in the prange
    body, kernels.py's PrivateArray calls) that the body binds only to private arrays of
    that ndim and in updates (`x op= e`, `x = f(x, ..)`, written in place): their names read
    whole, as the free arrays'."""
    updates: dict[str, int] = {}
    allocs: dict[str, list[int]] = {}
    for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        t = n.target if isinstance(n, ast.AugAssign) else None
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            t = n.targets[0]
        if not isinstance(t, ast.Name):
            continue
        v = n.value
        if isinstance(n, ast.AugAssign) or _mentions_name(v, t.id):
            updates[t.id] = updates.get(t.id, 0) + 1
        elif (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and v.func.attr == "PrivateArray"
            and v.args
        ):
            shape = v.args[0]
            nd = len(shape.elts) if isinstance(shape, ast.Tuple) else 1
            allocs.setdefault(t.id, []).append(nd)
    return {
        name: nds[0]
        for name, nds in allocs.items()
        if len(set(nds)) == 1 and stores.get(name) == len(nds) + updates.get(name, 0)
    }


def _mentions_name(node, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


class _WholeReads(ast.NodeTransformer):
    """A whole array's name read as its whole subscript (`x` -> `x[:, :]`), for an update of
    that array written in place (_Typed._target)."""

    def __init__(self, name: str, index):
        self.name, self.index = name, index

    def visit_Name(self, node):
        if node.id != self.name or not isinstance(node.ctx, ast.Load):
            return node
        return ast.Subscript(value=node, slice=copy.deepcopy(self.index), ctx=ast.Load())

    def visit_Attribute(self, node):
        if node.attr in ("shape", "dtype", "ndim", "size"):
            return node  # the array's own
        return self.generic_visit(node)
