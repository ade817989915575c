# ruff: noqa: E501  (KIR fixtures keep one item per line, as the format requires)
"""@kapi.kernel(fastmath=...) and @kapi.device_func(fastmath=...): Numba's option values (True,
False, a set or a dict of LLVM flag names), the KIR `fastmath` attribute per function (device
functions inherit the caller's flags unless they set their own), LLVM fast-math flags on float
arithmetic, FPFastMathMode in the SPIR-V, OpenCL native_* math under `afn` and native_divide
under `arcp`, and results on every device within the approximations' tolerance."""

import math
import re

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi._lib import _kapi

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def body(item, a, out):
    i = item.get_id(0)
    x = a[i]
    out[i] = math.sqrt(x) * math.log(x) + math.exp(-x) * math.sin(x) + math.cos(x) / x


@kapi.device_func
def inheriting(x):
    return math.log(x) / x


@kapi.device_func(fastmath=False)
def accurate(x):
    return math.sqrt(x) / x


@kapi.device_func(fastmath={"nnan"})
def own_flags(x):
    return x * x + 1.0


def calls(item, a, out):
    i = item.get_id(0)
    out[i] = inheriting(a[i]) + accurate(a[i]) + own_flags(a[i])


SIG = ("array(f32,1,C,global)", "array(f32,1,C,global)")


def compiled(fn, **options):
    return kapi.kernel(fn, **options).compile(SIG, ("item", 1))


def headers(kir: str) -> dict:
    """{function name: its header's attributes after `line N`}."""
    return {
        m.group(2): m.group(3).strip()
        for m in re.finditer(r"^(kernel|func) @([\w.]+)\(.*\) -> .* line \d+(.*)\{$", kir, re.M)
    }


# ---- option values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "flags"),
    [
        (None, set()),
        (False, set()),
        (True, {"fast"}),
        ({"nnan", "afn"}, {"nnan", "afn"}),
        (frozenset({"arcp"}), {"arcp"}),
        ({"nsz": True, "ninf": False, "contract": True}, {"nsz", "contract"}),
        (set(), set()),
    ],
)
def test_option_values_as_numba_reads_them(value, flags):
    options = {} if value is None else {"fastmath": value}
    assert kapi.kernel(body, **options).fastmath == frozenset(flags)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ({"nnan", "fsat"}, r"unrecognized fastmath flag 'fsat': the flags are afn, arcp, "),
        ({"x": True, "y": False}, r"unrecognized fastmath flags 'x', 'y'"),
        ("fast", r"fastmath must be a bool, a set or a dict of flag names, not str"),
        (["nnan"], r"fastmath must be a bool, a set or a dict of flag names, not list"),
        (1, r"not int"),
    ],
)
def test_bad_values_are_clear_errors(value, match):
    with pytest.raises(ValueError, match=match):
        kapi.kernel(body, fastmath=value)
    with pytest.raises(ValueError, match=match):
        kapi.device_func(fastmath=value)(lambda x: x)


# ---- KIR, LLVM IR, SPIR-V -------------------------------------------------------------------


def test_kir_attribute_only_with_fastmath():
    assert headers(compiled(body).kir) == {"body": ""}
    assert headers(compiled(body, fastmath=True).kir) == {"body": "fastmath fast"}
    got = headers(compiled(body, fastmath={"nnan", "arcp", "afn"}).kir)
    assert got == {"body": "fastmath afn arcp nnan"}


def test_device_functions_inherit_unless_they_set_their_own():
    """Numba's rule: a callee without the option takes the caller's flags; one that sets it
    (even to False) keeps its own. The same function under two callers' flags is two KIR
    functions."""
    fast = headers(compiled(calls, fastmath=True).kir)
    assert fast == {
        "calls": "fastmath fast",
        "inheriting": "fastmath fast",
        "accurate": "",
        "own_flags": "fastmath nnan",
    }
    plain = headers(compiled(calls).kir)
    assert plain == {"calls": "", "inheriting": "", "accurate": "", "own_flags": "fastmath nnan"}


def test_llvm_flags_and_native_math_only_with_fastmath():
    plain, fast = compiled(body), compiled(body, fastmath=True)
    assert " fast " not in plain.llvm_ir and "native_" not in plain.llvm_ir
    for fn in ("sqrt", "log", "exp", "sin", "cos", "divide"):
        assert f"__spirv_ocl_native_{fn}" in fast.llvm_ir, fn
        assert f"__spirv_ocl_native_{fn}" not in plain.llvm_ir
    assert re.search(r"= f(mul|add) fast float", fast.llvm_ir)
    # nnan alone: the flag on arithmetic, math and division stay accurate
    nnan = compiled(body, fastmath={"nnan"})
    assert re.search(r"= fdiv nnan float", nnan.llvm_ir) and "native_" not in nnan.llvm_ir
    # afn: approximate math, but a correctly rounded division
    afn = compiled(body, fastmath={"afn"})
    assert "native_log" in afn.llvm_ir and "native_divide" not in afn.llvm_ir


def test_spirv_carries_fp_fast_math_mode():
    plain = compiled(body).disassemble()
    assert "FPFastMathMode" not in plain and "native_" not in plain
    fast = compiled(body, fastmath=True).disassemble()
    assert "FPFastMathMode Fast" in fast
    assert "native_log" in fast and "native_sqrt" in fast
    flags = compiled(body, fastmath={"nnan", "ninf"}).disassemble()
    assert "FPFastMathMode NotNaN|NotInf" in flags
    # fastmath=True flushes float32 denormals where a device can (NVIDIA GPUs): a source
    # extension, which SPIR-V 1.0 drivers that do not know it ignore
    assert 'OpSourceExtension "kapi.flush_denormals"' in fast
    assert "flush_denormals" not in plain and "flush_denormals" not in flags


