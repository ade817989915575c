"""The CPU device in the host process: its thread pool's placement when the launching thread was
pinned (by an OpenMP runtime, or by hand). Each case runs in a subprocess, so the pinning
and the pool are its own."""

import ast
import ctypes.util
import os
import subprocess
import sys
import textwrap

import pytest
from kapi_testing import devices_or_skip

CPU = [d for d in devices_or_skip() if d.filter_string.startswith("level_zero:cpu")]
if not CPU:  # pragma: no cover
    pytest.skip("no kapi CPU device", allow_module_level=True)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def run_python(code, env=None, timeout=120):
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=e,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# Pins the main thread (`PIN` below), then launches; prints the CPUs the process may use, the
# main thread's, the device's compute units and each pool worker's CPUs.
AFFINITY = """
import os, numpy as np
ALL = sorted(os.sched_getaffinity(0))
PIN
main = sorted(os.sched_getaffinity(0))
import kapi
dev = [d for d in kapi.devices() if d.filter_string.startswith("level_zero:cpu")][0]

@kapi.kernel
def twice(item, a, b):
    i = item.get_id(0)
    b[i] = a[i] * 2.0

n = 1 << 20
a = kapi.asarray(np.arange(n, dtype=np.float32), device=dev)
b = kapi.empty_like(a)
kapi.call_kernel(twice, kapi.Range(n), a, b)
assert (b.asnumpy() == 2.0 * np.arange(n, dtype=np.float32)).all()

def cpus(tid):
    for line in open(f"/proc/self/task/{tid}/status"):
        if line.startswith("Cpus_allowed_list:"):
            out = set()
            for part in line.split(":")[1].strip().split(","):
                lo, _, hi = part.partition("-")
                out.update(range(int(lo), int(hi or lo) + 1))
            return sorted(out)

workers = [cpus(t) for t in os.listdir("/proc/self/task")
           if open(f"/proc/self/task/{t}/comm").read().strip() == "kapi-cpu"]
print(repr({"all": ALL, "main": main, "units": dev.max_compute_units, "workers": workers}))
"""

# libgomp pins the thread that runs its first parallel region to the first place (here the
# main thread) when OMP_PROC_BIND is set; its own workers take the other places.
OPENMP_PIN = """
import ctypes, ctypes.util
gomp = ctypes.CDLL(ctypes.util.find_library("gomp"))
FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
body = FN(lambda data: None)
gomp.GOMP_parallel(body, None, 0, 0)
"""

# By hand: another thread keeps the process's mask (as OpenMP's workers do), and the main
# thread pins itself.
HAND_PIN = """
import threading, time
stop = threading.Event()
threading.Thread(target=stop.wait, daemon=True).start()
os.sched_setaffinity(0, {ALL[0]})
"""


def check_placement(out):
    r = ast.literal_eval(out.strip().splitlines()[-1])
    assert len(r["main"]) == 1, f"the main thread was not pinned to one CPU: {r}"
    assert r["units"] == len(r["all"]), r
    assert len(r["workers"]) == len(r["all"]) - 1, r
    for w in r["workers"]:
        assert w == r["all"], f"a pool worker inherited the pinned mask: {r}"


needs_two = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="pinning means nothing with one CPU"
)


@needs_two
def test_pool_ignores_a_pinned_main_thread():
    r = run_python(AFFINITY.replace("PIN", HAND_PIN))
    assert r.returncode == 0, r.stdout + r.stderr
    check_placement(r.stdout)


@needs_two
@pytest.mark.skipif(not ctypes.util.find_library("gomp"), reason="no libgomp on this host")
def test_pool_ignores_openmp_binding():
    env = {"OMP_PROC_BIND": "true", "OMP_PLACES": "threads", "OMP_WAIT_POLICY": "passive"}
    env["OMP_NUM_THREADS"] = str(len(os.sched_getaffinity(0)))
    r = run_python(AFFINITY.replace("PIN", OPENMP_PIN), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    check_placement(r.stdout)


# A launch that would run for minutes, interrupted by SIGINT from a timer thread: the
# KeyboardInterrupt must come within seconds, and the device must run the next launches right.
CTRL_C = """
import faulthandler, os, signal, sys, threading, time
# A shell without job control starts background commands with SIGINT ignored, and Python
# then installs no handler: Ctrl-C could not work at all. Install it as an interactive run has.
signal.signal(signal.SIGINT, signal.default_int_handler)
faulthandler.dump_traceback_later(100, exit=True)  # a hang shows its threads' stacks
import numpy as np
import kapi
dev = [d for d in kapi.devices() if d.filter_string.startswith("level_zero:cpu")][0]

@kapi.kernel
def spin(item, out, iters):
    i = item.get_global_id(0)
    x = np.float32(i) * np.float32(1e-6)
    for _ in range(iters):
        x = x * np.float32(0.999999) + np.float32(1e-7)
    out[i] = x

# 2^22 work-items in groups of 256, 10^5 iterations each: a minute or more on any host, and
# no group takes long (a running group finishes before the launch stops).
n = 1 << 22
space = kapi.NdRange((n,), (256,))
out = kapi.empty(n, dtype=np.float32, device=dev)
kapi.call_kernel(spin, space, out, 1)  # compiled before the clock starts
threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    kapi.call_kernel(spin, space, out, 10**5)
    raise SystemExit("the launch ran to completion")
except KeyboardInterrupt:
    took = time.monotonic() - t0
print("interrupted after", round(took, 2), "s", file=sys.stderr)
assert took < 5.0, took

# The device still works: the same kernel, short, checked against NumPy in float32.
kapi.call_kernel(spin, space, out, 3)
want = np.arange(n, dtype=np.float32) * np.float32(1e-6)
for _ in range(3):
    want = want * np.float32(0.999999) + np.float32(1e-7)
np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
a = kapi.asarray(np.arange(1 << 20, dtype=np.float32), device=dev)
c = kapi.empty_like(a)

@kapi.kernel
def twice(item, a, c):
    i = item.get_id(0)
    c[i] = a[i] * 2.0

kapi.call_kernel(twice, kapi.Range(a.size), a, c)
assert (c.asnumpy() == 2 * a.asnumpy()).all()
print("ok")
"""


def test_ctrl_c_interrupts_a_long_launch():
    """Ctrl-C during a long CPU launch raises KeyboardInterrupt within seconds and the device
    still works. The child installs Python's SIGINT handler itself: started from a shell
    without job control (`(make test &)`, as the fifth session's CI runs of 2026-11-24 were),
    it inherited SIGINT ignored and ran the whole launch past the 120 s limit."""
    r = run_python(CTRL_C, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
