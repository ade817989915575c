"""complex64 / complex128 in kernels: arguments, arrays, arithmetic, cmath, on every device.

References: NumPy and Python's cmath for ordinary values; Numba itself (numba.njit on the
same function) for the special values (infinities, NaNs, signed zeros, branch cuts) of exp,
log, log10 and sqrt, since kapi follows Numba's algorithms there; for the hyperbolic and
trigonometric functions and their inverses, which follow C99 Annex G at infinite and NaN
parts, the array API standard's table of special cases (written out below) and NumPy (whose
complex ufuncs are the C library's C99 functions). The PTX test at the end checks what the
CUDA driver would load.
"""

import cmath
import math
import shutil
import subprocess

import numba
import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
import pyfront
from kapi import kernel_api as K

DEVICES = devices_or_skip()
CTYPES = [np.complex64, np.complex128]
RTOL = {np.complex64: 1e-5, np.complex128: 1e-13}  # relative to |reference|


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def usable(dev, dtype):
    if np.dtype(dtype) == np.complex128 and not dev.has_aspect_fp64:
        pytest.skip("device without fp64")


def rand(n, dtype, seed=0):
    r = np.random.default_rng(seed)
    return (r.standard_normal(n) + 1j * r.standard_normal(n)).astype(dtype)


def run(kernel, dev, n, *arrays_and_scalars):
    """Launch over Range(n) with NumPy arrays copied to dev; the arrays come back."""
    args = [
        kapi.asarray(a, device=dev) if isinstance(a, np.ndarray) else a for a in arrays_and_scalars
    ]
    kapi.call_kernel(kernel, K.Range(n), *args)
    return [a.asnumpy() if isinstance(a, kapi.Array) else a for a in args]


def same(got, ref, dtype, inputs=None):
    """Equal up to the precision's tolerance relative to the reference's modulus (a part may
    cancel), NaN where NaN, infinities and the signs of exact zeros as the reference's.
    For `inputs` with both parts infinite or NaN, C99 Annex G leaves the sign of an infinite
    result unspecified (CPython raises for some, casin(inf+nan i) is nan-inf i in CPython and
    nan+inf i in Numba on x86, whose default NaN is negative; catan(inf+nan i) is pi/2 +-0i):
    there only infinity and zero are checked, not their signs."""
    got, ref = np.asarray(got), np.asarray(ref)
    loose = np.zeros(ref.shape, bool)
    if inputs is not None:
        z = np.asarray(inputs)
        loose = ~np.isfinite(z.real) & ~np.isfinite(z.imag)
    with np.errstate(all="ignore"):
        scale = np.where(np.isfinite(np.abs(ref)), np.abs(ref), 0.0)
    for g, r in ((got.real, ref.real), (got.imag, ref.imag)):
        nan = np.isnan(r)
        assert (np.isnan(g) == nan).all(), (got, ref)
        inf = np.isinf(r)
        assert np.isinf(g[inf]).all(), (got, ref)
        assert (g[inf & ~loose] == r[inf & ~loose]).all(), (got, ref)
        fin = ~nan & ~inf
        err = np.abs(g[fin] - r[fin])
        assert (err <= RTOL[dtype] * scale[fin]).all(), (got, ref)
        zero = fin & (r == 0) & ~loose
        assert (np.signbit(g[zero]) == np.signbit(r[zero])).all(), (got, ref)


# ---- arithmetic --------------------------------------------------------------------------------


@kapi.kernel
def arith(item, a, b, out, s):
    i = item.get_id(0)
    x, y = a[i], b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = -x + s
    out[i, 5] = x.conjugate() * s
    out[i, 6] = complex(x.imag, y.real)
    out[i, 7] = abs(x) * 1j + x.real


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda d: np.dtype(d).name)
def test_arithmetic_matches_numpy(dev, dtype):
    usable(dev, dtype)
    a, b = rand(64, dtype, 1), rand(64, dtype, 2)
    s = dtype(0.5 - 2j)
    (_, _, out, _) = run(arith, dev, 64, a, b, np.zeros((64, 8), dtype), s)
    ref = np.stack(
        [
            a + b,
            a - b,
            a * b,
            a / b,
            -a + s,
            np.conj(a) * s,
            a.imag + 1j * b.real,
            abs(a) * 1j + a.real,
        ],
        axis=1,
    )
    same(out, ref.astype(dtype), dtype)


