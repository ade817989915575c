"""Gathers of evenly spaced lanes on the CPU device read as plain vector loads and shuffles,
or as scalar loads. `a[i, k]` of a C-contiguous array, `i` the work-item, is a gather whose
lanes are `a.shape[1]` elements apart; the CPU driver switches on that spacing at run time to a
window of whole-vector loads and shuffles for a set of spacings (KAPI_HOST_WINDOW_GATHERS:
by default 1 to 4 for 4-byte elements, to 8 on Intel's CPUs, 1 and 2 for 8-byte ones; `0`,
none) and to scalar loads for any other (KAPI_HOST_SCALAR_GATHERS=0: the gather;
finalise_host_gathers.c). The values are copied, not computed, so every result is compared
exactly: for spacings on both sides of the limit, odd row counts (partial vectors), negative
and zero spacings, views, and 4- and 8-byte elements; and with the limit raised to 16, turned
off, the gathers kept and on AVX2, in a process of its own."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import devices_or_skip, host_listing

import kapi

CPU = [d for d in devices_or_skip() if ":cpu:" in d.filter_string]
pytestmark = pytest.mark.skipif(not CPU, reason="no CPU device")


@kapi.kernel
def transpose_rows(item, a, out):
    # a loop along row i per work-item: a[i, k] is a gather of lanes a.shape[1] apart
    i = item.get_id(0)
    for k in range(a.shape[1]):
        out[k, i] = a[i, k]


@kapi.kernel
def pick(item, a, out, n, c):
    # no loop: lane i reads a[i * n + c], n a scalar argument (any sign)
    i = item.get_id(0)
    out[i] = a[i * n + c]


@kapi.kernel
def pairwise(item, data, dist):
    i = item.get_id(0)
    j = item.get_id(1)
    d = data.dtype.type(0.0)
    for k in range(data.shape[1]):
        t = data[i, k] - data[j, k]
        d += t * t
    dist[j, i] = d


def transposed(a):
    out = np.zeros((a.shape[1], a.shape[0]), a.dtype)
    kapi.call_kernel(transpose_rows, kapi.Range(a.shape[0]), a, out)
    return out


@pytest.mark.parametrize("dtype", ["f4", "f8", "i4"])
@pytest.mark.parametrize("cols", [1, 2, 3, 4, 5, 7, 8, 9])
def test_rows_read_across_work_items_are_exact(cols, dtype):
    a = (np.random.default_rng(cols).random((1001, cols)) * 1000).astype(dtype)
    np.testing.assert_array_equal(transposed(a), a.T)


@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 3, 4, 5, 7, 8])
def test_a_scalar_spacing_of_any_sign(n):
    m = 999
    a = np.random.default_rng(abs(n)).random(m * max(abs(n), 1) + 8, dtype=np.float32)
    c = 3 + (m - 1) * max(-n, 0)  # the first element read when n < 0 is the last one
    out = np.zeros(m, np.float32)
    kapi.call_kernel(pick, kapi.Range(m), a, out, n, c)
    np.testing.assert_array_equal(out, a[np.arange(m) * n + c])


@pytest.mark.parametrize("cols", [2, 3])
def test_views(cols):
    base = (np.random.default_rng(cols).random((400, 2 * cols + 1)) * 100).astype(np.float32)
    view = kapi.asarray(base, device=CPU[0])[1::2, 1::2]  # layout A, both strides above 1
    out = kapi.zeros((view.shape[1], view.shape[0]), dtype="f4", device=CPU[0])
    kapi.call_kernel(transpose_rows, kapi.Range(view.shape[0]), view, out)
    np.testing.assert_array_equal(out.asnumpy(), base[1::2, 1::2].T)


def test_pairwise_sums_match_the_gathers():
    # arithmetic on the window's lanes: the same operations in the same order as the gather's
    data = np.random.default_rng(5).random((203, 3), dtype=np.float32)
    dist = np.zeros((203, 203), np.float32)
    kapi.call_kernel(pairwise, kapi.Range(203, 203), data, dist)
    ref = np.zeros((203, 203), np.float32)
    for k in range(3):
        t = data[None, :, k] - data[:, None, k]
        ref += t * t
    np.testing.assert_array_equal(dist, ref)


SCRIPT = """
import numpy as np, kapi
import test_cpu_gather_windows as T
for cols in range(1, 18):
    for dtype in ("f4", "f8"):
        a = (np.random.default_rng(cols).random((517, cols)) * 1000).astype(dtype)
        got = T.transposed(a)
        assert (got == a.T).all(), (cols, dtype)
