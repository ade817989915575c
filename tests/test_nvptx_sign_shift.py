"""Regression: LLVM 15's NVPTX instruction selection turns `and (sra x, 63), 3` (Python's
`%` fix-up for negative i64 operands) into `bfe.u64 x, 63, 2`, an unsigned extract that drops
the replicated sign bits: -8 % 3 came out -1 on the H200. The NVPTX finaliser guards i64 sign
tests and wide arithmetic shifts (compiler/src/finalise_nvptx_workarounds.c); this checks the
PTX for the kernel that showed it, here on any machine (the finaliser needs no GPU)."""

import re

import numpy as np
from kapi_testing import needs_cpu_device
from nvptx_util import ptx_of

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
    import os
    import shutil
    import subprocess

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
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if os.path.exists(ptxas):
        src = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"rot_{os.getpid()}.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([ptxas, "-arch=sm_90", src, "-o", os.devnull], capture_output=True)
        os.unlink(src)
        assert r.returncode == 0, r.stderr.decode()