@kapi.kernel
def compare(item, a, b, out):
    i = item.get_id(0)
    out[i, 0] = a[i] == b[i]
    out[i, 1] = a[i] != b[i]
    out[i, 2] = a[i] == 2.0  # real operand promoted to complex
    out[i, 3] = not a[i]


def test_comparisons(dev):
    a = np.array([1 + 2j, 2, np.nan, 0, 1 - 2j], np.complex64)
    b = np.array([1 + 2j, 2 + 1e-7j, np.nan, -0.0, 1 + 2j], np.complex64)
    (_, _, out) = run(compare, dev, 5, a, b, np.zeros((5, 4), np.bool_))
    np.testing.assert_array_equal(out[:, 0], a == b)
    np.testing.assert_array_equal(out[:, 1], a != b)
    np.testing.assert_array_equal(out[:, 2], a == 2)
    np.testing.assert_array_equal(out[:, 3], a == 0)


@kapi.kernel
def mixed(item, a, x, n, out):
    i = item.get_id(0)
    out[i, 0] = a[i] + x  # complex64 + float64 -> complex128, as Numba types it
    out[i, 1] = a[i] * n  # complex64 * int64 -> complex128
    out[i, 2] = x / a[i]


def test_mixed_real_complex_promotes_like_numba(dev):
    usable(dev, np.complex128)
    a = rand(16, np.complex64, 3)
    x = 1.0 + 2.0**-40  # lost in float32: visible only if the sum is complex128
    (_, _, _, out) = run(mixed, dev, 16, a, x, 3, np.zeros((16, 3), np.complex128))
    ac = a.astype(np.complex128)
    same(out, np.stack([ac + x, ac * 3, x / ac], axis=1), np.complex128)
    t = pyfront.compile_kernel(
        mixed.py_func,
        ["array(c64,1,C,global)", "f64", "i64", "array(c128,2,C,global)"],
        index=("item", 1),
    ).text
    assert "add f64" in t and "add f32" not in t


@kapi.kernel
def powers(item, a, b, n, out):
    i = item.get_id(0)
    z = a[i]
    out[i, 0] = z**2
    out[i, 1] = z**3
    out[i, 2] = z**-2
    out[i, 3] = z**n
    out[i, 4] = z ** b[i]
    out[i, 5] = z**0.5
    out[i, 6] = pow(z, 7)


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda d: np.dtype(d).name)
def test_powers_match_numba(dev, dtype):
    usable(dev, dtype)
    a, b = rand(32, dtype, 4), rand(32, dtype, 5)
    a[0], b[0] = 0, 0  # 0 ** 0 == 1
    a[1] = 0  # 0 ** b with b.real > 0 is 0 (b[1].real is drawn positive below)
    b[1] = abs(b[1].real) + 1j * 0
    out = np.zeros((32, 7), np.complex128)
    (_, _, _, out) = run(powers, dev, 32, a, b, 5, out)
    ref = np.zeros_like(out)
    numba.njit(_powers_ref)(a, b, 5, ref)
    tol = np.complex64 if dtype == np.complex64 else np.complex128
    finite = np.isfinite(ref).all(axis=1)
    same(out[finite], ref[finite], tol)


def _powers_ref(a, b, n, out):
    for i in range(a.shape[0]):
        z = a[i]
        out[i, 0] = z**2
        out[i, 1] = z**3
        out[i, 2] = z**-2
        out[i, 3] = z**n
        out[i, 4] = z ** b[i]
        out[i, 5] = z**0.5
        out[i, 6] = pow(z, 7)


