"""kapi.array_api, the array API standard's namespace, function by function against NumPy
on every device (the standard's own suite, data-apis/array-api-tests, runs through
tools/array_api_tests.sh; it is not on PyPI, so CI runs this instead). Also: no implicit
device-to-host conversion, NumPy's functions on kapi arrays, and dpnp's names on kapi."""

import math

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
import kapi.array_api as xp

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


def A(h, dev):
    return xp.asarray(np.asarray(h), device=dev)


def same(got, want, rtol=1e-12, atol=0.0):
    assert isinstance(got, kapi.Array), type(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got.asnumpy(), want)


# the 2024.12 standard's names (main namespace), as its specification lists them
STANDARD = """
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert
bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp
expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal
log log1p log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum
multiply negative nextafter not_equal positive pow real reciprocal remainder round sign
signbit sin sinh square sqrt subtract tan tanh trunc
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones
ones_like tril triu zeros zeros_like
astype can_cast finfo iinfo isdtype result_type
take take_along_axis
broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape
roll squeeze stack tile unstack
argmax argmin count_nonzero nonzero searchsorted where
unique_all unique_counts unique_inverse unique_values
argsort sort
cumulative_sum cumulative_prod max mean min prod std sum var
all any diff
matmul matrix_transpose tensordot vecdot
bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128
e inf nan newaxis pi __array_namespace_info__
""".split()
LINALG = """cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power
matrix_rank matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot
vector_norm""".split()
FFT = """fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift
ifftshift""".split()


def test_namespace_has_every_standard_name_and_is_the_arrays_namespace(dev):
    missing = [n for n in STANDARD if not hasattr(xp, n)]
    missing += [f"linalg.{n}" for n in LINALG if not hasattr(xp.linalg, n)]
    missing += [f"fft.{n}" for n in FFT if not hasattr(xp.fft, n)]
    assert not missing
    assert xp.__array_api_version__ == "2024.12"
    a = xp.zeros(3, device=dev)
    assert a.__array_namespace__() is xp
    assert xp.float32 == np.float32 and a.dtype == xp.float64 or not dev.has_aspect_fp64
    info = xp.__array_namespace_info__()
    assert info.default_dtypes(device=dev)["indexing"] == xp.int64
    assert dev in info.devices()


def test_creation(dev):
    same(xp.arange(2, 11, 3, device=dev), np.arange(2, 11, 3))
    same(xp.arange(5, dtype=xp.float32, device=dev), np.arange(5, dtype=np.float32))
    same(xp.arange(1.0, 0.0, -0.25, device=dev), np.arange(1.0, 0.0, -0.25))
    same(xp.linspace(0, 1, 7, device=dev), np.linspace(0, 1, 7))
    same(xp.linspace(0, 1, 4, endpoint=False, device=dev), np.linspace(0, 1, 4, endpoint=False))
    same(xp.eye(3, 5, k=1, device=dev), np.eye(3, 5, k=1))
    same(xp.eye(4, k=-2, dtype=xp.int32, device=dev), np.eye(4, k=-2, dtype=np.int32))
    same(xp.full((2, 3), 7, device=dev), np.full((2, 3), 7))
    same(xp.zeros_like(A([[1, 2]], dev), dtype=xp.float32), np.zeros((1, 2), np.float32))
    same(xp.full_like(A([1.0, 2.0], dev), 3.5), np.full(2, 3.5))
    h = np.arange(12.0).reshape(3, 4)
    same(xp.tril(A(h, dev), k=-1), np.tril(h, -1))
    same(xp.triu(A(h, dev), k=1), np.triu(h, 1))
    for ind in ("xy", "ij"):
        g = xp.meshgrid(A([1, 2, 3], dev), A([4, 5], dev), indexing=ind)
        for got, want in zip(g, np.meshgrid([1, 2, 3], [4, 5], indexing=ind), strict=True):
            same(got, want)
    a = A([1, 2, 3], dev)
    assert xp.asarray(a) is a
    c = xp.asarray(a, copy=True)
    c[0] = 9
    assert int(a[0]) == 1 and int(c[0]) == 9
    with pytest.raises(ValueError):
        xp.asarray([1, 2], copy=False, device=dev)
    same(xp.asarray([a, a]), np.array([[1, 2, 3], [1, 2, 3]]))  # a sequence of device arrays
    assert xp.from_dlpack(a).device == a.device


