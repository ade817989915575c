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
tests/reliability/test_fuzz.py replays.

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

import ksim
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


_SIGS = {}


def resolve_sig(fn, *argtypes):
    """Numba's signature of fn(*argtypes) (what the reference interpreter, ksim, follows), or
    None when Numba rejects it. Remembered: the generator asks the same few thousand questions
    over and over, and Numba's answer costs ~0.1 ms."""
    if any(t is None for t in argtypes):
        return None
    key = (fn, argtypes)
    if key not in _SIGS:
        try:
            _SIGS[key] = typing_context().resolve_function_type(fn, argtypes, {})
        except Exception:
            _SIGS[key] = None
    return _SIGS[key]


def resolve(fn, *argtypes):
    """Numba's result type of fn(*argtypes), or None when Numba rejects it."""
    sig = resolve_sig(fn, *argtypes)
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
    op: str = "var"  # what ksim evaluates: var lit bin un read math min max guard imod lm
    val: object = None  # the literal, operator symbol, array or function name, guard chain
    sig: object = None  # Numba's signature of the operation

    def src(self):
        return self.fmt.format(*(k.src() for k in self.kids))

    def nodes(self):
        yield self
        for k in self.kids:
            yield from k.nodes()


def is_const(e):
    """Names no variable, array or call: Python would fold an operator over it at compile time
    (to ints of any size), so operators never take only such operands."""
    return all(k.op in ("lit", "bin", "un", "guard") for k in e.nodes())


def leaf(src, ty, op="var", val=None):
    return Expr(src.replace("{", "{{").replace("}", "}}"), ty, op=op, val=val)


def literal(v):
    from numba import types

    src = f"({v!r})" if v < 0 else repr(v)  # -1 ** k is -(1 ** k)
    return leaf(src, types.int64 if isinstance(v, int) else types.float64, "lit", v)