def test_division_scales_and_divides_by_zero_like_numpy(dev):
    usable(dev, np.complex128)
    a = np.array([1e300 + 1e300j, 1 + 1j, 1 + 0j, 0j, 2 - 3j], np.complex128)
    b = np.array([1e300 + 1e300j, 1e-300 + 1e-300j, 0j, 0j, np.inf + 0j], np.complex128)

    @kapi.kernel
    def div(item, a, b, out):
        i = item.get_id(0)
        out[i] = a[i] / b[i]

    (_, _, out) = run(div, dev, 5, a, b, np.zeros(5, np.complex128))
    with np.errstate(all="ignore"):
        ref = a / b
    same(out, ref, np.complex128)


# ---- cmath -------------------------------------------------------------------------------------

UNARY = ["exp", "log", "log10", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh"]
UNARY += ["acos", "asin", "atan", "acosh", "asinh", "atanh"]
_SPECIAL = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 1e300, math.inf, -math.inf, math.nan]
SPECIAL = [complex(x, y) for x in _SPECIAL for y in _SPECIAL]
ANNEX_G = {"sin", "cos", "tan", "sinh", "cosh", "tanh", "acos", "asin", "atan"}
ANNEX_G |= {"acosh", "asinh", "atanh"}
NP_NAME = {"acos": "arccos", "asin": "arcsin", "atan": "arctan"}
NP_NAME |= {"acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh"}


def _unary_kernel(name):
    f = getattr(cmath, name)

    def body(item, a, out):
        i = item.get_id(0)
        out[i] = f(a[i])

    def ref(a, out):
        for i in range(a.shape[0]):
            out[i] = f(a[i])

    return kapi.kernel(body), numba.njit(ref)


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", UNARY)
def test_cmath_unary(dev, dtype, name):
    usable(dev, dtype)
    kern, ref = _unary_kernel(name)
    # ordinary values against Python's cmath
    a = rand(48, dtype, 6) * dtype(3)
    (_, out) = run(kern, dev, 48, a, np.zeros(48, dtype))
    expect = np.array([getattr(cmath, name)(complex(z)) for z in a]).astype(dtype)
    same(out, expect, dtype)
    # infinities, NaNs, signed zeros and branch cuts against Numba (C99's functions: NumPy)
    with np.errstate(over="ignore"):  # 1e300 is inf in complex64
        s = np.array(SPECIAL, dtype)
    (_, out) = run(kern, dev, len(s), s, np.zeros(len(s), dtype))
    expect = np.zeros_like(s)
    with np.errstate(all="ignore"):
        if name in ANNEX_G:
            expect = getattr(np, NP_NAME.get(name, name))(s)
            # tanh(+-inf + yj), y finite: the standard's +-1 + 0j with the zero signed as y
            # (C99 and NumPy sign it as sin(2y)); tan(z) = -i tanh(iz) likewise
            fin = np.isfinite(s.imag) if name == "tanh" else np.isfinite(s.real)
            inf = np.isinf(s.real) if name == "tanh" else np.isinf(s.imag)
            m = inf & fin
            if name == "tanh":
                expect.real[m], expect.imag[m] = np.sign(s.real[m]), np.copysign(0, s.imag[m])
            elif name == "tan":
                expect.real[m], expect.imag[m] = np.copysign(0, s.real[m]), np.sign(s.imag[m])
        else:
            ref(s, expect)
    same(out, expect, dtype, s)