UNARY = {
    "abs": np.abs, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin,
    "asinh": np.arcsinh, "atan": np.arctan, "atanh": np.arctanh, "ceil": np.ceil, "cos": np.cos,
    "cosh": np.cosh, "exp": np.exp, "expm1": np.expm1, "floor": np.floor,
    "isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan, "log": np.log,
    "log1p": np.log1p, "log2": np.log2, "log10": np.log10, "negative": np.negative,
    "positive": np.positive, "reciprocal": np.reciprocal, "round": np.round, "sign": np.sign,
    "signbit": np.signbit, "sin": np.sin, "sinh": np.sinh, "square": np.square,
    "sqrt": np.sqrt, "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
}  # fmt: skip
BINARY = {
    "add": np.add, "atan2": np.arctan2, "copysign": np.copysign, "divide": np.divide,
    "equal": np.equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "hypot": np.hypot, "less": np.less,
    "less_equal": np.less_equal, "logaddexp": np.logaddexp, "maximum": np.maximum,
    "minimum": np.minimum, "multiply": np.multiply, "not_equal": np.not_equal,
    "pow": np.power, "remainder": np.remainder, "subtract": np.subtract,
}  # fmt: skip


def test_elementwise_functions(dev):
    with np.errstate(all="ignore"):
        h = np.array([-2.5, -1.0, -0.5, 0.0, 0.25, 0.5, 0.75, 1.0, 3.0, np.inf, np.nan])
        for name, f in UNARY.items():
            same(getattr(xp, name)(A(h, dev)), f(h), rtol=1e-12)
        g = np.array([1.5, -2.0, 0.5, 3.0, -0.25, 2.0, 0.5, -1.0, 2.0, 1.0, 1.0])
        for name, f in BINARY.items():
            same(getattr(xp, name)(A(h, dev), A(g, dev)), f(h, g), rtol=1e-12)
        # the standard's floor_divide: infinite operands give h / g's infinity or signed zero
        inf = np.isinf(h) | np.isinf(g)
        want = np.where(inf, np.floor(h / g), np.floor_divide(h, g))
        same(xp.floor_divide(A(h, dev), A(g, dev)), want)
    i = np.array([-7, -3, 0, 5, 12], dtype=np.int32)
    j = np.array([2, 3, 4, 1, 5], dtype=np.int32)
    for name, f in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                    ("bitwise_xor", np.bitwise_xor), ("bitwise_left_shift", np.left_shift),
                    ("bitwise_right_shift", np.right_shift), ("floor_divide", np.floor_divide),
                    ("remainder", np.remainder)):  # fmt: skip
        same(getattr(xp, name)(A(i, dev), A(j, dev)), f(i, j))
    same(xp.bitwise_invert(A(i, dev)), np.invert(i))
    same(xp.round(A(i, dev)), i)  # integers stay integers
    same(xp.ceil(A(i, dev)), i)
    b = np.array([True, False, True])
    c = np.array([True, True, False])
    for name in ("logical_and", "logical_or", "logical_xor"):
        same(getattr(xp, name)(A(b, dev), A(c, dev)), getattr(np, name)(b, c))
    same(xp.logical_not(A(b, dev)), ~b)
    # Python scalars are weak: the array's dtype wins
    same(xp.add(A(np.float32([1, 2]), dev), 0.5), np.float32([1.5, 2.5]))
    # the standard's special cases NumPy does not follow
    f = A([np.inf, -np.inf, 1.0, -1.0], dev)
    same(xp.floor_divide(f, A([2.0, 2.0, -np.inf, np.inf], dev)), [np.inf, -np.inf, -0.0, -1.0 * 0])
    assert not np.signbit(float(xp.sign(A([-0.0], dev))[0]))


