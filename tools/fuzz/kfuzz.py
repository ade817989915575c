"""Differential fuzzer: random kernels run on every kapi device against a Numba @njit oracle.

A case is a small random program over one work-item: typed expression trees over every scalar
type (Python semantics for //, %, **, shifts and wrap-around as Numba defines them), if/else,
for and while loops, array reads at computed in-range indices (negative ones included), writes
to the work-item's own output slots, device-function calls, integer atomics and, in NdRange
kernels, local memory around a work-group barrier. Types come from Numba's own typing context,
so the generator never writes what Numba would reject or leave undefined (no zero divisors, no
shift past the width, no float -> int conversion).

Compiles dominate, so one kernel holds many cases (each with its own output slots); a mismatch
is pinned to its case, which is then minimised (statements dropped, expressions replaced by a
same-typed part) while it still mismatches, and written as a regression file that
tests/test_fuzz.py replays.

    python tools/fuzz/kfuzz.py --kernels 200 --seed 1 [--cases 8] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

N_ITEMS = 64  # work-items per launch
LOCAL = 16  # work-group size of NdRange kernels
N_IN = 64  # elements of each input array
ACC = 8  # elements of the atomic accumulator
SLOTS = 4  # output slots per case and kind (int, float)

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
DTYPES += ["float32", "float64"]

_CTX = None


def typing_context():
    global _CTX
    if _CTX is None:
        from numba.core.registry import cpu_target

        _CTX = cpu_target.typing_context
        _CTX.refresh()
    return _CTX


def nbtype(name):
    from numba import types

    return getattr(types, "boolean" if name == "bool" else name)


def resolve(fn, *argtypes):
    """Numba's result type of fn(*argtypes), or None when Numba rejects it."""
    try:
        sig = typing_context().resolve_function_type(fn, argtypes, {})
    except Exception:
        return None
    return sig.return_type if sig is not None else None


def is_int(t):
    from numba import types

    return isinstance(t, types.Integer)


def is_float(t):
    from numba import types

    return isinstance(t, types.Float)


def is_bool(t):
    from numba import types

    return isinstance(t, types.Boolean)


def is_signed_int(t):
    return is_int(t) and t.signed


# --- expressions -----------------------------------------------------------------------------


@dataclass
class Expr:
    """A typed expression: `fmt` with {0}, {1}.. standing for the children's sources."""

    fmt: str
    ty: object
    kids: list = field(default_factory=list)
    guard: bool = False  # keeps its operand defined (divisor, count, index): never minimised away

    def src(self):
        return self.fmt.format(*(k.src() for k in self.kids))

    def nodes(self):
        yield self
        for k in self.kids:
            yield from k.nodes()


def is_const(e):
    """Made of literals only (Python folds such expressions before any typing)."""
    return all(not k.kids and k.fmt.lstrip("-(").replace(".", "")[:1].isdigit() for k in e.nodes())


def leaf(src, ty):
    return Expr(src.replace("{", "{{").replace("}", "}}"), ty)


_BINOPS = [
    ("+", operator.add),
    ("-", operator.sub),
    ("*", operator.mul),
    ("/", operator.truediv),
    ("//", operator.floordiv),
    ("%", operator.mod),
    ("**", operator.pow),
    ("<<", operator.lshift),
    (">>", operator.rshift),
    ("&", operator.and_),
    ("|", operator.or_),
    ("^", operator.xor),
    ("<", operator.lt),
    ("<=", operator.le),
    ("==", operator.eq),
    ("!=", operator.ne),
    (">", operator.gt),
    (">=", operator.ge),
]
_MATH1 = ["sqrt", "sin", "cos", "exp", "tanh", "fabs", "atan", "log1p"]
_MATH2 = ["atan2", "hypot", "copysign"]


