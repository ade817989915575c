"""Complex arithmetic and cmath in terms of real math, as Python device functions.

pyfront expands a complex value into its real and imaginary parts (emit_complex.py); what
takes more than a few real operations is written here, in Python, and compiled by pyfront
itself as device functions on the parts: one set per precision, so that complex64 math stays
in float32 (the constants are NumPy scalars of the part type, which Numba types as such; a
plain `2.0` would promote float32 work to float64). Each function returns (real, imag).

The algorithms are Numba's (numba/cpython/cmathimpl.py, numbers.py), which follow CPython's
cmath module and NumPy's npy_math: Smith's division with NumPy's zero-divisor case, CPython's
c_pow (exact repeated squaring for integral exponents below 100), NumPy's csqrt (branch cut on
the negative real axis, signed zeros kept, scaling against overflow), and CPython's special
cases for infinities and NaNs in exp. Where a part is infinite or NaN, cosh, sinh, tanh and
the inverse functions (so cos, sin, tan, asin, atan too) follow C99 Annex G, as the array API
standard does, not CPython's cmath. No exceptions exist on devices: where Python raises
ZeroDivisionError (0 ** negative, division by 0) the result is inf/NaN, as NumPy gives.
"""

import math
from types import SimpleNamespace

import numpy as np

_LN10 = 2.302585092994045684
_SQRT2 = 1.414213562373095048801688724209698079


def _device(fn):
    fn.__kapi_device_func__ = True
    return fn