def test_clip_nextafter_and_complex_parts(dev):
    h = np.array([-3.0, -1.0, 0.0, 2.0, 5.0])
    same(xp.clip(A(h, dev), -1.5, 2.5), np.clip(h, -1.5, 2.5))
    same(xp.clip(A(h, dev), max=1.0), np.minimum(h, 1.0))
    same(xp.clip(A(h, dev), A(h - 1, dev), A(h * 0, dev)), np.clip(h, h - 1, 0))
    i = np.array([-200, 5, 300], dtype=np.int16)
    same(xp.clip(A(np.int8([-100, 5, 100]), dev), -1000, 50), np.int8([-100, 5, 50]))
    same(xp.clip(A(i, dev), min=0), np.clip(i, 0, None))
    x = np.array([0.0, 1.0, -1.0, 1.0, np.nan, 2.0], np.float32)
    y = np.array([1.0, 2.0, -2.0, 0.0, 1.0, 2.0], np.float32)
    same(xp.nextafter(A(x, dev), A(y, dev)), np.nextafter(x, y))
    same(
        xp.nextafter(A(x.astype(np.float64), dev), -np.inf), np.nextafter(x.astype(float), -np.inf)
    )
    z = np.array([1 + 2j, -3 - 0.5j, 0j], np.complex64)
    same(xp.real(A(z, dev)), z.real)
    same(xp.imag(A(z, dev)), z.imag)
    same(xp.conj(A(z, dev)), np.conj(z))
    same(xp.abs(A(z, dev)), np.abs(z), rtol=1e-6)
    same(xp.equal(A(z, dev), A(z, dev)), np.ones(3, bool))
    same(xp.sign(A(z, dev)), np.sign(z), rtol=1e-6)
    same(xp.expm1(A(z, dev)), np.expm1(z), rtol=1e-5, atol=1e-6)


def test_manipulation_views_and_copies(dev):
    h = np.arange(2 * 3 * 4 * 5, dtype=np.int32).reshape(2, 3, 4, 5)
    a = A(h, dev)
    same(xp.reshape(a, (6, 20)), h.reshape(6, 20))
    same(xp.reshape(xp.permute_dims(a, (3, 1, 0, 2)), (-1,)), h.transpose(3, 1, 0, 2).reshape(-1))
    with pytest.raises(ValueError):
        xp.reshape(xp.permute_dims(a, (3, 1, 0, 2)), (-1,), copy=False)
    same(xp.permute_dims(a, (2, 0, 3, 1)) + 1, h.transpose(2, 0, 3, 1) + 1)  # a 4-D kernel
    same(xp.flip(a, axis=(1, 3)), np.flip(h, (1, 3)))
    same(xp.flip(a), np.flip(h))
    same(xp.roll(a, (2, -1), axis=(3, 1)), np.roll(h, (2, -1), axis=(3, 1)))
    same(xp.roll(a, 7), np.roll(h, 7))
    same(xp.expand_dims(a, axis=(0, -1)), np.expand_dims(h, (0, -1)))
    same(xp.squeeze(xp.reshape(a, (1, 120, 1)), axis=(0, 2)), h.reshape(120))
    same(xp.moveaxis(a, (0, 1), (-1, 0)), np.moveaxis(h, (0, 1), (-1, 0)))
    same(xp.broadcast_to(A([1, 2, 3], dev), (2, 3)), np.broadcast_to([1, 2, 3], (2, 3)))
    for got, want in zip(xp.broadcast_arrays(A([[1], [2]], dev), A([3, 4, 5], dev)),
                         np.broadcast_arrays([[1], [2]], [3, 4, 5]), strict=True):  # fmt: skip
        same(got, want)
    same(xp.concat([a, a[:, :1]], axis=1), np.concatenate([h, h[:, :1]], 1))
    same(xp.concat([A([1, 2], dev), A(np.int8([3]), dev)]), np.array([1, 2, 3]))
    same(xp.concat([a, a], axis=None), np.concatenate([h, h], None))
    same(xp.stack([a[0], a[1]], axis=2), np.stack([h[0], h[1]], 2))
    for got, want in zip(xp.unstack(a, axis=2), [h[:, :, i] for i in range(4)], strict=True):
        same(got, want)
    same(xp.tile(A([[1, 2]], dev), (2, 1, 3)), np.tile([[1, 2]], (2, 1, 3)))
    same(xp.repeat(A([[1, 2], [3, 4]], dev), 2, axis=1), np.repeat([[1, 2], [3, 4]], 2, 1))
    same(xp.repeat(A([1, 2, 3], dev), A([2, 0, 3], dev)), np.repeat([1, 2, 3], [2, 0, 3]))
    same(xp.matrix_transpose(a), np.swapaxes(h, -1, -2))
    same(a.mT, np.swapaxes(h, -1, -2))


