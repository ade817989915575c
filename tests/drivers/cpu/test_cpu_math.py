"""Every math function of the kernel language on the CPU device, float32 and float64, checked
against Python's math in float64 with OpenCL-like ULP bounds. Each function runs twice: in
launches of 3 work-items (the work-item loop stays scalar, plain libm calls) and in one large
launch (the loop vectoriser's path, with glibc's libmvec variants where the host has them).
Then the same with KAPI_HOST_NO_LIBMVEC=1, and with a process that loaded no math library
itself (python -S in a subprocess): kernels bind libm by soname, never by what the process
happened to load. And all of it again for each kind of x86-64 CPU the JIT may target
(KAPI_HOST_CPU, in a subprocess): a target this CPU cannot run is only built, and skipped."""

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import check_on_target, devices_or_skip

import kapi

CPU = [d for d in devices_or_skip() if d.filter_string.startswith("level_zero:cpu")]
if not CPU:  # pragma: no cover
    pytest.skip("no kapi CPU device", allow_module_level=True)
DEV = CPU[0]

N_VEC = 4096  # one launch: the vectorised work-item loop
N_SCALAR = 96  # 32 launches of 3 work-items: the scalar loop
SCALAR_RANGE = 3


def _unary(f):
    @kapi.kernel
    def k(item, x, y, out, base):
        i = base + item.get_id(0)
        out[i] = f(x[i])

    return k


def _binary(f):
    @kapi.kernel
    def k(item, x, y, out, base):
        i = base + item.get_id(0)
        out[i] = f(x[i], y[i])

    return k


@kapi.kernel
def _ldexp(item, x, n, out, base):
    i = base + item.get_id(0)
    out[i] = math.ldexp(x[i], n[i])


def _predicate(f):
    @kapi.kernel
    def k(item, x, y, out, base):
        i = base + item.get_id(0)
        out[i] = 1 if f(x[i]) else 0

    return k


# name: (Python function, x range, y range or None, ULP bound for float32). float64 gets the
# same bound plus one ulp: the reference is itself a float64 libm result. Bounds are OpenCL's
# (sqrt: 3, sin: 4, tan: 5, erf: 16...); ldexp, fmod, copysign and rounding are exact.
UNARY = {
    "sqrt": (math.sqrt, (0.0, 1e4), 3),
    "exp": (math.exp, (-80.0, 80.0), 3),
    "expm1": (math.expm1, (-20.0, 20.0), 3),
    "log": (math.log, (1e-30, 1e30), 3),
    "log1p": (math.log1p, (-0.99, 100.0), 2),
    "log2": (math.log2, (1e-30, 1e30), 3),
    "log10": (math.log10, (1e-30, 1e30), 3),
    "sin": (math.sin, (-100.0, 100.0), 4),
    "cos": (math.cos, (-100.0, 100.0), 4),
    "tan": (math.tan, (-100.0, 100.0), 5),
    "asin": (math.asin, (-1.0, 1.0), 4),
    "acos": (math.acos, (-1.0, 1.0), 4),
    "atan": (math.atan, (-100.0, 100.0), 5),
    "sinh": (math.sinh, (-80.0, 80.0), 4),
    "cosh": (math.cosh, (-80.0, 80.0), 4),
    "tanh": (math.tanh, (-20.0, 20.0), 5),
    "asinh": (math.asinh, (-1e3, 1e3), 4),
    "acosh": (math.acosh, (1.0, 1e3), 4),
    "atanh": (math.atanh, (-0.999, 0.999), 5),
    "fabs": (math.fabs, (-1e3, 1e3), 0),
    "floor": (math.floor, (-1e3, 1e3), 0),
    "ceil": (math.ceil, (-1e3, 1e3), 0),
    "trunc": (math.trunc, (-1e3, 1e3), 0),
    "erf": (math.erf, (-5.0, 5.0), 16),
    "erfc": (math.erfc, (-5.0, 9.0), 16),
    "lgamma": (math.lgamma, (0.05, 40.0), 16),
    "gamma": (math.gamma, (0.1, 30.0), 16),
}
if hasattr(math, "exp2"):  # Python 3.11
    UNARY["exp2"] = (math.exp2, (-120.0, 120.0), 3)
