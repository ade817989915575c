"""NumPy ufuncs on scalars inside kernels, run on every device and compared with NumPy's
own results for int and float inputs (NumPy's type rules, as Numba's typing applies them)."""

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from kapi_testing import devices_or_skip
from nvptx_util import ptx_of

import kapi

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]

UNARY = (
    "square sqrt exp exp2 expm1 log log2 log10 log1p absolute abs fabs negative positive sign "
    "reciprocal floor ceil trunc rint sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh "
    "arccosh arctanh deg2rad radians rad2deg degrees cbrt conjugate isnan isinf isfinite "
    "signbit logical_not bitwise_not invert"
).split()
BINARY = (
    "add subtract multiply divide true_divide floor_divide remainder mod fmod power "
    "float_power minimum maximum fmin fmax hypot arctan2 copysign logaddexp logaddexp2 "
    "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor left_shift "
    "right_shift greater greater_equal less less_equal equal not_equal gcd lcm"
).split()
FLOAT_ONLY = {"fabs", "bitwise_not", "invert", "bitwise_and", "bitwise_or", "bitwise_xor"}
INT_ONLY = {"bitwise_not", "invert", "bitwise_and", "bitwise_or", "bitwise_xor"}
INT_ONLY |= {"left_shift", "right_shift", "gcd", "lcm"}

FLOATS = [-2.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.5, 3.0, 7.25, 27.0, math.nan, math.inf]
FLOATS += [-math.inf, -8.0, 0.75]
FLOATS2 = [1.5, -2.0, 0.5, 2.0, -0.0, 3.0, 2.5, -1.0, 0.25, 1.0, math.nan, 2.0, 1.0, 3.0]
FLOATS2 += [-8.0, math.nan]
INTS = [-7, -3, -1, 0, 1, 2, 3, 5, 8, 27, 100, -100, -8, 64, 13, -27]
INTS2 = [2, -3, 5, 1, 3, -2, 2, 4, 3, 7, -9, 6, 5, 3, -4, 1]
SHIFTS = [0, 1, 2, 3, 5, 1, 0, 4, 3, 2, 1, 6, 7, 2, 1, 0]


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


def _unary(f):
    @kapi.kernel
    def k(item, a, out):
        i = item.get_id(0)
        out[i] = f(a[i])

    return k


def _binary(f):
    @kapi.kernel
    def k(item, a, b, out):
        i = item.get_id(0)
        out[i] = f(a[i], b[i])

    return k


def _inputs(name, dtype, second):
    if np.dtype(dtype).kind == "f":
        return np.array(FLOATS2 if second else FLOATS, dtype)
    if second and name in ("left_shift", "right_shift"):
        return np.array(SHIFTS, dtype)
    if second and name == "power":
        return np.array(SHIFTS, dtype)  # NumPy refuses negative integer powers
    if not second and name == "reciprocal":
        return np.array([v or 1 for v in INTS], dtype)  # 1 // 0 is undefined in NumPy
    return np.array(INTS2 if second else INTS, dtype)


def _expected(f, *arrays):
    """NumPy's result element by element on NumPy scalars, as a kernel computes it."""
    with np.errstate(all="ignore"):
        return [f(*(a[i] for a in arrays)) for i in range(arrays[0].size)]


def _check(dev, k, f, arrays, name):
    want = _expected(f, *arrays)
    kind = np.asarray(want[0]).dtype
    out = np.zeros(len(want), kind if kind != np.float16 else np.float32)
    dargs = [kapi.asarray(a, device=dev) for a in arrays]
    dout = kapi.asarray(out, device=dev)
    with np.errstate(all="ignore"):
        kapi.call_kernel(k, kapi.Range(len(want)), *dargs, dout)
    got = dout.asnumpy()
    exp = np.array(want, dtype=got.dtype)
    low = any(a.dtype.itemsize <= 4 for a in arrays) and got.dtype.kind == "f"
    rtol = 5e-6 if low else 1e-12  # float32: a few ulp of GPU math libraries
    np.testing.assert_allclose(got, exp, rtol=rtol, atol=1e-300, equal_nan=True, err_msg=name)