def _make(ft):
    zero, quarter, half, one, two = ft(0.0), ft(0.25), ft(0.5), ft(1.0), ft(2.0)
    hundred, nan, ln10 = ft(100.0), ft(math.nan), ft(_LN10)
    thres = ft(float(np.finfo(ft).max) / (1.0 + _SQRT2))
    # the inverse functions' thresholds are Numba's, from FLT_MAX in both precisions
    flt_max, flt_min = float(np.finfo(np.float32).max), float(np.finfo(np.float32).tiny)
    big, ln4, four = ft(flt_max / 4), ft(math.log(4)), ft(4.0)
    big_sqrt, small_sqrt = ft(math.sqrt(flt_max / 4)), ft(math.sqrt(flt_min))
    half_pi, inf = ft(math.pi / 2), ft(math.inf)

    @_device
    def cx_div(ar, ai, br, bi):
        abr = abs(br)
        abi = abs(bi)
        if abr >= abi:
            if abr == zero and abi == zero:
                return ar / abr, ai / abr  # inf or NaN parts, as NumPy gives
            rat = bi / br
            scl = one / (br + bi * rat)
            return (ar + ai * rat) * scl, (ai - ar * rat) * scl
        rat = br / bi
        scl = one / (bi + br * rat)
        return (ar * rat + ai) * scl, (ai * rat - ar) * scl

    @_device
    def cx_powi(ar, ai, n):
        # CPython's c_powi: x**n by repeated squaring, 1/x**-n for negative n
        m = n if n >= 0 else -n
        rr = one
        ri = zero
        pr = ar
        pi = ai
        while m > 0:
            if m & 1:
                t = rr * pr - ri * pi
                ri = rr * pi + ri * pr
                rr = t
            t = pr * pr - pi * pi
            pi = two * pr * pi
            pr = t
            m >>= 1
        if n < 0:
            return cx_div(one, zero, rr, ri)
        return rr, ri

    @_device
    def cx_pow(ar, ai, br, bi):
        if br == zero and bi == zero:
            return one, zero
        if bi == zero and math.fmod(br, one) == zero and abs(br) < hundred:
            return cx_powi(ar, ai, int(br))
        if ar == zero and ai == zero:
            if bi != zero or br < zero:
                return nan, nan  # Python raises ZeroDivisionError
            return zero, zero
        vabs = math.hypot(ar, ai)
        length = math.pow(vabs, br)
        at = math.atan2(ai, ar)
        phase = at * br
        if bi != zero:
            length /= math.exp(at * bi)
            phase += bi * math.log(vabs)
        return length * math.cos(phase), length * math.sin(phase)

    @_device
    def cx_exp(x, y):
        if math.isfinite(x):
            if math.isfinite(y):
                r = math.exp(x)
                return r * math.cos(y), r * math.sin(y)
            return nan, nan
        if math.isnan(x):
            if y != zero:
                return x, x
            return x, y
        if x > zero:  # +inf
            if math.isfinite(y):
                re = math.cos(y)
                im = math.sin(y)
                if re != zero:  # inf * 0 would give NaN: exp(inf + 0j) is inf + 0j
                    re *= x
                if im != zero:
                    im *= x
                return re, im
            return x, nan
        if math.isfinite(y):  # -inf
            r = math.exp(x)
            return r * math.cos(y), r * math.sin(y)
        return zero, zero

    @_device
    def cx_log(x, y):
        return math.log(math.hypot(x, y)), math.atan2(y, x)

    @_device
    def cx_log10(x, y):
        # log(z) / ln(10) part by part: right on infinities, unlike log(z, 10)
        return math.log(math.hypot(x, y)) / ln10, math.atan2(y, x) / ln10

    @_device
    def cx_sqrt(a, b):
        # NumPy's npy_csqrt (Algorithm 312, CACM vol 10, Oct 1967)
        if a == zero and b == zero:
            return abs(b), b
        if math.isinf(b):
            return abs(b), b
        if math.isnan(a):
            return a, a
        if math.isinf(a):
            if a < zero:
                return abs(b - b), math.copysign(a, b)
            return a, math.copysign(b - b, b)
        scale = abs(a) >= thres or abs(b) >= thres
        if scale:  # against overflow in the hypot below
            a *= quarter
            b *= quarter
        if a >= zero:
            t = math.sqrt((a + math.hypot(a, b)) * half)
            re = t
            im = b / (two * t)
        else:
            t = math.sqrt((-a + math.hypot(a, b)) * half)
            re = abs(b) / (two * t)
            im = math.copysign(t, b)
        if scale:
            return re * two, im
        return re, im

    # cosh, sinh, tanh: C99 Annex G (G.6.2.4-6), the array API standard's special cases, not
    # CPython's cmath (which differs where a part is NaN, or 0 beside an infinite part)
    @_device
    def cx_cosh(x, y):
        if math.isfinite(x):
            if y == zero:  # no inf * 0 where cosh(x) overflows
                return math.cosh(x), math.copysign(zero, x) * y
            if math.isfinite(y):
                return math.cos(y) * math.cosh(x), math.sin(y) * math.sinh(x)
            if x == zero:
                return y - y, zero  # NaN + 0j (sign of the zero unspecified)
            return y - y, y - y
        if math.isinf(x):
            if y == zero:
                return abs(x), math.copysign(one, x) * y
            if math.isfinite(y):  # inf * cis(y), conjugated for -inf
                return abs(x) * math.cos(y), x * math.sin(y)
            return abs(x), y - y  # inf + NaN j
        if y == zero:  # x is NaN
            return x, y
        return x, x

    @_device
    def cx_sinh(x, y):
        if math.isfinite(x):
            if y == zero:  # no inf * 0 where cosh(x) overflows
                return math.sinh(x), y
            if math.isfinite(y):
                return math.cos(y) * math.sinh(x), math.sin(y) * math.cosh(x)
            if x == zero:
                return x, y - y  # 0 + NaN j
            return y - y, y - y
        if math.isinf(x):
            if y == zero:
                return x, y
            if math.isfinite(y):
                return x * math.cos(y), abs(x) * math.sin(y)
            return x, y - y  # inf + NaN j (sign of the infinity unspecified)
        if y == zero:  # x is NaN
            return x, y
        return x, x

    @_device
    def cx_tanh(x, y):
        if math.isinf(x):
            # 1 + 0j, the zero signed as y (the standard's; C99 leaves it to sin(2y))
            return math.copysign(one, x), math.copysign(zero, y)
        if math.isnan(x):
            if y == zero:
                return x, y
            return x, x
        if not math.isfinite(y):
            if x == zero:
                return x, y - y  # +-0 + NaN j
            return y - y, y - y
        # CPython's c_tanh
        tx = math.tanh(x)
        ty = math.tan(y)
        cx = one / math.cosh(x)
        txty = tx * ty
        denom = one + txty * txty
        return tx * (one + ty * ty) / denom, ((ty / denom) * cx) * cx

    @_device
    def cx_cos(x, y):  # cos(z) = cosh(iz)
        return cx_cosh(-y, x)

    @_device
    def cx_sin(x, y):  # sin(z) = -i sinh(iz)
        re, im = cx_sinh(-y, x)
        return im, -re

    @_device
    def cx_tan(x, y):  # tan(z) = -i tanh(iz)
        re, im = cx_tanh(-y, x)
        return im, -re

    @_device
    def cx_rect(r, phi):
        if not math.isfinite(phi):
            if r == zero:
                return abs(r), zero  # rect(0, inf or nan) is 0
            if math.isinf(r):
                return r, phi
        re = math.cos(phi)
        im = math.sin(phi)
        # 0 * inf would give NaN: keep the zero, with the sign of the product
        if re == zero and math.isinf(r):
            re /= r
        else:
            re *= r
        if im == zero and math.isinf(r):
            im /= r
        else:
            im *= r
        return re, im

    # the inverse functions: CPython's c_acos, c_acosh, c_asinh, c_atanh (as Numba has them)
    @_device
    def cx_acos(x, y):
        if math.isnan(x) or math.isnan(y):
            if math.isnan(y) and x == zero:
                return half_pi, y  # pi/2 + NaN j
            if math.isinf(x):
                return y, -abs(x)  # NaN - inf j (sign of the infinity unspecified)
            if math.isinf(y):
                return x, -y  # NaN -+ inf j
            return x + y, x + y
        if abs(x) > big or abs(y) > big:  # no spurious overflow; infinities
            return math.atan2(abs(y), x), math.copysign(
                math.log(math.hypot(x * half, y * half)) + ln4, -y
            )
        s1r, s1i = cx_sqrt(one - x, -y)
        s2r, s2i = cx_sqrt(one + x, y)
        return two * math.atan2(s1r, s2r), math.asinh(s2r * s1i - s2i * s1r)

    @_device
    def cx_acosh(x, y):
        if math.isnan(x) or math.isnan(y):
            if math.isnan(y) and x == zero:
                return y, half_pi  # NaN + pi/2 j (sign of the imaginary part unspecified)
            if math.isinf(x):
                return abs(x), y  # inf + NaN j
            if math.isinf(y):
                return abs(y), x  # inf + NaN j
            return x + y, x + y
        if abs(x) > big or abs(y) > big:
            return math.log(math.hypot(x * half, y * half)) + ln4, math.atan2(y, x)
        s1r, s1i = cx_sqrt(x - one, y)
        s2r, s2i = cx_sqrt(x + one, y)
        return math.asinh(s1r * s2r + s1i * s2i), two * math.atan2(s1i, s2r)

    @_device
    def cx_asinh(x, y):
        if math.isnan(x) or math.isnan(y):
            if math.isnan(x) and y == zero:
                return x, y  # NaN + 0j
            if math.isinf(x):
                return x, y  # +-inf + NaN j
            if math.isinf(y):
                return y, x  # inf + NaN j (sign of the infinity unspecified)
            return x + y, x + y
        if abs(x) > big or abs(y) > big:
            re = math.copysign(math.log(math.hypot(x * half, y * half)) + ln4, x)
            return re, math.atan2(y, abs(x))
        s1r, s1i = cx_sqrt(one + y, -x)
        s2r, s2i = cx_sqrt(one - y, x)
        return math.asinh(s1r * s2i - s2r * s1i), math.atan2(y, s1r * s2r - s1i * s2i)

    @_device
    def cx_asin(x, y):  # asin(z) = -i asinh(iz)
        re, im = cx_asinh(-y, x)
        return im, -re

    @_device
    def cx_atanh(x, y):
        if math.isnan(x) or math.isnan(y):
            if math.isnan(y) and (x == zero or math.isinf(x)):
                return math.copysign(zero, x), y  # +-0 + NaN j
            if math.isinf(y):
                return zero, math.copysign(half_pi, y)  # 0 + pi/2 j (sign of the 0 unspecified)
            return x + y, x + y
        negate = x < zero
        if negate:  # atanh(z) = -atanh(-z)
            x = -x
            y = -y
        ay = abs(y)
        if math.isnan(x) or x > big_sqrt or ay > big_sqrt:
            if math.isinf(y):
                re = math.copysign(zero, x)
            elif math.isinf(x):
                re = zero
            else:
                h = math.hypot(x * half, y * half)
                re = x / four / h / h
            im = -math.copysign(half_pi, -y)
        elif x == one and ay < small_sqrt:
            if ay == zero:
                re = inf
                im = y
            else:
                re = -math.log(math.sqrt(ay) / math.sqrt(math.hypot(ay, two)))
                im = math.copysign(math.atan2(two, -ay) / two, y)
        else:
            sqay = ay * ay
            zr1 = one - x
            re = math.log1p(four * x / (zr1 * zr1 + sqay)) * quarter
            im = -math.atan2(-two * y, zr1 * (one + x) - sqay) * half
        if math.isnan(y):
            im = nan
        if negate:
            return -re, -im
        return re, im

    @_device
    def cx_atan(x, y):  # atan(z) = -i atanh(iz)
        re, im = cx_atanh(-y, x)
        if math.isinf(x) and math.isnan(y):
            return im, re  # as Numba (and CPython's table) have it
        return im, -re

    return SimpleNamespace(**{k: v for k, v in locals().items() if k.startswith("cx_")})


F32 = _make(np.float32)
F64 = _make(np.float64)


def helpers(part_type_name):
    """The helpers computing in the named float type ('float32' or 'float64')."""
    return F32 if part_type_name == "float32" else F64