def test_indexing_gathers_and_scatters_on_the_device(dev):
    h = np.arange(24.0).reshape(4, 6)
    a = A(h, dev)
    idx = np.array([3, 0, -1, 3])
    same(xp.take(a, A(idx, dev), axis=1), np.take(h, idx, axis=1))
    same(xp.take(a[1], A(idx, dev)), np.take(h[1], idx))
    order = np.argsort(-h, axis=1)
    same(xp.take_along_axis(a, A(order, dev), axis=1), np.take_along_axis(h, order, 1))
    same(a[A(idx, dev)], h[idx])
    same(a[A(idx, dev), A([1, 2, 3, 5], dev)], h[idx, [1, 2, 3, 5]])
    same(a[2, A([[0, 1], [5, 4]], dev)], h[2, [[0, 1], [5, 4]]])
    m = h % 5 < 2
    same(a[A(m, dev)], h[m])
    same(a[A(m[:, 0], dev)], h[m[:, 0]])
    assert a[0, 0].shape == () and isinstance(a[0, 0], kapi.Array)
    b = xp.asarray(a, copy=True)
    b[A(m, dev)] = -1.0
    hb = h.copy()
    hb[m] = -1.0
    same(b, hb)
    b[A([0, 2], dev)] = A([7.0] * 6, dev)
    hb[[0, 2]] = 7.0
    same(b, hb)
    b[A(m, dev)] = xp.arange(int(m.sum()), dtype=xp.float64, device=dev)
    hb[m] = np.arange(m.sum())
    same(b, hb)


def test_searching(dev):
    h = np.array([[3.0, 9.0, 1.0, 9.0], [np.nan, 2.0, 5.0, 0.0]])
    a = A(h, dev)
    same(xp.argmax(a, axis=1, keepdims=True), np.argmax(h, 1, keepdims=True))
    same(xp.argmin(a), np.argmin(h))
    same(xp.count_nonzero(A([[0, 1, 2], [3, 0, 0]], dev), axis=1), np.array([2, 1]))
    nz = np.array([[0, 1, 0], [2, 0, 3]])
    for got, want in zip(xp.nonzero(A(nz, dev)), np.nonzero(nz), strict=True):
        same(got, want)
    s = np.array([1.0, 2.0, 2.0, 5.0, np.nan])
    v = np.array([[0.0, 2.0], [6.0, np.nan]])
    for side in ("left", "right"):
        same(xp.searchsorted(A(s, dev), A(v, dev), side=side), np.searchsorted(s, v, side))
    perm = np.array([2, 0, 1])
    same(xp.searchsorted(A([5, 1, 3], dev), A([2, 4], dev), sorter=A(perm, dev)),
         np.searchsorted([5, 1, 3], [2, 4], sorter=perm))  # fmt: skip
    same(xp.where(A([True, False], dev), A([1, 2], dev), 0), np.array([1, 0]))


def test_sets_treat_nans_as_distinct(dev):
    h = np.array([3.0, np.nan, 1.0, 3.0, np.nan, -0.0, 0.0])
    r = xp.unique_all(A(h, dev))
    same(r.values, np.array([-0.0, 1.0, 3.0, np.nan, np.nan]))
    same(r.counts, np.array([2, 1, 2, 1, 1]))
    same(r.indices, np.array([5, 2, 0, 1, 4]))
    assert (np.asarray(r.values.asnumpy())[r.inverse_indices.asnumpy()][~np.isnan(h)]
            == h[~np.isnan(h)]).all()  # fmt: skip
    i = np.array([[4, 1], [1, 7]])
    v, inv = xp.unique_inverse(A(i, dev))
    same(v, np.array([1, 4, 7]))
    same(inv, np.array([[1, 0], [0, 2]]))
    same(xp.unique_values(A(i, dev)), np.array([1, 4, 7]))
    same(xp.unique_counts(A(i, dev)).counts, np.array([2, 1, 1]))


def test_sorting(dev):
    h = np.array([[3, 1, 2, 1], [0, -5, 9, 9]], dtype=np.int16)
    same(xp.sort(A(h, dev)), np.sort(h))
    same(xp.sort(A(h, dev), axis=0, descending=True), -np.sort(-h, axis=0))
    same(xp.argsort(A(h, dev), axis=1), np.argsort(h, axis=1, kind="stable"))
    # descending and stable: equal elements keep their order
    same(xp.argsort(A([1, 3, 1, 3], dev), descending=True), np.array([1, 3, 0, 2]))