class Gen:
    """Random typed expressions over the leaves in scope."""

    def __init__(self, rng: random.Random, scope):
        self.rng = rng
        self.scope = scope  # list of leaf Exprs (inputs, variables, ids)

    def leafexpr(self, want=None):
        r = self.rng
        pool = [e for e in self.scope if want is None or want(e.ty)]
        if pool and r.random() < 0.85:
            return r.choice(pool)
        from numba import types

        if want is None or want(types.int64):
            return leaf(
                str(r.choice([0, 1, 2, 3, 7, -1, -5, 100, 255, 2**31, -(2**40)])), types.int64
            )
        return leaf(repr(r.choice([0.5, 1.0, -2.25, 3.0, 1e10, -1e-3])), types.float64)

    def expr(self, depth, want=None):
        """An expression whose type satisfies want (a predicate), or None."""
        for _ in range(30):
            e = self._expr(depth)
            if e is not None and (want is None or want(e.ty)):
                return e
        return self.leafexpr(want) if want else None

    def _expr(self, depth):
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leafexpr()
        k = r.random()
        if k < 0.6:
            return self.binop(depth)
        if k < 0.75:
            return self.unary(depth)
        if k < 0.9:
            return self.mathcall(depth)
        return self.minmax(depth)

    def binop(self, depth):
        sym, fn = self.rng.choice(_BINOPS)
        a = self._expr(depth - 1)
        b = self._expr(depth - 1)
        if a is None or b is None or (is_const(a) and is_const(b)):
            return None  # Python would fold it at compile time, to ints of any size
        from numba import types

        # Divisors are never zero: ints get their low bit set, floats are >= 1 (or NaN).
        if sym in ("/", "//", "%"):
            if is_float(b.ty):
                b = Expr(
                    "(abs({0}) + 1.0)",
                    resolve(operator.add, resolve(abs, b.ty), types.float64),
                    [b],
                    True,
                )
            else:
                b = Expr("({0} | 1)", resolve(operator.or_, b.ty, types.int64), [b], True)
        elif sym == "**":  # a small non-negative integer exponent
            if not (is_int(b.ty) or is_bool(b.ty)):
                return None
            b = Expr("({0} & 3)", resolve(operator.and_, b.ty, types.int64), [b], True)
        elif sym in ("<<", ">>"):  # a count below the width
            if not (is_int(b.ty) or is_bool(b.ty)):
                return None
            b = Expr("({0} & 63)", resolve(operator.and_, b.ty, types.int64), [b], True)
        if b.ty is None:
            return None
        t = resolve(fn, a.ty, b.ty)
        if t is None:
            return None
        if sym in ("<<", ">>") and not is_int(t):
            return None
        return Expr(f"({{0}} {sym} {{1}})", t, [a, b])

    def unary(self, depth):
        a = self._expr(depth - 1)
        if a is None:
            return None
        sym, fn = self.rng.choice([("-", operator.neg), ("~", operator.invert), ("abs", abs)])
        t = resolve(fn, a.ty)
        if t is None:
            return None
        return Expr("abs({0})" if sym == "abs" else f"({sym}{{0}})", t, [a])

    def mathcall(self, depth):
        r = self.rng
        if r.random() < 0.7:
            name = r.choice(_MATH1)
            a = self._expr(depth - 1)
            if a is None:
                return None
            t = resolve(getattr(math, name), a.ty)
            return Expr(f"math.{name}({{0}})", t, [a]) if t is not None else None
        name = r.choice(_MATH2)
        a, b = self._expr(depth - 1), self._expr(depth - 1)
        if a is None or b is None:
            return None
        t = resolve(getattr(math, name), a.ty, b.ty)
        return Expr(f"math.{name}({{0}}, {{1}})", t, [a, b]) if t is not None else None

    def minmax(self, depth):
        fn = self.rng.choice([min, max])
        a, b = self._expr(depth - 1), self._expr(depth - 1)
        if a is None or b is None or (is_bool(a.ty) and is_bool(b.ty)):
            return None
        t = resolve(fn, a.ty, b.ty)
        return Expr(f"{fn.__name__}({{0}}, {{1}})", t, [a, b]) if t is not None else None

    def index(self, depth):
        """An in-range index into an N_IN-element array: (e % N) or (e % N - N)."""
        from numba import types

        e = self.expr(depth, lambda t: is_int(t) or is_bool(t))
        t = resolve(operator.mod, e.ty, types.int64)
        if t is None or not is_int(t):
            return None
        if self.rng.random() < 0.3:
            return Expr(
                f"({{0}} % {N_IN} - {N_IN})", resolve(operator.sub, t, types.int64), [e], True
            )
        return Expr(f"({{0}} % {N_IN})", t, [e], True)


