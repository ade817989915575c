"""Kernel language end to end through the compiler: pyfront KIR -> compile_kir -> SPIR-V that
passes validation. Skipped until the compiler binding (kapi._lib._kapi) is built."""

import inspect
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyfront
from kapi.kernel_api import AtomicRef, MemoryScope, PrivateArray, group_barrier

_kapi = pytest.importorskip("kapi._lib._kapi", reason="compiler binding not built (make build)")


def _saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def _scalars(item, a, n, out):
    s = 0.0
    for j in range(n, 0, -1):
        if j % 3 == 0 and not a < 0:
            continue
        s += a**2 / j + j // 2
    while s > 100:
        s -= 7
    out[item.get_id(0)] = min(s, 50) if s > 1 else abs(a)


def _arrays(item, a, b):
    i = item.get_id(0)
    a[i, -1] = b[i, 0, 0] * a.shape[1] + a.strides[0] + a.size + a.dtype.type(1)


def _math(item, x):
    i = item.get_id(0)
    v = x[i]
    x[i] = math.sqrt(abs(v)) + math.exp(v) + math.atan2(v, 2.0) + math.floor(v) + math.pi
    if math.isnan(v):
        x[i] = 0


def _local(nd, a, loc):
    i = nd.get_local_id(0)
    loc[i] = a[nd.get_global_id(0)]
    group_barrier(nd.get_group(), MemoryScope.WORK_GROUP)
    p = PrivateArray(4, np.float32, fill_zeros=True)
    p[0] = loc[0]
    AtomicRef(a, 0).fetch_add(p[0])


def _dev_scale(a, x, i):
    return a * x[i]


_dev_scale.__kapi_device_func__ = True


def _device_and_index(nd, x, out):
    g = nd.get_group()
    i = nd.get_global_id(0)
    out[i, 0] = _dev_scale(2.0, x, i) + g.get_group_linear_id() + nd.get_local_linear_id()
    out[i, 1] = nd.get_global_range(1) if g.leader else nd.get_local_range(0)


def _atomics(item, a, f, e):
    i = item.get_id(0)
    r = AtomicRef(a, 0)
    old = r.fetch_max(a.dtype.type(i)) + r.load()
    r.store(old)
    if AtomicRef(a, 1).compare_exchange(e, a.dtype.type(3)):
        AtomicRef(f, (0, 1)).fetch_sub(f.dtype.type(1.5))


def _tuples_private_round(item, x):
    t = (x[0], 2)
    a, b = t
    p = PrivateArray((2, 2), np.float64)
    for k in range(2):
        q = PrivateArray(3, np.int32, fill_zeros=True)
        q[k] += 1
        p[k, 0] = q[k] + round(a * b)
    x[1] = p[1, 0]


KERNELS = [
    (_saxpy, ["f32", "array(f32,1,C,global)", "array(f32,1,C,global)"], ("item", 1)),
    (_scalars, ["f64", "i64", "array(f64,1,C,global)"], ("item", 1)),
    (_arrays, ["array(f64,2,F,global)", "array(f64,3,A,global)"], ("item", 1)),
    (_math, ["array(f32,1,C,global)"], ("item", 1)),
    (_local, ["array(f32,1,C,global)", "array(f32,1,C,local)"], ("nditem", 1)),
    (_device_and_index, ["array(f32,1,C,global)", "array(f64,2,C,global)"], ("nditem", 2)),
    (
        _atomics,
        ["array(i64,1,C,global)", "array(f32,2,C,global)", "array(i64,1,C,global)"],
        ("item", 1),
    ),
    (_tuples_private_round, ["array(f64,1,C,global)"], ("item", 1)),
]


@pytest.mark.parametrize("fn,args,index", KERNELS, ids=[k[0].__name__ for k in KERNELS])
@pytest.mark.parametrize("opt", [0, 2])
def test_kernel_compiles_to_valid_spirv(fn, args, index, opt):
    m = pyfront.compile_kernel(fn, args, index=index)
    entry, llvm_ir, spirv = _kapi.compile_kir(m.text, opt)
    assert entry == m.entry
    assert spirv[:4] == b"\x03\x02\x23\x07"  # SPIR-V magic, little endian
    _kapi.spirv_validate(spirv)


def _loops(item, n, out):
    s = 0
    for i in range(n):
        s += i
    for j in range(n, 0, -2):
        s -= j
    out[0] = s


def _while_break_continue(item, n, out):
    i = 0
    while True:
        i += 1
        if i > n:
            break
        if i % 2 == 0:
            continue
        out[i] = i


@pytest.mark.parametrize("opt", [0, 2])
@pytest.mark.parametrize("fn", [_loops, _while_break_continue], ids=lambda f: f.__name__)
def test_loop_kernels_compile_in_a_child_process(fn, opt):
    # Run in a child: a compiler abort (seen once: the translator's "Invalid bit width 65" on
    # LLVM's widened induction arithmetic) must fail this test, not kill the test run.
    code = textwrap.dedent(f"""
        import importlib.util, inspect, pyfront
        spec = importlib.util.spec_from_file_location("_kapi", {_kapi.__file__!r})
        _kapi = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_kapi)
        exec({inspect.getsource(fn)!r})
        m = pyfront.compile_kernel({fn.__name__}, ["i64", "array(i64,1,C,global)"],
                                   index=("item", 1))
        _kapi.spirv_validate(_kapi.compile_kir(m.text, {opt})[2])
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