def test_statistics_and_utilities(dev):
    rng = np.random.default_rng(1)
    h = rng.standard_normal((3, 4, 5))
    a = A(h, dev)
    for name, f in (("sum", np.sum), ("prod", np.prod), ("max", np.max), ("min", np.min),
                    ("mean", np.mean)):  # fmt: skip
        same(getattr(xp, name)(a), f(h), rtol=1e-12)
        same(getattr(xp, name)(a, axis=(0, 2), keepdims=True), f(h, (0, 2), keepdims=True))
    same(xp.var(a, axis=1, correction=1), np.var(h, 1, ddof=1), rtol=1e-12)
    same(xp.std(a, axis=(0, 1)), np.std(h, (0, 1)), rtol=1e-12)
    same(xp.sum(A(np.int8([100, 100]), dev)), np.int64(200))
    same(xp.sum(A(np.uint8([200, 200]), dev), dtype=xp.uint8), np.uint8(144))
    same(xp.sum(a, axis=()), h)
    z = h[0] + 1j * h[1]
    same(xp.sum(A(z, dev), axis=1), z.sum(1), rtol=1e-12)
    same(xp.mean(A(z, dev)), z.mean(), rtol=1e-12)
    same(xp.prod(A(z[:, :3], dev), axis=1), z[:, :3].prod(1), rtol=1e-12)
    same(xp.cumulative_sum(a, axis=1), np.cumsum(h, 1), rtol=1e-12)
    same(xp.cumulative_sum(A([1, 2, 3], dev), include_initial=True), np.array([0, 1, 3, 6]))
    same(xp.cumulative_prod(A(np.int32([1, 2, 3]), dev)), np.array([1, 2, 6]))
    b = h > 0
    same(xp.all(A(b, dev), axis=1), b.all(1))
    same(xp.any(A(b, dev), axis=(0, 2), keepdims=True), b.any((0, 2), keepdims=True))
    same(xp.diff(a, axis=1, n=2), np.diff(h, 2, 1), rtol=1e-12)
    same(xp.diff(A([1, 4, 9], dev), prepend=A([0], dev)), np.diff([1, 4, 9], prepend=0))
    with pytest.raises(ValueError):
        xp.max(xp.zeros((0, 3), device=dev))