# --- statements ------------------------------------------------------------------------------


@dataclass
class Stmt:
    """A statement: `kernel` and `oracle` renderings (lists of lines) and nested blocks."""

    kind: str
    text: str  # with {0}.. for expressions
    exprs: list
    body: list = field(default_factory=list)
    orelse: list = field(default_factory=list)
    oracle_text: str | None = None

    def lines(self, target, ind):
        pad = "    " * ind
        t = self.oracle_text if target == "oracle" and self.oracle_text else self.text
        src = t.format(*(e.src() for e in self.exprs))
        out = [pad + s for s in src.split("\n")]
        if self.kind in ("if", "for", "while"):
            out += block_lines(self.body, target, ind + 1)
            if self.kind == "if" and self.orelse:
                out.append(pad + "else:")
                out += block_lines(self.orelse, target, ind + 1)
            if self.kind == "while":
                out.append(pad + "    " + self.text.split()[1] + " += 1")
        return out


def block_lines(stmts, target, ind):
    out = []
    for s in stmts:
        out += s.lines(target, ind)
    return out or ["    " * ind + "pass"]


@dataclass
class Case:
    """One fuzz case: its statements, the device functions it calls, what it stores where."""

    index: int
    stmts: list
    devfuncs: list  # (name, params, Expr)
    local_stmts: list  # phase before the barrier (NdRange kernels)