print("ok")
"""


def run(env):
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([here, *[p for p in sys.path if p]])
    e = dict(os.environ, PYTHONPATH=path, KAPI_CACHE="0", **env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=600,
        env=e,
    )


@pytest.mark.parametrize(
    "env",
    [
        {"KAPI_HOST_WINDOW_GATHERS": "16"},
        {"KAPI_HOST_WINDOW_GATHERS": "0"},
        {"KAPI_HOST_SCALAR_GATHERS": "0"},
        {"KAPI_HOST_WINDOW_GATHERS": "2+5", "KAPI_HOST_SCALAR_GATHERS": "0"},
        # AVX2: the optimiser sees gathers as cheap, they get windows or scalar loads
        {"KAPI_HOST_CPU": "haswell"},
        {"KAPI_HOST_WINDOW_GATHERS": "16", "KAPI_HOST_CPU": "haswell"},
        # ...and code generation scalarises the gathers kept
        {"KAPI_HOST_CPU": "haswell", "KAPI_HOST_SCALAR_GATHERS": "0"},
        # ...or LLVM builds these vectors from scalar loads itself (no gathers to rewrite)
        {"KAPI_HOST_CPU": "haswell", "KAPI_HOST_AVX2_GATHERS": "0"},
    ],
)
def test_every_spacing_to_sixteen_and_off(env):
    r = run(env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


DUMP = """
import numpy as np, kapi
import test_cpu_gather_windows as T
a = np.ones((64, 3), np.{dtype})
kapi.call_kernel(T.transpose_rows, kapi.Range(64), a, np.zeros((3, 64), np.{dtype}))
"""


def listing(env, dtype="float32"):
    return host_listing(__file__, DUMP.format(dtype=dtype), env)


def gather_blocks(ir):
    """The label of the block of every gather call in the listing."""
    label, out = None, []
    for line in ir.splitlines():
        if line and not line[0].isspace() and line.split(";")[0].strip().endswith(":"):
            label = line.split(":")[0]
        elif "call <" in line and "@llvm.masked.gather" in line:
            out.append(label)
    return out


def windows(ir):
    """The spacings the listing's switches send to a window."""
    return {int(s) for s in re.findall(r"i64 (\d+), label %kapi\.window\d*\n", ir + "\n")}


def test_avx2_gathers_get_windows_unless_told_not_to():
    # AVX2 (no AVX-512): the optimiser sees gathers as cheap, so the vectoriser gathers rows and
    # the gathers get their windows, and scalar loads for the other spacings
    cheap = listing({"KAPI_HOST_CPU": "haswell"})
    assert "switch i64" in cheap and {1, 2, 3, 4} <= windows(cheap)
    assert not gather_blocks(cheap) and "%kapi.strided" in cheap
    # KAPI_HOST_AVX2_GATHERS=0: LLVM's own view, scalar loads it builds itself (no gathers)
    plain = listing({"KAPI_HOST_CPU": "haswell", "KAPI_HOST_AVX2_GATHERS": "0"})
    assert not gather_blocks(plain) and "kapi.window" not in plain


def test_listing_switches_on_the_spacing():
    ir = listing({})
    # a switch on the spacing: windows of plain loads and shuffles, scalar loads for the rest
    assert "switch i64" in ir, ir[:3000]
    assert re.search(r"shufflevector <\d+ x float> %kapi.pick", ir), ir[:3000]
    assert not gather_blocks(ir) and "%kapi.strided" in ir
    # 4-byte elements: 1 to 4, or to 8 on an Intel CPU (whichever this host is)
    assert windows(ir) in ({1, 2, 3, 4}, set(range(1, 9))), windows(ir)
    # KAPI_HOST_SCALAR_GATHERS=0: the gather for the other spacings, in its own block
    kept = listing({"KAPI_HOST_SCALAR_GATHERS": "0"})
    labels = gather_blocks(kept)
    assert labels and all(x.startswith("kapi.window.gather") for x in labels), labels
    assert windows(kept) == windows(ir) and "%kapi.strided" not in kept
    # a list of spacings, and a largest one
    assert windows(listing({"KAPI_HOST_WINDOW_GATHERS": "2+5"})) == {2, 5}
    assert windows(listing({"KAPI_HOST_WINDOW_GATHERS": "6"})) == set(range(1, 7))
    off = listing({"KAPI_HOST_WINDOW_GATHERS": "0"})
    assert "kapi.window" not in off and "%kapi.strided" not in off and gather_blocks(off)


def test_eight_byte_elements_get_two_windows():
    # half as many lanes a vector: a window of 3 or more loads lost to scalar loads
    ir = listing({}, dtype="float64")
    assert windows(ir) == {1, 2} and not gather_blocks(ir) and "%kapi.strided" in ir
    # on AVX2 (4 lanes) a module that reads doubles keeps LLVM's view that gathers are slow
    avx2 = listing({"KAPI_HOST_CPU": "haswell"}, dtype="float64")
    assert "kapi.window" not in avx2 and not gather_blocks(avx2)