# ---- the array API standard's special cases (C99 Annex G) -------------------------------------
# Each row: function, real parts, imaginary parts, expected (real, imag). The standard lists
# the cases for a >= 0 (or any a) and b >= 0; the functions are conjugate-symmetric
# (f(conj(z)) = conj(f(z))), and cosh, sinh, tanh, asinh and atanh are even or odd, which
# `test_standard_special_cases` also checks. Expected parts: a float, NAN, or "0" / "inf"
# where the standard leaves the sign unspecified.
NAN = math.nan
INF = math.inf
PI = math.pi
POS = [0.5, 3.0]  # positive finite
NONZERO = [-2.5, 0.5, 3.0]  # nonzero finite
FINITE = [-2.5, -0.0, 0.0, 0.5, 3.0]
Z = [0.0]
ZS = [0.0, -0.0]


def _cis(a, b):
    return (INF * math.cos(b), INF * math.sin(b))


STANDARD_CASES = [
    # cosh
    ("cosh", Z, Z, (1.0, 0.0)),
    ("cosh", Z, [INF], (NAN, "0")),
    ("cosh", Z, [NAN], (NAN, "0")),
    ("cosh", NONZERO, [INF], (NAN, NAN)),
    ("cosh", NONZERO, [NAN], (NAN, NAN)),
    ("cosh", [INF], Z, (INF, 0.0)),
    ("cosh", [INF], NONZERO, _cis),
    ("cosh", [INF], [INF], ("inf", NAN)),
    ("cosh", [INF], [NAN], (INF, NAN)),
    ("cosh", [NAN], ZS, (NAN, "0")),
    ("cosh", [NAN], NONZERO, (NAN, NAN)),
    ("cosh", [NAN], [NAN], (NAN, NAN)),
    # sinh
    ("sinh", Z, Z, (0.0, 0.0)),
    ("sinh", Z, [INF], ("0", NAN)),
    ("sinh", Z, [NAN], ("0", NAN)),
    ("sinh", POS, [INF], (NAN, NAN)),
    ("sinh", POS, [NAN], (NAN, NAN)),
    ("sinh", [INF], Z, (INF, 0.0)),
    ("sinh", [INF], POS, _cis),
    ("sinh", [INF], [INF], ("inf", NAN)),
    ("sinh", [INF], [NAN], ("inf", NAN)),
    ("sinh", [NAN], Z, (NAN, 0.0)),
    ("sinh", [NAN], NONZERO, (NAN, NAN)),
    ("sinh", [NAN], [NAN], (NAN, NAN)),
    # tanh
    ("tanh", Z, Z, (0.0, 0.0)),
    ("tanh", NONZERO, [INF], (NAN, NAN)),
    ("tanh", Z, [INF], (0.0, NAN)),
    ("tanh", NONZERO, [NAN], (NAN, NAN)),
    ("tanh", Z, [NAN], (0.0, NAN)),
    ("tanh", [INF], POS, (1.0, 0.0)),
    ("tanh", [INF], [INF], (1.0, "0")),
    ("tanh", [INF], [NAN], (1.0, "0")),
    ("tanh", [NAN], Z, (NAN, 0.0)),
    ("tanh", [NAN], NONZERO, (NAN, NAN)),
    ("tanh", [NAN], [NAN], (NAN, NAN)),
    # acos
    ("acos", ZS, Z, (PI / 2, -0.0)),
    ("acos", ZS, [NAN], (PI / 2, NAN)),
    ("acos", FINITE, [INF], (PI / 2, -INF)),
    ("acos", NONZERO, [NAN], (NAN, NAN)),
    ("acos", [-INF], POS, (PI, -INF)),
    ("acos", [INF], POS, (0.0, -INF)),
    ("acos", [-INF], [INF], (3 * PI / 4, -INF)),
    ("acos", [INF], [INF], (PI / 4, -INF)),
    ("acos", [INF, -INF], [NAN], (NAN, "inf")),
    ("acos", [NAN], FINITE, (NAN, NAN)),
    ("acos", [NAN], [INF], (NAN, -INF)),
    ("acos", [NAN], [NAN], (NAN, NAN)),
    # acosh
    ("acosh", ZS, Z, (0.0, PI / 2)),
    ("acosh", FINITE, [INF], (INF, PI / 2)),
    ("acosh", NONZERO, [NAN], (NAN, NAN)),
    ("acosh", Z, [NAN], (NAN, "pi/2")),
    ("acosh", [-INF], POS, (INF, PI)),
    ("acosh", [INF], POS, (INF, 0.0)),
    ("acosh", [-INF], [INF], (INF, 3 * PI / 4)),
    ("acosh", [INF], [INF], (INF, PI / 4)),
    ("acosh", [INF, -INF], [NAN], (INF, NAN)),
    ("acosh", [NAN], FINITE, (NAN, NAN)),
    ("acosh", [NAN], [INF], (INF, NAN)),
    ("acosh", [NAN], [NAN], (NAN, NAN)),
    # asinh
    ("asinh", Z, Z, (0.0, 0.0)),
    ("asinh", POS, [INF], (INF, PI / 2)),
    ("asinh", FINITE, [NAN], (NAN, NAN)),
    ("asinh", [INF], POS, (INF, 0.0)),
    ("asinh", [INF], [INF], (INF, PI / 4)),
    ("asinh", [NAN], Z, (NAN, 0.0)),
    ("asinh", [NAN], NONZERO, (NAN, NAN)),
    ("asinh", [NAN], [INF], ("inf", NAN)),
    ("asinh", [NAN], [NAN], (NAN, NAN)),
    # atanh
    ("atanh", Z, Z, (0.0, 0.0)),
    ("atanh", Z, [NAN], (0.0, NAN)),
    ("atanh", [1.0], Z, (INF, 0.0)),
    ("atanh", POS, [INF], (0.0, PI / 2)),
    ("atanh", NONZERO, [NAN], (NAN, NAN)),
    ("atanh", [INF], POS, (0.0, PI / 2)),
    ("atanh", [INF], [INF], (0.0, PI / 2)),
    ("atanh", [INF], [NAN], (0.0, NAN)),
    ("atanh", [NAN], FINITE, (NAN, NAN)),
    ("atanh", [NAN], [INF], ("0", PI / 2)),
    ("atanh", [NAN], [NAN], (NAN, NAN)),
]
# f(-z) = -f(z) (odd) or f(z) (even): the standard's functions with that symmetry
PARITY = {"cosh": 1, "sinh": -1, "tanh": -1, "asinh": -1, "atanh": -1}