class CaseGen:
    def __init__(self, rng, k, arrays, scalars, nd):
        self.rng, self.k, self.nd = rng, k, nd
        self.arrays, self.scalars = arrays, scalars  # names -> dtype names
        self.nvars = 0
        self.nloops = 0
        self.devfuncs = []

    def base_scope(self):
        from numba import types

        scope = [leaf("i", types.int64)]
        if self.nd:
            scope.append(leaf("lid", types.int64))
        scope += [leaf(n, nbtype(t)) for n, t in self.scalars.items()]
        return scope

    def read(self, g):
        from numba import types

        name = self.rng.choice(list(self.arrays))
        idx = g.index(1) if self.rng.random() < 0.8 else leaf(f"(i % {N_IN})", types.int64)
        if idx is None:
            return None
        return Expr(f"{name}[{{0}}]", nbtype(self.arrays[name]), [idx])

    def scope_with_reads(self, scope):
        g = Gen(self.rng, scope)
        reads = [r for r in (self.read(g) for _ in range(3)) if r is not None]
        if self.nd:
            from numba import types

            c = self.rng.randrange(LOCAL)
            reads.append(leaf(f"lm[{self.k} * {LOCAL} + (lid + {c}) % {LOCAL}]", types.int64))
        return scope + reads

    def new_var(self, g, scope, stmts):
        e = g.expr(3)
        if e is None:
            return
        name = f"c{self.k}v{self.nvars}"
        self.nvars += 1
        stmts.append(Stmt("assign", f"{name} = {{0}}", [e]))
        scope.append(leaf(name, e.ty))

    def reassign(self, g, scope, stmts):
        vars_ = [v for v in scope if v.fmt.startswith(f"c{self.k}v")]
        if not vars_:
            return
        v = self.rng.choice(vars_)
        for _ in range(10):
            e = g.expr(2)
            if e is None:
                continue
            if self.rng.random() < 0.5:
                t = resolve(operator.add, v.ty, e.ty)
                if t == v.ty:
                    stmts.append(Stmt("assign", f"{v.fmt} += {{0}}", [e]))
                    return
            if e.ty == v.ty:
                stmts.append(Stmt("assign", f"{v.fmt} = {{0}}", [e]))
                return

    def store(self, g, stmts):
        slot = self.rng.randrange(SLOTS)
        base = f"i * {SLOTS * self.ncases} + {self.k * SLOTS + slot}"
        e = g.expr(3)
        if e is None:
            return
        arr = "out_f" if is_float(e.ty) else "out_i"
        stmts.append(Stmt("store", f"{arr}[{base}] = {{0}}", [e]))

    def atomic(self, g, stmts):
        from numba import types

        e = g.expr(2, lambda t: t == types.int64)  # AtomicRef takes the array's own type
        j = g.index(1)
        if e is None or j is None:
            return
        stmts.append(
            Stmt(
                "atomic",
                f"kapi_api.AtomicRef(acc, ({{1}}) % {ACC}).fetch_add({{0}})",
                [e, j],
                oracle_text=f"acc[({{1}}) % {ACC}] += {{0}}",
            )
        )

    def call(self, g, scope, stmts):
        a, b = g.expr(2), g.expr(2)
        if a is None or b is None:
            return
        name = f"c{self.k}f{len(self.devfuncs)}"
        body = Gen(self.rng, [leaf("x", a.ty), leaf("y", b.ty)]).expr(3)
        if body is None:
            return
        self.devfuncs.append((name, ("x", "y"), body))
        v = f"c{self.k}v{self.nvars}"
        self.nvars += 1
        stmts.append(Stmt("assign", f"{v} = {name}({{0}}, {{1}})", [a, b]))
        scope.append(leaf(v, body.ty))

    def block(self, scope, depth, n):
        stmts = []
        for _ in range(n):
            g = Gen(self.rng, scope)
            r = self.rng.random()
            if r < 0.35:
                self.store(g, stmts)
            elif r < 0.55:
                self.reassign(g, scope, stmts)
            elif r < 0.62:
                self.atomic(g, stmts)
            elif depth > 0 and r < 0.75:
                c = g.expr(2)
                if c is not None:
                    s = Stmt("if", "if {0}:", [c])
                    s.body = self.block(list(scope), depth - 1, self.rng.randint(1, 3))
                    if self.rng.random() < 0.6:
                        s.orelse = self.block(list(scope), depth - 1, self.rng.randint(1, 3))
                    stmts.append(s)
            elif depth > 0 and r < 0.87:
                from numba import types

                j = f"c{self.k}j{self.nloops}"
                self.nloops += 1
                inner = list(scope) + [leaf(j, types.int64)]
                if self.rng.random() < 0.5:
                    s = Stmt("for", f"for {j} in range({self.rng.randint(0, 4)}):", [])
                else:
                    lim = g.expr(1, lambda t: is_int(t) or is_bool(t))
                    s = Stmt("for", f"for {j} in range(({{0}}) & 3):", [lim])
                    if resolve(operator.and_, lim.ty, types.int64) is None:
                        continue
                s.body = self.block(inner, depth - 1, self.rng.randint(1, 3))
                stmts.append(s)
            elif depth > 0:
                from numba import types

                w = f"c{self.k}w{self.nloops}"
                self.nloops += 1
                stmts.append(Stmt("assign", f"{w} = 0", []))
                s = Stmt("while", f"while {w} < {self.rng.randint(0, 3)}:", [])
                s.body = self.block(list(scope) + [leaf(w, types.int64)], depth - 1, 2)
                stmts.append(s)
        return stmts

    def make(self, ncases):
        self.ncases = ncases
        scope = self.scope_with_reads(self.base_scope())
        local = []
        if self.nd:
            g = Gen(self.rng, [s for s in scope if not s.fmt.startswith("lm[")])
            e = g.expr(2, lambda t: is_int(t) or is_bool(t))
            local.append(Stmt("store", f"lm[{self.k} * {LOCAL} + lid] = {{0}}", [e]))
        stmts = []
        for _ in range(self.rng.randint(1, 3)):
            self.new_var(Gen(self.rng, scope), scope, stmts)
        if self.rng.random() < 0.3:
            self.call(Gen(self.rng, scope), scope, stmts)
        stmts += self.block(scope, 2, self.rng.randint(3, 7))
        for _ in range(2):  # every case stores something
            self.store(Gen(self.rng, scope), stmts)
        return Case(self.k, stmts, self.devfuncs, local)


