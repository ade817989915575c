"""Regression: LLVM 15's NVPTX instruction selection turns `and (sra x, 63), 3` (Python's
`%` fix-up for negative i64 operands) into `bfe.u64 x, 63, 2`, an unsigned extract that drops
the replicated sign bits: -8 % 3 came out -1 on the H200. The NVPTX finaliser guards i64 sign
tests and wide arithmetic shifts (compiler/src/finalise/nvptx/finalise_nvptx_workarounds.c);
this checks the PTX for the kernel that showed it, here on any machine (the finaliser needs no
GPU)."""

import re

import numpy as np
from kapi_testing import needs_cpu_device
from nvptx_util import assert_assembles, ptx_of

import kapi
from kapi import kernel_api


@kapi.kernel
def mod_sum(item, a, out):
    i = item.get_id(0)
    acc = 0
    for b in range(1, 4):
        acc += a[i] % b
    out[i] = acc


def test_python_mod_of_negative_i64_has_no_overlong_unsigned_bfe():
    needs_cpu_device()
    h = np.arange(-10, 10, dtype=np.int64)
    out = kapi.zeros(20, dtype=np.int64, device="cpu")
    kapi.call_kernel(mod_sum, kernel_api.Range(20), kapi.asarray(h, device="cpu"), out)
    np.testing.assert_array_equal(out.asnumpy(), (h[:, None] % np.arange(1, 4)).sum(1))
    ptx = ptx_of(next(iter(mod_sum.inspect_spirv().values())))
    for pos, length in re.findall(r"bfe\.u64\s+%\w+,\s*%\w+,\s*(\d+),\s*(\d+);", ptx):
        assert int(pos) + int(length) <= 64, f"bfe.u64 at {pos} of {length} bits:\n{ptx}"
    assert "shr.s64" in ptx  # the sign test went through the guard


@kapi.kernel
def rotate_like(item, a, out):
    i = item.get_id(0)
    out[i] = ~(1 << (a[i] & 63))  # the DAG combiner makes this rotl(-2, a[i])


def test_rotate_by_register_masks_its_amount():
    """LLVM 15 prints a 64-bit rotate by a register as shl/shr by the amount itself, with no
    `& 63` (a rotate's own modulo, which the combiner assumes): `~(1 << (u & 63))` of a uint32
    u >= 64 was 0 on the H100 (long fuzz run, seed 2000 kernel 2017). The finaliser patches the
    printed rotate to mask its amount; ptxas accepts the result."""
    needs_cpu_device()
    a = np.array([0, 1, 63, 64, 65, 127, 200, 2**32 - 1], np.uint32)
    out = kapi.zeros(8, dtype=np.int64, device="cpu")
    kapi.call_kernel(rotate_like, kernel_api.Range(8), kapi.asarray(a, device="cpu"), out)
    np.testing.assert_array_equal(out.asnumpy(), ~(np.int64(1) << (a & 63).astype(np.int64)))
    ptx = ptx_of(next(iter(rotate_like.inspect_spirv().values())))
    blocks = re.findall(r"\.reg \.u32 %amt2;(.*?)\}", ptx, re.S)
    assert blocks, ptx  # the rotate template is still what LLVM prints: keep the patch honest
    for blk in blocks:
        assert re.search(r"and\.b32\s+%amt1, %r\d+, 63;", blk), blk
        assert re.search(r"sh[lr]\.b64\s+%lhs, %rd\d+, %amt1;", blk), blk
    assert_assembles(ptx, "rot")


@kapi.kernel
def shift_by_31(item, s, t, out, out32):
    i = item.get_id(0)
    out[i] = s[i] * 2147483648  # int32 widened to int64, then shl 31
    out32[i] = np.int32(t[i]) << np.int32(15)


