"""Signals around CPU launches (kapi/_ext/signals.c), each in a child process: a crash from an
out-of-bounds write names KAPI_BOUNDSCHECK=1 and still ends as a crash (faulthandler's report
included); a Ctrl-C pressed again during a work-group that runs for long ends the process
with a message instead of being ignored."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from kapi_testing import devices_or_skip

import kapi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
devices_or_skip()
if not any(d.device_type == "cpu" for d in kapi.devices()):
    pytest.skip("needs kapi's CPU device", allow_module_level=True)

HINT = "KAPI_BOUNDSCHECK=1"

OUT_OF_BOUNDS = """
import numpy as np, kapi

@kapi.kernel
def poke(item, a, off):
    i = item.get_id(0)
    a[i + off] = 1.0

a = kapi.zeros(16, dtype=np.float64, device="cpu")
kapi.call_kernel(poke, kapi.Range(16), a, 1 << 40)  # far outside any mapping
print("survived")
"""


def child(code, *flags, env=None, **kw):
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.update(env or {})
    return subprocess.Popen(
        [sys.executable, *flags, "-c", textwrap.dedent(code)],
        env=e,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def run(code, *flags, env=None):
    p = child(code, *flags, env=env)
    out, err = p.communicate(timeout=300)
    return p.returncode, out, err


def test_out_of_bounds_crash_names_boundscheck():
    rc, out, err = run(OUT_OF_BOUNDS)
    assert rc in (-signal.SIGSEGV, -signal.SIGBUS), (rc, err)  # still a crash, as before
    assert "survived" not in out
    assert err.count(HINT) == 1 and "during a kernel launch on the CPU device" in err, err


def test_the_hint_chains_to_faulthandler():
    rc, _, err = run(OUT_OF_BOUNDS, "-X", "faulthandler")
    assert rc in (-signal.SIGSEGV, -signal.SIGBUS), (rc, err)
    assert HINT in err and "Fatal Python error: Segmentation fault" in err


def test_with_boundscheck_the_same_write_raises_index_error():
    rc, _, err = run(OUT_OF_BOUNDS, env={"KAPI_BOUNDSCHECK": "1"})
    assert rc == 1 and "IndexError: index 1099511627776 is out of bounds for array 'a'" in err
    assert "in kernel 'poke'" in err and HINT not in err


CRASH_LATER = """
import ctypes, sys, numpy as np, kapi
if sys.argv[-1] == "launch":
    @kapi.kernel
    def one(item, a):
        a[item.get_id(0)] = 1
    kapi.call_kernel(one, kapi.Range(4), kapi.zeros(4, device="cpu"))
ctypes.string_at(0)  # a crash outside any launch
"""


def test_a_crash_after_cpu_launches_hints_and_one_without_does_not():
    rc, _, err = run(CRASH_LATER.replace("sys.argv[-1]", "'launch'"))
    assert rc == -signal.SIGSEGV and "crashed after kernels ran on the CPU device" in err, err
    rc, _, err = run(CRASH_LATER.replace("sys.argv[-1]", "'none'"))
    assert rc == -signal.SIGSEGV and HINT not in err, err


# One work-group that runs for hours: the driver checks for Ctrl-C between work-groups only,
# so the first Ctrl-C cannot stop it; the second must end the process.
LONG_GROUP = """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # as an interactive run has it
import numpy as np, kapi

@kapi.kernel
def spin(item, out, iters):
    i = item.get_id(0)
    x = out[i]
    for _ in range(iters):
        x = x * np.float32(0.999999) + np.float32(1e-7)
    out[i] = x

out = kapi.zeros(1, dtype=np.float32, device="cpu")
kapi.call_kernel(spin, kapi.Range(1), out, 1)  # compiled before the long launch
print("launching", flush=True)
kapi.call_kernel(spin, kapi.Range(1), out, 10**14)
print("the launch ran to completion")
"""


def test_repeated_ctrl_c_ends_a_long_work_group():
    p = child(LONG_GROUP)
    try:
        assert p.stdout.readline().strip() == "launching"
        time.sleep(1.0)  # well inside the launch
        p.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert p.poll() is None, "one Ctrl-C cannot stop a running work-group"
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        p.wait(timeout=5)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
    err = p.stderr.read()
    assert p.returncode == -signal.SIGINT and took < 1.0, (p.returncode, took, err)
    assert "press Ctrl-C again to end the process" in err  # the first one said what comes
    assert "ending the process" in err
