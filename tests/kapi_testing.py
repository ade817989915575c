"""What the end-to-end test modules share: the devices to run on, or a visible module skip
(with the reason) when the compiler extension or the runtime is not there."""

import inspect
import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

import kapi
from kapi import _native
from kapi import kernel_api as K


def devices_or_skip():
    if not _native.has("compile_kir"):
        pytest.skip("the compiler extension (compile_kir) is not built", allow_module_level=True)
    try:
        return kapi.devices()
    except kapi.KapiError as e:  # pragma: no cover
        pytest.skip(f"no kapi runtime: {e}", allow_module_level=True)


def needs_cpu_device():
    """Skip, with the reason, a test that needs kapi's CPU device (NumPy array arguments,
    `device="cpu"`) in a run whose KAPI_DRIVERS leaves that driver out."""
    if not any(d.device_type == "cpu" for d in kapi.devices()):
        pytest.skip("needs kapi's CPU device, which KAPI_DRIVERS leaves out in this run")


def run_elementwise(kern, x, dev, scalar=False):
    """out[base + i] = f(x[base + i]) by kern(item, x, out, base) over x on dev; scalar=True
    launches Range(3) at a time, so the work-item loops have no vector body (the tail of x
    past a multiple of 3 is left out)."""
    out = kapi.empty(x.size, dtype=x.dtype, device=dev)
    dx = kapi.asarray(x, device=dev)
    if scalar:
        for base in range(0, x.size - x.size % 3, 3):
            kapi.call_kernel(kern, kapi.Range(3), dx, out, base)
        return out.asnumpy()[: x.size - x.size % 3]
    kapi.call_kernel(kern, kapi.Range(x.size), dx, out, 0)
    return out.asnumpy()


def host_listing(test_file: str, script: str, env: dict, cpu="skylake-avx512") -> str:
    """The CPU driver's host IR (KAPI_DUMP=host, on stderr) of what `script` compiles, run in a
    subprocess that can import the test module beside `test_file`; for a fixed AVX-512 target
    unless env names one, so the listing depends neither on this machine's CPU nor on a
    KAPI_HOST_CPU the suite runs under (one without
    AVX-512 may refuse to run the module: the listing is printed before)."""
    here = os.path.dirname(os.path.abspath(test_file))
    path = os.pathsep.join([here, *[p for p in sys.path if p]])
    # the target is the listing's, not the run's: a suite run with KAPI_HOST_CPU set keeps it
    e = {**os.environ, "PYTHONPATH": path, "KAPI_CACHE": "0", "KAPI_DUMP": "host"}
    e.update({"KAPI_HOST_CPU": cpu, **env})
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=e,
    )
    assert r.returncode == 0 or refused(r.stderr), r.stderr[-3000:]
    return r.stderr