BINARY = {
    "atan2": (math.atan2, (-10.0, 10.0), (-10.0, 10.0), 6),
    "pow": (math.pow, (0.01, 10.0), (-10.0, 10.0), 16),
    "fmod": (math.fmod, (-100.0, 100.0), (0.5, 10.0), 0),
    "hypot": (math.hypot, (-1e3, 1e3), (-1e3, 1e3), 4),
    "copysign": (math.copysign, (-1e3, 1e3), (-1.0, 1.0), 0),
}
PREDICATES = {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}
# Where a function crosses zero (lgamma at 1 and 2) a relative bound means nothing: an absolute
# error this small (a few ulp of the function's scale) passes there.
ABS_TOL = {"lgamma": {np.float32: 2e-6, np.float64: 4e-15}}
DTYPES = [np.float32, np.float64]

_KERNELS = {}


def kernel_for(name):
    if name not in _KERNELS:
        if name in UNARY:
            _KERNELS[name] = _unary(UNARY[name][0])
        elif name in BINARY:
            _KERNELS[name] = _binary(BINARY[name][0])
        elif name in PREDICATES:
            _KERNELS[name] = _predicate(PREDICATES[name])
        else:
            _KERNELS[name] = _ldexp
    return _KERNELS[name]


def ulp_error(got, want, dtype):
    """|got - want| in units of the last place of `dtype` at `want` (want in float64)."""
    got = got.astype(np.float64)
    fi = np.finfo(dtype)
    exp = np.floor(np.log2(np.maximum(np.abs(want), float(fi.tiny))))
    ulp = np.exp2(exp - (fi.nmant))
    err = np.abs(got - want) / ulp
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    return np.where(same, 0.0, err)


def run(name, dtype, x, y, n_range):
    """Runs `name` over all of x (and y) in launches of n_range work-items."""
    n = x.size
    out = np.zeros(n, dtype=np.int32 if name in PREDICATES else dtype)
    dx, dy = kapi.asarray(x, device=DEV), kapi.asarray(y, device=DEV)
    dout = kapi.asarray(out, device=DEV)
    for base in range(0, n, n_range):
        kapi.call_kernel(kernel_for(name), kapi.Range(min(n_range, n - base)), dx, dy, dout, base)
    return dout.asnumpy()


def inputs(rng, lo, hi, n, dtype):
    v = rng.uniform(lo, hi, n)
    v[:2] = lo, hi  # the domain's ends too
    return np.clip(v.astype(dtype), lo, hi).astype(dtype)


def check(name, dtype, got, want, bound):
    err = ulp_error(got, want, dtype)
    tol = ABS_TOL.get(name, {}).get(dtype)
    if tol is not None:
        err = np.where(np.abs(got.astype(np.float64) - want) <= tol, 0.0, err)
    worst = int(np.argmax(err))
    assert err[worst] <= bound, (
        f"{name}({np.dtype(dtype).name}) = {got[worst]!r}, want {want[worst]!r}: "
        f"{err[worst]:.2f} ulp (bound {bound})"
    )


FUNCS = list(UNARY) + list(BINARY) + ["ldexp"] + list(PREDICATES)
PATHS = {"scalar": (N_SCALAR, SCALAR_RANGE), "vectorised": (N_VEC, N_VEC)}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", FUNCS)
def test_math_function(name, dtype, path):
    n, n_range = PATHS[path]
    rng = np.random.default_rng(sorted(FUNCS).index(name))
    slack = 1 if dtype == np.float64 else 0
    if name in UNARY:
        f, (lo, hi), bound = UNARY[name]
        x = inputs(rng, lo, hi, n, dtype)
        y = np.zeros(n, dtype)
        want = np.array([float(f(float(v))) for v in x])
        check(name, dtype, run(name, dtype, x, y, n_range), want, bound + slack * (bound > 0))
    elif name in BINARY:
        f, (lo, hi), (ylo, yhi), bound = BINARY[name]
        x, y = inputs(rng, lo, hi, n, dtype), inputs(rng, ylo, yhi, n, dtype)
        want = np.array([f(float(a), float(b)) for a, b in zip(x, y, strict=True)])
        check(name, dtype, run(name, dtype, x, y, n_range), want, bound + slack * (bound > 0))
    elif name == "ldexp":
        x = inputs(rng, -1e3, 1e3, n, dtype)
        e = rng.integers(-20, 20, n).astype(np.int32)
        want = np.array([math.ldexp(float(a), int(b)) for a, b in zip(x, e, strict=True)])
        check(name, dtype, run(name, dtype, x, e, n_range), want, 0)
    else:
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1e30, 3.5], dtype)
        x = np.resize(specials, n).astype(dtype)
        got = run(name, dtype, x, np.zeros(n, dtype), n_range)
        want = np.array([int(PREDICATES[name](float(v))) for v in x])
        np.testing.assert_array_equal(got, want, err_msg=name)


