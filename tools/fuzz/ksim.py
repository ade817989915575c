"""The fuzzer's reference interpreter: runs a kfuzz Program the way Numba's @njit oracle would,
without compiling anything (Numba's compile costs about 0.3 s per case; this, milliseconds).

Every node the generator writes carries the Numba signature it was typed with (`Expr.sig`),
so the interpreter does what Numba's lowering does with that signature: cast each operand to
the signature's argument type (context.cast: wrap-around between integers, sitofp/uitofp,
`!= 0` to bool), then the operation in the implementation's type (numba/cpython/numbers.py,
mathimpl.py, builtins.py): integer arithmetic wraps, `//` and `%` floor (INT_MIN // -1 is 0),
floats follow CPython's float_divmod, `**` multiplies by squaring in the result type, `-x`
and `~x` act before widening, min/max select like Python, hypot of uint64 converts as signed.

Integers are Python ints kept in their type's range, bools Python bools, floats NumPy float32
/float64 scalars (IEEE arithmetic in the right width). Math functions are glibc's, called
through ctypes as Numba's code calls them; a case the interpreter judges wrong is always
checked again against Numba before it counts, and the caller can rerun a program with every
transcendental result moved by a few ulps (PERTURB) to see what the devices' own math
libraries may legitimately give. Anything the interpreter does not model raises
`Unsupported`, and the caller falls back to Numba.
"""

from __future__ import annotations

import numpy as np


class Unsupported(Exception):
    """A construct the interpreter does not model (the caller uses the Numba oracle)."""


# Numba marks signed integer +, - and * `nsw` (numba/cpython/numbers.py _int_arith_flags), so
# where one overflows, LLVM may do anything with what follows (it turns a later `>>` of the
# product into a logical shift, or drops the floor correction of a `//`): the oracle's answer
# is undefined there. kapi wraps (two's complement), as this interpreter does. OVERFLOW[0] is
# set when such an operation overflows; the caller then judges that case by this interpreter
# alone.
OVERFLOW = [False]


# Math functions are glibc's in Numba and here, but kapi's devices use their own (libmvec in
# vectorised loops, libdevice on CUDA), an ulp or a few apart, and some expressions magnify
# that: exp(15) ** 3 % 15 is 12 or 13 depending on exp's last bit, sin(exp(30)) anything in
# [-1, 1], hypot(a, b) - c in cancellation any relative error. Float `**` is another such
# source: Numba multiplies by squaring, kapi calls pow() (an ulp or two apart; cos(x ** 3)
# differed on both devices). Such a difference is nobody's bug. The caller reruns a differing
# kernel with every transcendental and float `**` result moved by a few ulps (PERTURB, see
# kfuzz.perturbed_hull) and blames kapi only for values outside the range those runs span.
# ILL[0] is set for what no ulp explains: copysign with a NaN sign argument; and a compare
# of floats a few ulps apart, one of them computed by a transcendental in the compare's own
# operands, whose outcome any library's last bits may flip: atan2(2.3e18, -219) <= atan2(2e18,
# 1.0) differs by one ulp between glibc and the CPU device (seed 5000 kernel 147317), and the
# perturbed reruns, moving each call its own way at random, happened never to reverse them.
ILL = [False]
TRANSCENDENTAL = {"sin", "cos", "exp", "tanh", "atan", "log1p", "atan2", "hypot"}

# None, or a callable giving the whole ulps (positive or negative) by which to move the next
# transcendental result.
PERTURB = [None]
# CUDA contracts a float multiply and a following add into one fma (as nvcc --fmad=true and
# numba-cuda do; finalise_nvptx.c), one rounding where Python has two: the product as if
# unrounded, within an ulp of Python's. CONTRACT[0] set: PERTURB moves float products too,
# by at most one ulp.
CONTRACT = [False]
MAX_ULPS = 4  # libdevice's and libmvec's documented maximum errors are 1-4 ulps


def nudge(r, k):
    """Float scalar r moved by k ulps (in its own width); infinities and NaN stay."""
    if not k or not np.isfinite(r):
        return r
    toward = type(r)(np.inf if k > 0 else -np.inf)
    for _ in range(abs(k)):
        r = np.nextafter(r, toward)
    return r


def _within_ulps(x, y, k):
    """Whether finite floats x and y are at most k ulps (of the larger, in x's width) apart."""
    if not (np.isfinite(x) and np.isfinite(y)):
        return False
    t = type(x) if isinstance(x, np.floating) else np.float64
    m = max(abs(t(x)), abs(t(y)))
    return abs(float(x) - float(y)) <= k * float(np.spacing(m))