def _expected_cases(name, dtype):
    """(inputs, expected re, expected im) for `name`, symmetries included; expected parts as
    in STANDARD_CASES, with the unspecified-sign markers kept."""
    zs, exp = [], []
    for fname, reals, imags, want in STANDARD_CASES:
        if fname != name:
            continue
        for a in reals:
            for b in imags:
                w = want(a, b) if callable(want) else want
                zs.append((a, b))
                exp.append(w)
    out_z, out_e = list(zs), list(exp)

    def flip(v):  # negate an expected part, markers unchanged
        return v if isinstance(v, str) else -v

    for (a, b), (re, im) in zip(zs, exp, strict=True):
        out_z.append((a, -b))  # conjugate symmetry
        out_e.append((re, flip(im)))
        if name in PARITY:
            sign = PARITY[name]
            out_z.append((-a, -b))
            out_e.append((re, im) if sign == 1 else (flip(re), flip(im)))
    return out_z, out_e


def _check_part(got, want, dtype, what):
    tol = 4 * float(np.finfo(np.dtype(dtype).char.lower()).eps)
    if isinstance(want, str):
        ok = {
            "0": got == 0,
            "inf": math.isinf(got),
            "pi/2": abs(abs(got) - PI / 2) <= tol * PI,
        }[want]
    elif math.isnan(want):
        ok = math.isnan(got)
    elif math.isinf(want) or want == 0:
        ok = got == want and math.copysign(1, got) == math.copysign(1, want)
    else:
        ok = abs(got - want) <= tol * abs(want)
    assert ok, f"{what}: got {got!r}, the standard says {want!r}"


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["cosh", "sinh", "tanh", "acos", "acosh", "asinh", "atanh"])
def test_standard_special_cases(dev, dtype, name):
    """Every special case the array API standard (2024.12) lists for the complex function,
    with its conjugate symmetry and parity, in a kernel calling cmath."""
    usable(dev, dtype)
    kern, _ = _unary_kernel(name)
    zs, exp = _expected_cases(name, dtype)
    a = np.array([complex(x, y) for x, y in zs], dtype)
    (_, out) = run(kern, dev, len(a), a, np.zeros(len(a), dtype))
    for (x, y), got, (re, im) in zip(zs, out, exp, strict=True):
        what = f"{name}({x!r} + {y!r}j) in {np.dtype(dtype).name}"
        _check_part(float(got.real), re, dtype, what + ", real part")
        _check_part(float(got.imag), im, dtype, what + ", imaginary part")


