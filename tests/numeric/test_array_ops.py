"""Operators, ufuncs, fused expressions and reductions on kapi arrays, on every device,
against NumPy's results (types: NumPy 2 promotion with weak Python scalars)."""

import math
import operator

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


def _data(dtype, shape, seed=0, nonzero=False):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        lo = 1 if nonzero or dt.kind == "u" else -50
        v = rng.integers(lo, 50, shape)
        if nonzero:
            v = np.where(v == 0, 3, v)
        return v.astype(dt)
    v = rng.uniform(-4, 4, shape)
    if nonzero:
        v = np.where(np.abs(v) < 0.25, 1.5, v)
    return v.astype(dt)


def _check(got, want):
    assert isinstance(got, kapi.Array)
    h = got.asnumpy()
    assert h.dtype == want.dtype, (h.dtype, want.dtype)
    assert h.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(h, want, rtol=2e-6 if want.dtype == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(h, want)


ARITH = ["+", "-", "*", "/", "//", "%"]
BITS = ["&", "|", "^"]
CMP = ["<", "<=", ">", ">=", "==", "!="]


def _binop(op, x, y):
    return eval(f"x {op} y")  # noqa: S307 - the operators under test


@pytest.mark.parametrize("op", ARITH + CMP)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "float32", "float64"])
def test_binary_same_dtype(dev, op, dtype):
    a, b = _data(dtype, 37, 1), _data(dtype, 37, 2, nonzero=True)
    x, y = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    _check(_binop(op, x, y), _binop(op, a, b))


@pytest.mark.parametrize("op", BITS + ["<<", ">>"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "uint64"])
def test_bitwise_and_shifts(dev, op, dtype):
    a = _data(dtype, 29, 3)
    b = (np.arange(29) % 6).astype(dtype) if op in ("<<", ">>") else _data(dtype, 29, 4)
    x, y = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    _check(_binop(op, x, y), _binop(op, a, b))


def test_bool_logic(dev):
    a, b = _data(bool, 20, 1), _data(bool, 20, 2)
    x, y = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    for op in ("&", "|", "^", "==", "!="):
        _check(_binop(op, x, y), _binop(op, a, b))
    _check(~x, ~a)


def test_power(dev):
    a = np.arange(-5, 7, dtype=np.int64)
    b = np.arange(12, dtype=np.int64) % 4
    _check(kapi.asarray(a, device=dev) ** kapi.asarray(b, device=dev), a**b)
    f = _data(np.float32, 12, 5) ** 2 + 0.5
    _check(kapi.asarray(f, device=dev) ** 0.5, f**0.5)


@pytest.mark.parametrize(
    "ta,tb", [("int8", "int16"), ("int32", "float32"), ("uint8", "int8"), ("float32", "float64"),
              ("bool", "int32"), ("int64", "uint64"), ("uint32", "int64")]
)  # fmt: skip
def test_promotion(dev, ta, tb):
    a, b = _data(ta, 15, 1), _data(tb, 15, 2, nonzero=True)
    x, y = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    for op in ("+", "*", "<", "/"):
        _check(_binop(op, x, y), _binop(op, a, b))


@pytest.mark.parametrize(
    "sa,sb", [((4, 5), (5,)), ((3, 1), (1, 6)), ((2, 3, 4), (3, 1)), ((2, 1, 3, 4), (5, 1, 1)),
              ((), (7,)), ((4, 0), (4, 1))]
)  # fmt: skip
def test_broadcasting(dev, sa, sb):
    a, b = _data(np.float64, sa, 1), _data(np.float64, sb, 2)
    x, y = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    _check(x - y, a - b)
    _check(y * x, b * a)


def test_strided_views(dev):
    a = _data(np.float32, (6, 8), 1)
    x = kapi.asarray(a, device=dev)
    _check(x[::2, 1::3] + x.T[1::3, ::2].T, a[::2, 1::3] + a.T[1::3, ::2].T)
    _check(x.T * 2, a.T * 2)
    f = kapi.asarray(np.asfortranarray(a), device=dev)
    _check(f + x, a + a)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "float32", "float64"])
