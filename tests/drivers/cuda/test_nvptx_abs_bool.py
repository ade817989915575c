"""Regressions from the long fuzz run on the H100 (seed 7000), where the CUDA device alone
differed: `sitofp i1`, which LLVM 15's NVPTX back end selects as +1.0 for true, and two folds
of `abs` by the driver's PTX compiler (CUDA 13). Probed with hand-written PTX on the H100
(bench/RESULTS.md): after `abs.s64`, a compare of the negation against a constant beyond 32
bits was decided on the low 32 bits; `abs.f32(x) > -1` was folded to true, forgetting NaN.
The NVPTX finaliser rewrites each shape (compiler/src/finalise/nvptx/finalise_nvptx_workarounds.c).
Each kernel runs on every device here, and its PTX, made on any machine, shows the rewrite."""

import math
import os
import re

import numpy as np
import pytest
from kapi_testing import devices_or_skip
from nvptx_util import assert_assembles, ptx_of

import kapi
from kapi import kernel_api

DEVICES = devices_or_skip()
LIBDEVICE = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"


def _ptx(k, libdevice=None):
    return ptx_of(next(iter(k.inspect_spirv().values())), libdevice)


@kapi.kernel
def neg_bool_scaled(item, a, b, out):
    i = item.get_id(0)
    c = (a[i] != 3) & (b[i] != 7.0)
    x = -c  # -1 or 0, as an int64
    out[i] = x * b[i] + x  # one bool converted to float, read twice


def test_negated_bool_converts_to_minus_one():
    """Seed 7000 kernel 11710: `math.exp(min(lid, -c))` with c a conjunction of compares was
    e^1 on the H100: LLVM folded -c to `sitofp i1 c`, which it selected as `selp.u32 1, 0`."""
    a = np.array([3, 1, 2, 3, 5, 0, -3, 4], np.int64)
    b = np.array([7.0, 7.0, 2.5, 1.0, -4.0, 0.0, 9.0, 7.5])
    c = (a != 3) & (b != 7.0)
    x = -c.astype(np.int64)
    want = x * b + x
    for dev in DEVICES:
        out = kapi.zeros(8, dtype=np.float64, device=dev)
        args = [kapi.asarray(a, device=dev), kapi.asarray(b, device=dev), out]
        kapi.call_kernel(neg_bool_scaled, kernel_api.Range(8), *args)
        np.testing.assert_array_equal(out.asnumpy(), want, err_msg=str(dev))
    ptx = _ptx(neg_bool_scaled)
    assert not re.search(r"selp\.u32\s+%r\d+, 1, 0, %p\d+;\s*cvt\.rn\.f64\.s32", ptx), ptx
    assert "0dBFF0000000000000" in ptx, ptx  # the select of -1.0
    assert_assembles(ptx, "negbool")


@kapi.kernel
def neg_abs_compare(item, acc, v):
    i = item.get_id(0)
    kernel_api.AtomicRef(acc, (((-1099511627776) >= (-abs(i))) % 64) % 8).fetch_add(v)


def test_negated_abs_compared_beyond_32_bits():
    """Seed 6000 kernel 13585: `-2**40 >= -abs(i)` is false for every work-item, but the
    atomic went to acc[1] on the H100. 64-bit abs is now a sign-mask xor and subtraction, in
    asm."""
    for dev in DEVICES:
        acc = kapi.zeros(8, dtype=np.int64, device=dev)
        kapi.call_kernel(neg_abs_compare, kernel_api.Range(256), acc, np.int64(3))
        want = np.zeros(8, np.int64)
        want[0] = 3 * 256
        np.testing.assert_array_equal(acc.asnumpy(), want, err_msg=str(dev))
    ptx = _ptx(neg_abs_compare)
    assert "abs.s64" not in ptx, ptx
    assert re.search(r"shr\.s64 m, %rd\d+, 63; xor\.b64 t, %rd\d+, m; sub\.s64", ptx), ptx
    assert_assembles(ptx, "negabs")


@kapi.kernel
def fabs_above_minus_one(item, a, out):
    i = item.get_id(0)
    out[i] = (-1) < math.fabs(a[i])


