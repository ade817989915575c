"""NumPy ufuncs called on scalars in kernels (np.sqrt(x), np.minimum(a, b), ...).

Numba's typing picks the ufunc's loop (NumPy's type rules: np.sqrt(int64) computes in
float64); here the arguments are converted to the loop's input types and the loop body is
written with existing KIR ops (arithmetic, cmp, select, math), then converted to the typed
result. A mixin of FunctionEmitter (emit.py), reached from CallEmitter.call.
"""

import math

from . import values as V
from ._numba import numpy_support, types

# NumPy name -> KIR math name, for one-operand float functions
_MATH1 = {
    "sqrt": "sqrt", "exp": "exp", "expm1": "expm1", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "sin": "sin", "cos": "cos", "tan": "tan",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "fabs": "fabs",
}  # fmt: skip
_MATH2 = {"arctan2": "atan2", "hypot": "hypot", "copysign": "copysign"}
_ARITH2 = {
    "add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div", "divide": "div",
    "remainder": "mod", "mod": "mod", "power": "pow",
    "float_power": "pow", "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor",
    "left_shift": "shl", "right_shift": "shr",
}  # fmt: skip
_CMP = {
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "equal": "eq",
    "not_equal": "ne",
}  # fmt: skip
_LOGICAL = {"logical_and": "and", "logical_or": "or", "logical_xor": "xor"}
_IDENTITY = ("positive", "conjugate", "conj")
_ROUNDING = ("floor", "ceil", "trunc")


def _unlit(ty):
    return types.unliteral(ty)


def _real(ty):
    return isinstance(_unlit(ty), types.Integer | types.Float | types.Boolean)


def supported_ufuncs():
    """The NumPy ufunc names kernels may call on scalars (for docs and error messages)."""
    return sorted(
        set(_MATH1) | set(_MATH2) | set(_ARITH2) | set(_CMP) | set(_LOGICAL) | set(_IDENTITY)
        | set(_ROUNDING) | set(_SPECIAL) | {"divmod"}
    )  # fmt: skip


class UfuncEmitter:
    """Scalar NumPy ufunc calls for FunctionEmitter."""

    def np_ufunc(self, uf, args, sig):
        """KIR for `uf(*args)` on scalars, or None for argument types this module does not
        handle (complex), which the caller may lower itself."""
        name = uf.__name__
        if len(args) != uf.nin:
            raise self.unsupported(
                "call", f"np.{name}: kernels pass exactly the {uf.nin} input(s) (no out=)"
            )
        if not all(isinstance(a, V.Scalar | V.Const) for a in args):
            raise self.unsupported(
                "call",
                f"np.{name} is supported on scalars only in kernels (index the array: "
                f"np.{name}(a[i]))",
            )
        argtys = tuple(_unlit(t) for t in sig.args[: uf.nin])
        ret = _unlit(sig.return_type)
        outs = tuple(ret) if isinstance(ret, types.BaseTuple) else (ret,)
        if not all(_real(t) for t in argtys + outs):
            return None
        loop = numpy_support.ufunc_find_matching_loop(uf, argtys)
        if loop is None:
            raise self.unsupported("call", f"np.{name} on {', '.join(map(str, argtys))}")
        vals = [self.convert(a, t) for a, t in zip(args, loop.inputs, strict=True)]
        t = _unlit(loop.inputs[0])
        if name == "divmod":  # the one two-output ufunc Numba types on scalars
            q, r = _floor_divide(self, t, *vals), self._arith2("mod", t, *vals)
            return V.Tuple([self.convert(v, _unlit(rt)) for v, rt in zip((q, r), ret, strict=True)])
        out = self._ufunc_body(name, t, vals) if uf.nout == 1 else None
        if out is None:
            raise self.unsupported(
                "call",
                f"np.{name} is not supported in kernels; supported NumPy functions: "
                f"{', '.join(supported_ufuncs())}",
            )
        return self.convert(out, ret)

    def _ufunc_body(self, name, t, vals):
        if name in _MATH1:
            return self._fmath(_MATH1[name], t, *vals)
        if name in _MATH2:
            return self._fmath(_MATH2[name], t, *vals)
        if name in _ARITH2:
            return self._arith2(_ARITH2[name], t, *vals)
        if name in _CMP:
            return self._cmp(_CMP[name], t, *vals)
        if name in _LOGICAL:
            a, b = (self.scalar(v, types.boolean) for v in vals)
            r = self.b.op(f"{_LOGICAL[name]} bool {a} {b}", self.line)
            return V.Scalar(r, types.boolean)
        if name in _IDENTITY:
            return vals[0]
        if name in _ROUNDING:
            if isinstance(t, types.Float):
                return self._fmath(name, t, vals[0])
            return vals[0]
        special = _SPECIAL.get(name)
        return special(self, t, *vals) if special is not None else None

    # ---- building blocks --------------------------------------------------------------------

    def _fmath(self, name, t, *vals):
        if not isinstance(t, types.Float):
            return None
        ops = " ".join(self.scalar(v, t) for v in vals)
        return V.Scalar(self.b.op(f"math {self.kty(t)} {name} {ops}", self.line), t)

    def _arith2(self, op, t, a, b):
        if isinstance(t, types.Boolean):  # NumPy's bool loops: add is or, multiply is and
            op = {"add": "or", "mul": "and"}.get(op, op)
            if op not in ("and", "or", "xor"):
                return None
        if op == "div" and not isinstance(t, types.Float):
            return None
        return self.bin_op(op, a, b, t)

    def _cmp(self, pred, t, a, b):
        x, y = self.scalar(a, t), self.scalar(b, t)
        return V.Scalar(self.b.op(f"cmp bool {pred} {x} {y}", self.line), types.boolean)

    def _k(self, value, t):
        return self.scalar(V.Const(value, t))

    def _select(self, t, cond, a, b):
        ra, rb = self.scalar(a, t), self.scalar(b, t)
        return V.Scalar(self.b.op(f"select {self.kty(t)} {cond} {ra} {rb}", self.line), t)

    def _isnan(self, t, v):
        return self.b.op(f"math bool isnan {self.scalar(v, t)}", self.line)

    def _or(self, a, b):
        return self.b.op(f"or bool {a} {b}", self.line)