def _nsw(v, bits, signed):
    r = wrap(v, bits, signed)
    if signed and r != v:
        OVERFLOW[0] = True
    return r


# --- types and casts -------------------------------------------------------------------------

# Keyed by id: Numba's types are interned, and their own __hash__ and __eq__ (Python code) were
# a fifth of the interpreter's time. Each entry keeps its type alive, so ids stay unique.
_INFO = {}


def info(t):
    """(kind, bits, signed) of a Numba scalar type: kind 'b', 'i' or 'f'."""
    r = _INFO.get(id(t))
    if r is None:
        from numba import types

        if isinstance(t, types.Boolean):
            r = ("b", 1, False)
        elif isinstance(t, types.Integer):
            r = ("i", t.bitwidth, t.signed)
        elif isinstance(t, types.Float):
            r = ("f", t.bitwidth, True)
        else:
            raise Unsupported(f"type {t}")
        _INFO[id(t)] = r, t
        return r
    return r[0]


def wrap(v, bits, signed):
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


_FT = {32: np.float32, 64: np.float64}


def to_float(v, bits):
    """An int's value rounded once to a float of `bits` (as LLVM's sitofp/uitofp)."""
    if bits == 64 or -(2**24) <= v <= 2**24:
        return _FT[bits](float(v) if bits == 64 else v)
    src = np.int64 if v < 2**63 else np.uint64
    return np.array(v, dtype=src).astype(np.float32)[()]


def cast(v, frm, to):
    if frm is to:
        return v
    f = info(frm)
    tk, tb, ts = t = info(to)
    if f == t:  # the same scalar type (as Numba's ==, which is slower)
        return v
    fk = f[0]
    if tk == "b":
        return bool(v != 0)
    if tk == "i":
        if fk == "f":
            raise Unsupported("float to int conversion")
        return wrap(int(v), tb, ts)
    if fk == "f":
        return _FT[tb](v)
    return to_float(int(v), tb)


def truth(v, t):
    return bool(v != 0)  # NaN is true, as Numba's fcmp une


# --- operations ------------------------------------------------------------------------------


def _cast2(a, at, b, bt, sig, to):
    a = cast(cast(a, at, sig.args[0]), sig.args[0], to)
    b = cast(cast(b, bt, sig.args[1]), sig.args[1], to)
    return a, b


def real_divmod(x, y):
    """numba/cpython/numbers.py real_divmod_func_body (CPython's float_divmod) in x's type."""
    T = type(x)
    mod = np.fmod(x, y)
    div = (x - mod) / y
    if mod != 0:  # unordered: NaN too
        if (y < 0) != (mod < 0):
            div = div - T(1.0)
            mod = mod + y
    else:
        mod = T(-0.0) if y < 0 else T(0.0)
    if div != 0 and div == div:
        fl = np.floor(div)
        if div - fl > T(0.5):
            fl = fl + T(1.0)
        return fl, mod
    div = div * div
    return (div * x) / y, mod


def power(a, e, rt):
    """numba int_power_impl / static_power_impl: multiply by squaring in the result type."""
    k, bits, signed = info(rt)
    if e < 0:
        raise Unsupported("negative exponent")
    if k == "f":
        r, a = _FT[bits](1.0), _FT[bits](a)
        while e:
            if e & 1:
                r = r * a
            e >>= 1
            a = a * a
        return r
    r = 1
    while e:
        if e & 1:
            r = _nsw(r * a, bits, signed)
        e >>= 1
        if e:  # numba squares once more after the last use; that product is never read
            a = _nsw(a * a, bits, signed)
    return r