def test_linear_algebra(dev):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4))
    y = rng.standard_normal((4, 5))
    same(xp.matmul(A(x, dev), A(y, dev)), x @ y, rtol=1e-12)
    same(A(x, dev) @ A(y, dev), x @ y, rtol=1e-12)
    same(xp.matmul(A(y[:, 0], dev), A(y, dev)), y[:, 0] @ y, rtol=1e-12)
    i = rng.integers(-5, 5, (3, 3)).astype(np.int32)
    same(xp.matmul(A(i, dev), A(i, dev)), i @ i)
    same(xp.tensordot(A(x, dev), A(y, dev), axes=1), np.tensordot(x, y, 1), rtol=1e-12)
    same(xp.tensordot(A(x, dev), A(x, dev), axes=([1, 2], [1, 2])),
         np.tensordot(x, x, ([1, 2], [1, 2])), rtol=1e-12)  # fmt: skip
    same(xp.vecdot(A(x, dev), A(x, dev), axis=1), np.sum(x * x, 1), rtol=1e-12)
    z = x + 1j
    same(xp.vecdot(A(z, dev), A(z, dev)), np.sum(np.conj(z) * z, -1), rtol=1e-12)
    same(xp.linalg.diagonal(A(x, dev), offset=1), np.diagonal(x, 1, -2, -1))
    same(xp.linalg.trace(A(x[0, :, :3], dev)), np.trace(x[0, :, :3]), rtol=1e-12)
    same(xp.linalg.outer(A(y[0], dev), A(y[1], dev)), np.outer(y[0], y[1]))
    same(xp.linalg.vector_norm(A(x, dev), axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12)
    same(xp.linalg.matrix_norm(A(x, dev)), np.linalg.norm(x, "fro", (-2, -1)), rtol=1e-12)
    same(xp.linalg.cross(A(x[..., :3], dev), A(x[..., 1:], dev)),
         np.cross(x[..., :3], x[..., 1:]), rtol=1e-12)  # fmt: skip
    s = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    same(xp.linalg.matrix_power(A(s, dev), 3), np.linalg.matrix_power(s, 3), rtol=1e-12)


def test_matmul_kernel_for_devices_without_blas(dev):
    """The tiled kernel that matmul runs on GPUs without cuBLAS (here on any device)."""
    from kapi._numeric.array_api import linear_algebra as la

    rng = np.random.default_rng(3)
    for dt, shape in ((np.float32, (3, 37, 20, 19)), (np.int64, (2, 5, 17, 33))):
        b, n, k, m = shape
        x = rng.integers(-4, 4, (b, n, k)).astype(dt)
        y = rng.integers(-4, 4, (1, k, m)).astype(dt)
        out = xp.empty((b, n, m), dtype=dt, device=dev)
        la._matmul_kernel(la._as3(A(x, dev), (b,), n, k), la._as3(A(y, dev), (b,), k, m), out)
        same(out, x @ y)


def test_linalg_solvers_and_fft_on_host_memory():
    cpu = [d for d in DEVICES if d.device_type == "cpu"]
    if not cpu:
        pytest.skip("the solvers and FFTs run on kapi's CPU device (host memory)")
    dev = cpu[0]
    rng = np.random.default_rng(4)
    s = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    spd = s @ s.T
    same(xp.linalg.inv(A(s, dev)), np.linalg.inv(s), rtol=1e-10)
    same(xp.linalg.det(A(s, dev)), np.linalg.det(s), rtol=1e-10)
    same(xp.linalg.cholesky(A(spd, dev)), np.linalg.cholesky(spd), rtol=1e-10)
    same(xp.linalg.solve(A(s, dev), A(s[0], dev)), np.linalg.solve(s, s[0]), rtol=1e-10)
    same(xp.linalg.svdvals(A(s, dev)), np.linalg.svd(s, compute_uv=False), rtol=1e-10)
    w, v = xp.linalg.eigh(A(spd, dev))
    same(w, np.linalg.eigh(spd)[0], rtol=1e-10)
    f = rng.standard_normal(8).astype(np.float32)
    same(xp.fft.rfft(A(f, dev)), np.fft.rfft(f).astype(np.complex64), rtol=1e-5, atol=1e-5)
    same(xp.fft.fftfreq(8, d=0.5, device=dev), np.fft.fftfreq(8, 0.5))
    same(xp.fft.rfftfreq(9, device=dev), np.fft.rfftfreq(9))
    same(xp.fft.fftshift(A(f, dev)), np.fft.fftshift(f))
    same(xp.fft.ifftshift(A(f, dev)), np.fft.ifftshift(f))


def test_dtype_functions():
    assert xp.result_type(xp.int8, xp.uint8) == np.int16
    assert xp.result_type(xp.float32, 1.0) == np.float32
    assert xp.can_cast(xp.int8, xp.int64) and not xp.can_cast(xp.float64, xp.float32)
    # the standard's promotion rules have no complex -> real edge (array-api-tests' test_can_cast
    # expects True here only because NumPy's dtype(float64) == None is True)
    assert xp.can_cast(xp.float32, xp.complex64) and not xp.can_cast(xp.complex64, xp.float64)
    assert xp.isdtype(xp.float32, ("integral", "real floating"))
    assert not xp.isdtype(xp.complex64, "real floating")
    assert xp.finfo(xp.float32).eps == float(np.finfo(np.float32).eps)
    assert xp.iinfo(xp.uint8).max == 255
    a = xp.asarray([1.7, -2.2])
    same(xp.astype(a, xp.int32), np.array([1, -2], np.int32))
    assert xp.astype(a, xp.float64, copy=False) is a


# -- no silent trips to the host -------------------------------------------------------------


def _not_host_accessible(a):
    """a's memory as an array that says its memory is not host accessible (as on a GPU)."""
    return kapi.Array._make(a._owner, a._ptr, a.shape, a.strides, a.dtype, a.sycl_queue,
                            a.usm_type, False)  # fmt: skip


def test_device_memory_is_never_converted_implicitly(dev):
    a = xp.arange(6.0, device=dev)
    g = a if not a._host_ok else _not_host_accessible(a)
    with pytest.raises(TypeError, match=r"asnumpy\(\)"):
        np.asarray(g)
    with pytest.raises(TypeError, match="kapi.asnumpy"):
        np.array(g)
    np.testing.assert_array_equal(kapi.asnumpy(g), np.arange(6.0))  # asked for: a copy
    np.testing.assert_array_equal(g.asnumpy(), np.arange(6.0))


def test_host_memory_converts_without_a_copy():
    cpu = [d for d in DEVICES if d.device_type == "cpu"]
    if not cpu:
        pytest.skip("needs kapi's CPU device (host memory)")
    a = xp.arange(6.0, device=cpu[0])
    v = np.asarray(a)
    assert v.__array_interface__["data"][0] == a.data_ptr  # a view of the array's memory
    v[0] = 5.0
    assert float(a[0]) == 5.0


@pytest.mark.skipif(
    not any(d.backend == "cuda" for d in DEVICES), reason="needs kapi's CUDA device (GPU)"
)
def test_cuda_arrays_refuse_numpy_conversion():
    dev = next(d for d in DEVICES if d.backend == "cuda")
    a = xp.ones(4, device=dev)
    assert not a._host_ok
    with pytest.raises(TypeError, match="asnumpy"):
        np.asarray(a)
    with pytest.raises(TypeError, match="numpy.median"):
        np.median(a)
    r = np.sum(a)  # implemented: runs on the GPU
    assert isinstance(r, kapi.Array) and r.device == dev and float(r) == 4.0


def test_numpy_functions_dispatch_to_kapi_or_raise(dev):
    h = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]])
    a = A(h, dev)

    def host(x):
        if isinstance(x, kapi.Array):
            return x.asnumpy()
        if isinstance(x, list):
            return [host(v) for v in x]
        return x

    for f, args, kw in (
        (np.sort, (a,), {}),
        (np.cumsum, (a,), {}),
        (np.std, (a,), {"axis": 0}),
        (np.concatenate, ([a, a],), {}),
        (np.transpose, (a,), {}),
        (np.mean, (a,), {}),
        (np.dot, (a, a.T), {}),
        (np.matmul, (a, a.T), {}),
        (np.clip, (a, 0, 2), {}),
        (np.where, (a > 1, a, 0.0), {}),
        (np.argsort, (a,), {"axis": 1}),
        (np.take, (a, [0, 2]), {"axis": 1}),
        (np.linalg.vector_norm, (a,), {}),
    ):
        r = f(*args, **kw)
        want = f(*[host(x) for x in args], **kw)
        assert isinstance(r, kapi.Array) and r.device == dev, f.__name__
        np.testing.assert_allclose(r.asnumpy(), want, rtol=1e-12)
    assert np.allclose(a, a) is True
    with pytest.raises(TypeError, match=r"numpy\.median .*kapi\.asnumpy"):
        np.median(a)
    with pytest.raises(TypeError, match="numpy.percentile"):
        np.percentile(a, 50)