def test_sqrt_and_log_branch_cuts(dev):
    usable(dev, np.complex128)
    a = np.array([complex(-4, 0.0), complex(-4, -0.0), complex(-1, 1e-300), complex(-1, -1e-300)])
    f = _unary_kernel("sqrt")[0]
    (_, out) = run(f, dev, 4, a, np.zeros(4, np.complex128))
    same(
        out, np.array([2j, -2j, 1j, -1j]) + np.array([cmath.sqrt(z).real for z in a]), np.complex128
    )
    assert np.signbit(out[1].real) == np.signbit(cmath.sqrt(a[1]).real)
    g = _unary_kernel("log")[0]
    (_, out) = run(g, dev, 4, a, np.zeros(4, np.complex128))
    same(out, np.array([cmath.log(z) for z in a]), np.complex128)


@kapi.kernel
def polar_rect(item, a, out, flags):
    i = item.get_id(0)
    r, phi = cmath.polar(a[i])
    out[i, 0] = cmath.rect(r, phi)
    out[i, 1] = complex(cmath.phase(a[i]), abs(a[i]))
    out[i, 2] = cmath.log(a[i], 2 + 1j)
    flags[i, 0] = cmath.isnan(a[i])
    flags[i, 1] = cmath.isinf(a[i])
    flags[i, 2] = cmath.isfinite(a[i])


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda d: np.dtype(d).name)
def test_polar_rect_phase_predicates(dev, dtype):
    usable(dev, dtype)
    a = np.concatenate(
        [rand(16, dtype, 7), np.array([np.inf, np.nan * 1j, 1 + np.inf * 1j], dtype)]
    )
    n = len(a)
    (_, out, flags) = run(
        polar_rect, dev, n, a, np.zeros((n, 3), dtype), np.zeros((n, 3), np.bool_)
    )
    m = 16
    expect = np.stack(
        [
            a[:m],
            [complex(cmath.phase(z), abs(z)) for z in a[:m]],
            [cmath.log(complex(z), 2 + 1j) for z in a[:m]],
        ],
        axis=1,
    ).astype(dtype)
    same(out[:m], expect, dtype)
    np.testing.assert_array_equal(flags[:, 0], [cmath.isnan(z) for z in a])
    np.testing.assert_array_equal(flags[:, 1], [cmath.isinf(z) for z in a])
    np.testing.assert_array_equal(flags[:, 2], [cmath.isfinite(z) for z in a])


def test_rect_special_values_match_numba(dev):
    usable(dev, np.complex128)
    r = np.array([0.0, math.inf, math.inf, 2.0, -math.inf, 1.0])
    phi = np.array([math.inf, math.nan, 0.0, math.pi / 2, math.pi, -0.0])

    @kapi.kernel
    def rect(item, r, phi, out):
        i = item.get_id(0)
        out[i] = cmath.rect(r[i], phi[i])

    @numba.njit
    def ref(r, phi, out):
        for i in range(r.shape[0]):
            out[i] = cmath.rect(r[i], phi[i])

    (_, _, out) = run(rect, dev, 6, r, phi, np.zeros(6, np.complex128))
    expect = np.zeros(6, np.complex128)
    ref(r, phi, expect)
    same(out, expect, np.complex128)