def binop(sym, sig, a, at, b, bt, near=False):
    """a sym b under sig; `near`: a float compare a few ulps apart is ill-conditioned (ILL)."""
    rt = sig.return_type
    k, bits, signed = info(rt)
    if sym in ("<", "<=", "==", "!=", ">", ">="):
        x = cast(a, at, sig.args[0])
        y = cast(b, bt, sig.args[1])
        if sig.args[0] is not sig.args[1] and info(sig.args[0]) != info(sig.args[1]):
            raise Unsupported(f"compare of {sig.args}")
        if near and info(sig.args[0])[0] == "f" and _within_ulps(x, y, 2 * MAX_ULPS):
            ILL[0] = True
        return bool(_CMP[sym](x, y))
    if sym == "**":
        base = cast(cast(a, at, sig.args[0]), sig.args[0], rt)
        e = cast(b, bt, sig.args[1])
        r = power(base, int(e), rt)
        if k == "f" and PERTURB[0] is not None:  # kapi calls pow(), Numba multiplies
            r = nudge(r, PERTURB[0]())
        return r
    x, y = _cast2(a, at, b, bt, sig, rt)
    if k == "b":
        if sym == "&":
            return x and y
        if sym == "|":
            return x or y
        if sym == "^":
            return x != y
        raise Unsupported(f"{sym} on bool")
    if k == "f":
        if sym in ("//", "%"):
            q, m = real_divmod(x, y)
            return q if sym == "//" else m
        r = _FOP[sym](x, y)
        if sym == "*" and CONTRACT[0] and PERTURB[0] is not None:
            r = nudge(r, max(-1, min(1, PERTURB[0]())))
        return r
    if sym in ("//", "%"):
        if signed and y == -1 and x == -(1 << (bits - 1)):
            return 0  # Numba's int_divmod_signed: no SIGFPE, 0 and 0
        return x // y if sym == "//" else x % y
    if sym == ">>":
        return x >> y  # arithmetic for signed values, logical for the (non-negative) unsigned
    if sym == "<<":
        return wrap(x << y, bits, signed)
    if sym in ("+", "-", "*"):
        return _nsw(_IOP[sym](x, y), bits, signed)
    return wrap(_IOP[sym](x, y), bits, signed)


_CMP = {
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
}
_IOP = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "&": lambda x, y: x & y,
    "|": lambda x, y: x | y,
    "^": lambda x, y: x ^ y,
}
_FOP = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: x / y,
}


def unary(op, sig, v, vt):
    at, rt = sig.args[0], sig.return_type
    x = cast(v, vt, at)
    k, bits, signed = info(at)
    if k == "f":
        return -x if op == "neg" else np.abs(x)
    if k == "b":
        if op == "inv":
            return not x
        if op == "neg":  # bool_negate_impl: widen, then negate
            _, rbits, rsigned = info(rt)
            return wrap(-int(x), rbits, rsigned)
        x = cast(x, at, rt)
        at = rt
        k, bits, signed = info(at)
    if op == "neg":  # int_negate_impl: negate before widening
        return cast(wrap(-x, bits, signed), at, rt)
    if op == "inv":
        return cast(wrap(~x, bits, signed), at, rt)
    return cast(wrap(abs(x), bits, signed), at, rt)  # int_abs_impl / uint_abs_impl


def _libm():
    """glibc's functions, float and double, as Numba's code calls them (NumPy's own differ by
    an ulp now and then, which `%` of a large result turns into a visible difference)."""
    import ctypes

    lib = ctypes.CDLL("libm.so.6")
    out = {}
    for name, nargs in [(n, 1) for n in ("sin", "cos", "exp", "tanh", "atan", "log1p")] + [
        (n, 2) for n in ("atan2", "hypot")
    ]:
        for ct, nt, suffix in (
            (ctypes.c_double, np.float64, ""),
            (ctypes.c_float, np.float32, "f"),
        ):
            fn = getattr(lib, name + suffix)
            fn.restype, fn.argtypes = ct, [ct] * nargs
            out[name, nt] = (lambda f, t: lambda *a: t(f(*(float(x) for x in a))))(fn, nt)
    return out


_LIBM = _libm()
_EXACT = {"sqrt": np.sqrt, "fabs": np.fabs, "copysign": np.copysign}  # correctly rounded


# |x| from which 4 ulps of x exceed pi/2 (float64 2^51, float32 2^22)
_TRIG_WILD = {np.float64: 2.0**51, np.float32: np.float32(2.0**22)}