def test_dpnp_names(dev):
    import kapi as dpnp

    a = dpnp.asarray(np.arange(6.0).reshape(2, 3), device=dev)
    assert isinstance(dpnp.asnumpy(a), np.ndarray)
    same(dpnp.sum(a, axis=1), np.array([3.0, 12.0]))
    same(dpnp.sqrt(a), np.sqrt(np.arange(6.0).reshape(2, 3)))
    same(dpnp.linspace(0, 1, 3, device=dev), np.linspace(0, 1, 3))
    same(dpnp.concatenate([a, a], axis=1), np.concatenate([a.asnumpy()] * 2, 1))
    same(dpnp.std(a, ddof=1), np.std(a.asnumpy(), ddof=1), rtol=1e-12)
    same(dpnp.zeros_like(a), np.zeros((2, 3)))
    same(dpnp.full((2,), 3, device=dev, usm_type="shared"), np.array([3, 3]))
    same(dpnp.eye(2, device=dev), np.eye(2))
    r = dpnp.random.random((3, 4), device=dev)
    assert r.shape == (3, 4) and r.device == dev and 0 <= float(dpnp.min(r)) < 1
    dpnp.random.seed(5)
    x = dpnp.random.randint(2, 9, size=100, device=dev).asnumpy()
    assert x.min() >= 2 and x.max() < 9
    dpnp.random.seed(5)
    np.testing.assert_array_equal(dpnp.random.randint(2, 9, size=100, device=dev).asnumpy(), x)
    assert dpnp.random.rand(2, 3, device=dev).shape == (2, 3)
    assert dpnp.linalg.matmul is xp.linalg.matmul
    same(dpnp.dot(a, a.T), a.asnumpy() @ a.asnumpy().T)
    ns = {}
    exec("from kapi import *", ns)
    assert "sum" not in ns and "concatenate" in ns and "sqrt" in ns  # builtins stay builtins


