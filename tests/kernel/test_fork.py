"""fork after kapi has started: the child either works (kapi's CPU device) or raises a clear
KapiError on its first use of a device whose driver does not survive fork; it never hangs,
even when other parent threads were launching or compiling at the moment of the fork.
Issue 12, item 3. Each case runs in a fresh interpreter under a timeout, so a hang fails the
test instead of stopping the suite."""

import os
import subprocess
import sys
import textwrap

import pytest
from kapi_testing import devices_or_skip

DEVICES = devices_or_skip()
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

PRELUDE = """
import os, sys, threading, numpy as np, kapi

@kapi.kernel
def vadd(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]

DEV = kapi.Device(sys.argv[1])

def work(n=4096):
    a = kapi.asarray(np.arange(n, dtype=np.float32), device=DEV)
    c = kapi.empty_like(a)
    kapi.call_kernel(vadd, kapi.Range(n), a, a, c)
    return bool((c.asnumpy() == 2 * np.arange(n, dtype=np.float32)).all())

def child_outcome():
    # "ok" when the child's launch worked, "clear" for the documented error
    try:
        return "ok" if work() else "wrong"
    except kapi.KapiError as e:
        msg = str(e)
        return "clear" if "forked" in msg and "spawn" in msg else "unclear: " + msg
"""


def run_script(body: str, dev, timeout=120):
    code = PRELUDE + textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.run(
        [sys.executable, "-c", code, dev.filter_string],
        capture_output=True,
        text=True,
        timeout=timeout,  # a hang raises TimeoutExpired: the test fails
        env=env,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.split()


def expected(dev):
    return "ok" if dev.driver_name == "kapi-cpu" else "clear"


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def test_os_fork_after_a_launch(dev):
    out = run_script(
        """
        assert work()
        pid = os.fork()
        if pid == 0:
            print(child_outcome(), flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        print("parent", work())
        """,
        dev,
    )
    assert out == [expected(dev), "parent", "True"]


def test_multiprocessing_fork_pool(dev):
    out = run_script(
        """
        import multiprocessing as mp
        assert work()
        def task(_):
            return child_outcome()
        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as pool:
                print(*sorted(set(pool.map(task, range(6)))))
            print("parent", work())
        """,
        dev,
    )
    assert out == [expected(dev), "parent", "True"]


def test_fork_while_other_threads_launch_and_compile(dev):
    """Forks while two threads launch in a loop and a third compiles new kernels: a lock one
    of them held at the fork must not be inherited held (the child would hang)."""
    out = run_script(
        """
        stop = threading.Event()
        def launcher():
            while not stop.is_set():
                assert work(1024)
        def compiler():
            k = 0
            while not stop.is_set():
                k += 1
                ns = {}
                exec(f"def f(item, a):\\n    a[item.get_id(0)] = {k}", ns)
                a = kapi.zeros(8, dtype=np.int64, device=DEV)
                kapi.call_kernel(kapi.kernel(ns["f"]), kapi.Range(8), a)
        assert work()
        threads = [threading.Thread(target=t) for t in (launcher, launcher, compiler)]
        for t in threads:
            t.start()
        outcomes = set()
        for _ in range(30):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                os.write(w, child_outcome().encode())
                os._exit(0)
            os.close(w)
            with os.fdopen(r) as f:
                outcomes.add(f.read())
            os.waitpid(pid, 0)
        stop.set()
        for t in threads:
            t.join()
        print(*sorted(outcomes))
        print("parent", work())
        """,
        dev,
        timeout=240,
    )
    assert out == [expected(dev), "parent", "True"]


def test_fork_before_kapi_starts_leaves_the_child_free():
    """A child forked before the parent used any device starts kapi itself: every device
    works there."""
    code = """
import os, numpy as np
import kapi
pid = os.fork()
if pid == 0:
    try:
        outs = []
        for d in kapi.devices():
            a = kapi.ones(16, dtype=np.float32, device=d)
            outs.append(float(a.asnumpy().sum()))
        print("child", *outs, flush=True)
    finally:
        os._exit(0)
os.waitpid(pid, 0)
"""
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["child"] + ["16.0"] * len(DEVICES), p.stdout + p.stderr