def _skip_fp64(dev, *dtypes):
    if not dev.has_aspect_fp64:
        pytest.skip("device without fp64")


@pytest.mark.parametrize("name", UNARY)
def test_unary_ufunc_matches_numpy(dev, name):
    _skip_fp64(dev)
    f = getattr(np, name)
    k = _unary(f)
    for dtype in (np.int32, np.int64, np.float32, np.float64):
        kind = np.dtype(dtype).kind
        if (kind == "f" and name in INT_ONLY) or (kind == "i" and name in FLOAT_ONLY - INT_ONLY):
            continue
        _check(dev, k, f, [_inputs(name, dtype, False)], f"np.{name}({np.dtype(dtype)})")


@pytest.mark.parametrize("name", BINARY)
def test_binary_ufunc_matches_numpy(dev, name):
    _skip_fp64(dev)
    f = getattr(np, name)
    k = _binary(f)
    pairs = [(np.int64, np.int64), (np.int32, np.int32), (np.float32, np.float32)]
    pairs += [(np.float64, np.float64), (np.int32, np.float64)]
    for da, db in pairs:
        floats = np.dtype(db).kind == "f"
        if floats and name in INT_ONLY:
            continue
        a, b = _inputs(name, da, False), _inputs(name, db, True)
        _check(dev, k, f, [a, b], f"np.{name}({a.dtype}, {b.dtype})")


def test_ldexp_and_int_bool_cases(dev):
    _skip_fp64(dev)
    x = np.array(FLOATS, np.float64)
    n = np.array(INTS2, np.int32)
    _check(dev, _binary(np.ldexp), np.ldexp, [x, n], "np.ldexp")
    u = np.array([0, 1, 2, 200, 255, 7] * 2 + [3] * 4, np.uint8)
    for name in ("sign", "absolute", "negative", "square"):
        f = getattr(np, name)
        _check(dev, _unary(f), f, [u], f"np.{name}(uint8)")
    bits = np.array([True, False] * 8)
    for name in ("add", "multiply", "maximum", "minimum", "logical_xor", "bitwise_and"):
        f = getattr(np, name)
        _check(dev, _binary(f), f, [bits, bits[::-1].copy()], f"np.{name}(bool, bool)")