def guard(fmt, e, *chain):
    """A guard (divisor, exponent, count, index) over e: `chain` holds (symbol, literal) steps
    that ksim replays with Numba's signatures. Its type, or None where Numba rejects it."""
    steps, t = [], e.ty
    for sym, lit in chain:
        lt = literal(lit).ty if lit is not None else None
        sig = resolve_sig(abs, t) if sym == "abs" else resolve_sig(_SYMS[sym], t, lt)
        if sig is None:
            return None
        steps.append((sym, sig, lit, lt))
        t = sig.return_type
    return Expr(fmt, t, [e], True, "guard", steps)


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
_SYMS = dict(_BINOPS)
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
            return literal(r.choice([0, 1, 2, 3, 7, -1, -5, 100, 255, 2**31, -(2**40)]))
        return literal(r.choice([0.5, 1.0, -2.25, 3.0, 1e10, -1e-3]))

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
        # Divisors are never zero: ints get their low bit set, floats are >= 1 (or NaN).
        if sym in ("/", "//", "%"):
            if is_float(b.ty):
                b = guard("(abs({0}) + 1.0)", b, ("abs", None), ("+", 1.0))
            else:
                b = guard("({0} | 1)", b, ("|", 1))
        elif sym == "**":  # a small non-negative integer exponent
            if not (is_int(b.ty) or is_bool(b.ty)):
                return None
            b = guard("({0} & 3)", b, ("&", 3))
        elif sym in ("<<", ">>"):  # a count below the width
            if not (is_int(b.ty) or is_bool(b.ty)):
                return None
            b = guard("({0} & 63)", b, ("&", 63))
        if b is None or b.ty is None:
            return None
        sig = resolve_sig(fn, a.ty, b.ty)
        if sig is None:
            return None
        if sym in ("<<", ">>") and not is_int(sig.return_type):
            return None
        return Expr(f"({{0}} {sym} {{1}})", sig.return_type, [a, b], op="bin", val=sym, sig=sig)

    def unary(self, depth):
        a = self._expr(depth - 1)
        if a is None:
            return None
        sym, fn = self.rng.choice([("-", operator.neg), ("~", operator.invert), ("abs", abs)])
        if sym != "abs" and is_const(a):
            return None  # Python would fold it
        sig = resolve_sig(fn, a.ty)
        if sig is None:
            return None
        fmt = "abs({0})" if sym == "abs" else f"({sym}{{0}})"
        name = {"-": "neg", "~": "inv", "abs": "abs"}[sym]
        return Expr(fmt, sig.return_type, [a], op="un", val=name, sig=sig)

    def mathcall(self, depth):
        r = self.rng
        if r.random() < 0.7:
            name = r.choice(_MATH1)
            a = self._expr(depth - 1)
            if a is None:
                return None
            sig = resolve_sig(getattr(math, name), a.ty)
            if sig is None:
                return None
            return Expr(f"math.{name}({{0}})", sig.return_type, [a], op="math", val=name, sig=sig)
        name = r.choice(_MATH2)
        a, b = self._expr(depth - 1), self._expr(depth - 1)
        if a is None or b is None:
            return None
        sig = resolve_sig(getattr(math, name), a.ty, b.ty)
        if sig is None:
            return None
        fmt = f"math.{name}({{0}}, {{1}})"
        return Expr(fmt, sig.return_type, [a, b], op="math", val=name, sig=sig)

    def minmax(self, depth):
        fn = self.rng.choice([min, max])
        a, b = self._expr(depth - 1), self._expr(depth - 1)
        if a is None or b is None or (is_bool(a.ty) and is_bool(b.ty)):
            return None
        sig = resolve_sig(fn, a.ty, b.ty)
        if sig is None:
            return None
        fmt = f"{fn.__name__}({{0}}, {{1}})"
        return Expr(fmt, sig.return_type, [a, b], op=fn.__name__, val=None, sig=sig)

    def index(self, depth):
        """An in-range index into an N_IN-element array: (e % N) or (e % N - N)."""
        from numba import types

        e = self.expr(depth, lambda t: is_int(t) or is_bool(t))
        t = resolve(operator.mod, e.ty, types.int64)
        if t is None or not is_int(t):
            return None
        if self.rng.random() < 0.3:
            return guard(f"({{0}} % {N_IN} - {N_IN})", e, ("%", N_IN), ("-", N_IN))
        return guard(f"({{0}} % {N_IN})", e, ("%", N_IN))


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
    meta: dict = field(default_factory=dict)  # what ksim needs: variable, slot, loop count

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
    devfuncs: list  # (name, params, Expr, parameter types)
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
        if self.rng.random() < 0.8:
            idx = g.index(1)
        else:
            idx = leaf(f"(i % {N_IN})", types.int64, "imod", N_IN)
        if idx is None:
            return None
        return Expr(f"{name}[{{0}}]", nbtype(self.arrays[name]), [idx], op="read", val=name)

    def scope_with_reads(self, scope):
        g = Gen(self.rng, scope)
        reads = [r for r in (self.read(g) for _ in range(3)) if r is not None]
        if self.nd:
            from numba import types

            c = self.rng.randrange(LOCAL)
            src = f"lm[{self.k} * {LOCAL} + (lid + {c}) % {LOCAL}]"
            reads.append(leaf(src, types.int64, "lm", (LOCAL, c)))
        return scope + reads

    def new_var(self, g, scope, stmts):
        e = g.expr(3)
        if e is None:
            return
        name = f"c{self.k}v{self.nvars}"
        self.nvars += 1
        stmts.append(Stmt("assign", f"{name} = {{0}}", [e], meta={"var": name, "mode": "="}))
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
                sig = resolve_sig(operator.iadd, v.ty, e.ty)
                if sig is not None and sig.return_type == v.ty:
                    meta = {"var": v.fmt, "mode": "+=", "sig": sig, "ty": v.ty}
                    stmts.append(Stmt("assign", f"{v.fmt} += {{0}}", [e], meta=meta))
                    return
            if e.ty == v.ty:
                meta = {"var": v.fmt, "mode": "="}
                stmts.append(Stmt("assign", f"{v.fmt} = {{0}}", [e], meta=meta))
                return

    def store(self, g, stmts):
        slot = self.rng.randrange(SLOTS)
        base = f"i * {SLOTS * self.ncases} + {self.k * SLOTS + slot}"
        e = g.expr(3)
        if e is None:
            return
        arr = "out_f" if is_float(e.ty) else "out_i"
        meta = {"arr": arr, "slot": self.k * SLOTS + slot}
        stmts.append(Stmt("store", f"{arr}[{base}] = {{0}}", [e], meta=meta))

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
        self.devfuncs.append((name, ("x", "y"), body, (a.ty, b.ty)))
        v = f"c{self.k}v{self.nvars}"
        self.nvars += 1
        meta = {"var": v, "mode": "call", "func": name}
        stmts.append(Stmt("assign", f"{v} = {name}({{0}}, {{1}})", [a, b], meta=meta))
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
                    n = self.rng.randint(0, 4)
                    s = Stmt("for", f"for {j} in range({n}):", [], meta={"var": j, "n": n})
                else:
                    lim = g.expr(1, lambda t: is_int(t) or is_bool(t))
                    sig = resolve_sig(operator.and_, lim.ty, types.int64)
                    if sig is None or resolve(range, sig.return_type) is None:
                        continue
                    meta = {"var": j, "sig": sig, "lt": types.int64}
                    s = Stmt("for", f"for {j} in range(({{0}}) & 3):", [lim], meta=meta)
                s.body = self.block(inner, depth - 1, self.rng.randint(1, 3))
                stmts.append(s)
            elif depth > 0:
                from numba import types

                w = f"c{self.k}w{self.nloops}"
                self.nloops += 1
                stmts.append(Stmt("assign", f"{w} = 0", [], meta={"var": w, "mode": "zero"}))
                n = self.rng.randint(0, 3)
                s = Stmt("while", f"while {w} < {n}:", [], meta={"var": w, "n": n})
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
            local.append(Stmt("lstore", f"lm[{self.k} * {LOCAL} + lid] = {{0}}", [e]))
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
            for name, params, body, _ in c.devfuncs:
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