def test_python_scalars_are_weak(dev, dtype):
    a = _data(dtype, 16, 1, nonzero=True)
    x = kapi.asarray(a, device=dev)
    for op in ("+", "-", "*", "//", "%", "<", "=="):
        _check(_binop(op, x, 3), _binop(op, a, 3))
        _check(_binop(op, 3, x), _binop(op, 3, a))
    _check(x * 2.5, a * 2.5)
    _check(2.5 / x, 2.5 / a)
    _check(x + np.float64(1.0), a + np.float64(1.0))  # NumPy scalars are strong


def test_scalar_out_of_range_raises(dev):
    x = kapi.asarray(np.arange(4, dtype=np.int8), device=dev)
    with pytest.raises(OverflowError):
        x + 1000
    with pytest.raises(OverflowError):
        np.arange(4, dtype=np.int8) + 1000


@pytest.mark.parametrize("dtype", ["int16", "int64", "float32", "float64"])
def test_unary(dev, dtype):
    a = _data(dtype, 21, 7)
    x = kapi.asarray(a, device=dev)
    _check(-x, -a)
    _check(+x, +a)
    _check(abs(x), abs(a))
    if np.dtype(dtype).kind == "i":
        _check(~x, ~a)


def test_inplace(dev):
    a = _data(np.int32, (4, 6), 1, nonzero=True)
    x = kapi.asarray(a, device=dev)
    y = x
    for op, v in ((operator.iadd, 3), (operator.isub, 7), (operator.imul, 2),
                  (operator.ifloordiv, 3), (operator.imod, 5), (operator.ilshift, 2),
                  (operator.irshift, 1), (operator.iand, 0x3F), (operator.ior, 0x100),
                  (operator.ixor, 0x55)):  # fmt: skip
        x = op(x, v)
        a = op(a, v)
        np.testing.assert_array_equal(x.asnumpy(), a)
    assert y is x  # in place: the same array object
    f = _data(np.float32, (4, 6), 2)
    z = kapi.asarray(f, device=dev)
    z /= 4
    z **= 2
    f /= 4
    f **= 2
    _check(z, f)
    z += kapi.asarray(np.arange(6, dtype=np.float32), device=dev)  # broadcast operand
    f += np.arange(6, dtype=np.float32)
    _check(z, f)
    with pytest.raises(TypeError, match="same_kind"):
        x += 1.5  # int32 array, float64 result: NumPy refuses too


def test_inplace_overlap(dev):
    a = np.arange(10.0)
    x = kapi.asarray(a, device=dev)
    x[1:] += x[:-1]
    a[1:] += a[:-1].copy()
    _check(x, a)


UFUNC1 = ["sin", "cos", "exp", "log1p", "sqrt", "tanh", "floor", "rint", "square", "sign",
          "isnan", "isfinite", "negative", "absolute", "reciprocal", "cbrt", "signbit"]  # fmt: skip
UFUNC2 = ["maximum", "minimum", "fmax", "arctan2", "hypot", "copysign", "fmod", "logaddexp",
          "logical_and", "logical_xor", "power", "floor_divide", "remainder"]  # fmt: skip


@pytest.mark.parametrize("name", UFUNC1)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ufunc_unary(dev, name, dtype):
    a = np.abs(_data(dtype, 19, 8)) + 0.5 if name in ("sqrt", "log1p") else _data(dtype, 19, 8)
    uf = getattr(np, name)
    _check(uf(kapi.asarray(a, device=dev)), uf(a))


@pytest.mark.parametrize("name", UFUNC2)
def test_ufunc_binary(dev, name):
    a, b = _data(np.float64, (3, 7), 1), _data(np.float32, 7, 2, nonzero=True)
    if name == "power":
        a = np.abs(a)
    uf = getattr(np, name)
    _check(uf(kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)), uf(a, b))


