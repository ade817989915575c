"""float16 and bfloat16 in kernels, on every device.

float16 is a KIR type (f16): loads, stores and scalars are half; Numba types arithmetic on
float16 as float32 (f16 + f16 -> f32, math.sin(f16) -> f32), so kernels compute in f32 and
round on store, which for one + - * / gives NumPy's float16 result exactly. bfloat16 (from
ml_dtypes, when installed) is storage only: an element reads as float32 and a float32 stored
into it rounds to nearest, ties to even. The PTX test checks what the CUDA driver would load.
"""

import math
import shutil
import subprocess

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
import pyfront
from kapi import kernel_api as K

DEVICES = devices_or_skip()
LIBDEVICE = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"

try:
    import ml_dtypes

    BF16 = ml_dtypes.bfloat16
except ImportError:  # pragma: no cover - depends on the environment
    BF16 = None
needs_bf16 = pytest.mark.skipif(BF16 is None, reason="ml_dtypes (bfloat16) is not installed")


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def run(kernel, dev, n, *args):
    args = [kapi.asarray(a, device=dev) if isinstance(a, np.ndarray) else a for a in args]
    kapi.call_kernel(kernel, K.Range(n), *args)
    return [a.asnumpy() if isinstance(a, kapi.Array) else a for a in args]


# ---- float16 -----------------------------------------------------------------------------------


@kapi.kernel
def half_ops(item, a, b, out, s):
    i = item.get_id(0)
    out[i, 0] = a[i] + b[i]
    out[i, 1] = a[i] - b[i]
    out[i, 2] = a[i] * b[i]
    out[i, 3] = a[i] / b[i]
    out[i, 4] = -a[i] * s
    out[i, 5] = min(a[i], b[i])
    out[i, 6] = abs(b[i])
    out[i, 7] = a[i] < b[i]


def test_float16_arithmetic_matches_numpy(dev):
    r = np.random.default_rng(0)
    a = (r.standard_normal(256) * 100).astype(np.float16)
    b = (r.standard_normal(256) * 100).astype(np.float16)
    s = np.float16(0.1)
    (_, _, out, _) = run(half_ops, dev, 256, a, b, np.zeros((256, 8), np.float16), s)
    with np.errstate(over="ignore"):  # overflow to inf is part of what is checked
        ref = np.stack([a + b, a - b, a * b, a / b, -a * s, np.minimum(a, b), abs(b), a < b], 1)
    np.testing.assert_array_equal(out, ref.astype(np.float16))  # exactly NumPy's roundings


@kapi.kernel
def half_math(item, a, out):
    i = item.get_id(0)
    out[i, 0] = math.sin(a[i])  # float32 math, as Numba types it
    out[i, 1] = math.exp(a[i])
    out[i, 2] = math.sqrt(abs(a[i]))
    out[i, 3] = a[i] // np.float16(3)
    out[i, 4] = math.isnan(a[i])


