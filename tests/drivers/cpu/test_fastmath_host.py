"""fastmath reaches kapi's CPU driver through the SPIR-V: the FPFastMathMode decorations come
back as LLVM fast-math flags on the host finaliser's code (KAPI_DUMP=host prints it), and
native_* math runs as the accurate functions."""

import os
import subprocess
import sys
import textwrap

import pytest
from kapi_testing import devices_or_skip

DEVICES = devices_or_skip()
CPU = [d for d in DEVICES if ":cpu:" in d.filter_string]

SCRIPT = """
import math, sys
import numpy as np
import kapi

def body(item, a, out):
    i = item.get_id(0)
    out[i] = a[i] * a[i] + math.log(a[i]) / a[i]

dev = [d for d in kapi.devices() if ":cpu:" in d.filter_string][0]
flags = {"plain": False, "nnan": {"nnan", "ninf"}, "fast": True}[sys.argv[1]]
h = np.linspace(0.5, 4.0, 64).astype(np.float32)
a = kapi.asarray(h, device=dev)
out = kapi.empty_like(a)
kapi.call_kernel(kapi.kernel(body, fastmath=flags), kapi.Range(64), a, out)
x = h.astype(np.float64)
assert np.allclose(out.asnumpy(), x * x + np.log(x) / x, rtol=1e-6), "wrong results"
"""


def _host_ir(flags: str) -> str:
    env = dict(os.environ, KAPI_DUMP="host", KAPI_CACHE="0")
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), flags],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stderr


@pytest.mark.skipif(not CPU, reason="no CPU device")
def test_host_code_carries_the_flags():
    plain, nnan, fast = _host_ir("plain"), _host_ir("nnan"), _host_ir("fast")
    assert "fmul float" in plain or "fmul <" in plain
    assert " fast " not in plain and "nnan" not in plain
    assert "fmul nnan ninf" in nnan and " fast " not in nnan
    assert "fmul fast" in fast