def test_ufunc_int_inputs_and_out(dev):
    a = np.arange(-6, 6, dtype=np.int32)
    x = kapi.asarray(a, device=dev)
    _check(np.sqrt(abs(x)), np.sqrt(abs(a)))  # int32 -> float64, as NumPy
    _check(np.gcd(x, 4), np.gcd(a, 4))
    out = kapi.empty(12, np.float32, device=dev)
    r = np.multiply(x, 0.5, out=out, casting="unsafe")
    assert r is out
    np.testing.assert_array_equal(out.asnumpy(), np.multiply(a, 0.5).astype(np.float32))
    out2 = kapi.empty(12, np.int64, device=dev)
    np.add(x, x, out=(out2,))
    np.testing.assert_array_equal(out2.asnumpy(), a + a)


def test_errors(dev):
    x = kapi.asarray(np.arange(4.0), device=dev)
    with pytest.raises(TypeError, match="kapi arrays support|not supported on kapi arrays"):
        np.modf(x)
    with pytest.raises(TypeError, match="not supported on kapi arrays"):
        np.add.reduce(x)
    with pytest.raises(TypeError, match="kapi.asarray"):
        x + np.arange(4.0)  # host arrays are not copied silently
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(ValueError, match="shape"):
        np.add(x, 1, out=kapi.empty(3, device=dev))
    with pytest.raises(ValueError):
        x + kapi.asarray(np.arange(3.0), device=dev)
    with pytest.raises(TypeError):
        hash(x)
    with pytest.raises(TypeError, match="bitwise_and"):
        x & x  # NumPy's own UFuncTypeError


def test_two_devices_raise(dev):
    others = [d for d in DEVICES if d != dev]
    if not others:
        pytest.skip("one device only: the cross-device error needs two")
    x = kapi.asarray(np.arange(4.0), device=dev)
    y = kapi.asarray(np.arange(4.0), device=others[0])
    with pytest.raises(kapi.ExecutionQueueInferenceError) as e:
        x + y
    assert dev.filter_string in str(e.value) and others[0].filter_string in str(e.value)


def test_result_lives_on_operand_device(dev):
    x = kapi.asarray(np.arange(4.0), device=dev, usm_type="shared")
    y = x * 4
    assert y.device == dev and y.usm_type == "shared"


# -- kapi.fuse ---------------------------------------------------------------------------


def test_fuse_matches_numpy(dev):
    @kapi.fuse
    def gauss(x, m, y):
        return np.exp(-((x - m) ** 2)) * y + 1

    a = _data(np.float32, (5, 8), 1)
    b = _data(np.float32, 8, 2)
    got = gauss(kapi.asarray(a, device=dev), 1.5, kapi.asarray(b, device=dev))
    _check(got, np.exp(-((a - 1.5) ** 2)) * b + 1)
    a64 = a.astype(np.float64)
    _check(gauss(kapi.asarray(a64, device=dev), 0.5, 2), np.exp(-((a64 - 0.5) ** 2)) * 2 + 1)


def test_fuse_is_one_kernel(dev):
    from kapi._numeric import ufunc as _ufunc

    f = kapi.fuse(lambda x, y: (x * 2 + y) / 3 - x)
    before = len(_ufunc._KERNELS)
    x = kapi.asarray(np.arange(10, dtype=np.int32), device=dev)
    y = kapi.asarray(np.arange(10, dtype=np.int32) * 3, device=dev)
    _check(f(x, y), (np.arange(10) * 2 + np.arange(10) * 3) / 3 - np.arange(10))
    assert len(_ufunc._KERNELS) - before <= 1  # one kernel for the whole expression
    f(x, y)
    assert len(_ufunc._KERNELS) - before <= 1  # and it is cached


