"""erf and erfc on the CPU device as IR arithmetic the loop vectoriser widens
(compiler/src/finalise/host/finalise_host_explog.c): float erf on AVX-512 targets, all of them
where libmvec has no vector version or under KAPI_HOST_ERF=ir (set here for this module's
kernels). Checked over a stride of every float bit pattern and a million doubles against glibc
(itself within 1 ulp), with the special values, vectorised and in launches of 3 work-items
(scalar code), which must agree bit for bit. OpenCL allows 16 ulp for both."""

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import devices_or_skip, run_elementwise

import kapi

CPU = [d for d in devices_or_skip() if d.filter_string.startswith("level_zero:cpu")]
if not CPU:  # pragma: no cover
    pytest.skip("no kapi CPU device", allow_module_level=True)
DEV = CPU[0]


@pytest.fixture(autouse=True, scope="module")
def ir_erf():
    """The formulas for every type (a kernel is built, under the environment, on its first
    launch; the native-binary cache keys on KAPI_HOST_* variables)."""
    old = os.environ.get("KAPI_HOST_ERF")
    os.environ["KAPI_HOST_ERF"] = "ir"
    yield
    if old is None:
        del os.environ["KAPI_HOST_ERF"]
    else:
        os.environ["KAPI_HOST_ERF"] = old


@kapi.kernel
def k_erf(item, x, out, base):
    i = base + item.get_id(0)
    out[i] = math.erf(x[i])


@kapi.kernel
def k_erfc(item, x, out, base):
    i = base + item.get_id(0)
    out[i] = math.erfc(x[i])


KERNELS = {"erf": (k_erf, np.vectorize(math.erf)), "erfc": (k_erfc, np.vectorize(math.erfc))}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-30, -1e-30, 30.0]


def run(kern, x, scalar=False):
    return run_elementwise(kern, x, DEV, scalar)


def ulps(got, ref, dtype):
    """|got - ref| in units in the last place of dtype at ref (ref in float64); 0 where got is
    ref rounded to dtype (infinities and zeros included) or both are NaN."""
    fi = np.finfo(dtype)
    ref = np.asarray(ref, np.float64)
    with np.errstate(all="ignore"):
        e = np.floor(np.log2(np.maximum(np.abs(ref), float(fi.smallest_subnormal))))
        ulp = np.exp2(np.maximum(e - fi.nmant, np.log2(float(fi.smallest_subnormal))))
        err = np.abs(got.astype(np.float64) - ref) / ulp
        rounded = ref.astype(dtype)
    same = (got == rounded) | (np.isnan(got) & np.isnan(ref))
    return np.where(same, 0.0, err)


# worst measured: float erf 4.50 ulp (at 1.743, below the switch to exp(-a^2) R(a) at 1.75),
# erfc 4.35; double (against glibc) erf 1, erfc 5
BOUND = {("erf", np.float32): 5.0, ("erfc", np.float32): 5.0}
BOUND.update({("erf", np.float64): 2.0, ("erfc", np.float64): 6.0})


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_float32_every_997th_bit_pattern(name):
    kern, ref_fn = KERNELS[name]
    x = np.arange(0, 1 << 32, 997, dtype=np.uint64).astype(np.uint32).view(np.float32)
    got = run(kern, x)
    with np.errstate(invalid="ignore"):  # NaN bit patterns
        ref = ref_fn(x.astype(np.float64))
    u = ulps(got, ref, np.float32)
    worst = int(np.argmax(u))
    assert u[worst] <= BOUND[name, np.float32], (
        f"{name}({x[worst]!r}) = {got[worst]!r}, want {ref[worst]!r} ({u[worst]:.2f} ulp)"
    )


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_float64_samples(name):
    kern, ref_fn = KERNELS[name]
    rng = np.random.default_rng(5)
    x = np.concatenate(
        [
            rng.uniform(-7, 7, 500_000),
            rng.uniform(-30, 30, 300_000),
            rng.integers(0, 1 << 63, 200_000, dtype=np.uint64).view(np.float64),
            [0.5, 0.75, 1.0, 2.0, 3.5, 4.0, 6.0, 8.0, 26.5, 27.3, 27.5, 5e-324, 1e-310],
        ]
    )
    got = run(kern, x)
    with np.errstate(invalid="ignore"):  # NaN bit patterns
        ref = ref_fn(x)
    u = ulps(got, ref, np.float64)
    worst = int(np.argmax(u))
    assert u[worst] <= BOUND[name, np.float64], (
        f"{name}({x[worst]!r}) = {got[worst]!r}, glibc {ref[worst]!r} ({u[worst]:.2f} ulp)"
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_special_values_and_scalar_path_agree(name, dtype):
    kern, ref_fn = KERNELS[name]
    rng = np.random.default_rng(9)
    x = np.concatenate([SPECIAL, rng.uniform(-12, 12, 3000), rng.uniform(-30, 30, 600)])
    x = x.astype(dtype)[: x.size - x.size % 3]
    vec, sca = run(kern, x), run(kern, x, scalar=True)
    np.testing.assert_array_equal(vec.view(f"u{x.itemsize}"), sca.view(f"u{x.itemsize}"))
    ref = ref_fn(np.array(SPECIAL, dtype).astype(np.float64))
    got = vec[: len(SPECIAL)]
    exact = ~np.isfinite(ref) | (ref == 0) | (np.abs(ref) == 1) | np.isinf(np.array(SPECIAL))
    np.testing.assert_array_equal(got[exact], ref[exact].astype(dtype))  # NaN == NaN here
    assert np.signbit(got[1]) == (name == "erf")  # erf(-0) = -0, erfc(-0) = 1
    assert ulps(got[~exact], ref[~exact], dtype).max() <= BOUND[name, dtype]


def host_ir(body, dtype, env):
    script = textwrap.dedent(
        f"""
        import math, numpy as np, kapi
        @kapi.kernel
        def k(item, x, out):
            i = item.get_id(0)
            out[i] = {body}
        x = kapi.asarray(np.ones(4096, np.{dtype}), device="cpu")
        kapi.call_kernel(k, kapi.Range(4096), x, kapi.empty(4096, dtype=np.{dtype}, device="cpu"))
        """
    )
    full = {k: v for k, v in os.environ.items() if k != "KAPI_HOST_ERF"}
    full.update(env, KAPI_DUMP="host", KAPI_CACHE="0")
    full["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "-c", script], env=full, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "kapi-scheme" in r.stderr
    return [ln for ln in r.stderr.splitlines() if "call " in ln and "erf" in ln]


def avx512_host():
    with open("/proc/cpuinfo") as f:
        return " avx512f" in f.read() and "KAPI_HOST_CPU" not in os.environ


def test_float_erf_is_ours_on_avx512_and_libm_restores_the_call():
    """The reason for float erf's formula: on AVX-512 it runs faster than libmvec's vector erff,
    so the host IR calls no erff there; KAPI_HOST_ERF=libm brings the call (and libmvec's
    variants) back; KAPI_HOST_ERF=ir takes the formulas for every type."""
    if avx512_host():
        assert host_ir("math.erf(x[i])", "float32", {}) == []
    assert host_ir("math.erf(x[i])", "float32", {"KAPI_HOST_ERF": "libm"})
    both = "math.erfc(x[i]) + math.erf(x[i])"
    for dtype in ("float32", "float64"):
        assert host_ir(both, dtype, {"KAPI_HOST_ERF": "ir"}) == []