def test_shift_of_a_sign_extension_by_half_the_width_keeps_its_sign():
    """LLVM 15's mul.wide combine made `sext(int32 s) << 31` a `mul.wide.s32 s, -2147483648`
    (1 << 31 read as a signed 32-bit immediate): -12 * 2**31 came out positive on the H100
    (long fuzz run, seed 6000 kernel 401). The finaliser shifts through an asm instead; the
    kernel runs on every device and the PTX has no such immediate."""
    s = np.array([-12, -1, 0, 1, 7, -(2**31), 2**31 - 1, 3], np.int32)
    t = np.array([-3, -1, 0, 1, 5, -(2**15), 2**15 - 1, 2], np.int16)
    for dev in kapi.devices():
        out = kapi.zeros(8, dtype=np.int64, device=dev)
        out32 = kapi.zeros(8, dtype=np.int64, device=dev)
        args = [kapi.asarray(s, device=dev), kapi.asarray(t, device=dev), out, out32]
        kapi.call_kernel(shift_by_31, kernel_api.Range(8), *args)
        np.testing.assert_array_equal(out.asnumpy(), s.astype(np.int64) * 2**31)
        want32 = (t.astype(np.int64) << 15).astype(np.int32).astype(np.int64)
        np.testing.assert_array_equal(out32.asnumpy(), want32)
    ptx = ptx_of(next(iter(shift_by_31.inspect_spirv().values())))
    assert not re.search(r"mul\.wide\.s(32|16)\s+%\w+, %\w+, -(2147483648|32768);", ptx), ptx
    assert re.search(r"shl\.b64 %rd\d+, %rd\d+, 31;", ptx), ptx


@kapi.kernel
def bit_selects(item, a, out):
    i = item.get_id(0)
    x = a[i]
    out[i * 4 + 0] = min(3, x & 2147483648)  # select (x & 2^31) == 0, 0, 3
    out[i * 4 + 1] = 7 if x & 1024 else 0
    out[i * 4 + 2] = 0 if x & 1 == 0 else 15
    out[i * 4 + 3] = min(3, x & 2147483648) if x > 5 else 1  # the test read by a select too


def test_one_bit_test_selecting_a_mask_keeps_every_bit():
    """The DAG combiner folds `select (x & 2^k) == 0, 0, 3` on i64 into `and (sra (shl x,
    63 - k), 63), 3`, which LLVM 15 selects as an overlong `bfe.u64 .., 63, 2`: min(3, x & 2^31)
    of x = -2^40 - 3 came out 1 on the H100 (long fuzz run, seed 7000 kernel 211915). The
    finaliser tests such bits through an asm (guard_bit_test); the kernel runs on every device
    and its PTX has no overlong unsigned extract."""
    a = np.array([-(2**40) - 3, -(2**40), 2**31, 2**31 - 1, 1024, 1, 0, -1], np.int64)
    want = np.zeros((8, 4), np.int64)
    want[:, 0] = np.minimum(3, a & 2**31)
    want[:, 1] = np.where(a & 1024, 7, 0)
    want[:, 2] = np.where(a & 1 == 0, 0, 15)
    want[:, 3] = np.where(a > 5, want[:, 0], 1)
    for dev in kapi.devices():
        out = kapi.zeros(32, dtype=np.int64, device=dev)
        kapi.call_kernel(bit_selects, kernel_api.Range(8), kapi.asarray(a, device=dev), out)
        np.testing.assert_array_equal(out.asnumpy().reshape(8, 4), want, err_msg=str(dev))
    ptx = ptx_of(next(iter(bit_selects.inspect_spirv().values())))
    for pos, length in re.findall(r"bfe\.u64\s+%\w+,\s*%\w+,\s*(\d+),\s*(\d+);", ptx):
        assert int(pos) + int(length) <= 64, f"bfe.u64 at {pos} of {length} bits:\n{ptx}"
    assert re.search(r"shr\.s64 %rd\d+, t, 63;", ptx), ptx  # the bit tests went through the guard
    assert_assembles(ptx, "bitsel")