# ---- ufuncs that need more than one op (each takes the loop's input type and values) -------


def _minmax(pred, nan_wins):
    """minimum/maximum propagate NaN (nan_wins: pick a if a is NaN); fmin/fmax ignore it
    (pick a if b is NaN)."""

    def emit(self, t, a, b):
        if isinstance(t, types.Boolean):
            return self.bin_op("and" if pred == "lt" else "or", a, b, t)
        if not isinstance(t, types.Float):
            return self.bin_op("min" if pred == "lt" else "max", a, b, t)
        wins = self._cmp(pred, t, a, b).ref
        pick = self._or(wins, self._isnan(t, a if nan_wins else b))
        return self._select(t, pick, a, b)

    return emit


def _negative(self, t, x):
    return None if isinstance(t, types.Boolean) else self.unary_op("neg", x, t)


def _absolute(self, t, x):
    if isinstance(t, types.Boolean) or isinstance(t, types.Integer) and not t.signed:
        return x
    return self.unary_op("abs", x, t)


def _square(self, t, x):
    return self.bin_op("and" if isinstance(t, types.Boolean) else "mul", x, x, t)


def _sign(self, t, x):
    """1, -1 or 0 (NaN stays NaN, as NumPy's sign)."""
    zero, one = V.Const(0, t), V.Const(1, t)
    pos = self._cmp("gt", t, x, zero).ref
    if isinstance(t, types.Integer) and not t.signed:
        return self._select(t, pos, one, zero)
    neg = self._cmp("lt", t, x, zero).ref
    rest = self._select(t, neg, V.Const(-1, t), x if isinstance(t, types.Float) else zero)
    return self._select(t, pos, one, rest)


def _reciprocal(self, t, x):
    if isinstance(t, types.Float):
        return self.bin_op("div", V.Const(1.0, t), x, t)
    if isinstance(t, types.Boolean):
        return None
    # integer 1 // x: 1 for 1, -1 for -1, else 0 (0 for x == 0, as Numba's lowering)
    is_one = self._cmp("eq", t, x, V.Const(1, t)).ref
    rest = V.Const(0, t)
    if t.signed:
        is_m1 = self._cmp("eq", t, x, V.Const(-1, t)).ref
        rest = self._select(t, is_m1, V.Const(-1, t), rest)
    return self._select(t, is_one, V.Const(1, t), rest)


