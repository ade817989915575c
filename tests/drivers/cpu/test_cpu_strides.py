"""Strided accesses across work-items on the CPU device. `data[i, k]` of a C-contiguous array,
with `i` the work-item, steps by the row's extent from one work-item to the next: the CPU
driver keeps LLVM's loop vectoriser from versioning work-item loops on such an extent being 1
(never true in practice: every launch ran the scalar copy), so they vectorise with gathers;
a layout-A array's strides (a view's innermost one is mostly 1) keep the versioning.
KAPI_HOST_VERSION_STRIDES=1 versions on every integer argument, as before. Results are
checked against NumPy for extents of 1 (where the old vector version ran) and above, the
listings for the versioning itself (compiler/src/finalise/host/finalise_host_strides.c)."""

import re

import numpy as np
import pytest
from kapi_testing import devices_or_skip, host_listing, pairwise

import kapi

CPU = [d for d in devices_or_skip() if ":cpu:" in d.filter_string]
pytestmark = pytest.mark.skipif(not CPU, reason="no CPU device")


@kapi.kernel
def row_sums(item, a, out):
    # a 1-D range: the loop's guard (a.shape[1] > 0) is unswitched out of the work-item loop
    i = item.get_id(0)
    s = a.dtype.type(0)
    for k in range(a.shape[1]):
        s += a[i, k]
    out[i] = s


@kapi.kernel
def row_sums3(item, a, out):
    # no loop: three columns of row i, a stride of a.shape[1] across work-items
    i = item.get_id(0)
    out[i] = a[i, 0] + a[i, 1] * 2 + a[i, 2] * 3


@kapi.kernel
def scaled(item, a, b):
    # b = 2 a, for a view (layout A) of any strides
    i = item.get_id(0)
    j = item.get_id(1)
    b[j, i] = a[j, i] * 2


@kapi.kernel
def flat_rows(item, a, out, n):
    # a row of n values of a flat array, n a scalar argument
    i = item.get_id(0)
    s = a.dtype.type(0)
    for k in range(n):
        s += a[i * n + k] * (k + 1)
    out[i] = s


@pytest.mark.parametrize("d", [1, 2, 3, 7, 40])
def test_pairwise_distance(d):
    n = 203
    data = np.random.default_rng(d).random((n, d), dtype=np.float32)
    dist = np.zeros((n, n), np.float32)
    kapi.call_kernel(pairwise, kapi.Range(n, n), data, dist)
    ref = np.sqrt(((data[None, :, :] - data[:, None, :]) ** 2).sum(-1))
    np.testing.assert_allclose(dist, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cols", [1, 3, 20])
def test_row_sums(cols):
    a = np.random.default_rng(cols).random((1001, cols), dtype=np.float32)
    out = np.zeros(1001, np.float32)
    kapi.call_kernel(row_sums, kapi.Range(1001), a, out)
    np.testing.assert_allclose(out, a.sum(1), rtol=1e-5)


@pytest.mark.parametrize("cols", [3, 8])
def test_columns_of_rows_without_a_loop(cols):
    a = np.random.default_rng(cols).random((1000, cols), dtype=np.float32)
    out = np.zeros(1000, np.float32)
    kapi.call_kernel(row_sums3, kapi.Range(1000), a, out)
    np.testing.assert_allclose(out, a[:, 0] + a[:, 1] * 2 + a[:, 2] * 3, rtol=1e-6)


@pytest.mark.parametrize("step", [1, 2, 3])
def test_views_of_any_innermost_stride(step):
    base = np.random.default_rng(step).random((70, 300), dtype=np.float32)
    a = kapi.asarray(base, device=CPU[0])[:, 1 : 1 + 99 * step : step]
    b = kapi.zeros((70, 99), dtype="f4", device=CPU[0])
    kapi.call_kernel(scaled, kapi.Range(99, 70), a, b)
    np.testing.assert_array_equal(b.asnumpy(), base[:, 1 : 1 + 99 * step : step] * 2)


@pytest.mark.parametrize("n", [1, 5])
def test_a_scalar_argument_as_stride(n):
    a = np.random.default_rng(n).random(777 * n, dtype=np.float32)
    out = np.zeros(777, np.float32)
    kapi.call_kernel(flat_rows, kapi.Range(777), a, out, n)
    ref = (a.reshape(777, n) * np.arange(1, n + 1, dtype=np.float32)).sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


DUMP = """
import numpy as np, kapi
import test_cpu_strides as T
def try_call(*args):
    try:
        kapi.call_kernel(*args)
    except kapi.KapiError:
        pass
data = np.random.default_rng(1).random((64, 3)).astype(np.float32)
try_call(T.pairwise, kapi.Range(64, 64), data, np.zeros((64, 64), np.float32))
try_call(T.row_sums, kapi.Range(64), data, np.zeros(64, np.float32))
base = kapi.asarray(np.ones((64, 65), np.float32), device="cpu")  # (not a GPU the host has)
out = kapi.asarray(np.zeros((64, 64), np.float32), device="cpu")
try_call(T.scaled, kapi.Range(64, 64), base[:, 1:], out)
"""


def listing(env):
    return host_listing(__file__, DUMP, env)


def run_function(ir, kernel):
    lines = ir.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("define") and kernel in ln)
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return "\n".join(lines[start : end + 1])


def test_a_row_extent_is_gathered_and_a_view_stride_versioned():
    # the gathers kept where no window applies (by default they become scalar loads)
    ir = listing({"KAPI_HOST_SCALAR_GATHERS": "0"})
    for kernel in ("pairwise", "row_sums"):
        run = run_function(ir, kernel)
        # data[i, k] across work-items: gathers, no version for data.shape[1] == 1 (nor for a
        # frozen copy of it, which the unswitched guard of row_sums made before)
        assert "llvm.masked.gather" in run, run[:3000]
        assert "ident.check" not in run
    # the view's innermost stride keeps the version with plain vector loads
    run = run_function(ir, "scaled")
    assert "ident.check" in run, run[:3000]
    assert re.search(r"load <\d+ x float>", run)
    before = run_function(listing({"KAPI_HOST_VERSION_STRIDES": "1"}), "pairwise")
    assert "ident.check" in before