def check_on_target(test_file: str, script: str, target: str, path=None, **env) -> None:
    """Runs `script` in a process whose host JIT targets `target` (KAPI_HOST_CPU), able to import
    the test modules beside `test_file` (then `path`, else this process's sys.path). The script
    prints "ok", or "built only: why" when this CPU cannot run the target's code: the test is
    then skipped with that reason."""
    e = dict(os.environ, KAPI_HOST_CPU=target, KAPI_CACHE="0", **env)
    rest = path if path is not None else os.pathsep.join(p for p in sys.path if p)
    e["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.abspath(test_file)), rest])
    r = subprocess.run(
        [sys.executable, "-c", script], env=e, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stdout + r.stderr[-5000:]
    out = r.stdout.strip().splitlines()[-1]
    if out.startswith("built only"):
        pytest.skip(f"{out} (run on a CPU with those instructions)")
    assert out == "ok", r.stdout


def refused(stderr: str) -> bool:
    """Whether a script failed only because its KAPI_HOST_CPU has instructions this host lacks:
    the driver built the module and printed its listing (KAPI_DUMP=host), then refused to run
    it. On an AVX2 machine every listing made for a fixed AVX-512 target ends so."""
    return "it cannot run here" in stderr and "kapi cpu driver: host LLVM IR" in stderr


def line_of(fn, text):
    """Line number of the first source line of `fn` containing `text`."""
    src, start = inspect.getsourcelines(fn)
    for i, ln in enumerate(src):
        if text in ln:
            return start + i
    raise AssertionError(text)


# -- two GPUs on fake_cuda.c (runtime/drivers/cuda/tests): kapi's CUDA driver without a GPU --

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKE_CUDA = os.environ.get(
    "KAPI_FAKE_CUDA", os.path.join(ROOT, "build", "runtime", "drivers", "cuda", "tests")
)
FAKE_LIB = os.path.join(FAKE_CUDA, "libkapi_fake_cuda.so")


def fake_cuda_run(code: str, **env) -> dict:
    """Runs code (which prints one JSON line last) with kapi's drivers on the fake libcuda."""
    if not os.path.exists(FAKE_LIB):
        pytest.fail(f"{FAKE_LIB} is missing: build the tree (make build) first")
    prelude = (
        "import ctypes, json, numpy as np, kapi\n"
        f"fake = ctypes.CDLL({FAKE_LIB!r})\n"
        "class Stats(ctypes.Structure):\n"
        "    _fields_ = [(n, ctypes.c_long) for n in ('broken', 'peer_copies', 'peer_enabled',"
        " 'plain_cross', 'events')]\n"
        "def stats():\n"
        "    s = Stats(); fake.fake_cuda_stats(ctypes.byref(s))\n"
        "    return {n: getattr(s, n) for n, _ in Stats._fields_}\n"
    )
    full_env = dict(
        os.environ,
        PYTHONPATH=ROOT,
        KAPI_DRIVERS="cpu,cuda",
        KAPI_CUDA_LIBRARY=FAKE_LIB,
        KAPI_FAKE_CUDA_DEVICES="2",
        **env,
    )
    full_env.pop("KAPI_DEFAULT_DEVICE", None)
    r = subprocess.run(
        [sys.executable, "-c", prelude + code],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


# Kernels that several test files build (host-IR listings, settings that must change no result)


@kapi.kernel
def scan(nditem, a, out, slm):
    # Hillis-Steele inclusive scan per group; `v` is live across both barriers of each step.
    lid = nditem.get_local_id(0)
    gid = nditem.get_global_id(0)
    v = a[gid]
    slm[lid] = v
    K.group_barrier(nditem.get_group())
    d = 1
    while d < nditem.get_local_range(0):
        if lid >= d:
            v += slm[lid - d]
        K.group_barrier(nditem.get_group())
        slm[lid] = v
        K.group_barrier(nditem.get_group())
        d *= 2
    out[gid] = v


@kapi.kernel
def pairwise(item, data, dist):
    # a loop over the row per work-item: data[i, k] steps by data.shape[1] along dimension 0
    i = item.get_id(0)
    j = item.get_id(1)
    d = data.dtype.type(0.0)
    for k in range(data.shape[1]):
        t = data[i, k] - data[j, k]
        d += t * t
    dist[j, i] = math.sqrt(d)


def host_ir_of(code: str, **env) -> str:
    """The CPU driver's host IR (KAPI_DUMP=host, the disk cache off) of the kernels that
    `code` builds, run in a fresh process with env added (switches read at import)."""
    from pathlib import Path

    env = dict(
        os.environ,
        KAPI_DUMP="host",
        KAPI_CACHE="0",
        PYTHONPATH=str(Path(kapi.__file__).parents[1]),
        **env,
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0 or refused(r.stderr), r.stderr
    return r.stderr


def import_reduce_with(var, value, module="kapi._numeric.reduce"):
    """Imports module (kapi._numeric.reduce) in a fresh process with var=value (a switch read
    at import); its CompletedProcess."""
    from pathlib import Path

    env = {
        "PYTHONPATH": str(Path(kapi.__file__).parents[1]),
        var: value,
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        env=env,
        capture_output=True,
        text=True,
    )
