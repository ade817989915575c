"""Element-wise functions of the array API: each a NumPy ufunc run as a generated kernel on
the operands' device (kapi/_numeric/ufunc.py), lazily fused with the operations around it;
NumPy 2's type rules, Python scalars weak."""

from __future__ import annotations

import numpy as np

from ..._memory.array import Array
from .. import lazy as _lazy
from .. import ufunc as _ufunc
from . import _core as C


def _apply(uf, name, *xs):
    if not any(isinstance(x, Array) for x in xs):
        raise TypeError(f"{name} needs at least one kapi array operand, got " + ", ".join(
            type(x).__name__ for x in xs))  # fmt: skip
    return _ufunc.apply(uf, tuple(C.scalar_operand(x) for x in xs))


def _unary(uf, name):
    def f(x, /):
        return _apply(uf, name, x)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"numpy.{uf.__name__} on x's device (the array API's {name})."
    return f


def _binary(uf, name):
    def f(x1, x2, /):
        return _apply(uf, name, x1, x2)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"numpy.{uf.__name__} on the operands' device (the array API's {name})."
    return f


_UNARY = {
    "abs": np.absolute, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin,
    "asinh": np.arcsinh, "atan": np.arctan, "atanh": np.arctanh, "bitwise_invert": np.invert,
    "cos": np.cos, "cosh": np.cosh, "exp": np.exp, "expm1": np.expm1, "isfinite": np.isfinite,
    "isinf": np.isinf, "isnan": np.isnan, "log": np.log, "log1p": np.log1p, "log2": np.log2,
    "log10": np.log10, "logical_not": np.logical_not, "negative": np.negative,
    "positive": np.positive, "reciprocal": np.reciprocal, "sign": np.sign,
    "signbit": np.signbit, "sin": np.sin, "sinh": np.sinh, "square": np.square,
    "sqrt": np.sqrt, "tan": np.tan, "tanh": np.tanh,
}  # fmt: skip
_INT_SAME = {"ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "round": np.rint}
_BINARY = {
    "add": np.add, "atan2": np.arctan2, "bitwise_and": np.bitwise_and,
    "bitwise_left_shift": np.left_shift, "bitwise_or": np.bitwise_or,
    "bitwise_right_shift": np.right_shift, "bitwise_xor": np.bitwise_xor,
    "copysign": np.copysign, "divide": np.true_divide, "equal": np.equal,
    "floor_divide": np.floor_divide, "greater": np.greater, "greater_equal": np.greater_equal,
    "hypot": np.hypot, "less": np.less, "less_equal": np.less_equal,
    "logaddexp": np.logaddexp, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "maximum": np.maximum, "minimum": np.minimum,
    "multiply": np.multiply, "not_equal": np.not_equal, "pow": np.power,
    "remainder": np.remainder, "subtract": np.subtract,
}  # fmt: skip

FUNCTIONS: dict = {}
for _n, _u in _UNARY.items():
    FUNCTIONS[_n] = _unary(_u, _n)
for _n, _u in _BINARY.items():
    FUNCTIONS[_n] = _binary(_u, _n)


def _int_same(uf, name):
    def f(x, /):
        C.check(x, name)
        if x.dtype.kind in "iub":
            return C.concrete(x.astype(x.dtype, copy=True))  # integers are already whole
        return _apply(uf, name, x)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"numpy.{uf.__name__} on x's device; integers are returned as they are (copied)."
    return f


for _n, _u in _INT_SAME.items():
    FUNCTIONS[_n] = _int_same(_u, _n)


def _part(x: Array, imag: bool) -> Array:
    """The real or imaginary part of a complex array: a view of its memory."""
    half = np.dtype(x.dtype.char.lower())
    return C.view(x, x.shape, x.strides, half.itemsize if imag else 0, half)


def real(x, /):
    C.check(x, "real")
    if x.dtype.kind != "c":
        return C.concrete(x.astype(x.dtype, copy=True))
    return _part(x, False)


def imag(x, /):
    C.check(x, "imag")
    if x.dtype.kind != "c":
        return C.concrete(_ufunc.where(True, x.dtype.type(0), x).astype(x.dtype))
    return _part(x, True)


def conj(x, /):
    C.check(x, "conj")
    if x.dtype.kind != "c":
        return C.concrete(x.astype(x.dtype, copy=True))
    return _apply(np.conjugate, "conj", x)


def _clamp_scalar(v, dt: np.dtype):
    """A Python bound for an integer array: clamped into its dtype's range."""
    if dt.kind in "iu" and isinstance(v, (int, float)) and not isinstance(v, bool):
        info = np.iinfo(dt)
        if v != v:
            return v
        if v <= info.min:
            return int(info.min)
        if v >= info.max:
            return int(info.max)
        return int(v) if isinstance(v, int) else v
    return v


def clip(x, /, min=None, max=None):
    """x limited to [min, max] elementwise (either bound may be None, a scalar or an array);
    NaN bounds give NaN; x's dtype."""
    C.check(x, "clip")
    dt = x.dtype
    r = x
    if min is not None:
        if isinstance(min, Array) and min.dtype != dt:
            min = min.astype(dt)
        r = _ufunc.apply(np.maximum, (r, C.scalar_operand(_clamp_scalar(min, dt))))
    if max is not None:
        if isinstance(max, Array) and max.dtype != dt:
            max = max.astype(dt)
        r = _ufunc.apply(np.minimum, (r, C.scalar_operand(_clamp_scalar(max, dt))))
    if r is x:
        return C.concrete(x.astype(dt, copy=True))
    if r.dtype != dt:
        r = r.astype(dt)
    shape = np.broadcast_shapes(*(a.shape for a in (x, min, max) if isinstance(a, Array)))
    if r.shape != shape:
        from .manipulation import broadcast_to

        r = broadcast_to(r, shape)
    return r


def nextafter(x1, x2, /):
    """The next representable floating-point value after x1 towards x2 (bit arithmetic on
    the device)."""
    from .manipulation import broadcast_arrays

    if not isinstance(x1, Array):
        x1 = C.check(x2, "nextafter").dtype.type(x1)
    if not isinstance(x2, Array):
        x2 = C.check(x1, "nextafter").dtype.type(x2)
    a, b = (x if isinstance(x, Array) else None for x in (x1, x2))
    arrays = [v for v in (a, b) if v is not None]
    dt = np.result_type(*(v.dtype for v in (x1, x2)))
    if dt.kind != "f" or dt.itemsize not in (4, 8):
        raise TypeError(f"nextafter takes float32 or float64 arrays, not {dt}")
    like = arrays[0]
    x1 = x1.astype(dt) if isinstance(x1, Array) else C.scalar_array(x1, dt, like)
    x2 = x2.astype(dt) if isinstance(x2, Array) else C.scalar_array(x2, dt, like)
    x1, x2 = broadcast_arrays(x1, x2)
    x1, x2 = C.contiguous(x1), C.contiguous(x2)
    it = np.dtype(f"i{dt.itemsize}")
    xb = C.view(x1, x1.shape, x1.strides, 0, it)
    one = it.type(1)
    sign = it.type(np.iinfo(it).min)  # the sign bit alone
    src = f"""
def _nextafter(item, x, y, xb, out):
    i = item.get_id(0)
    a = x[i]
    b = y[i]
    if a != a or b != b:
        out[i] = a + b
    elif a == b:
        out[i] = b
    else:
        bits = xb[i]
        if a == 0:
            r = np.{it.type.__name__}(1)
            if b < 0:
                r = r | SIGN
            out[i] = K_BITS(r)
        elif (a < b) == (a > 0):
            out[i] = K_BITS(bits + ONE)
        else:
            out[i] = K_BITS(bits - ONE)
"""
    out = C.allocate(x1.shape, it, x1)
    res = C.view(out, out.shape, out.strides, 0, dt)
    # the kernel writes bits into the integer view: NaN and equal cases store floats' bits
    src = src.replace("K_BITS(", "(").replace("out[i] = a + b", "out[i] = ANAN")
    src = src.replace("out[i] = b\n", "out[i] = BBITS\n")
    src = src.replace("def _nextafter(item, x, y, xb, out):",
                      "def _nextafter(item, x, y, xb, yb, out):")  # fmt: skip
    src = src.replace("ANAN", "np.bitwise_or(xb[i], yb[i]) | QNAN").replace("BBITS", "yb[i]")
    yb = C.view(x2, x2.shape, x2.strides, 0, it)
    qnan = it.type(0x7FC00000 if dt.itemsize == 4 else 0x7FF8000000000000)
    k = C.kernel(src, "_nextafter", SIGN=sign, ONE=one, QNAN=qnan)
    n = out.size
    if n:
        C.launch(k, n, x1.reshape(n), x2.reshape(n), xb.reshape(n), yb.reshape(n), out.reshape(n))
    return res


FUNCTIONS.update(real=real, imag=imag, conj=conj, clip=clip, nextafter=nextafter)
_ = _lazy
