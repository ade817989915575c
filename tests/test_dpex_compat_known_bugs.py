"""numba-dpex kernels that kapi gets wrong today, kept as strict xfails so each bug stays
recorded (and the suite fails the day one is fixed, so its test moves to test_dpex_compat.py).
"""

import numpy as np
import pytest

import kapi as dpex
from kapi import _native
from kapi import kernel_api as kapi

if not _native.has("compile_kir"):
    pytest.skip("the compiler extension (compile_kir) is not built", allow_module_level=True)
try:
    dpex.default_device()
except dpex.KapiError as e:  # pragma: no cover
    pytest.skip(f"no kapi runtime: {e}", allow_module_level=True)


@dpex.kernel
def int_dot_blocked(item, a, b, c):
    # an integer matmul with the inner loop over a fixed tile (as tiled matmuls are written)
    i = item.get_id(0)
    acc = c.dtype.type(0)
    for t in range(a.shape[1] // 4):
        for k in range(4):
            acc += a[i, t * 4 + k] * b[t * 4 + k, i]
    c[i] = acc


@pytest.mark.xfail(
    strict=True,
    raises=dpex.KernelCompileError,
    reason="compiler: at opt_level 2 and 3 (default<O2>/<O3>, compiler/src/optimise.c; the "
    "default is 2) the SLP vectoriser turns the unrolled 4-step int32/int64 reduction into "
    "llvm.vector.reduce.add.v4i64, which "
    "kc_spirv_prepare (compiler/src/spirv_prepare.c) rejects as 'SPIR-V cannot express'. "
    "Fix: expand llvm.vector.reduce.{add,mul,and,or,xor,smin,smax,umin,umax} into "
    "extractelement + scalar ops in spirv_prepare.c (or disable SLP in kc_optimise). "
    "opt_level 0 and 1 work; float reductions are unaffected (no reassociation)",
)
def test_integer_reduction_over_unrolled_tile():
    h = np.arange(64, dtype=np.int32).reshape(8, 8)
    c = dpex.zeros(8, dtype=np.int32)
    dpex.call_kernel(int_dot_blocked, kapi.Range(8), dpex.asarray(h), dpex.asarray(h), c)
    np.testing.assert_array_equal(c.asnumpy(), np.diag(h @ h))