def _fmod(self, t, a, b):
    """C fmod: the result has the sign of the dividend (Python's % that of the divisor)."""
    if isinstance(t, types.Float):
        return self._fmath("fmod", t, a, b)
    if isinstance(t, types.Boolean):
        return None
    r = self.bin_op("mod", a, b, t)
    if not t.signed:
        return r
    zero = V.Const(0, t)
    nonzero = self._cmp("ne", t, r, zero).ref
    signs = self.b.op(
        f"xor bool {self._cmp('lt', t, a, zero).ref} {self._cmp('lt', t, b, zero).ref}", self.line
    )
    fix = self.b.op(f"and bool {nonzero} {signs}", self.line)
    return self._select(t, fix, self.bin_op("sub", r, b, t), r)


def _floor_divide(self, t, a, b):
    """NumPy's (and Python's) float floor division through fmod, as npy_divmod: exact where
    floor(a / b) rounds (1 // 0.1 is 9), NaN for an infinite dividend."""
    if not isinstance(t, types.Float):
        return self._arith2("floordiv", t, a, b)
    zero, one = V.Const(0.0, t), V.Const(1.0, t)
    mod = self._fmath("fmod", t, a, b)
    div = self.bin_op("div", self.bin_op("sub", a, mod, t), b, t)
    signs = self.b.op(
        f"xor bool {self._cmp('lt', t, b, zero).ref} {self._cmp('lt', t, mod, zero).ref}",
        self.line,
    )
    fix = self.b.op(f"and bool {self._cmp('ne', t, mod, zero).ref} {signs}", self.line)
    div = self._select(t, fix, self.bin_op("sub", div, one, t), div)
    fl = self._fmath("floor", t, div)
    up = self._cmp("gt", t, self.bin_op("sub", div, fl, t), V.Const(0.5, t)).ref
    fl = self._select(t, up, self.bin_op("add", fl, one, t), fl)
    quot = self.bin_op("div", a, b, t)
    res = self._select(
        t, self._cmp("ne", t, div, zero).ref, fl, self._fmath("copysign", t, zero, quot)
    )
    return self._select(t, self._cmp("eq", t, b, zero).ref, quot, res)


def _gcd_loop(self, t, a, b):
    """Euclid's algorithm on |a| and |b| as a KIR loop: (gcd, |a|, |b|)."""
    ln, n, k = self.line, self.b.value()[1:], self.kty(t)
    a0, b0 = (_absolute(self, t, v) for v in (a, b))
    x, y = self.b.slot(f"gcd.x.{n}", k), self.b.slot(f"gcd.y.{n}", k)
    self.b.emit(f"store_var {x} {self.scalar(a0, t)}", ln)
    self.b.emit(f"store_var {y} {self.scalar(b0, t)}", ln)
    self.b.emit(f"br ^gcd.{n}.head", ln)
    self.b.block(f"gcd.{n}.head")
    yv = self.b.op(f"load_var {k} {y}", ln)
    more = self.b.op(f"cmp bool ne {yv} {self._k(0, t)}", ln)
    self.b.emit(f"cbr {more} ^gcd.{n}.body ^gcd.{n}.done", ln)
    self.b.block(f"gcd.{n}.body")
    xv, yv = self.b.op(f"load_var {k} {x}", ln), self.b.op(f"load_var {k} {y}", ln)
    self.b.emit(f"store_var {x} {yv}", ln)
    self.b.emit(f"store_var {y} {self.b.op(f'mod {k} {xv} {yv}', ln)}", ln)
    self.b.emit(f"br ^gcd.{n}.head", ln)
    self.b.block(f"gcd.{n}.done")
    return V.Scalar(self.b.op(f"load_var {k} {x}", ln), t), a0, b0


def _gcd(self, t, a, b):
    return _gcd_loop(self, t, a, b)[0] if isinstance(t, types.Integer) else None


def _lcm(self, t, a, b):
    """|a| // gcd * |b| (0 when either is 0: KIR's integer division by zero gives 0)."""
    if not isinstance(t, types.Integer):
        return None
    g, a0, b0 = _gcd_loop(self, t, a, b)
    return self.bin_op("mul", self.bin_op("floordiv", a0, g, t), b0, t)


def _exp2(self, t, x):
    return self._fmath("pow", t, V.Const(2.0, t), x) if isinstance(t, types.Float) else None


def _rint(self, t, x):
    if isinstance(t, types.Float):
        return self.rint(x, t)  # round half to even (CallEmitter.rint)
    return x