def math_call(name, sig, vals, types_):
    rt = sig.return_type
    args = []
    for v, t, at in zip(vals, types_, sig.args, strict=True):
        x = cast(v, t, at)
        k, bits, signed = info(at)
        if k != "f":
            if name == "hypot" and k == "i" and not signed:
                x = wrap(x, bits, True)  # numba's hypot_u64_impl converts with sitofp
            x = cast(x, at, rt) if k == "b" else to_float(int(x), 64)
        args.append(x)
    ft = type(args[0])
    if name == "copysign" and np.isnan(args[1]):
        # a NaN's sign is unspecified (x86's invalid-operation NaN is negative, and LLVM
        # rewrites -(a / b) as (-a) / b): copysign(15, -(-inf / inf)) was -15 in Numba
        ILL[0] = True
    wild = _TRIG_WILD.get(ft, 2.0**51)
    if name in ("sin", "cos", "tan") and np.isfinite(args[0]) and abs(args[0]) >= wild:
        # a few ulps of so large an argument span more than a period: any difference upstream
        # (sin(exp(i) ** 3): kapi's pow() and Numba's multiplications) makes any answer
        ILL[0] = True
    fn = _EXACT.get(name) or _LIBM.get((name, ft))
    if fn is None:
        raise Unsupported(f"math.{name}")
    r = fn(*args)
    if PERTURB[0] is not None and name in TRANSCENDENTAL:
        r = nudge(r, PERTURB[0]())
    return cast(r, _float_of(args[0]), rt)


def _float_of(x):
    from numba import types

    return types.float32 if isinstance(x, np.float32) else types.float64


def minmax(op, sig, a, at, b, bt):
    """numba's do_minmax: both to the unified type, then select(b > a, b, a) for max."""
    rt = sig.return_type
    ta, tb = sig.args[0].types if hasattr(sig.args[0], "types") else sig.args
    x = cast(cast(a, at, ta), ta, rt)
    y = cast(cast(b, bt, tb), tb, rt)
    pick = (y > x) if op == "max" else (y < x)
    return y if pick else x


# --- expressions and statements --------------------------------------------------------------


class Frame:
    """One work-item's state for one case."""

    __slots__ = ("env", "arrays", "lm", "k", "lid")

    def __init__(self, env, arrays, lm, k, lid):
        self.env, self.arrays, self.lm, self.k, self.lid = env, arrays, lm, k, lid


def ulp_sensitive(n, contract=False):
    """Whether Expr node n is one whose result the devices compute with their own libraries,
    an ulp or a few from Numba's: a transcendental function, or a float `**`; with
    `contract` (CUDA, see CONTRACT), a float `*` too."""
    if n.op == "math":
        return n.val in TRANSCENDENTAL
    if n.op == "bin" and info(n.ty)[0] == "f":
        return n.val == "**" or (contract and n.val == "*")
    return False


def _libm_valued(e):
    """Whether Expr e calls a transcendental function or a float `**`."""
    return any(ulp_sensitive(n) for n in e.nodes())


def ev(e, f):
    """The value of Expr e (of type e.ty) in frame f."""
    op = e.op
    if op == "var":
        try:
            return f.env[e.fmt]
        except KeyError:
            raise Unsupported(f"unbound {e.fmt}") from None
    if op == "lit":
        return e.val
    if op == "bin":
        a, b = e.kids
        near = e.val in _CMP and (_libm_valued(a) or _libm_valued(b))
        return binop(e.val, e.sig, ev(a, f), a.ty, ev(b, f), b.ty, near)
    if op == "un":
        (a,) = e.kids
        return unary(e.val, e.sig, ev(a, f), a.ty)
    if op == "read":
        (ix,) = e.kids
        j = ev(ix, f)
        arr = f.arrays[e.val]
        v = arr[j + len(arr) if j < 0 else j]
        return v
    if op == "math":
        return math_call(e.val, e.sig, [ev(k, f) for k in e.kids], [k.ty for k in e.kids])
    if op in ("min", "max"):
        a, b = e.kids
        return minmax(op, e.sig, ev(a, f), a.ty, ev(b, f), b.ty)
    if op == "guard":  # a chain of (symbol, signature, literal operand, its type)
        (a,) = e.kids
        v, t = ev(a, f), a.ty
        for sym, sig, lit, lt in e.val:
            if sym == "abs":
                v, t = unary("abs", sig, v, t), sig.return_type
            else:
                v, t = binop(sym, sig, v, t, lit, lt), sig.return_type
        return v
    if op == "imod":
        return f.env["i"] % e.val
    if op == "lm":
        lid, local, c = f.lid, e.val[0], e.val[1]
        return f.lm[f.k * local + (lid + c) % local]
    raise Unsupported(f"expression {op!r}")