GLOBAL_C = 1 + 2j
GLOBAL_D = np.complex64(0.5j)


@kapi.kernel
def ufuncs_and_truth(item, a, out):
    i = item.get_id(0)
    z = a[i]
    if z:  # bool(z): z != 0
        z += GLOBAL_C
    else:
        z = GLOBAL_D * 2
    out[i, 0] = np.exp(z) + np.sqrt(z) + np.conj(z) + np.abs(z)
    out[i, 1] = np.isnan(z) + np.log(z) + np.tanh(z)


def test_numpy_ufuncs_globals_and_truth(dev):
    usable(dev, np.complex128)  # GLOBAL_C is complex128
    a = np.array([0, 1 - 1j, 2j, -0.0], np.complex64)
    (_, out) = run(ufuncs_and_truth, dev, 4, a, np.zeros((4, 2), np.complex128))
    a128 = a.astype(np.complex128)  # z is complex128 in the kernel (unified with GLOBAL_C)
    z = np.where(a != 0, a128 + GLOBAL_C, np.complex128(GLOBAL_D) * 2)
    ref = np.stack(
        [np.exp(z) + np.sqrt(z) + np.conj(z) + np.abs(z), np.isnan(z) + np.log(z) + np.tanh(z)], 1
    )
    same(out, ref, np.complex128)


# ---- arguments, layouts, variables, device functions ---------------------------------------


@kapi.device_func
def horner(row, n, x):
    acc = 0j
    for j in range(n):
        acc = acc * x + row[j]
    return acc


@kapi.device_func
def swap(z):
    return complex(z.imag, z.real)


@kapi.kernel
def rows(item, a, out, x):
    i = item.get_id(0)
    h = horner(a[i], a.shape[1], x)
    out[i] = swap(h) + h.real
    s = a.strides
    out[i] += 0 * complex(s[0], s[1])


@pytest.mark.parametrize("order", ["C", "F", "A"])
def test_layouts_row_views_and_device_functions(dev, order):
    usable(dev, np.complex128)
    base = rand(5 * 8, np.complex128, 8).reshape(5, 8)
    a = {"C": base[:, :4].copy(), "F": np.asfortranarray(base[:, :4]), "A": base[:, ::2]}[order]
    x = 0.25 - 0.5j
    (_, out, _) = run(rows, dev, 5, a, np.zeros(5, np.complex128), x)
    h = np.array([np.polyval(r, x) for r in a])
    same(out, (h.imag + 1j * h.real) + h.real, np.complex128)


def test_strides_are_in_elements(dev):
    @kapi.kernel
    def strides(item, a, out):
        s = a.strides
        out[0] = s[0]
        out[1] = s[1]

    a = np.zeros((3, 4), np.complex64)
    (_, out) = run(strides, dev, 1, a, np.zeros(2, np.int64))
    np.testing.assert_array_equal(out, [4, 1])  # elements, as for every dtype in kapi


@kapi.kernel
def scalars(item, out, z, w):
    out[0] = z
    out[1] = w
    out[2] = z * w


def test_scalar_arguments(dev):
    usable(dev, np.complex128)
    for z, w in [(1.5 - 2j, np.complex64(3 + 4j)), (np.complex128(-1e200 + 1j), 2j)]:
        (out, _, _) = run(scalars, dev, 1, np.zeros(3, np.complex128), z, w)
        same(out, np.array([z, w, complex(z) * complex(w)]), np.complex64)


def test_kapi_arrays_round_trip(dev):
    usable(dev, np.complex128)
    for dtype in CTYPES:
        h = rand(10, dtype, 9)
        a = kapi.asarray(h, device=dev)
        assert a.dtype == dtype
        np.testing.assert_array_equal(a.asnumpy(), h)
        e = kapi.empty((2, 3), dtype=dtype, device=dev)
        assert e.dtype == dtype and e.shape == (2, 3)