def _oracle_call(p: Program):
    """The Numba oracle of p and the arguments of its call."""
    fn = load(p.oracle_src(), "fuzz_oracle", "<fuzz-oracle>")
    arrays, scalars = p.inputs()
    out_i, out_f, acc = outputs(p)
    extra = [np.zeros(p.ncases * LOCAL, np.int64)] if p.nd else []
    scal = [np.dtype(t).type(v) for v, t in zip(scalars.values(), p.scalars.values(), strict=True)]
    return fn, (N_ITEMS, out_i, out_f, acc, *arrays.values(), *scal, *extra)


def run_oracle(p: Program):
    fn, args = _oracle_call(p)
    fn(*args)
    return args[1:4]


def numba_compiles(p: Program) -> bool:
    """Whether Numba's front end accepts p's oracle (compiled, not run: where ksim saw a signed
    overflow, Numba's code is undefined and may trap)."""
    import numba

    fn, args = _oracle_call(p)
    try:
        fn.compile(tuple(numba.typeof(a) for a in args))
    except Exception:
        return False
    return True


def outputs(p):
    n = N_ITEMS * SLOTS * p.ncases
    return np.zeros(n, np.int64), np.zeros(n, np.float64), np.zeros(ACC, np.int64)


_SRC_SEQ = [0]
LAST_KERNEL = [None]


def make_kernel(p: Program):
    """p's kernel as a kapi dispatcher (compiled at its first launch, once for every device),
    its source registered for messages under a name forget_kernel drops again."""
    import linecache

    import kapi

    _SRC_SEQ[0] += 1
    filename = f"<fuzz-kernel-{_SRC_SEQ[0]}>"
    src = p.kernel_src()
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    k = kapi.kernel(load(src, "fuzz_kernel", filename))
    k.fuzz_filename = filename
    return k


def forget_kernel(k):
    import linecache

    linecache.cache.pop(k.fuzz_filename, None)  # 10^4 kernels' sources add up