# --- a kernel: many cases, rendered for kapi and for the oracle -------------------------------


@dataclass
class Program:
    nd: bool
    arrays: dict  # name -> dtype
    scalars: dict  # name -> dtype
    cases: list
    ncases: int  # slots are laid out for this many cases
    data_seed: int

    def params(self):
        p = ["out_i", "out_f", "acc", *self.arrays, *self.scalars]
        return p + (["lm"] if self.nd else [])

    def devfunc_src(self, target):
        out = []
        for c in self.cases:
            for name, params, body in c.devfuncs:
                deco = "@kapi.device_func" if target == "kapi" else "@numba.njit"
                out += [deco, f"def {name}({', '.join(params)}):", f"    return {body.src()}", ""]
        return out

    def kernel_src(self):
        lines = [
            "import math",
            "import numba",
            "import kapi",
            "from kapi import kernel_api as kapi_api",
            "",
        ]
        lines += self.devfunc_src("kapi")
        lines.append(f"def fuzz_kernel(item, {', '.join(self.params())}):")
        if self.nd:
            lines += ["    i = item.get_global_id(0)", "    lid = item.get_local_id(0)"]
            for c in self.cases:
                lines += block_lines(c.local_stmts, "kapi", 1)
            lines.append("    kapi_api.group_barrier(item.get_group())")
        else:
            lines.append("    i = item.get_id(0)")
        for c in self.cases:
            lines += block_lines(c.stmts, "kapi", 1)
        return "\n".join(lines) + "\n"

    def oracle_src(self):
        lines = ["import math", "import numba", ""]
        lines += self.devfunc_src("oracle")
        lines.append("@numba.njit")
        lines.append(f"def fuzz_oracle(n, {', '.join(self.params())}):")
        if self.nd:
            lines += [f"    for g in range(n // {LOCAL}):"]
            lines += [f"        for lid in range({LOCAL}):", f"            i = g * {LOCAL} + lid"]
            for c in self.cases:
                lines += block_lines(c.local_stmts, "oracle", 3)
            lines += [f"        for lid in range({LOCAL}):", f"            i = g * {LOCAL} + lid"]
            for c in self.cases:
                lines += block_lines(c.stmts, "oracle", 3)
        else:
            lines.append("    for i in range(n):")
            for c in self.cases:
                lines += block_lines(c.stmts, "oracle", 2)
        return "\n".join(lines) + "\n"

    def inputs(self):
        rng = np.random.default_rng(self.data_seed)
        arrays = {n: values(rng, t, N_IN) for n, t in self.arrays.items()}
        scalars = {n: values(rng, t, 1)[0] for n, t in self.scalars.items()}
        return arrays, scalars


def values(rng, dtype, n):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        special = [0, 1, 2, 3, int(info.max), int(info.min), int(info.max) - 1]
        special = np.array(special + ([-1, -2, -7] if dt.kind == "i" else []), dtype=dt)
        small = rng.integers(max(int(info.min), -20), min(int(info.max), 20), n, endpoint=True)
        full = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
        pick = rng.random(n)
        out = np.where(pick < 0.5, small.astype(dt), full)
        return np.where(pick > 0.85, rng.choice(special, n), out).astype(dt)
    special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 1e30, -1e-30, np.inf, -np.inf, np.nan])
    pick = rng.random(n)
    out = np.where(pick < 0.6, rng.normal(0, 10, n), rng.uniform(-1e6, 1e6, n))
    out = np.where(pick > 0.9, rng.choice(special, n), out)
    return out.astype(dt)