def test_constants():
    assert xp.pi == math.pi and xp.e == math.e and math.isnan(xp.nan) and xp.newaxis is None


def test_library_kernels_are_built_per_source_and_constants(dev):
    """The array library's kernels from one source text but other constants (ZERO of another
    dtype, say) are distinct kernels, each built once."""
    from kapi._numeric.array_api import _core as C

    src = "def _fill(it, out):\n    out[it.get_id(0)] = V\n"
    k3 = C.kernel(src, "_fill", V=np.int64(3))
    k4 = C.kernel(src, "_fill", V=np.int64(4))
    assert k3 is not k4 and C.kernel(src, "_fill", V=np.int64(3)) is k3
    out = xp.zeros(2, dtype=xp.int64, device=dev)
    C.launch(k4, 2, out)
    same(out, np.array([4, 4]))


def test_linspace_as_numpy_to_the_bit(dev):
    """linspace computes NumPy's i * step + start (start + (stop - start) * (i / div) rounded
    otherwise: integer points came out a bit off on the GPU); one point is start."""
    dts = (np.float32, np.float64) if dev.has_aspect_fp64 else (np.float32,)
    cases = [(-5, 8, 14, True), (0.1, 0.7, 101, True), (1e-3, 7.3, 1001, False)]
    cases += [(3, 3, 5, True), (0, 1, 1, True), (0, 1, 1, False), (1, -1, 7, True)]
    for a, b, n, ep in cases:
        for dt in dts:
            got = xp.linspace(a, b, n, dtype=dt, endpoint=ep, device=dev).asnumpy()
            np.testing.assert_array_equal(got, np.linspace(a, b, n, dtype=dt, endpoint=ep))


def test_take_of_more_than_65535_indices(dev):
    """A 1-d take runs its indices in dimension 0 of its range (CUDA holds 65535 work-groups
    in dimensions 1 and 2: 100003 indices there failed to launch)."""
    h = np.arange(100003, dtype=np.float32) * 0.5
    i = np.random.default_rng(0).permutation(100003)
    got = xp.take(A(h, dev), A(i, dev)).asnumpy()
    np.testing.assert_array_equal(got, h[i])
    h2 = h[:1000].reshape(10, 100)
    np.testing.assert_array_equal(xp.take(A(h2, dev), A(i[:7] % 100, dev), axis=1).asnumpy(),
                                  h2[:, i[:7] % 100])  # fmt: skip


@pytest.mark.parametrize("counts", [None, (2**32 - 1, 65535, 65535)], ids=["device", "cuda"])
def test_gathers_and_scatters_past_65535_in_an_inner_dimension(dev, monkeypatch, counts):
    """take along either axis, take_along_axis and x[idx] = v with 100003 (a prime: no local
    size divides it into 65535 groups) in the index space's dimension 1 or 2 run flat in
    dimension 0 where the device might not launch them (counts: CUDA's, on every device), and
    give NumPy's result either way."""
    from kapi._numeric import ufunc

    if counts is not None:
        monkeypatch.setattr(ufunc, "_group_counts", lambda device: counts)
    rng = np.random.default_rng(1)
    big = 100003
    h = rng.standard_normal((3, 11)).astype(np.float32)
    i = rng.integers(-11, 11, big)
    np.testing.assert_array_equal(xp.take(A(h, dev), A(i, dev), axis=1).asnumpy(), h[:, i])
    np.testing.assert_array_equal(xp.take(A(h.T, dev), A(i, dev), axis=0).asnumpy(), h.T[i])
    rows = rng.integers(0, 11, (3, big))
    got = xp.take_along_axis(A(h, dev), A(rows, dev), axis=1).asnumpy()
    np.testing.assert_array_equal(got, np.take_along_axis(h, rows, axis=1))
    wide = np.zeros((4, big), dtype=np.float32)
    v = rng.standard_normal((2, big)).astype(np.float32)
    x = A(wide, dev)
    x[A(np.array([2, -4]), dev)] = A(v, dev)
    wide[np.array([2, -4])] = v
    np.testing.assert_array_equal(x.asnumpy(), wide)