def _cbrt(self, t, x):
    """copysign(|x| ** (1/3), x) and one Newton step, which makes exact cubes exact."""
    if not isinstance(t, types.Float):
        return None
    ax = self._fmath("fabs", t, x)
    y = self._fmath("copysign", t, self._fmath("pow", t, ax, V.Const(1.0 / 3.0, t)), x)
    y2 = self.bin_op("mul", y, y, t)
    err = self.bin_op("sub", self.bin_op("mul", y2, y, t), x, t)
    step = self.bin_op("div", err, self.bin_op("mul", V.Const(3.0, t), y2, t), t)
    better = self.bin_op("sub", y, step, t)
    # zero, infinities and NaN: the Newton step would divide by zero or give NaN
    keep = self.b.op(f"math bool isfinite {self.scalar(better, t)}", self.line)
    nz = self._cmp("ne", t, y, V.Const(0.0, t)).ref
    return self._select(t, self.b.op(f"and bool {keep} {nz}", self.line), better, y)


def _scale(factor):
    def emit(self, t, x):
        return self.bin_op("mul", x, V.Const(factor, t), t) if isinstance(t, types.Float) else None

    return emit


def _predicate(name, int_result):
    def emit(self, t, x):
        if not isinstance(t, types.Float):
            return V.Const(int_result, types.boolean)
        r = self.b.op(f"math bool {name} {self.scalar(x, t)}", self.line)
        return V.Scalar(r, types.boolean)

    return emit


def _signbit(self, t, x):
    if isinstance(t, types.Float):  # the sign bit, -0.0 and -NaN included
        s = self._fmath("copysign", t, V.Const(1.0, t), x)
        return self._cmp("lt", t, s, V.Const(0.0, t))
    if isinstance(t, types.Integer) and t.signed:
        return self._cmp("lt", t, x, V.Const(0, t))
    return V.Const(False, types.boolean)


def _logical_not(self, t, x):
    v = self.scalar(x, types.boolean)
    return V.Scalar(self.b.op(f"not bool {v}", self.line), types.boolean)


def _invert(self, t, x):
    return None if isinstance(t, types.Float) else self.unary_op("not", x, t)


def _logaddexp(base2):
    """log(exp(a) + exp(b)) as max + log1p(exp(-|a - b|)) (base 2 for logaddexp2); a == b
    (infinities included) gives a + log(2), as NumPy."""

    def emit(self, t, a, b):
        if not isinstance(t, types.Float):
            return None
        ln2 = math.log(2.0)
        nad = self.unary_op("neg", self._fmath("fabs", t, self.bin_op("sub", a, b, t)), t)
        m = self._select(t, self._cmp("gt", t, a, b).ref, a, b)
        if base2:
            e = self._fmath("pow", t, V.Const(2.0, t), nad)
            tail = self.bin_op("div", self._fmath("log1p", t, e), V.Const(ln2, t), t)
            same = self.bin_op("add", a, V.Const(1.0, t), t)
        else:
            tail = self._fmath("log1p", t, self._fmath("exp", t, nad))
            same = self.bin_op("add", a, V.Const(ln2, t), t)
        eq = self._cmp("eq", t, a, b).ref
        return self._select(t, eq, same, self.bin_op("add", m, tail, t))

    return emit


def _ldexp(self, t, x, n):
    if not isinstance(t, types.Float):
        return None
    k = self.scalar(n, types.int32)
    return V.Scalar(self.b.op(f"math {self.kty(t)} ldexp {self.scalar(x, t)} {k}", self.line), t)


_SPECIAL = {
    "minimum": _minmax("lt", True),
    "maximum": _minmax("gt", True),
    "fmin": _minmax("lt", False),
    "fmax": _minmax("gt", False),
    "negative": _negative,
    "absolute": _absolute,
    "square": _square,
    "sign": _sign,
    "reciprocal": _reciprocal,
    "fmod": _fmod,
    "floor_divide": _floor_divide,
    "exp2": _exp2,
    "rint": _rint,
    "cbrt": _cbrt,
    "deg2rad": _scale(math.pi / 180.0),
    "radians": _scale(math.pi / 180.0),
    "rad2deg": _scale(180.0 / math.pi),
    "degrees": _scale(180.0 / math.pi),
    "isnan": _predicate("isnan", False),
    "isinf": _predicate("isinf", False),
    "isfinite": _predicate("isfinite", True),
    "signbit": _signbit,
    "logical_not": _logical_not,
    "invert": _invert,
    "logaddexp": _logaddexp(False),
    "logaddexp2": _logaddexp(True),
    "ldexp": _ldexp,
    "gcd": _gcd,
    "lcm": _lcm,
}
