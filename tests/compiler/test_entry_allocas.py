"""A private array's storage stays the first thing in the kernel's first block: the loop
vectoriser's runtime alias checks (ptrtoints of the arguments) went to the top of the entry
block, before the private array's alloca, and the SPIR-V failed validation ("All OpVariable
instructions in a function must be the first instructions in the first block") for a kernel
that counts into a private array, scatters 1- or 2-byte values by those counts and then copies
them: the compiler now moves the entry block's allocas to its top before the translator."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi.kernel_api import PrivateArray

DEVICES = devices_or_skip()


def counting_sort_then_copy(item, a, s, out, m):
    cnt = PrivateArray(256, np.int64, fill_zeros=True)
    i = 0
    while i < m:
        q = np.int64(a[i]) & 255
        cnt[q] += 1
        i += 1
    t = 0
    for q in range(256):
        c = cnt[q]
        cnt[q] = t
        t += c
    i = 0
    while i < m:
        w = a[i]
        q = np.int64(w) & 255
        o = cnt[q]
        cnt[q] = o + 1
        s[o] = w
        i += 1
    j = 0
    while j < m:
        out[j] = s[j]
        j += 1


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int16", "uint32", "float32"])
@pytest.mark.parametrize("dev", DEVICES, ids=[d.filter_string for d in DEVICES])
def test_private_array_scatter_then_copy(dev, dtype):
    m = 1000
    h = np.random.default_rng(3).integers(0, 250, m).astype(dtype)
    s = kapi.zeros(m, dtype=dtype, device=dev)
    out = kapi.zeros(m, dtype=dtype, device=dev)
    k = kapi.kernel(counting_sort_then_copy)
    kapi.call_kernel(k, kapi.Range(1), kapi.asarray(h, device=dev), s, out, np.int64(m))
    want = h[np.argsort(h.astype(np.int64) & 255, kind="stable")]
    np.testing.assert_array_equal(out.asnumpy(), want)
