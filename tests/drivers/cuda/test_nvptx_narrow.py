"""32-bit integer work in 64-bit values (compiler/src/finalise/nvptx/finalise_nvptx_narrow.c):
Numba types uint32 arithmetic as 64-bit and LLVM folds the truncations back into masks, so
the NVPTX finaliser computes i64 values known below 2^32 in 32 bits and 32 x 32-bit products
as mul.lo/mul.hi. The kernel below hits each rewrite (masks, xor/or, select, shifts right by
32 or more, a product's halves, a product read whole, low-only sums, differences, products
and shifts left, truncations to 8 and 32 bits) on edge words and random ones, on every
device here, against NumPy's uint64 arithmetic; the PTX checks run anywhere."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip
from nvptx_util import assert_assembles, finalise

import kapi
from kapi import kernel_api
from kapi import random as R

DEVICES = devices_or_skip()
M32 = np.uint64(0xFFFFFFFF)
COLS = 12


@kapi.kernel
def word_mix(item, a, b, out):
    i = item.get_id(0)
    x = np.uint64(a[i])
    y = np.uint64(b[i])
    m = np.uint64(0xFFFFFFFF)
    s = np.uint64(32)
    p = x * np.uint64(0xD2511F53)  # a product of narrow values
    out[i, 0] = p >> s  # its high half
    out[i, 1] = p & m  # its low half
    q = (x ^ y) * ((y >> np.uint64(3)) | np.uint64(1))  # narrow xor / or operands
    out[i, 2] = q  # read whole: the 64-bit product stays
    out[i, 3] = np.uint64(np.uint32(((x + np.uint64(0x1234567890)) ^ (q >> s)) & m))
    out[i, 4] = (p >> np.uint64(40)) ^ (q >> np.uint64(33))  # shifts past the low half
    z = x if (y & np.uint64(1)) else (y >> np.uint64(5))  # a select of narrow values
    out[i, 5] = (z * y) >> s
    out[i, 6] = np.uint64(np.uint32((x << np.uint64(5)) - y * np.uint64(3) + (p >> s)))
    out[i, 7] = np.uint64(np.uint8(x * y))  # a truncation to 8 bits of a product
    out[i, 8] = (x & y) * (x | np.uint64(7))  # an `and` of narrow values, then a product
    out[i, 9] = ((x * y) & m) ^ (((x * y) >> s) & np.uint64(0xFFFF))
    out[i, 10] = np.uint64(np.uint32(p + q))  # the low half of a sum of products
    out[i, 11] = (x >> np.uint64(31)) * (m - x)  # products of values up to 2^32 - 1


def _expected(a, b):
    x, y = a.astype(np.uint64), b.astype(np.uint64)
    m, s = M32, np.uint64(32)
    out = np.zeros((len(a), COLS), np.uint64)
    with np.errstate(over="ignore"):
        p = x * np.uint64(0xD2511F53)
        out[:, 0] = p >> s
        out[:, 1] = p & m
        q = (x ^ y) * ((y >> np.uint64(3)) | np.uint64(1))
        out[:, 2] = q
        out[:, 3] = ((x + np.uint64(0x1234567890)) ^ (q >> s)) & m
        out[:, 4] = (p >> np.uint64(40)) ^ (q >> np.uint64(33))
        z = np.where(y & np.uint64(1), x, y >> np.uint64(5))
        out[:, 5] = (z * y) >> s
        out[:, 6] = ((x << np.uint64(5)) - y * np.uint64(3) + (p >> s)) & m
        out[:, 7] = (x * y) & np.uint64(0xFF)
        out[:, 8] = (x & y) * (x | np.uint64(7))
        out[:, 9] = ((x * y) & m) ^ (((x * y) >> s) & np.uint64(0xFFFF))
        out[:, 10] = (p + q) & m
        out[:, 11] = (x >> np.uint64(31)) * (m - x)
    return out


def _words():
    edge = np.array([0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF, 0xD2511F53,
                     0x10000, 0xFFFF, 0x9E3779B9], np.uint32)  # fmt: skip
    rng = np.random.default_rng(3)
    a = np.concatenate([np.repeat(edge, len(edge)), rng.integers(0, 2**32, 512, np.uint32)])
    b = np.concatenate([np.tile(edge, len(edge)), rng.integers(0, 2**32, 512, np.uint32)])
    return a, b


def test_narrowed_words_match_numpy():
    a, b = _words()
    want = _expected(a, b)
    for dev in DEVICES:
        out = kapi.zeros((len(a), COLS), dtype=np.uint64, device=dev)
        kapi.call_kernel(word_mix, kernel_api.Range(len(a)), kapi.asarray(a, device=dev),
                         kapi.asarray(b, device=dev), out)  # fmt: skip
        got = out.asnumpy()
        for c in range(COLS):
            np.testing.assert_array_equal(got[:, c], want[:, c], err_msg=f"{dev} column {c}")


def _word_mix_ptx() -> str:
    word_mix.compile(("array(u32,1,C,global)",) * 2 + ("array(u64,2,C,global)",), ("item", 1))
    (spirv,) = word_mix.inspect_spirv().values()
    return finalise(spirv, coarsen=False)[0]


def test_word_mix_ptx_assembles():
    ptx = _word_mix_ptx()
    assert "mul.hi.u32" in ptx
    assert_assembles(ptx, "narrow_word_mix")


def _philox_ptx() -> str:
    k = R._kernel(R._RAW_SRC, "_philox_raw")
    at = ("array(u32,2,C,global)",) * 3
    return finalise(k.compile(at, ("item", 1)).spirv, coarsen=False)[0]


@pytest.mark.parametrize("philox32", [True, False])
def test_philox_rounds_are_32_bit(monkeypatch, philox32):
    """Both forms of the Philox rounds (uint32 words, or uint64 words masked) multiply with
    mul.lo/mul.hi.u32 and xor in 32 bits: no 64-bit xor is left, and 64-bit multiplies only
    in the addresses (index times stride)."""
    monkeypatch.setattr(R, "PHILOX32", philox32)
    ptx = _philox_ptx()
    assert ptx.count("mul.hi.u32") >= 20, ptx
    assert ptx.count("mul.lo.s64") <= 4 and "xor.b64" not in ptx, ptx
    assert_assembles(ptx, "narrow_philox")


def test_switch_off_keeps_64_bit_rounds(monkeypatch):
    """KAPI_CUDA_NARROW=0 leaves LLVM's 64-bit forms (what the pass removes)."""
    monkeypatch.setattr(R, "PHILOX32", False)
    monkeypatch.setenv("KAPI_CUDA_NARROW", "0")
    ptx = _philox_ptx()
    assert ptx.count("mul.lo.s64") >= 15 and "xor.b64" in ptx