def test_fuse_types_and_out(dev):
    f = kapi.fuse(lambda x, s: np.minimum(x * s, 100) > 7)
    a = np.arange(-5, 20, dtype=np.int8)
    x = kapi.asarray(a, device=dev)
    _check(f(x, 3), np.minimum(a * 3, 100) > 7)
    out = kapi.empty(a.shape, np.bool_, device=dev)
    assert f(x, 3, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.minimum(a * 3, 100) > 7)
    with pytest.raises(OverflowError):
        kapi.fuse(lambda x: x + 1000)(x)


def test_fuse_errors(dev):
    x = kapi.asarray(np.arange(4.0), device=dev)
    with pytest.raises(TypeError, match="branch"):
        kapi.fuse(lambda v: v if v > 0 else -v)(x)
    with pytest.raises(TypeError, match="return"):
        kapi.fuse(lambda v: 3)(x)
    with pytest.raises(TypeError, match="not supported"):
        kapi.fuse(lambda v: np.add.reduce(v))(x)


# -- reductions ----------------------------------------------------------------------------

REDUCTIONS = ["sum", "prod", "min", "max", "mean", "argmin", "argmax", "any", "all"]


def _check_reduction(got, want):
    h = got.asnumpy() if isinstance(got, kapi.Array) else np.asarray(got)
    want = np.asarray(want)
    assert h.dtype == want.dtype, (h.dtype, want.dtype)
    assert h.shape == want.shape, (h.shape, want.shape)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(h, want, rtol=1e-4 if want.dtype == np.float32 else 1e-10)
    else:
        np.testing.assert_array_equal(h, want)


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "int32", "uint16", "int64", "float32", "float64"]
)
def test_reductions_1d(dev, op, dtype):
    n = 10007  # several work-groups, then the partials' pass
    a = _data(dtype, n, 11)
    if op == "prod":
        a = a[:40] if np.dtype(dtype).kind != "f" else (1 + a / 400).astype(dtype)
    x = kapi.asarray(a, device=dev)
    got = getattr(x, op)()
    assert isinstance(got, kapi.Array) and got.ndim == 0  # a 0-d array (array API)
    _check_reduction(got, getattr(a, op)())


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_axes(dev, op, axis, keepdims):
    a = _data(np.float64, (6, 5, 300), 12)
    if op == "prod":
        a = 1 + a / 100  # no overflow
    x = kapi.asarray(a, device=dev)
    kw = {"keepdims": keepdims}
    _check_reduction(getattr(x, op)(axis=axis, **kw), getattr(a, op)(axis=axis, **kw))


def test_reductions_axis_tuple_and_views(dev):
    a = _data(np.int32, (4, 6, 7), 13)
    x = kapi.asarray(a, device=dev)
    _check_reduction(x.sum(axis=(0, 2)), a.sum(axis=(0, 2)))
    _check_reduction(x[:, ::2].T.max(axis=1), a[:, ::2].T.max(axis=1))
    _check_reduction(np.sum(x, axis=1), np.sum(a, axis=1))  # NumPy's functions call methods
    _check_reduction(np.argmax(x), np.argmax(a))
    out = kapi.empty(6, np.float64, device=dev)
    assert x.mean(axis=(0, 2), out=out) is out
    _check_reduction(out, a.mean(axis=(0, 2)))


def test_argminmax_ties_and_nan(dev):
    a = np.zeros(9000, np.float32)
    a[[7, 4100, 8000]] = -3.0
    a[[10, 5000]] = 4.0
    x = kapi.asarray(a, device=dev)
    assert int(x.argmin()) == 7 and int(x.argmax()) == 10
    a[[6000, 8500]] = np.nan
    x = kapi.asarray(a, device=dev)
    for op in ("argmin", "argmax", "min", "max"):
        _check_reduction(getattr(x, op)(), getattr(a, op)())
    i = np.full(5000, 9, np.int16)
    assert int(kapi.asarray(i, device=dev).argmax()) == 0


