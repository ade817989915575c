"""Regression: LLVM 15's NVPTX instruction selection turns `and (sra x, 63), 3` (Python's
`%` fix-up for negative i64 operands) into `bfe.u64 x, 63, 2`, an unsigned extract that drops
the replicated sign bits: -8 % 3 came out -1 on the H200. The NVPTX finaliser guards i64 sign
tests and wide arithmetic shifts (compiler/src/finalise_nvptx_workarounds.c); this checks the
PTX for the kernel that showed it, here on any machine (the finaliser needs no GPU)."""

import re

import numpy as np
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
    h = np.arange(-10, 10, dtype=np.int64)
    out = kapi.zeros(20, dtype=np.int64, device="cpu")
    kapi.call_kernel(mod_sum, kernel_api.Range(20), kapi.asarray(h, device="cpu"), out)
    np.testing.assert_array_equal(out.asnumpy(), (h[:, None] % np.arange(1, 4)).sum(1))
    ptx = ptx_of(next(iter(mod_sum.inspect_spirv().values())))
    for pos, length in re.findall(r"bfe\.u64\s+%\w+,\s*%\w+,\s*(\d+),\s*(\d+);", ptx):
        assert int(pos) + int(length) <= 64, f"bfe.u64 at {pos} of {length} bits:\n{ptx}"
    assert "shr.s64" in ptx  # the sign test went through the guard
