"""Complex numbers in kernels: each complex value is expanded into two real values.

KIR has no complex type: a complex64 (complex128) value is a pair of f32 (f64) values, a
complex kernel or device-function parameter is two parameters (`%z.re`, `%z.im`), a complex
array is two arrays of the part type over the same memory (`%a`: the real parts; `%a.im`: the
imaginary parts one part further; strides in parts; docs/kir.md, "Kernel ABI"), and a
complex result of a device function comes back as a tuple of its parts. Arithmetic that is a
few real operations is emitted inline; the rest (division, powers, cmath) are device
functions written in Python (complex_math.py). Typing is Numba's (numba.core.typing's
complex rules and cmathdecl, plus typing_complex.py for what Numba types with @overload).

A mixin of FunctionEmitter (emit.py).
"""

import cmath
import operator

import numpy as np

from . import complex_math
from . import values as V
from ._numba import signature, types
from .kir import BINOPS
from .ktypes import kir_scalar

_ARITH = {op: name for op, name in BINOPS.items() if name in ("add", "sub", "mul", "div", "pow")}
# cmath function -> helper in complex_math (complex in, complex out)
_CMATH_UNARY = {
    cmath.exp: "cx_exp",
    cmath.log10: "cx_log10",
    cmath.sqrt: "cx_sqrt",
    cmath.sin: "cx_sin",
    cmath.cos: "cx_cos",
    cmath.tan: "cx_tan",
    cmath.sinh: "cx_sinh",
    cmath.cosh: "cx_cosh",
    cmath.tanh: "cx_tanh",
    cmath.acos: "cx_acos",
    cmath.asin: "cx_asin",
    cmath.atan: "cx_atan",
    cmath.acosh: "cx_acosh",
    cmath.asinh: "cx_asinh",
    cmath.atanh: "cx_atanh",
}
_CMATH_PREDICATES = {cmath.isnan: "isnan", cmath.isinf: "isinf", cmath.isfinite: "isfinite"}
# NumPy ufuncs on complex scalars: the same functions
_NP_UNARY = {
    np.exp: "cx_exp",
    np.log10: "cx_log10",
    np.sqrt: "cx_sqrt",
    np.sin: "cx_sin",
    np.cos: "cx_cos",
    np.tan: "cx_tan",
    np.sinh: "cx_sinh",
    np.cosh: "cx_cosh",
    np.tanh: "cx_tanh",
    np.log: "cx_log",
    np.arccos: "cx_acos",
    np.arcsin: "cx_asin",
    np.arctan: "cx_atan",
    np.arccosh: "cx_acosh",
    np.arcsinh: "cx_asinh",
    np.arctanh: "cx_atanh",
}
_NP_PREDICATES = {np.isnan: "isnan", np.isinf: "isinf", np.isfinite: "isfinite"}


def is_complex(ty):
    return isinstance(types.unliteral(ty), types.Complex)