def test_float64_math_stays_accurate_under_afn():
    """The approximate functions are float32's (numba-cuda's rule): float64 math keeps its
    accurate functions under fastmath=True, with the flags on its arithmetic."""
    k = kapi.kernel(body, fastmath=True).compile(
        ("array(f64,1,C,global)", "array(f64,1,C,global)"), ("item", 1)
    )
    assert "native_" not in k.llvm_ir and "fmul fast double" in k.llvm_ir


# ---- results ----------------------------------------------------------------------------------


def _want(h):
    x = h.astype(np.float64)
    return np.sqrt(x) * np.log(x) + np.exp(-x) * np.sin(x) + np.cos(x) / x


@pytest.mark.parametrize("fastmath", [False, True, {"afn"}, {"arcp", "nsz"}])
def test_results_within_tolerance_on_every_device(dev, fastmath):
    """Accurate float32 is within 1e-6 (relative to 1 + |result|); the approximations (PTX
    .approx on NVIDIA GPUs: ~2^-22 in lg2/ex2/sqrt/div, 2^-20.9 absolute in sin/cos on this
    range) within 2e-5."""
    h = np.random.default_rng(4).uniform(0.25, 3.0, 4096).astype(np.float32)
    a = kapi.asarray(h, device=dev)
    out = kapi.empty_like(a)
    kapi.call_kernel(kapi.kernel(body, fastmath=fastmath), kapi.Range(h.size), a, out)
    err = np.max(np.abs(out.asnumpy() - _want(h)) / (1 + np.abs(_want(h))))
    assert err < (2e-5 if fastmath else 1e-6), err


def test_inherited_flags_give_right_results(dev):
    h = np.linspace(0.5, 4.0, 1000).astype(np.float32)
    a = kapi.asarray(h, device=dev)
    out = kapi.empty_like(a)
    kapi.call_kernel(kapi.kernel(calls, fastmath=True), kapi.Range(h.size), a, out)
    x = h.astype(np.float64)
    want = np.log(x) / x + np.sqrt(x) / x + x * x + 1.0
    np.testing.assert_allclose(out.asnumpy(), want, rtol=2e-5)


# ---- KIR checked by the compiler ---------------------------------------------------------------

_KIR = """\
kir 1
kernel @k(%a: array(f32,1,C,global)) -> void file "k.py" line 1 ATTR {
^entry:
  %0 = global_id i64 0        #2
  %1 = aload f32 %a %0        #2
  %2 = math f32 log %1        #2
  %3 = div f32 %2 %1          #2
  astore %a %3 %0             #2
  ret                         #2
}
"""


def test_kir_attribute_is_checked():
    _, ir, _ = _kapi.compile_kir(_KIR.replace("ATTR", "fastmath nnan afn max_registers 64"))
    assert "native_log" in ir and "fdiv nnan afn float" in ir
    _, ir, _ = _kapi.compile_kir(_KIR.replace("ATTR", "fastmath arcp"))
    assert "native_divide" in ir and "native_log" not in ir
    for attr, match in [
        (
            "fastmath",
            r"fastmath takes flags \(fast nnan ninf nsz arcp contract afn reassoc\), not '\{'",
        ),
        ("fastmath fsat", r"fastmath takes flags .*, not 'fsat'"),
        ("fastmath nnan fsat", r"unexpected 'fsat' in function header"),
    ]:
        with pytest.raises(_kapi.CompileError, match=match):
            _kapi.compile_kir(_KIR.replace("ATTR", attr))


# ---- ufuncs --------------------------------------------------------------------------------


def test_vectorize_and_guvectorize_pass_fastmath_to_the_element_function(dev):
    """@kapi.vectorize / @kapi.guvectorize(fastmath=...) (Numba's keyword, accepted before
    and ignored) compile the element function with those flags: a device function of its
    own, called by the ufunc's kernel."""

    @kapi.vectorize(["float32(float32)"], fastmath=True)
    def vlog(x):
        return math.log(x)

    @kapi.guvectorize(["void(float32[:], float32[:])"], "(n)->(n)", fastmath={"afn"})
    def glog(x, out):
        for i in range(x.shape[0]):
            out[i] = math.log(x[i])

    h = np.linspace(0.5, 4.0, 64).astype(np.float32)
    a = kapi.asarray(h, device=dev)
    np.testing.assert_allclose(vlog(a).asnumpy(), np.log(h), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(glog(a).asnumpy(), np.log(h), rtol=2e-5, atol=1e-6)
    kirs = [
        ck.kir for f in (vlog, glog) for k in f._kernels.values() for ck in k.overloads.values()
    ]
    assert any(re.search(r"^func @vlog\(.*fastmath fast \{$", t, re.M) for t in kirs)
    assert any(re.search(r"^func @glog\(.*fastmath afn \{$", t, re.M) for t in kirs)
    with pytest.raises(ValueError, match="unrecognized fastmath flag 'fsat'"):
        kapi.vectorize(["float32(float32)"], fastmath={"fsat"})(lambda x: x)
