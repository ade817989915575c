"""fastmath in the PTX kapi's CUDA driver loads (the NVPTX finaliser, called without a GPU):
float32 math under `afn` and division under `arcp` become PTX's approximate instructions
(what nvcc's --use_fast_math and numba-cuda's fastmath give), and appear only then; float64
math and kernels without fastmath keep libdevice's accurate functions."""

import math
import os

import numpy as np
import pytest
from nvptx_util import assert_assembles, ptx_of

import kapi
from kapi import random as R

LIBDEVICE = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
APPROX = ("sqrt.approx", "lg2.approx", "ex2.approx", "sin.approx", "cos.approx", "div.approx")


def body(item, a, out):
    i = item.get_id(0)
    x = a[i]
    out[i] = math.sqrt(x) * math.log(x) + math.exp(-x) * math.sin(x) + math.cos(x) / x


def _ptx(fastmath, ty="f32"):
    sig = (f"array({ty},1,C,global)", f"array({ty},1,C,global)")
    ck = kapi.kernel(body, fastmath=fastmath).compile(sig, ("item", 1))
    return ptx_of(ck.spirv, LIBDEVICE if os.path.exists(LIBDEVICE) else None)


def test_fast_kernel_uses_approximate_instructions_without_libdevice():
    """Every approximate instruction is there, and nothing from libdevice is needed (the
    finaliser is given none)."""
    sig = ("array(f32,1,C,global)", "array(f32,1,C,global)")
    ptx = ptx_of(kapi.kernel(body, fastmath=True).compile(sig, ("item", 1)).spirv)
    for ins in APPROX:
        assert f"{ins}.ftz.f32" in ptx, ins  # fastmath=True flushes denormals too
    assert "div.rn.f32" not in ptx and "sqrt.rn.f32" not in ptx
    assert_assembles(ptx, "fastmath")


def test_afn_alone_keeps_division_correctly_rounded():
    sig = ("array(f32,1,C,global)", "array(f32,1,C,global)")
    ptx = ptx_of(kapi.kernel(body, fastmath={"afn"}).compile(sig, ("item", 1)).spirv)
    assert "lg2.approx.f32" in ptx and "div.approx" not in ptx and "div.rn.f32" in ptx


def test_accurate_kernel_has_no_approximations():
    if not os.path.exists(LIBDEVICE):
        pytest.skip(f"the accurate math needs CUDA's libdevice ({LIBDEVICE})")
    ptx = _ptx(False)
    # libdevice's accurate expf reduces its argument exactly and then uses ex2.approx itself
    assert not [ins for ins in APPROX if ins in ptx and ins != "ex2.approx"]
    assert "sqrt.rn.f32" in ptx and "div.rn.f32" in ptx


def test_float64_keeps_libdevice_under_fastmath():
    if not os.path.exists(LIBDEVICE):
        pytest.skip(f"float64 math needs CUDA's libdevice ({LIBDEVICE})")
    ptx = _ptx(True, "f64")
    assert "sqrt.rn.f64" in ptx and "div.rn.f64" in ptx
    assert "lg2.approx" not in ptx and "sqrt.approx" not in ptx and "div.approx" not in ptx


@pytest.mark.parametrize("fast", [True, False])
def test_normal_kernel_log_and_sqrt(fast, monkeypatch):
    """kapi.random's float32 normals: approximate lg2 and sqrt by default, libdevice's
    accurate logf (no lg2.approx) with KAPI_RANDOM_FASTMATH=0 (kapi.random.FASTMATH)."""
    if not fast and not os.path.exists(LIBDEVICE):
        pytest.skip(f"the accurate log needs CUDA's libdevice ({LIBDEVICE})")
    monkeypatch.setattr(R, "FASTMATH", fast)
    src, _ = R._gen_source("standard_normal", np.dtype(np.float32), True, True, True, fast)
    k = R._kernel(src, "_gen", R._FAST if fast else None)
    sig = (
        "array(f32,1,C,global)",
        "i64",
        "u64",
        "u32",
        "u32",
        f"array(f32,1,C,local,{R.WG * 4})",
    )
    ptx = ptx_of(k.compile(sig, ("nditem", 1)).spirv, LIBDEVICE if not fast else None)
    assert ("lg2.approx.f32" in ptx) == fast and ("sqrt.approx.f32" in ptx) == fast


def test_fastmath_true_flushes_float32_denormals():
    """fastmath=True (numba-cuda's: NVVM -ftz=1) makes float32 arithmetic and the approximate
    instructions .ftz; a set of flags, even all of them but `fast`'s name, does not."""
    sig = ("array(f32,1,C,global)", "array(f32,1,C,global)")
    ptx = ptx_of(kapi.kernel(body, fastmath=True).compile(sig, ("item", 1)).spirv)
    assert "lg2.approx.ftz.f32" in ptx and "sin.approx.ftz.f32" in ptx
    assert "mul.ftz.f32" in ptx and "mul.f32" not in ptx
    some = {"afn", "arcp", "nnan", "ninf", "nsz"}
    ptx = ptx_of(kapi.kernel(body, fastmath=some).compile(sig, ("item", 1)).spirv)
    assert "lg2.approx.f32" in ptx and ".ftz" not in ptx.replace("rcp.approx.ftz", "")