def random_program(rng: random.Random, ncases: int) -> Program:
    nd = rng.random() < 0.25
    arrays = {f"a_{t}": t for t in rng.sample(DTYPES, rng.randint(2, 5))}
    scalars = {f"s_{t}": t for t in rng.sample(DTYPES, rng.randint(1, 3))}
    cases = [CaseGen(rng, k, arrays, scalars, nd).make(ncases) for k in range(ncases)]
    return Program(nd, arrays, scalars, cases, ncases, rng.randrange(2**32))


# --- running ---------------------------------------------------------------------------------


def load(src, name, filename):
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    return ns[name]


def run_oracle(p: Program):
    fn = load(p.oracle_src(), "fuzz_oracle", "<fuzz-oracle>")
    arrays, scalars = p.inputs()
    out_i, out_f, acc = outputs(p)
    extra = [np.zeros(p.ncases * LOCAL, np.int64)] if p.nd else []
    scal = [np.dtype(t).type(v) for v, t in zip(scalars.values(), p.scalars.values(), strict=True)]
    fn(N_ITEMS, out_i, out_f, acc, *arrays.values(), *scal, *extra)
    return out_i, out_f, acc


def outputs(p):
    n = N_ITEMS * SLOTS * p.ncases
    return np.zeros(n, np.int64), np.zeros(n, np.float64), np.zeros(ACC, np.int64)


_SRC_SEQ = [0]
LAST_KERNEL = [None]


def run_kapi(p: Program, dev):
    import kapi

    _SRC_SEQ[0] += 1
    filename = f"<fuzz-kernel-{_SRC_SEQ[0]}>"
    src = p.kernel_src()
    import linecache

    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    k = kapi.kernel(load(src, "fuzz_kernel", filename))
    arrays, scalars = p.inputs()
    out_i, out_f, acc = outputs(p)
    d = {
        n: kapi.asarray(a, device=dev)
        for n, a in zip(("out_i", "out_f", "acc"), (out_i, out_f, acc), strict=True)
    }
    args = [d["out_i"], d["out_f"], d["acc"]]
    args += [kapi.asarray(a, device=dev) for a in arrays.values()]
    args += [np.dtype(t).type(v) for v, t in zip(scalars.values(), p.scalars.values(), strict=True)]
    if p.nd:
        args.append(kapi.kernel_api.LocalAccessor(p.ncases * LOCAL, dtype=np.int64))
        space = kapi.NdRange((N_ITEMS,), (LOCAL,))
    else:
        space = kapi.Range(N_ITEMS)
    kapi.call_kernel(k, space, *args)
    return d["out_i"].asnumpy(), d["out_f"].asnumpy(), d["acc"].asnumpy()