# ---- errors ------------------------------------------------------------------------------------


def test_complex_into_a_real_array_is_a_typing_error(dev):
    @kapi.kernel
    def bad(item, a, z):
        a[0] = z

    with pytest.raises(pyfront.KernelTypingError, match="complex128"):
        kapi.call_kernel(bad, K.Range(1), kapi.zeros(2, dtype=np.float32, device=dev), 1j)


@kapi.device_func
def pair(z):
    return z, z.real


def test_unsupported_complex_constructs_name_the_line():
    def k(item, a):
        w, r = pair(a[0])
        a[1] = w

    with pytest.raises(pyfront.UnsupportedConstructError, match=r"returns Tuple\(complex64"):
        pyfront.compile_kernel(k, ["array(c64,1,C,global)"], index=("item", 1))

    def loc(item, a):
        a[0] = 1

    with pytest.raises(pyfront.KernelTypingError, match="c64 arrays must be global arrays"):
        pyfront.compile_kernel(loc, ["array(c64,1,C,local)"], index=("item", 1))


# ---- CUDA: the PTX the driver would load ---------------------------------------------------


LIBDEVICE = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"


@pytest.mark.skipif(not shutil.os.path.exists(LIBDEVICE), reason="no CUDA libdevice here")
def test_complex_kernel_ptx_assembles_for_sm_90(tmp_path):
    from nvptx_util import ptx_of

    kern, _ = _unary_kernel("tanh")
    with np.errstate(over="ignore"):
        a = np.array(SPECIAL, np.complex64)
    kapi.call_kernel(kern, K.Range(len(a)), kapi.asarray(a), kapi.zeros(len(a), dtype=np.complex64))
    kapi.call_kernel(
        arith,
        K.Range(4),
        *(
            kapi.asarray(x)
            for x in (
                rand(4, np.complex128),
                rand(4, np.complex128),
                np.zeros((4, 8), np.complex128),
            )
        ),
        1j,
    )
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    for k in (kern, arith):
        for spirv in k.inspect_spirv().values():
            ptx = ptx_of(spirv, libdevice=LIBDEVICE)
            assert ".entry" in ptx
            if not shutil.os.path.exists(ptxas):
                pytest.skip("ptxas not found (install the CUDA toolkit) after the PTX was made")
            f = tmp_path / "k.ptx"
            f.write_text(ptx)
            r = subprocess.run(
                [ptxas, "-arch=sm_90", str(f), "-o", str(tmp_path / "k.cubin")],
                capture_output=True,
                text=True,
            )
            assert r.returncode == 0, r.stderr


def test_dlpack_round_trip(dev):
    usable(dev, np.complex128)
    for dtype in CTYPES:
        h = rand(6, dtype, 10)
        a = kapi.asarray(h, device=dev)
        b = kapi.from_dlpack(a)
        assert b.dtype == dtype
        np.testing.assert_array_equal(b.asnumpy(), h)
        if dev.host_accessible:
            np.testing.assert_array_equal(np.from_dlpack(a), h)


@kapi.kernel
def private_complex(item, a, out):
    i = item.get_id(0)
    p = K.PrivateArray((2, 3), a.dtype, True)  # two part arrays of the part type
    for k in range(3):
        p[0, k] = a[i] * k
        p[1, k] = np.power(a[i], 2)
    out[i] = p[0, 2] + p[1, 1] + p[1, 0] * 0.5


@pytest.mark.parametrize("dtype", CTYPES, ids=lambda d: np.dtype(d).name)
def test_private_complex_array_and_np_power(dev, dtype):
    usable(dev, dtype)
    a = rand(16, dtype, 6)
    (_, out) = run(private_complex, dev, 16, a, np.zeros(16, dtype))
    same(out, a * 2 + a**2 * 1.5, dtype)