# A subprocess: python -S imports no site packages and no math library of its own (the venv's
# packages come from PYTHONPATH), optionally without libmvec; every function must still build
# and agree with math to a few ulp.
SUBPROCESS = textwrap.dedent(
    """
    import sys
    assert "numpy" not in sys.modules, sorted(sys.modules)  # nothing imported beforehand
    import kapi, numpy as np, math
    dev = [d for d in kapi.devices() if d.filter_string.startswith("level_zero:cpu")][0]
    fns = {"erf": math.erf, "acosh": math.acosh, "erfc": math.erfc, "lgamma": math.lgamma,
           "gamma": math.gamma, "tanh": math.tanh, "sin": math.sin, "log1p": math.log1p}
    def make(f):
        @kapi.kernel
        def k(item, x, out):
            i = item.get_id(0)
            out[i] = f(x[i])
        return k
    x = np.linspace(2.5, 4.0, 1000)  # away from the zeros of acosh and lgamma
    for name, f in fns.items():
        for dt in (np.float32, np.float64):
            xd = x.astype(dt)
            o = kapi.empty(1000, dtype=dt, device=dev)
            kapi.call_kernel(make(f), kapi.Range(1000), kapi.asarray(xd, device=dev), o)
            want = np.array([f(float(v)) for v in xd])
            rel = np.max(np.abs(o.asnumpy() - want) / np.abs(want))
            assert rel < (2e-6 if dt == np.float32 else 1e-14), (name, dt, rel)
    print("ok")
    """
)


def _python_path():
    """This process's module path (kapi first; site-packages or dist-packages, wherever this
    host keeps them), for a python -S that reads no site configuration."""
    root = os.path.dirname(os.path.dirname(kapi.__file__))
    return os.pathsep.join([root] + [p for p in sys.path if p and p != root])


@pytest.mark.parametrize("no_libmvec", [False, True], ids=["libmvec", "no_libmvec"])
def test_math_binds_without_process_libraries(no_libmvec):
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": _python_path()}
    if no_libmvec:
        env["KAPI_HOST_NO_LIBMVEC"] = "1"
    for k in ("KAPI_DRIVERS", "ZE_ENABLE_ALT_DRIVERS", "LD_LIBRARY_PATH", "HOME"):
        if k in os.environ:
            env[k] = os.environ[k]
    r = subprocess.run(
        [sys.executable, "-S", "-c", SUBPROCESS],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


# Each kind of x86-64 CPU the host JIT may target: SSE4.2 only, AVX2, AVX-512 preferring 256-bit
# vectors (Intel), AVX-512 at 512 bits (what LLVM 15 picks on Zen 4), AVX512-FP16. The whole
# module's checks run in a process whose JIT targets it; on a CPU without its instructions every
# kernel is still built and linked (the build error says so, and names no unresolved symbol).
TARGETS = ["x86-64-v2", "haswell", "skylake-avx512", "icelake-server", "znver4", "sapphirerapids"]
ON_TARGET = textwrap.dedent(
    """
    import sys
    import kapi, numpy as np
    import test_cpu_math as T
    runs = True
    for name in T.FUNCS:
        for dt in T.DTYPES:
            for path in T.PATHS:
                try:
                    T.test_math_function(name, dt, path)
                except kapi.KernelCompileError as e:
                    assert "cannot run here" in str(e) and "not found" not in str(e), str(e)
                    runs, why = False, str(e)
                else:
                    assert runs, (name, dt, path, "ran after another kernel could not")
    print("ok" if runs else "built only: " + why.splitlines()[-1])
    """
)


@pytest.mark.parametrize("target", TARGETS)
def test_math_on_each_target(target):
    check_on_target(__file__, ON_TARGET, target, path=_python_path())