class Sim:
    """Runs a Program's cases over every work-item, as the Numba oracle does."""

    def __init__(self, p, n_items, local, slots, acc_n, devfuncs):
        self.p, self.n_items, self.local, self.slots = p, n_items, local, slots
        self.devfuncs = devfuncs  # name -> (params, body Expr, param types)
        arrays, scalars = p.inputs()
        self.arrays = {n: _pyvals(a) for n, a in arrays.items()}
        self.scalars = {n: _pyval(v) for n, v in scalars.items()}
        n = n_items * slots * p.ncases
        self.undefined = set()  # cases where Numba's answer is undefined (see OVERFLOW)
        self.ill = set()  # cases whose difference no ulp explains and nobody owns (see ILL)
        self.out_i = [0] * n
        self.out_f = [0.0] * n
        self.acc = [0] * acc_n

    def run(self):
        p = self.p
        for case in p.cases:
            OVERFLOW[0] = ILL[0] = False
            self.run_case(case)
            if OVERFLOW[0]:
                self.undefined.add(case.index)
            if ILL[0]:
                self.ill.add(case.index)
        return (
            np.array(self.out_i, np.int64),
            np.array(self.out_f, np.float64),
            np.array(self.acc, np.int64),
        )

    def run_case(self, case):
        p, local = self.p, self.local
        lm = [0] * (p.ncases * local) if p.nd else None
        frames = []
        for i in range(self.n_items):
            env = dict(self.scalars)
            env["i"] = i
            lid = i % local if p.nd else None
            if p.nd:
                env["lid"] = lid
            frames.append(Frame(env, self.arrays, lm, case.index, lid))
        if not p.nd:
            for fr in frames:
                self.block(case.stmts, fr)
            return
        for g in range(self.n_items // local):  # each phase of a group, around its barrier
            for fr in frames[g * local : (g + 1) * local]:
                self.block(case.local_stmts, fr)
            for fr in frames[g * local : (g + 1) * local]:
                self.block(case.stmts, fr)

    def block(self, stmts, f):
        for s in stmts:
            self.stmt(s, f)

    def stmt(self, s, f):
        m, kind = s.meta, s.kind
        if kind == "assign":
            mode = m["mode"]
            if mode == "zero":
                f.env[m["var"]] = 0
                return
            if mode == "call":
                a, b = s.exprs
                params, body, ptypes = self.devfuncs[m["func"]]
                inner = Frame(
                    {params[0]: cast(ev(a, f), a.ty, ptypes[0]), params[1]: ev(b, f)},
                    f.arrays,
                    f.lm,
                    f.k,
                    f.lid,
                )
                inner.env[params[1]] = cast(inner.env[params[1]], b.ty, ptypes[1])
                f.env[m["var"]] = ev(body, inner)
                return
            (e,) = s.exprs
            v = ev(e, f)
            if mode == "+=":
                v = binop("+", m["sig"], f.env[m["var"]], m["ty"], v, e.ty)
            f.env[m["var"]] = v
            return
        if kind == "store":
            (e,) = s.exprs
            v = ev(e, f)
            j = f.env["i"] * self.slots * self.p.ncases + m["slot"]
            from numba import types

            if m["arr"] == "out_f":
                self.out_f[j] = float(cast(v, e.ty, types.float64))
            else:
                self.out_i[j] = cast(v, e.ty, types.int64)
            return
        if kind == "lstore":
            (e,) = s.exprs
            from numba import types

            f.lm[f.k * self.local + f.lid] = cast(ev(e, f), e.ty, types.int64)
            return
        if kind == "atomic":
            e, j = s.exprs
            slot = ev(j, f) % len(self.acc)
            self.acc[slot] = wrap(self.acc[slot] + ev(e, f), 64, True)
            return
        if kind == "if":
            (c,) = s.exprs
            self.block(s.body if truth(ev(c, f), c.ty) else s.orelse, f)
            return
        if kind == "for":
            if s.exprs:
                (lim,) = s.exprs
                n = binop("&", m["sig"], ev(lim, f), lim.ty, 3, m["lt"])
            else:
                n = m["n"]
            for j in range(n):
                f.env[m["var"]] = j
                self.block(s.body, f)
            return
        if kind == "while":
            w = m["var"]
            while f.env[w] < m["n"]:
                self.block(s.body, f)
                f.env[w] += 1
            return
        raise Unsupported(f"statement {kind!r}")


def _pyval(x):
    if isinstance(x, np.bool_ | bool):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    return x  # np.float32 / np.float64


def _pyvals(a):
    if a.dtype.kind == "f":
        return list(a)  # NumPy scalars of the array's width
    return a.tolist()  # Python ints and bools
