"""The CPU driver's O3 pipeline does not unroll a loop by a count known only at run time after
vectorising it (KAPI_HOST_UNROLL, finalise_host_jit.c): the vectoriser has already interleaved
its loops, and unrolling them again made a local scan's host IR six times larger on Zen and its
build three times slower. Partial unrolling stays as LLVM decides (`0` turns it off too);
KAPI_HOST_UNROLL=1 is LLVM's choice, as before (the same pipeline text with no options, which
builds what default<O3> built). Checked: the listings' sizes, and results equal bit for bit
under every setting and to NumPy."""

import json

import numpy as np
import pytest
from kapi_testing import devices_or_skip, host_listing

CPU = [d for d in devices_or_skip() if ":cpu:" in d.filter_string]
pytestmark = pytest.mark.skipif(not CPU, reason="no CPU device")


def inputs():
    rng = np.random.default_rng(3)
    return rng.integers(-5, 5, 4096, dtype=np.int32), rng.random((100, 3), dtype=np.float32)


SCRIPT = """
import json, sys
import numpy as np, kapi
from kapi import kernel_api as K
import kapi_testing as KT
import test_cpu_unroll as T
a, data = T.inputs()
out = np.zeros_like(a)
dist = np.zeros((100, 100), np.float32)
try:
    lm = K.LocalAccessor((256,), np.int32)
    kapi.call_kernel(KT.scan, kapi.NdRange((a.size,), (256,)), a, out, lm)
    kapi.call_kernel(KT.pairwise, kapi.Range(100, 100), data, dist)
except kapi.KapiError:  # a listing for a CPU this one is not (printed before the error)
    sys.exit(0)
print("RESULT " + json.dumps([out.tolist(), dist.view(np.uint32).tolist()]), file=sys.stderr)
"""


def results(setting):
    """The scan's and the pairwise distances' results (as bits) built for this machine's CPU."""
    env = {} if setting is None else {"KAPI_HOST_UNROLL": setting}
    text = host_listing(__file__, SCRIPT, env, cpu="host")
    result = next(ln for ln in text.splitlines() if ln.startswith("RESULT "))
    return json.loads(result[len("RESULT ") :])


def scan_lines(setting):
    """Lines of the scan's host IR, built for a Skylake-AVX512 (whose scheduling model lets LLVM
    unroll partly and at run time, as Zen's does), whatever this machine is."""
    env = {} if setting is None else {"KAPI_HOST_UNROLL": setting}
    lines = host_listing(__file__, SCRIPT, env).splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("define") and "scan" in ln)
    return next(i for i in range(start, len(lines)) if lines[i] == "}") - start


def test_same_results_under_every_setting():
    a, data = inputs()
    scan_out, dist_bits = results(None)
    want = np.cumsum(a.reshape(-1, 256), axis=1, dtype=np.int32).reshape(-1)
    np.testing.assert_array_equal(np.array(scan_out, np.int32), want)
    dist = np.array(dist_bits, np.uint32).view(np.float32)
    d = data[:, None, :] - data[None, :, :]
    np.testing.assert_allclose(dist, np.sqrt((d * d).sum(-1)).T, rtol=1e-5, atol=1e-6)
    for setting in ("0", "1"):
        assert results(setting) == [scan_out, dist_bits], setting  # bit for bit


def test_loops_are_not_unrolled_again_after_vectorising():
    now, before = scan_lines(None), scan_lines("1")
    # LLVM's own choice unrolls the scan's vectorised region loops again (for this target 1.6
    # times the code; for Zen 3 and 4, six times)
    assert before > 1.4 * now, (before, now)