def test_reductions_empty(dev):
    e = kapi.asarray(np.zeros((3, 0)), device=dev)
    _check_reduction(e.sum(axis=1), np.zeros((3, 0)).sum(axis=1))
    _check_reduction(e.prod(), np.zeros((3, 0)).prod())
    _check_reduction(e.all(axis=1), np.zeros((3, 0)).all(axis=1))
    with pytest.raises(ValueError):
        e.max()
    with pytest.raises(ValueError):
        e.argmin(axis=1)
    with pytest.raises(np.exceptions.AxisError):
        e.sum(axis=2)


# -- the CUDA path without a GPU -----------------------------------------------------------


def test_generated_kernels_finalise_to_ptx(tmp_path):
    """Every kernel the operators, kapi.fuse and the reductions generated for a representative
    set of calls goes through the NVPTX finaliser, and ptxas assembles it for sm_90."""
    import shutil
    import subprocess
    from pathlib import Path

    from nvptx_util import ptx_of

    from kapi._numeric import reduce as _reduce
    from kapi._numeric import ufunc as _ufunc

    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    libdevice = Path(ptxas).resolve().parents[1] / "nvvm" / "libdevice" / "libdevice.10.bc"
    if not libdevice.is_file():
        pytest.skip(f"the CUDA toolkit (ptxas, libdevice) is not installed: {libdevice}")
    cpu = DEVICES[0]
    a = kapi.asarray(_data(np.float32, (3, 4, 5), 1), device=cpu)
    i = kapi.asarray(_data(np.uint8, (4, 5), 2, nonzero=True), device=cpu)
    for r in (a / i, a[:, ::2] * 2.5 - np.sin(a[:, ::2]), i // 3, i << 2, ~i, a > 0.5):
        r.asnumpy()  # lazy results: evaluated (compiled) here
    _ = kapi.fuse(lambda x, y: np.exp(-((x - 1) ** 2)) * y)(a, i)
    for op in REDUCTIONS:
        getattr(a, op)(axis=1)
        getattr(i, op)()
    piecewise(a.astype(np.float64))
    rel_diff(a, i)
    kernels = list(_ufunc._KERNELS.values()) + list(_reduce._KERNELS.values())
    kernels += list(piecewise._kernels.values()) + list(rel_diff._kernels.values())
    spirvs = [ck.spirv for k in kernels for ck in k.overloads.values()]
    assert len(spirvs) >= 20
    for n, spirv in enumerate(spirvs):
        ptx = ptx_of(spirv, libdevice)
        assert ".entry" in ptx
        path = tmp_path / f"k{n}.ptx"
        path.write_text(ptx)
        r = subprocess.run(
            [ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / f"k{n}.cubin")],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr


# -- kapi.vectorize ------------------------------------------------------------------------


@kapi.vectorize(["float32(float32, float32)", "float64(float64, float64)", "int64(i8, i8)"])
def rel_diff(a, b):
    return abs(a - b) / (abs(a) + abs(b) + 1)


@kapi.vectorize([kapi.float64(kapi.float64)], target="cuda")
def piecewise(v):
    if v > 2:
        return math.sqrt(v)
    return -v


def _rel_diff(a, b):
    return np.abs(a - b) / (np.abs(a) + np.abs(b) + 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vectorize_matches_numpy(dev, dtype):
    a, b = _data(dtype, (4, 9), 1), _data(dtype, 9, 2)
    x, y = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    _check(rel_diff(x, y), _rel_diff(a, b))  # broadcast (4, 9) with (9,)
    _check(rel_diff(x, 2.5), _rel_diff(a, np.array(2.5, dtype)))  # weak scalar
    v = np.linspace(-3, 6, 31)
    _check(piecewise(kapi.asarray(v, device=dev)), np.where(v > 2, np.sqrt(np.abs(v)), -v))


def test_vectorize_signature_selection_and_out(dev):
    i = np.arange(-4, 8, dtype=np.int64)
    xi = kapi.asarray(i, device=dev)
    r = rel_diff(xi, 3)  # exact int64 signature: the division's result is truncated
    np.testing.assert_array_equal(r.asnumpy(), _rel_diff(i, 3).astype(np.int64))
    assert r.dtype == np.int64
    h = kapi.asarray(i.astype(np.int16), device=dev)
    assert rel_diff(h, h).dtype == np.float32  # int16 reaches float32 first, safely
    out = kapi.empty(12, np.float64, device=dev)
    assert rel_diff(h.astype(np.float64), 1.0, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), _rel_diff(i.astype(np.float64), 1.0))
    with pytest.raises(TypeError, match="not supported for the input types"):
        piecewise(kapi.asarray(np.arange(3, dtype=np.complex128), device=dev))
    with pytest.raises(TypeError, match="kapi.asarray"):
        piecewise(np.arange(3.0))
    with pytest.raises(TypeError, match="signature"):
        kapi.vectorize(lambda v: v)
    with pytest.raises(TypeError, match="unknown type"):
        kapi.vectorize(["float99(float32)"])(lambda v: v)


def test_reductions_in_row_chunks(dev, monkeypatch):
    """Rows go in launches of at most _MAX_ROWS (CUDA's 65535 groups per y/z grid dimension);
    a small limit here checks the chunking on every device."""
    from kapi._numeric import reduce as _reduce

    monkeypatch.setattr(_reduce, "_MAX_ROWS", 7)
    a = _data(np.float64, (30, 5000), 21)
    x = kapi.asarray(a, device=dev)
    for op in ("sum", "argmax", "any", "min"):
        _check_reduction(getattr(x, op)(axis=1), getattr(a, op)(axis=1))


@pytest.mark.parametrize("counts", [None, (2**32 - 1, 1000, 1000)], ids=["device", "1000"])
def test_elementwise_layouts_of_two_and_three_dimensions(dev, monkeypatch, counts):
    """Operands that do not merge into one dimension (slices, broadcast rows and columns, a
    transposed operand, short and long last axes, 2-d and 3-d) against NumPy: the last axis in
    dimension 0 of the index space, rows a range apart a work-item where dimension 1 holds fewer
    groups than rows (counts: a device of 1000 groups there, as CUDA's 65535 for larger
    arrays), and the N-d kernel for a 3-d one past it."""
    from kapi._numeric import ufunc

    if counts is not None:
        monkeypatch.setattr(ufunc, "_group_counts", lambda device: counts)
    monkeypatch.setattr(ufunc, "_LAUNCH_PLANS", {})
    monkeypatch.setattr(ufunc, "_KERNELS", {})
    rng = np.random.default_rng(5)
    h = rng.random((2003, 37), dtype=np.float32)
    c = rng.random((3, 1001, 9), dtype=np.float32)
    a, k = kapi.asarray(h, device=dev), kapi.asarray(c, device=dev)
    cases = [
        (lambda x: x[:, :20] + 1, h),
        (lambda x: x[:, :3] * x[0, :3], h),
        (lambda x: x - x[:, :1], h),
        (lambda x: x[:, ::3] / x[:1, ::3], h),
        (lambda x: x[:37] + x[:37].T, h),
        (lambda x: x[:, :, :5] - x[:, :, 5:6], c),
        (lambda x: x[:, :1000:7, ::2] * 2, c),
    ]
    for n, (f, host) in enumerate(cases):
        got = f(a if host is h else k).asnumpy()
        np.testing.assert_allclose(got, f(host), rtol=1e-6, err_msg=f"case {n}")
    folded = [src for src in ufunc._KERNELS if "item.get_range(1)):" in src]
    assert bool(folded) == (counts is not None)  # 2003 rows past 1000 groups: folded