class ComplexEmitter:
    """Complex values for FunctionEmitter: V.Complex holds the two part values."""

    # ---- values ---------------------------------------------------------------------------

    def to_complex(self, val, cty):
        """`val` (complex or real) as a V.Complex of Numba complex type `cty`."""
        cty = types.unliteral(cty)
        ft = cty.underlying_float
        if isinstance(val, V.Complex):
            return V.Complex(self.convert(val.re, ft), self.convert(val.im, ft), cty)
        if isinstance(val, V.Const) and isinstance(val.value, complex):
            return V.Complex(V.Const(val.value.real, ft), V.Const(val.value.imag, ft), cty)
        if isinstance(val, V.Scalar | V.Const):
            return V.Complex(self.convert(val, ft), V.Const(0.0, ft), cty)
        raise self.unsupported("value", f"{type(val).__name__.lower()} used as a complex number")

    def complex_const(self, value, cty):
        cty = types.unliteral(cty)
        if not isinstance(cty, types.Complex):
            cty = types.complex128
        ft = cty.underlying_float
        return V.Complex(V.Const(value.real, ft), V.Const(value.imag, ft), cty)

    def _parts(self, val, cty):
        z = self.to_complex(val, cty)
        ft = cty.underlying_float
        return self.scalar(z.re, ft), self.scalar(z.im, ft), ft

    def _op(self, op, ft, *refs):
        return self.b.op(f"{op} {self.kty(ft)} {' '.join(refs)}", self.line)

    def _mk(self, re, im, cty):
        ft = cty.underlying_float
        return V.Complex(V.Scalar(re, ft), V.Scalar(im, ft), cty)

    def helper(self, name, args, ft):
        """Call complex_math's `name` on real values of type ft: the result as V.Tuple."""
        fn = getattr(complex_math.helpers(str(ft)), name)
        argtys = tuple(ft if not isinstance(a, V.Scalar) else a.ty for a in args)
        _, tf = self.module.device_function(fn, argtys, fastmath=self.fastmath)
        return self.device_call(fn, args, signature(tf.restype, *argtys))

    def helper_complex(self, name, z, cty):
        ft = cty.underlying_float
        re, im, _ = self._parts(z, cty)
        t = self.helper(name, [V.Scalar(re, ft), V.Scalar(im, ft)], ft)
        return V.Complex(t.items[0], t.items[1], cty)

    # ---- parameters, variables, device functions ------------------------------------------

    def complex_params(self, name, ty):
        """KIR parameters for a complex scalar or array parameter, and its value."""
        if isinstance(ty, types.Array):
            ft = ty.dtype.underlying_float
            # interleaved parts (strided: A), but a private array's parts are two C arrays
            layout = "C" if ty.addrspace == "private" and ty.layout == "C" else "A"
            arr = f"array({kir_scalar(ft)},{ty.ndim},{layout},{ty.addrspace})"
            return [(name, arr), (f"{name}.im", arr)], V.Array("%" + name, ty)
        ft = ty.underlying_float
        params = [(f"{name}.re", kir_scalar(ft)), (f"{name}.im", kir_scalar(ft))]
        return params, V.Complex(V.Scalar(f"%{name}.re", ft), V.Scalar(f"%{name}.im", ft), ty)

    def complex_load_slots(self, name, ty):
        ft = ty.underlying_float
        k = self.kty(ft)
        parts = [
            V.Scalar(self.b.op(f"load_var {k} {self.b.slot(f'{name}.{p}', k)}", self.line), ft)
            for p in ("re", "im")
        ]
        return V.Complex(*parts, types.unliteral(ty))

    def complex_store_slots(self, name, ty, val):
        re, im, ft = self._parts(val, types.unliteral(ty))
        k = self.kty(ft)
        self.b.emit(f"store_var {self.b.slot(f'{name}.re', k)} {re}", self.line)
        self.b.emit(f"store_var {self.b.slot(f'{name}.im', k)} {im}", self.line)

    def complex_flatten(self, a, ty):
        if isinstance(a, V.Array):
            return [a.ref, a.ref + ".im"]
        re, im, _ = self._parts(a, types.unliteral(ty))
        return [re, im]

    # ---- arrays ---------------------------------------------------------------------------

    def complex_aload(self, arr, idx):
        ft = arr.ty.dtype.underlying_float
        k, ix = self.kty(ft), " ".join(idx)
        re = self.b.op(f"aload {k} {arr.ref} {ix}", self.line)
        im = self.b.op(f"aload {k} {arr.ref}.im {ix}", self.line)
        return self._mk(re, im, arr.ty.dtype)

    def complex_astore(self, arr, idx, val, op="astore"):
        re, im, _ = self._parts(val, arr.ty.dtype)
        ix = " ".join(idx)
        self.b.emit(f"{op} {arr.ref} {re} {ix}", self.line)
        self.b.emit(f"{op} {arr.ref}.im {im} {ix}", self.line)

    # ---- operators ------------------------------------------------------------------------

    def complex_binop(self, fn, lhs, rhs, sig):
        if fn in (operator.eq, operator.ne):
            a0, a1 = (types.unliteral(t) for t in sig.args)
            cty = self._unify(a0, a1)
            if not isinstance(cty, types.Complex):
                cty = types.complex128
            ar, ai, ft = self._parts(lhs, cty)
            br, bi, _ = self._parts(rhs, cty)
            pred = "eq" if fn is operator.eq else "ne"
            c1 = self.b.op(f"cmp bool {pred} {ar} {br}", self.line)
            c2 = self.b.op(f"cmp bool {pred} {ai} {bi}", self.line)
            comb = "and" if pred == "eq" else "or"
            return V.Scalar(self.b.op(f"{comb} bool {c1} {c2}", self.line), types.boolean)
        kop = _ARITH.get(fn)
        ret = types.unliteral(sig.return_type)
        if kop is None or not isinstance(ret, types.Complex):
            raise self.unsupported(
                "operator",
                f"'{fn.__name__}' on {sig.args} is not supported in kernels (complex numbers "
                "take + - * / ** == != and unary -)",
            )
        return self.complex_arith(kop, lhs, rhs, ret, types.unliteral(sig.args[1]))

    def complex_arith(self, kop, lhs, rhs, cty, rhs_ty=None):
        if kop == "pow":
            return self.complex_pow(lhs, rhs, cty, rhs_ty)
        ar, ai, ft = self._parts(lhs, cty)
        br, bi, _ = self._parts(rhs, cty)
        if kop in ("add", "sub"):
            return self._mk(self._op(kop, ft, ar, br), self._op(kop, ft, ai, bi), cty)
        if kop == "mul":
            re = self._op("sub", ft, self._op("mul", ft, ar, br), self._op("mul", ft, ai, bi))
            im = self._op("add", ft, self._op("mul", ft, ar, bi), self._op("mul", ft, ai, br))
            return self._mk(re, im, cty)
        args = [V.Scalar(r, ft) for r in (ar, ai, br, bi)]
        t = self.helper("cx_div", args, ft)
        return V.Complex(t.items[0], t.items[1], cty)

    def complex_pow(self, lhs, rhs, cty, rhs_ty):
        ft = cty.underlying_float
        if (
            isinstance(rhs, V.Const)
            and isinstance(rhs.value, int | bool)
            and abs(int(rhs.value)) <= 64
            and int(rhs.value) >= 0
        ):
            # a constant integral exponent: repeated squaring, as Numba and CPython do
            n = int(rhs.value)
            result = self.complex_const(1 + 0j, cty)
            p = self.to_complex(lhs, cty)
            while n:
                if n & 1:
                    result = self.complex_arith("mul", result, p, cty)
                n >>= 1
                if n:
                    p = self.complex_arith("mul", p, p, cty)
            return self.to_complex(result, cty)
        ar, ai, _ = self._parts(lhs, cty)
        br, bi, _ = self._parts(rhs, cty)
        t = self.helper("cx_pow", [V.Scalar(r, ft) for r in (ar, ai, br, bi)], ft)
        return V.Complex(t.items[0], t.items[1], cty)

    def complex_unary(self, fn, val, ret):
        if fn is operator.pos:
            return self.to_complex(val, ret)
        if fn is operator.neg:
            re, im, ft = self._parts(val, ret)
            return self._mk(self._op("neg", ft, re), self._op("neg", ft, im), ret)
        if fn is operator.not_:
            re, im, ft = self._parts(val, val.ty)
            zero = self.scalar(V.Const(0.0, ft))
            c1 = self.b.op(f"cmp bool eq {re} {zero}", self.line)
            c2 = self.b.op(f"cmp bool eq {im} {zero}", self.line)
            return V.Scalar(self.b.op(f"and bool {c1} {c2}", self.line), types.boolean)
        raise self.unsupported("operator", f"the unary operator {fn} on complex numbers")

    def complex_truth(self, val):
        """bool(z): z != 0."""
        neg = self.complex_unary(operator.not_, val, types.boolean)
        return V.Scalar(self.b.op(f"not bool {neg.ref}", self.line), types.boolean)

    # ---- attributes and methods -----------------------------------------------------------

    def complex_attr(self, val, attr):
        if attr == "real":
            return val.re
        if attr == "imag":
            return val.im
        raise self.unsupported("attribute", f"attribute '{attr}' of complex numbers")

    def complex_method(self, val, attr, args):
        if attr == "conjugate" and not args:
            re, im, ft = self._parts(val, val.ty)
            return self._mk(re, self._op("neg", ft, im), val.ty)
        raise self.unsupported("call", f"method '{attr}' of complex numbers is not supported")

    # ---- calls ----------------------------------------------------------------------------

    def complex_call(self, pyf, fnty, args, sig):
        """A call involving complex values, or None if it is not one."""
        ret = types.unliteral(sig.return_type)
        involved = is_complex(ret) or any(is_complex(t) for t in sig.args)
        if not involved:
            return None
        try:
            hash(pyf)
        except TypeError:
            pyf = None
        if pyf is abs or pyf is np.abs or pyf is np.absolute:
            re, im, ft = self._parts(args[0], types.unliteral(sig.args[0]))
            return V.Scalar(self.b.op(f"math {self.kty(ft)} hypot {re} {im}", self.line), ft)
        if isinstance(fnty, types.NumberClass) or pyf is complex:
            cty = ret
            if len(args) == 2:  # complex(real, imag)
                ft = cty.underlying_float
                if any(isinstance(a, V.Complex) for a in args):
                    a = self.to_complex(args[0], cty)
                    b = self.to_complex(args[1], cty)
                    # complex(a, b) = a + b*1j for complex a, b
                    return self.complex_arith(
                        "add", a, V.Complex(self._neg(b.im, ft), b.re, cty), cty
                    )
                return V.Complex(self.convert(args[0], ft), self.convert(args[1], ft), cty)
            if not args:
                return self.complex_const(0j, cty)
            return self.to_complex(args[0], cty)
        if (pyf is bool or pyf is operator.truth) and len(args) == 1:
            return self.complex_truth(self.to_complex(args[0], types.unliteral(sig.args[0])))
        if (pyf is pow or pyf is np.power) and len(args) == 2:
            return self.complex_pow(args[0], args[1], ret, types.unliteral(sig.args[1]))
        if pyf is cmath.log:
            z = self.helper_complex("cx_log", args[0], ret)
            if len(args) == 1:
                return z
            base = self.helper_complex("cx_log", args[1], ret)
            return self.complex_arith("div", z, base, ret)
        if pyf in _CMATH_UNARY or pyf in _NP_UNARY:
            return self.helper_complex(_CMATH_UNARY.get(pyf) or _NP_UNARY[pyf], args[0], ret)
        if pyf in (np.conj, np.conjugate):
            return self.complex_method(self.to_complex(args[0], ret), "conjugate", [])
        if pyf in _CMATH_PREDICATES or pyf in _NP_PREDICATES:
            cty = types.unliteral(sig.args[0])
            re, im, ft = self._parts(args[0], cty)
            name = _CMATH_PREDICATES.get(pyf) or _NP_PREDICATES[pyf]
            p1 = self.b.op(f"math bool {name} {re}", self.line)
            p2 = self.b.op(f"math bool {name} {im}", self.line)
            comb = "and" if name == "isfinite" else "or"
            return V.Scalar(self.b.op(f"{comb} bool {p1} {p2}", self.line), types.boolean)
        if pyf is cmath.phase:
            re, im, ft = self._parts(args[0], types.unliteral(sig.args[0]))
            return V.Scalar(self.b.op(f"math {self.kty(ft)} atan2 {im} {re}", self.line), ft)
        if pyf is cmath.polar:
            re, im, ft = self._parts(args[0], types.unliteral(sig.args[0]))
            k = self.kty(ft)
            r = self.b.op(f"math {k} hypot {re} {im}", self.line)
            phi = self.b.op(f"math {k} atan2 {im} {re}", self.line)
            return V.Tuple([V.Scalar(r, ft), V.Scalar(phi, ft)])
        if pyf is cmath.rect:
            ft = ret.underlying_float
            t = self.helper("cx_rect", [self.convert(a, ft) for a in args], ft)
            return V.Complex(t.items[0], t.items[1], ret)
        name = getattr(pyf, "__qualname__", None) or getattr(pyf, "__name__", None) or str(fnty)
        raise self.unsupported("call", f"'{name}' on complex numbers is not supported in kernels")

    def _neg(self, part, ft):
        return V.Scalar(self._op("neg", ft, self.scalar(part, ft)), ft)