def test_float_abs_compare_keeps_nan():
    """Seed 7000 kernel 6256: `-1 < fabs(x)` must be false for NaN; the H100 made it true
    for every x. A float abs that a compare reads is now a mask of the sign bit, in asm."""
    a = np.array([1.0, -2.0, np.nan, -np.nan, np.inf, -0.0, -np.inf, 0.5], np.float32)
    for dev in DEVICES:
        out = kapi.zeros(8, dtype=np.bool_, device=dev)
        kapi.call_kernel(
            fabs_above_minus_one, kernel_api.Range(8), kapi.asarray(a, device=dev), out
        )
        np.testing.assert_array_equal(out.asnumpy(), np.abs(a) > -1, err_msg=str(dev))
    ptx = _ptx(fabs_above_minus_one)
    assert "abs.f32" not in ptx, ptx
    assert "and.b32 t, t, 2147483647" in ptx, ptx
    assert_assembles(ptx, "fabscmp")


@kapi.kernel
def abs_or_byte(item, a, s, out):
    i = item.get_id(0)
    out[i] = max(abs(a[i]), s)


def test_int32_abs_of_the_minimum_under_max_with_a_byte():
    """Seed 7000 kernel 63838: `max(abs(a), s)` with a an int32 and s a uint8 is 8 for a =
    int32 min (abs wraps); with abs written as max(x, -x), the H100's PTX compiler still
    took it for non-negative and made the max unsigned (2^31). The sign-mask form is right."""
    a = np.array([-(2**31), -5, 7, 0, 2**31 - 1, -1, 1, -(2**31) + 1], np.int32)
    wrapped = np.where(a < 0, -a, a).astype(np.int32).astype(np.int64)
    for dev in DEVICES:
        out = kapi.zeros(8, dtype=np.int64, device=dev)
        args = [kapi.asarray(a, device=dev), np.uint8(8), out]
        kapi.call_kernel(abs_or_byte, kernel_api.Range(8), *args)
        np.testing.assert_array_equal(out.asnumpy(), np.maximum(wrapped, 8), err_msg=str(dev))
    ptx = _ptx(abs_or_byte)
    assert "abs.s32" not in ptx and "max.s32 t" not in ptx, ptx
    assert re.search(r"shr\.s32 m, %r\d+, 31; xor\.b32 t, %r\d+, m; sub\.s32", ptx), ptx
    assert_assembles(ptx, "absbyte")


@kapi.kernel
def exp_of_abs(item, a, out):
    i = item.get_id(0)
    out[i] = 3 > math.exp(abs(a[i]))


def test_int32_abs_of_the_minimum_stays_negative():
    """Seed 7000 kernel 30047: abs(int32 min) wraps to itself, as in Numba, so exp of it is 0;
    LLVM tests exp's argument sign on the integer (`abs.s32(a) < 0`), which the H100's PTX
    compiler decided false. 32-bit abs is now a sign-mask xor and subtraction, in asm."""
    a = np.array([-(2**31), -5, 7, 0, 2**31 - 1, -1, 1, -(2**31) + 1], np.int32)
    wrapped = np.where(a < 0, -a, a).astype(np.int32)  # two's complement, as kapi and Numba
    with np.errstate(over="ignore"):
        want = 3 > np.exp(wrapped.astype(np.float64))
    for dev in DEVICES:
        out = kapi.zeros(8, dtype=np.bool_, device=dev)
        kapi.call_kernel(exp_of_abs, kernel_api.Range(8), kapi.asarray(a, device=dev), out)
        np.testing.assert_array_equal(out.asnumpy(), want, err_msg=str(dev))


@pytest.mark.skipif(not os.path.exists(LIBDEVICE), reason=f"exp needs CUDA's {LIBDEVICE}")
def test_int32_abs_is_not_ptx_abs():
    dev = DEVICES[0]
    a = kapi.asarray(np.array([-(2**31), 5], np.int32), device=dev)
    kapi.call_kernel(exp_of_abs, kernel_api.Range(2), a, kapi.zeros(2, dtype=np.bool_, device=dev))
    ptx = _ptx(exp_of_abs, LIBDEVICE)
    assert "abs.s32" not in ptx, ptx
    assert_assembles(ptx, "abs32")
