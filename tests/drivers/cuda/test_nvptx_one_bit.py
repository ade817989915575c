"""Loop bounds that scalar evolution narrows to one bit (seed 7000 kernel 117857 of the long
fuzz run on the H100): `range((i + i) & 3)` made loop strength reduction, inside LLVM 15's
NVPTX code generation, multiply the one-bit truncations of the index's factors: a `mul i1`,
which NVPTX instruction selection cannot select, so the module failed to build on CUDA. The
NVPTX finaliser hides such arithmetic behind a `freeze`
(compiler/src/finalise/nvptx/finalise_nvptx_workarounds.c, guard_one_bit). The first kernel is
the finding's shape (it fails to assemble without the guard); the other two are the guard's
other one-bit forms (bit 0, and a sign extension of it). Each kernel runs on every device here;
its PTX, made on any machine, must assemble."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip
from nvptx_util import assert_assembles, ptx_of

import kapi
from kapi import kernel_api

DEVICES = devices_or_skip()
N = 64


@kapi.kernel
def masked_even_bound(item, acc):
    i = item.get_id(0)
    for j in range((i + i) & 3):  # an even index masked to bit 1: one bit of i
        kernel_api.AtomicRef(acc, (j % 64 - 64) % 8).fetch_add(i)


@kapi.kernel
def masked_product_bound(item, a, acc):
    i = item.get_id(0)
    for j in range((i * a[i % 4]) & 1):  # bit 0 of a product
        kernel_api.AtomicRef(acc, j % 8).fetch_add(i + 1)


@kapi.kernel
def sign_of_bit_zero_bound(item, a, acc):
    i = item.get_id(0)
    m = -((i * a[i % 4]) & 1)  # 0 or -1: a sign extension of bit 0
    for j in range(m + 2):
        kernel_api.AtomicRef(acc, j % 8).fetch_add(i)


def _oracle(kind, a):
    acc = np.zeros(8, np.int64)
    for i in range(N):
        if kind == "even":
            for j in range((i + i) & 3):
                acc[(j % 64 - 64) % 8] += i
        elif kind == "product":
            for j in range((i * a[i % 4]) & 1):
                acc[j % 8] += i + 1
        else:
            for j in range(-((i * a[i % 4]) & 1) + 2):
                acc[j % 8] += i
    return acc


CASES = {
    "even": (masked_even_bound, False),
    "product": (masked_product_bound, True),
    "sign": (sign_of_bit_zero_bound, True),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_one_bit_loop_bound(kind):
    k, with_a = CASES[kind]
    a = np.array([3, 5, 2, 7], np.int64)
    for dev in DEVICES:
        acc = kapi.zeros(8, dtype=np.int64, device=dev)
        args = ([kapi.asarray(a, device=dev)] if with_a else []) + [acc]
        kapi.call_kernel(k, kernel_api.Range(N), *args)
        np.testing.assert_array_equal(acc.asnumpy(), _oracle(kind, a), err_msg=str(dev))
    ptx = ptx_of(next(iter(k.inspect_spirv().values())), None)
    assert ".entry" in ptx
    assert_assembles(ptx, "onebit_" + kind)