def run_kapi(p: Program, dev, k=None):
    import kapi

    if k is None:
        k = make_kernel(p)
        try:
            return run_kapi(p, dev, k)
        finally:
            forget_kernel(k)
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


def bad_cases(p: Program, got, want, ignore=()):
    """Indices of the cases whose outputs differ (all cases with atomics when the accumulator
    differs), leaving out the cases in `ignore` (and the accumulator, if one of those has
    atomics)."""
    gi, gf, ga = got
    wi, wf, wa = want
    per = SLOTS * p.ncases
    bad = set()
    for arr_ok in ((gi == wi), float_close(gf, wf)):
        for j in np.nonzero(~arr_ok)[0]:
            bad.add(int(j % per) // SLOTS)
    atomics = {c.index for c in p.cases if any(s.kind == "atomic" for s in walk(c.stmts))}
    if not (ga == wa).all() and not atomics & set(ignore):
        bad |= atomics
    return sorted(bad - set(ignore))


def walk(stmts):
    for s in stmts:
        yield s
        yield from walk(s.body)
        yield from walk(s.orelse)


def reference(p: Program):
    """(outputs, judge): ksim's where Numba's are undefined (a signed overflow), else Numba's
    (raises what Numba raises)."""
    try:
        outs, undefined, _ = run_sim(p)
        if undefined:
            return outs, "ksim"
    except ksim.Unsupported:
        pass
    return run_oracle(p), "numba"


def outcome(p: Program, dev):
    """('ok'|'mismatch'|'kapi-error'|'oracle-error', detail, bad case indices)."""
    try:
        want, _ = reference(p)
    except Exception as e:  # the generator wrote something Numba rejects: not kapi's fault
        return "oracle-error", f"{type(e).__name__}: {e}", []
    try:
        got = run_kapi(p, dev)
    except Exception as e:
        return "kapi-error", f"{type(e).__name__}: {e}", [c.index for c in p.cases]
    bad = bad_cases(p, got, want)
    ulps = explained(p, got, bad, {}, contracts(dev))  # minimising must not shrink a bug
    bad = [c for c in bad if c not in ulps]
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
    try:
        outs, judge = reference(p)
    except Exception:
        judge = "numba"
    if judge == "ksim":  # Numba's answer is undefined (signed overflow): keep ksim's
        rec["expect"] = [o.tolist() for o in outs]
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
    if "expect" in rec:  # ksim's wrap-around answer where Numba's is undefined
        want = tuple(np.array(v, dtype=w.dtype) for v, w in zip(rec["expect"], want, strict=True))
    else:
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


def run_sim(p: Program):
    """The reference interpreter's outputs, the cases where Numba's are undefined (signed
    overflow, see ksim.OVERFLOW) and the ill-conditioned ones (ksim.ILL);
    ksim.Unsupported where it cannot model p."""
    devf = {d[0]: (d[1], d[2], d[3]) for c in p.cases for d in c.devfuncs}
    sim = ksim.Sim(p, N_ITEMS, LOCAL, SLOTS, ACC, devf)
    with np.errstate(all="ignore"):
        outs = sim.run()
    return outs, sorted(sim.undefined), sorted(sim.ill)


PERTURB_RUNS = 10  # ksim reruns of a differing kernel, transcendental results moved by ulps
WIDE_RUNS = 300  # and of a case outside their hull, before it is reported


def math_cases(p: Program, contract=False):
    """Indices of the cases with an ulp-sensitive operation (directly or in a device
    function): the only ones the devices' own math libraries can make differ."""

    def uses(e):
        return any(ksim.ulp_sensitive(n, contract) for n in e.nodes())

    out = set()
    for c in p.cases:
        exprs = [e for s in list(walk(c.stmts)) + list(walk(c.local_stmts)) for e in s.exprs]
        if any(uses(e) for e in exprs + [d[2] for d in c.devfuncs]):
            out.add(c.index)
    return out


def perturbed_hull(p: Program, contract=False, runs=PERTURB_RUNS):
    """Per output element, the range of ksim's answers when every transcendental (and float
    `**`) result is moved by up to ksim.MAX_ULPS ulps (all the same way, then at random per
    call), as (lo, hi) for out_i and acc and (lo, hi, NaN possible) for out_f; None when ksim
    cannot run p. What a device's libdevice or libmvec may legitimately give lies inside it.
    With `contract`, float products move by up to an ulp as well (ksim.CONTRACT)."""
    rng = random.Random(f"kfuzz/perturb/{p.data_seed}")
    m = ksim.MAX_ULPS
    steps = [(lambda k=k: k) for k in (-m, -1, 1, m)]
    steps += [lambda: rng.randint(-m, m)] * (runs - len(steps))
    outs = []
    try:
        outs.append(run_sim(p)[0])
        ksim.CONTRACT[0] = contract
        for step in steps:
            ksim.PERTURB[0] = step
            outs.append(run_sim(p)[0])
    except ksim.Unsupported:
        return None
    finally:
        ksim.PERTURB[0] = None
        ksim.CONTRACT[0] = False
    ints, floats, acc = (np.stack([r[a] for r in outs]) for a in range(3))
    with np.errstate(invalid="ignore"):
        return (
            (ints.min(0), ints.max(0)),
            (np.fmin.reduce(floats), np.fmax.reduce(floats), np.isnan(floats).any(0)),
            (acc.min(0), acc.max(0)),
        )


def within_hull(p: Program, got, hull, c):
    """Whether case c's outputs in `got` (and the accumulator, if c has atomics) all lie in
    the perturbed hull, within the comparison's float tolerance.

    Ten reruns sample the libraries' freedom; they do not bound it. Where they spread an
    output, the ulps are magnified chaotically (exp(127) % 1.5, a branch on hypot(a, b) - a)
    and the true range is wider than the samples: such an element's hull is widened by its
    own width on each side (on the H100, libdevice's exp(int8) % (|sin| + 1) fell just
    outside the sampled range; seed 6000 kernel 23241). An accumulator the reruns moved at
    all is a sum over work-items of such outputs, each moved its own way, whose combinations
    ten samples cannot cover: it is not judged (kernel 18954). Outputs the reruns left in
    place get no slack beyond the float tolerance."""
    per = SLOTS * p.ncases
    mine = (np.arange(len(got[0])) % per) // SLOTS == c
    (ilo, ihi), (flo, fhi, fnan), (alo, ahi) = hull
    gi, gf = got[0][mine], got[1][mine]
    lo_i, hi_i = ilo[mine].astype(object), ihi[mine].astype(object)  # no wrap-around
    w_i = hi_i - lo_i
    if not ((gi >= lo_i - w_i) & (gi <= hi_i + w_i)).all():
        return False
    lo, hi = flo[mine], fhi[mine]
    with np.errstate(all="ignore"):
        w = np.where(np.isfinite(hi - lo), hi - lo, 0.0)
        tol = 1e-5 * np.fmax(np.abs(lo), np.abs(hi))
        tol = np.where(np.isfinite(tol), tol, 0.0)
        inside = (gf >= lo - w - tol) & (gf <= hi + w + tol)
    if not (inside | (np.isnan(gf) & fnan[mine])).all():
        return False
    case = next(x for x in p.cases if x.index == c)
    if any(s.kind == "atomic" for s in walk(case.stmts)):
        return bool((alo != ahi).any() or ((got[2] >= alo) & (got[2] <= ahi)).all())
    return True


def explained(p: Program, got, cases, ref, contract=False):
    """The cases among `cases` whose difference the devices' math libraries explain (they call
    a transcendental function and lie in the perturbed hull, computed once into ref); with
    `contract`, CUDA's fused multiply-adds too.

    A case outside the hull of PERTURB_RUNS reruns is judged again on WIDE_RUNS of them: where
    the ulps are magnified into an exponent (exp of a sum of `x % (|cos| + 1)`, seed 7000
    kernel 237421 on the H100), ten samples and their widening cover a fraction of what a
    library within the ulp model gives, and 300 cover it (tests/reliability/test_fuzz.py)."""
    cand = [c for c in cases if c in math_cases(p, contract)]
    if not cand or got is None:
        return []
    left = cand  # the cases no hull has explained yet
    for runs in (PERTURB_RUNS, WIDE_RUNS):
        if not left:
            break
        key = ("hull", contract, runs)
        if key not in ref:
            ref[key] = perturbed_hull(p, contract, runs)
        if ref[key] is None:
            break
        left = [c for c in left if not within_hull(p, got, ref[key], c)]
    return [c for c in cand if c not in left]


def contracts(dev):
    """Whether dev fuses multiplies and adds (the CUDA driver's PTX, finalise_nvptx.c)."""
    return str(getattr(dev, "filter_string", dev)).startswith("cuda")


def kernel_rng(seed, n):
    """Kernel n of a run is the same program whatever the order, job count or first kernel
    (so a run resumes, or splits over processes, by kernel number)."""
    return random.Random(f"kfuzz/{seed}/{n}")


def new_summary():
    return {
        "kernels": 0,  # compiled and compared on every device
        "cases": 0,
        "oracle_errors": 0,  # the generator wrote something Numba rejects (not counted above)
        "numba_checked": 0,  # kernels whose reference came from (or was checked by) Numba
        "sim_unsupported": 0,
        "numba_undefined": 0,  # cases judged by ksim alone (a signed overflow; see ksim)
        "ill_conditioned": 0,  # differing cases the math libraries explain (perturbed_hull)
        "sim_disagreements": [],  # the interpreter differed from Numba: a ksim bug
        "findings": [],
    }


def merge(total, part):
    for k, v in part.items():
        if k in total and k != "seconds":
            total[k] = total[k] + v
    return total


def fuzz(
    kernels,
    seed,
    ncases,
    devices,
    outdir=None,
    log=print,
    budget_s=None,
    minimise_s=60,
    first=0,
    check_every=50,
    step=1,
):
    """Runs kernels first, first+step, .. (`kernels` of them) of run `seed`, `ncases` cases
    each, on each device. The reference is ksim's interpreter; every `check_every`-th kernel,
    and every kernel whose outputs differ from it, is also run by the Numba oracle (which
    decides; a ksim/Numba difference is reported as a simulator bug). Returns a summary."""
    start = time.time()
    summary = new_summary()
    for n in range(first, first + kernels * step, step):
        if budget_s and time.time() - start > budget_s:
            break
        p = random_program(kernel_rng(seed, n), ncases)
        if one_kernel(p, n, seed, devices, outdir, log, minimise_s, check_every, summary):
            summary["kernels"] += 1
            summary["cases"] += ncases
    summary["seconds"] = round(time.time() - start, 1)
    return summary


def one_kernel(p, n, seed, devices, outdir, log, minimise_s, check_every, summary):
    """Checks kernel n on every device; False when Numba rejects it (not counted).

    A case's judge is Numba, except where Numba's answer is undefined (a signed overflow under
    its `nsw` flags: ksim's wrap-around, which kapi implements, decides) or where ksim and
    Numba disagree (reported in sim_disagreements: kapi fails only if it agrees with
    neither)."""
    ref = {"sim": None, "undefined": [], "ill": [], "numba": None, "disputed": []}
    try:
        ref["sim"], ref["undefined"], ref["ill"] = run_sim(p)
    except ksim.Unsupported:
        summary["sim_unsupported"] += 1
    summary["numba_undefined"] += len(ref["undefined"])
    # The periodic check of ksim against Numba skips kernels where ksim saw a signed overflow:
    # Numba's code is undefined there and may trap (SIGFPE of an sdiv LLVM made from a floor
    # division after an `nsw` overflow killed a worker: seed 5000 kernel 48800).
    check = n % check_every == 0 and not ref["undefined"]
    if (ref["sim"] is None or check) and not numba_ref(p, n, seed, ref, summary, outdir, log):
        return False
    k = make_kernel(p)  # one front-end compile for every device
    try:
        return check_devices(p, n, seed, devices, outdir, log, minimise_s, summary, ref, k)
    finally:
        forget_kernel(k)


def check_devices(p, n, seed, devices, outdir, log, minimise_s, summary, ref, k):
    for dev in devices:
        try:
            got = run_kapi(p, dev, k)
        except Exception:  # minimised and reported below as a kapi-error
            got = None
        if got is None and ref["numba"] is None and not numba_compiles(p):
            # Numba rejects it as well (e.g. a branch on a constant product beyond 64 bits,
            # which its dead-branch pruning folds into an untypeable literal): outside the
            # language kapi shares with Numba, not kapi's fault
            summary["oracle_errors"] += 1
            return False
        everyone = [c.index for c in p.cases]
        sim_bad = everyone if got is None or ref["sim"] is None else bad_cases(p, got, ref["sim"])
        if set(sim_bad) - set(ref["undefined"]) and ref["numba"] is None:
            if not numba_ref(p, n, seed, ref, summary, outdir, log):  # ksim may be wrong: ask
                return False
        bad = [c for c in sim_bad if c in ref["undefined"]]
        if ref["numba"] is not None:
            nb_bad = everyone if got is None else bad_cases(p, got, ref["numba"], ref["undefined"])
            bad += [c for c in nb_bad if not (c in ref["disputed"] and c not in sim_bad)]
        # a transcendental's last bits magnified (float // or %, sin of a large value,
        # cancellation), or a NaN's sign: nobody's bug
        ill = set(bad) & set(ref["ill"])
        ill |= set(explained(p, got, sorted(set(bad) - ill), ref, contracts(dev)))
        if ill:
            summary["ill_conditioned"] += len(ill)
            log(f"ill-conditioned: kernel {n} cases {sorted(ill)} on {dev.filter_string} differ")
        bad = sorted(set(bad) - ill)
        if bad:
            report(p, n, seed, dev, bad, outdir, log, minimise_s, summary)
    return True


def numba_ref(p, n, seed, ref, summary, outdir, log):
    """Runs the Numba oracle into ref (and compares ksim with it); False if Numba rejects p."""
    try:
        ref["numba"] = run_oracle(p)
    except Exception:  # the generator wrote something Numba rejects: not kapi's fault
        summary["oracle_errors"] += 1
        return False
    summary["numba_checked"] += 1
    if ref["sim"] is not None:
        skip = ref["undefined"] + ref["ill"]
        disputed = bad_cases(p, ref["sim"], ref["numba"], skip)
        ulps = explained(p, ref["numba"], disputed, ref)  # Numba's LLVM may fold math too
        ref["disputed"] = [c for c in disputed if c not in ulps]
        if ref["disputed"]:
            tag = f"sim_seed{seed}_k{n}"
            path = save_regression(p, "sim-disagreement", "", outdir, tag) if outdir else None
            summary["sim_disagreements"].append(
                {"kernel": n, "cases": ref["disputed"], "file": path}
            )
            log(f"simulator differs from Numba: kernel {n} cases {ref['disputed']} -> {path}")
    return True


def report(p, n, seed, dev, bad, outdir, log, minimise_s, summary):
    """Pins each failing case (up to 3), minimises it against Numba and saves it."""
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
        log(f"finding: kernel {n} case {ci} on {dev.filter_string}: {k3} {d3[:200]} -> {path}")


# --- processes -------------------------------------------------------------------------------

_WORKER = {}


def _init_worker(device_filters, outdir, minimise_s, check_every):
    import kapi

    devs = [kapi.Device(f) for f in device_filters] if device_filters else kapi.devices()
    _WORKER.update(devs=devs, outdir=outdir, minimise_s=minimise_s, check_every=check_every)


def _run_chunk(args):
    seed, ncases, first, count = args
    w = _WORKER
    lines = []
    s = fuzz(
        count,
        seed,
        ncases,
        w["devs"],
        w["outdir"],
        lines.append,
        minimise_s=w["minimise_s"],
        first=first,
        check_every=w["check_every"],
    )
    return first, count, s, lines


def fuzz_parallel(
    kernels,
    seed,
    ncases,
    device_filters,
    jobs,
    outdir=None,
    first=0,
    budget_s=None,
    check_every=50,
    minimise_s=60,
    chunk=4,
    log=print,
    progress_s=60,
    recycle=100,
):
    """fuzz() over `jobs` processes (spawned: one kapi each), in chunks of kernels. A process is
    replaced after `recycle` chunks (each kernel leaves ~1 MB behind in Numba and kapi, which
    10^4 kernels would add up). Returns the merged summary with `done_below`: every kernel
    below it is done (resume with --first)."""
    import multiprocessing as mp

    start = time.time()
    total = new_summary()
    chunks = [
        (seed, ncases, f, min(chunk, first + kernels - f))
        for f in range(first, first + kernels, chunk)
    ]
    done, watermark = set(), first
    ctx = mp.get_context("spawn")
    pool = ctx.Pool(jobs, _init_worker, (device_filters, outdir, minimise_s, check_every), recycle)
    last = start
    try:
        for f, _count, s, lines in pool.imap_unordered(_run_chunk, chunks):
            merge(total, s)
            for line in lines:
                log(line)
            done.add(f)
            while watermark in done:
                watermark += chunk
            now = time.time()
            if now - last >= progress_s:
                last = now
                log(progress_line(total, now - start, min(watermark, first + kernels)))
            if budget_s and now - start > budget_s:
                break
    finally:
        pool.terminate()
        pool.join()
    total["seconds"] = round(time.time() - start, 1)
    total["done_below"] = min(watermark, first + kernels)
    return total


def progress_line(s, seconds, done_below=None):
    rate = s["cases"] / seconds if seconds else 0.0
    out = (
        f"kernels={s['kernels']} cases={s['cases']} mismatches={len(s['findings'])} "
        f"sim_disagreements={len(s['sim_disagreements'])} numba_checked={s['numba_checked']} "
        f"oracle_errors={s['oracle_errors']} sim_unsupported={s['sim_unsupported']} "
        f"numba_undefined={s['numba_undefined']} ill_conditioned={s['ill_conditioned']} "
        f"seconds={seconds:.0f} cases/s={rate:.2f} "
        f"kernels/s={s['kernels'] / max(seconds, 1e-9):.3f}"
    )
    return out + (f" done_below={done_below}" if done_below is not None else "")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kernels", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--first", type=int, default=0, help="first kernel number (to resume)")
    ap.add_argument("--cases", type=int, default=8, help="cases batched into one kernel")
    ap.add_argument("--jobs", type=int, default=1, help="processes (one kapi each)")
    ap.add_argument(
        "--check-every",
        type=int,
        default=50,
        help="also run the Numba oracle on every N-th kernel (checks ksim)",
    )
    ap.add_argument("--out", default="fuzz-findings", help="where minimised findings go")
    ap.add_argument("--device", action="append", help="filter string (default: every device)")
    ap.add_argument("--budget", type=float, default=None, help="stop after this many seconds")
    a = ap.parse_args(argv)
    os.environ.setdefault("KAPI_CACHE", "0")  # 10^5 distinct kernels: keep them off the disk
    # and out of the CUDA driver's JIT cache, which 16 processes would fill and evict under its
    # lock for nothing (each PTX is new)
    os.environ.setdefault("CUDA_CACHE_DISABLE", "1")
    import kapi

    devs = [kapi.Device(f) for f in a.device] if a.device else kapi.devices()
    print(
        f"devices: {[d.filter_string for d in devs]} seed {a.seed} kernels "
        f"{a.first}..{a.first + a.kernels - 1} jobs {a.jobs}",
        flush=True,
    )
    log = lambda m: print(m, flush=True)  # noqa: E731
    try:
        s = fuzz_parallel(
            a.kernels,
            a.seed,
            a.cases,
            a.device,
            a.jobs,
            a.out,
            a.first,
            a.budget,
            a.check_every,
            log=log,
        )
    except Exception:
        traceback.print_exc()
        return 2
    print("summary: " + progress_line(s, s["seconds"], s.get("done_below")), flush=True)
    return 1 if s["findings"] or s["sim_disagreements"] else 0


if __name__ == "__main__":
    sys.exit(main())