def test_float16_math_goes_through_float32(dev):
    a = np.array([0.5, -2.0, 3.0, 11.5, np.nan, np.inf, -0.0], np.float16)
    (_, out) = run(half_math, dev, len(a), a, np.zeros((len(a), 5), np.float16))
    f = a.astype(np.float32)
    with np.errstate(all="ignore"):
        ref = np.stack([np.sin(f), np.exp(f), np.sqrt(abs(f)), f // 3, np.isnan(f)], axis=1)
        ref = ref.astype(np.float16)
    ref[np.isinf(a), 3] = out[np.isinf(a), 3]  # inf // 3: KIR floordiv is floor(a / b) (kir.md)
    np.testing.assert_array_equal(out[:, 3:], ref[:, 3:])
    # device float32 math may differ from NumPy's by an ulp of float32, which can move the
    # float16 rounding by one ulp of float16
    np.testing.assert_allclose(out[:, :3], ref[:, :3], rtol=2**-10, atol=0)


@kapi.kernel
def store_f64(item, x, out):
    i = item.get_id(0)
    out[i] = x[i]


def test_float16_overflow_and_rounding_on_store(dev):
    if not dev.has_aspect_fp64:
        pytest.skip("device without fp64")
    x = np.array(
        [65504.0, 65520.0, 1e6, -1e6, 2049.0, 2051.0, 1e-8, 2.0**-24, 3 * 2.0**-25, 0.1, -0.0]
    )
    (_, out) = run(store_f64, dev, len(x), x, np.zeros(len(x), np.float16))
    with np.errstate(over="ignore"):
        ref = x.astype(np.float16)
    np.testing.assert_array_equal(out, ref)  # inf past 65504, ties to even
    assert np.signbit(out[-1])


def test_float16_scalars_and_kapi_arrays(dev):
    @kapi.kernel
    def fill(item, out, v):
        out[item.get_id(0)] = v

    a = kapi.empty(5, dtype=np.float16, device=dev)
    assert a.dtype == np.float16
    kapi.call_kernel(fill, K.Range(5), a, np.float16(1.5))
    np.testing.assert_array_equal(a.asnumpy(), np.full(5, 1.5, np.float16))
    h = np.arange(6, dtype=np.float16).reshape(2, 3)
    np.testing.assert_array_equal(kapi.asarray(h, device=dev).asnumpy(), h)


@kapi.kernel
def half_local_private(nd, a, out, slm):
    i = nd.get_global_id(0)
    li = nd.get_local_id(0)
    p = K.PrivateArray(2, np.float16, fill_zeros=True)
    p[0] = a[i]
    slm[li] = p[0] * np.float16(2)
    K.group_barrier(nd.get_group())
    out[i] = slm[(li + 1) % 4] + p[1]


def test_float16_local_and_private_arrays(dev):
    a = np.arange(8, dtype=np.float16) + np.float16(0.5)
    args = kapi.asarray(a, device=dev), kapi.zeros(8, dtype=np.float16, device=dev)
    slm = K.LocalAccessor((4,), np.float16)
    kapi.call_kernel(half_local_private, K.NdRange((8,), (4,)), *args, slm)
    ref = (a * 2).reshape(2, 4)[:, [1, 2, 3, 0]].ravel()
    np.testing.assert_array_equal(args[1].asnumpy(), ref)


def test_float16_kir_keeps_half_storage():
    t = pyfront.compile_kernel(
        half_ops.py_func,
        ["array(f16,1,C,global)", "array(f16,1,C,global)", "array(f16,2,C,global)", "f16"],
        index=("item", 1),
    ).text
    assert "aload f16" in t and "add f32" in t and "select f16" in t and "%s: f16" in t


# ---- bfloat16 ----------------------------------------------------------------------------------


@kapi.kernel
def copy_f32(item, x, out):
    i = item.get_id(0)
    out[i] = x[i]


@needs_bf16
def test_bfloat16_reads_every_pattern_exactly(dev):
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    a = bits.view(BF16)
    (_, out) = run(copy_f32, dev, len(a), a, np.zeros(len(a), np.float32))
    ref = a.astype(np.float32)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(out), nan)
    np.testing.assert_array_equal(out.view(np.uint32)[~nan], ref.view(np.uint32)[~nan])


@needs_bf16
def test_bfloat16_stores_round_to_nearest_even(dev):
    r = np.random.default_rng(1)
    rand_bits = r.integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    # ties (low half 0x8000) with odd and even kept halves, just above/below, overflow to inf
    edges = np.array(
        [0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x7F7FFFFF, 0x7F7F8000, 0xFF7F8000,
         0x00008000, 0x00018000, 0x80000000, 0x7F800000, 0x7FC00001, 0xFF800001],
        np.uint32,
    )  # fmt: skip
    x = np.concatenate([rand_bits, edges]).view(np.float32)
    (_, out) = run(copy_f32, dev, len(x), x, np.zeros(len(x), BF16))
    with np.errstate(all="ignore"):
        ref = x.astype(BF16)
    nan = np.isnan(x)
    np.testing.assert_array_equal(np.isnan(out.astype(np.float32)), nan)
    np.testing.assert_array_equal(out.view(np.uint16)[~nan], ref.view(np.uint16)[~nan])
    np.testing.assert_array_equal(np.signbit(out.astype(np.float32)), np.signbit(x))


@needs_bf16
def test_bfloat16_arithmetic_scalars_and_kapi_arrays(dev):
    @kapi.kernel
    def axpy(item, a, x, y):
        i = item.get_id(0)
        y[i] = a * x[i] + y[i]

    r = np.random.default_rng(2)
    x = r.standard_normal(100).astype(BF16)
    y = r.standard_normal(100).astype(BF16)
    xd, yd = kapi.asarray(x, device=dev), kapi.asarray(y, device=dev)
    assert yd.dtype == BF16
    kapi.call_kernel(axpy, K.Range(100), BF16(0.5), xd, yd)
    ref = np.float32(0.5) * x.astype(np.float32) + y.astype(np.float32)
    # GPUs may fuse the multiply-add (CUDA does): equal to bfloat16 precision, not bit for bit
    np.testing.assert_allclose(yd.asnumpy().astype(np.float32), ref, rtol=2**-8, atol=1e-30)
    e = kapi.empty((2, 2), dtype=BF16, device=dev)
    assert e.dtype == BF16 and e.shape == (2, 2)


@needs_bf16
def test_bfloat16_errors_are_clear():
    def k(item, a):
        a[0] = 1

    with pytest.raises(pyfront.KernelTypingError, match="bf16 arrays must be global"):
        pyfront.compile_kernel(k, ["array(bf16,1,C,local)"], index=("item", 1))

    def atomic(item, a):
        K.AtomicRef(a, 0).fetch_add(a[1])

    with pytest.raises(pyfront.UnsupportedConstructError, match="bfloat16"):
        pyfront.compile_kernel(atomic, ["array(bf16,1,C,global)"], index=("item", 1))


# ---- CUDA: the PTX the driver would load ---------------------------------------------------


@pytest.mark.skipif(not shutil.os.path.exists(LIBDEVICE), reason="no CUDA libdevice here")
def test_half_kernels_ptx_assembles_for_sm_90(tmp_path):
    from nvptx_util import ptx_of

    kernels = [half_ops, half_math]
    A = kapi.asarray
    one, z = np.ones(2, np.float16), np.zeros((2, 8), np.float16)
    kapi.call_kernel(half_ops, K.Range(2), A(one), A(one), A(z), np.float16(1))
    kapi.call_kernel(half_math, K.Range(2), A(one), A(z[:, :5].copy()))
    if BF16 is not None:
        kernels.append(copy_f32)
        kapi.call_kernel(copy_f32, K.Range(2), A(np.ones(2, np.float32)), A(np.zeros(2, BF16)))
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not shutil.os.path.exists(ptxas):
        pytest.skip("ptxas not found (install the CUDA toolkit)")
    for k in kernels:
        for spirv in k.inspect_spirv().values():
            ptx = ptx_of(spirv, libdevice=LIBDEVICE)
            f = tmp_path / "k.ptx"
            f.write_text(ptx)
            r = subprocess.run(
                [ptxas, "-arch=sm_90", str(f), "-o", str(tmp_path / "k.cubin")],
                capture_output=True,
                text=True,
            )
            assert r.returncode == 0, r.stderr
    assert ".f16" in ptx_of(next(iter(half_ops.inspect_spirv().values())), libdevice=LIBDEVICE)


def test_dlpack_round_trip(dev):
    h = np.array([1.5, -2.0, 65504.0], np.float16)
    a = kapi.asarray(h, device=dev)
    np.testing.assert_array_equal(kapi.from_dlpack(a).asnumpy(), h)
    if BF16 is not None:
        hb = np.array([1.0, -3.5], BF16)
        b = kapi.from_dlpack(kapi.asarray(hb, device=dev))
        assert b.dtype == BF16
        np.testing.assert_array_equal(b.asnumpy().view(np.uint16), hb.view(np.uint16))