def float_close(a, b):
    """Elementwise: equal, both NaN, or within a relative 1e-5 (math functions differ by ulps
    between libm and kapi's builtins, and later operations may grow the difference a little)."""
    with np.errstate(all="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        tol = 1e-5 * np.maximum(np.abs(a), np.abs(b))
        return same | (np.abs(a - b) <= tol)


def bad_cases(p: Program, got, want):
    """Indices of the cases whose outputs differ (all cases when the accumulator differs)."""
    gi, gf, ga = got
    wi, wf, wa = want
    per = SLOTS * p.ncases
    bad = set()
    for arr_ok in ((gi == wi), float_close(gf, wf)):
        for j in np.nonzero(~arr_ok)[0]:
            bad.add(int(j % per) // SLOTS)
    if not (ga == wa).all():
        bad |= {c.index for c in p.cases if any(s.kind == "atomic" for s in walk(c.stmts))}
    return sorted(bad)


def walk(stmts):
    for s in stmts:
        yield s
        yield from walk(s.body)
        yield from walk(s.orelse)


def outcome(p: Program, dev):
    """('ok'|'mismatch'|'kapi-error'|'oracle-error', detail, bad case indices)."""
    try:
        want = run_oracle(p)
    except Exception as e:  # the generator wrote something Numba rejects: not kapi's fault
        return "oracle-error", f"{type(e).__name__}: {e}", []
    try:
        got = run_kapi(p, dev)
    except Exception as e:
        return "kapi-error", f"{type(e).__name__}: {e}", [c.index for c in p.cases]
    bad = bad_cases(p, got, want)
    return ("mismatch" if bad else "ok"), "", bad


# --- minimising ------------------------------------------------------------------------------


def only_case(p: Program, case: Case) -> Program:
    return Program(p.nd, p.arrays, p.scalars, [case], p.ncases, p.data_seed)


def still_fails(p: Program, dev, kind):
    k, _, bad = outcome(p, dev)
    return k == kind and bool(bad)


def minimise(p: Program, dev, kind, budget_s=60.0):
    """Drops statements and replaces expressions by same-typed parts while the failure stays."""
    deadline = time.time() + budget_s
    changed = True
    while changed and time.time() < deadline:
        changed = False
        case = p.cases[0]
        for blk in blocks(case):  # drop statements, last first
            for j in range(len(blk) - 1, -1, -1):
                if time.time() > deadline:
                    return p
                s = blk.pop(j)
                if still_fails(p, dev, kind):
                    changed = True
                else:
                    blk.insert(j, s)
        for s in list(walk(case.stmts)) + list(walk(case.local_stmts)):
            for ei, e in enumerate(s.exprs):
                for node, parent, ki in list(expr_slots(e)):
                    for kid in node.kids:
                        if node.guard or kid.ty != node.ty or time.time() > deadline:
                            continue
                        old = parent.kids[ki] if parent else s.exprs[ei]
                        if parent:
                            parent.kids[ki] = kid
                        else:
                            s.exprs[ei] = kid
                        if still_fails(p, dev, kind):
                            changed = True
                            break
                        if parent:
                            parent.kids[ki] = old
                        else:
                            s.exprs[ei] = old
    return p


def blocks(case):
    out = [case.stmts]
    for s in walk(case.stmts):
        out += [s.body, s.orelse]
    return [b for b in out if b]


def expr_slots(e, parent=None, ki=None):
    yield e, parent, ki
    for i, k in enumerate(e.kids):
        yield from expr_slots(k, e, i)


# --- regression files ------------------------------------------------------------------------


def save_regression(p: Program, kind, detail, outdir, tag):
    os.makedirs(outdir, exist_ok=True)
    arrays, scalars = p.inputs()
    rec = {
        "kind": kind,
        "detail": detail,
        "nd": p.nd,
        "ncases": p.ncases,
        "arrays": {
            n: [t, a.tolist()]
            for n, a, t in zip(arrays, arrays.values(), p.arrays.values(), strict=True)
        },
        "scalars": {
            n: [t, v.item()]
            for n, v, t in zip(scalars, scalars.values(), p.scalars.values(), strict=True)
        },
        "kernel": p.kernel_src(),
        "oracle": p.oracle_src(),
        "xfail": "found by the fuzzer; not fixed yet",
    }
    path = os.path.join(outdir, f"{tag}.json")
    with open(path, "w") as f:
        json.dump(rec, f, indent=1, default=str)
    return path


def replay(rec, dev):
    """Runs a saved regression: (kapi outputs, oracle outputs) or raises kapi's error."""
    import kapi

    nd, ncases = rec["nd"], rec["ncases"]
    arrays = {n: np.array(v, dtype=t) for n, (t, v) in rec["arrays"].items()}
    scalars = [np.dtype(t).type(v) for t, v in rec["scalars"].values()]
    n = N_ITEMS * SLOTS * ncases
    want = (np.zeros(n, np.int64), np.zeros(n, np.float64), np.zeros(ACC, np.int64))
    extra = [np.zeros(ncases * LOCAL, np.int64)] if nd else []
    load(rec["oracle"], "fuzz_oracle", "<fuzz-oracle>")(
        N_ITEMS, *want, *arrays.values(), *scalars, *extra
    )
    k = kapi.kernel(load(rec["kernel"], "fuzz_kernel", "<fuzz-regression>"))
    LAST_KERNEL[0] = k  # for callers that inspect what was compiled
    outs = [kapi.asarray(np.zeros_like(w), device=dev) for w in want]
    args = outs + [kapi.asarray(a, device=dev) for a in arrays.values()] + scalars
    if nd:
        args.append(kapi.kernel_api.LocalAccessor(ncases * LOCAL, dtype=np.int64))
    space = kapi.NdRange((N_ITEMS,), (LOCAL,)) if nd else kapi.Range(N_ITEMS)
    kapi.call_kernel(k, space, *args)
    return tuple(o.asnumpy() for o in outs), want


def compare(got, want):
    return (
        (got[0] == want[0]).all()
        and float_close(got[1], want[1]).all()
        and (got[2] == want[2]).all()
    )


# --- the driver ------------------------------------------------------------------------------


def fuzz(kernels, seed, ncases, devices, outdir=None, log=print, budget_s=None, minimise_s=60):
    """Runs `kernels` random kernels of `ncases` cases on each device. Returns a summary dict."""
    rng = random.Random(seed)
    start = time.time()
    summary = {"kernels": 0, "cases": 0, "oracle_errors": 0, "findings": []}
    for n in range(kernels):
        if budget_s and time.time() - start > budget_s:
            break
        p = random_program(rng, ncases)
        for dev in devices:
            kind, detail, bad = outcome(p, dev)
            if kind == "oracle-error":
                summary["oracle_errors"] += 1
                break
            if kind == "ok":
                continue
            for ci in bad[:3]:
                small = only_case(p, p.cases[ci])
                k2, d2, b2 = outcome(small, dev)
                if k2 not in ("mismatch", "kapi-error"):
                    continue  # only fails together with other cases: keep the whole kernel
                small = minimise(small, dev, k2, minimise_s)
                k3, d3, _ = outcome(small, dev)
                tag = f"seed{seed}_k{n}_c{ci}_{dev.filter_string.replace(':', '_')}"
                path = save_regression(small, k3, d3, outdir, tag) if outdir else None
                summary["findings"].append(
                    {"kernel": n, "case": ci, "kind": k3, "detail": d3[:300], "file": path}
                )
                where = f"kernel {n} case {ci} on {dev.filter_string}"
                log(f"finding: {where}: {k3} {d3[:200]} -> {path}")
        else:
            summary["kernels"] += 1
            summary["cases"] += ncases
    summary["seconds"] = round(time.time() - start, 1)
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kernels", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=8, help="cases batched into one kernel")
    ap.add_argument("--out", default="fuzz-findings", help="where minimised findings go")
    ap.add_argument("--device", action="append", help="filter string (default: every device)")
    ap.add_argument("--budget", type=float, default=None, help="stop after this many seconds")
    a = ap.parse_args(argv)
    import kapi

    devs = [kapi.Device(f) for f in a.device] if a.device else kapi.devices()
    print(f"devices: {[d.filter_string for d in devs]}")
    try:
        s = fuzz(a.kernels, a.seed, a.cases, devs, a.out, budget_s=a.budget)
    except Exception:
        traceback.print_exc()
        return 2
    print(json.dumps(s, indent=1))
    return 1 if s["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