@kapi.kernel
def _divmod(item, a, b, q, r):
    i = item.get_id(0)
    q[i], r[i] = np.divmod(a[i], b[i])


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_divmod_returns_floor_quotient_and_remainder(dev, dtype):
    _skip_fp64(dev)
    a, b = _inputs("divmod", dtype, False), _inputs("divmod", dtype, True)
    q, r = (kapi.zeros(a.size, dtype, device=dev) for _ in range(2))
    da, db = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    kapi.call_kernel(_divmod, kapi.Range(a.size), da, db, q, r)
    with np.errstate(all="ignore"):
        wq, wr = np.divmod(a, b)
    np.testing.assert_allclose(q.asnumpy(), wq, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(r.asnumpy(), wr, rtol=1e-12, equal_nan=True)


@kapi.kernel
def _casts_and_constants(item, x, out):
    i = item.get_id(0)
    v = x[i]
    out[i, 0] = np.float32(v) + np.pi
    out[i, 1] = np.int8(v) + np.e
    out[i, 2] = np.uint16(v) * np.euler_gamma
    out[i, 3] = np.bool_(v) + np.int64(v) + np.uint8(3)
    out[i, 4] = np.float64(np.inf) if v > 100 else np.nan
    out[i, 5] = np.double(v) + np.single(0.5) + np.intp(1) + np.int16(v) + np.uint32(1)


def test_scalar_type_conversions_and_numpy_constants(dev):
    _skip_fp64(dev)
    x = np.array([-3.75, 0.0, 2.5, 300.0, 7.0], np.float64)
    out = kapi.zeros((5, 6), np.float64, device=dev)
    kapi.call_kernel(_casts_and_constants, kapi.Range(5), kapi.asarray(x, device=dev), out)
    got = out.asnumpy()
    for i, v in enumerate(x):
        assert got[i, 0] == pytest.approx(float(np.float32(v)) + np.pi)
        assert got[i, 1] == pytest.approx(int(v) % 256 - (256 if int(v) % 256 > 127 else 0) + np.e)
        assert got[i, 2] == pytest.approx((int(v) % 65536) * np.euler_gamma)
        assert got[i, 3] == pytest.approx(bool(v) + int(v) + 3)
        assert (got[i, 4] == np.inf) if v > 100 else np.isnan(got[i, 4])
        assert got[i, 5] == pytest.approx(v + 0.5 + 1 + int(v) + 1)


def test_ufuncs_in_a_dpjit_prange_body(dev):
    @kapi.dpjit
    def f(a, out):
        for i in kapi.prange(a.shape[0]):
            out[i] = np.square(a[i]) + np.hypot(a[i], 1.0) + np.sign(a[i])

    a = np.array(FLOATS[:10], np.float64)
    out = kapi.zeros(10, np.float64, device=dev)
    f(kapi.asarray(a, device=dev), out)
    with np.errstate(all="ignore"):
        want = np.square(a) + np.hypot(a, 1.0) + np.sign(a)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12, equal_nan=True)


UNARY_FLOAT = tuple(n for n in UNARY if n not in ("bitwise_not", "invert"))
BINARY_FLOAT = tuple(n for n in BINARY if n not in INT_ONLY)


@pytest.mark.parametrize("ft", ["f32", "f64"])
def test_every_ufunc_finalises_to_ptx_for_cuda(tmp_path, ft):
    """The CUDA path without a GPU: the NVPTX finaliser takes the kernel's SPIR-V, and ptxas
    (CUDA toolkit) assembles the PTX for sm_90."""
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    libdevice = Path(ptxas).resolve().parents[1] / "nvvm" / "libdevice" / "libdevice.10.bc"
    if not libdevice.is_file():
        pytest.skip(f"the CUDA toolkit (ptxas, libdevice) is not installed: {libdevice}")
    # one kernel calling every ufunc, written out
    body = "\n".join(
        [f"    acc += np.{n}(a)" for n in UNARY_FLOAT]
        + [f"    acc += np.{n}(a, b)" for n in BINARY_FLOAT]
    )
    code = (
        "def k(item, x, y, n, out, flags):\n"
        "    i = item.get_id(0)\n"
        "    a, b, k = x[i], y[i], n[i]\n"
        f"    acc = 0.0\n{body}\n"
        "    out[i] = acc + np.ldexp(a, k) + np.floor_divide(k, 3) + np.fmod(k, -3) + np.sign(k)\n"
        "    out[i] += np.gcd(k, 6) + np.lcm(k, 4) + np.divmod(k, 3)[1] + np.divmod(a, b)[0]\n"
        "    flags[i] = np.signbit(a) ^ np.logical_xor(a, k) ^ (np.left_shift(k, 2) > k)\n"
    )
    ns = {"np": np}
    exec(compile(code, str(tmp_path / "k.py"), "exec"), ns)
    k = kapi.kernel(ns["k"])
    arr = f"array({ft},1,C,global)"
    sig = (arr, arr, "array(i32,1,C,global)", "array(f64,1,C,global)", "array(bool,1,C,global)")
    spirv = k.compile(sig, ("item", 1)).spirv
    ptx = ptx_of(spirv, libdevice)
    assert ".entry" in ptx
    (tmp_path / "k.ptx").write_text(ptx)
    r = subprocess.run(
        [ptxas, "-arch=sm_90", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
