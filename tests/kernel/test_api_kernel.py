"""@kapi.kernel / @kapi.device_func: decorator forms, signatures, the dispatch cache, dumps and
the errors users see. The compile stages are replaced by counters here, so these tests pin the
dispatcher's own logic; the end-to-end tests compile for real."""

import numpy as np
import pytest

import kapi
from kapi._kernel import dispatcher as _kernel
from kapi._kernel.types import parse_signature


@pytest.fixture
def fake_compile(monkeypatch):
    calls = []

    class Mod:
        def __init__(self, text):
            self.text = text
            self.entry = "k"

    def pyfront_compile(pyfunc, argtypes, index, boundscheck=False, **options):
        calls.append((pyfunc.__name__, tuple(argtypes), index))
        return Mod(f"kir 1 ; {pyfunc.__name__} {argtypes} {index}")

    monkeypatch.setattr(_kernel, "_pyfront_compile", pyfront_compile)
    monkeypatch.setattr(
        _kernel, "_compile_kir", lambda text, opt: ("k", "llvm:" + text, b"\x03\x02#\x07")
    )
    return calls


def add(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]


def test_bare_decorator_keeps_the_function():
    k = kapi.kernel(add)
    assert isinstance(k, kapi.KernelDispatcher)
    assert k.py_func is add and k.__name__ == "add"


def test_decorator_with_options():
    k = kapi.kernel(opt_level=3)(add)
    assert k.opt_level == 3
    assert kapi.kernel(debug=True)(add).opt_level == 0
    with pytest.raises(ValueError):
        kapi.kernel(opt_level=7)(add)


def test_internal_option_warns():
    with pytest.warns(UserWarning):
        kapi.kernel(_compilation_mode="x")(add)


def test_decorating_a_non_function_is_a_value_error():
    with pytest.raises(ValueError):
        kapi.kernel(42)


def test_calling_a_kernel_says_use_call_kernel():
    k = kapi.kernel(add)
    with pytest.raises(kapi.KernelCallError, match="call_kernel"):
        k(1, 2, 3)
    with pytest.raises(kapi.KernelCallError, match="call_kernel"):
        k[kapi.Range(4)]


def test_dispatch_cache_compiles_once_per_signature(fake_compile):
    k = kapi.kernel(add)
    sig = ("array(f32,1,C,global)",) * 3
    a = k.compile(sig, ("item", 1))
    b = k.compile(sig, ("item", 1))
    assert a is b and len(fake_compile) == 1
    k.compile(("array(f64,1,C,global)",) * 3, ("item", 1))
    assert len(fake_compile) == 2
    assert set(k.inspect_kir()) == {
        "(item(1), array(f32,1,C,global), array(f32,1,C,global), array(f32,1,C,global))",
        "(item(1), array(f64,1,C,global), array(f64,1,C,global), array(f64,1,C,global))",
    }


def test_eager_signatures_compile_and_restrict(fake_compile):
    k = kapi.kernel([("item(1)", "array(f32,1)", "array(f32,1)", "array(f32,1)")])(add)
    assert len(fake_compile) == 1
    assert fake_compile[0][1] == ("array(f32,1,C,global)",) * 3
    with pytest.raises(kapi.InvalidKernelSpecializationError, match="cannot be called"):
        k.compile(("array(f64,1,C,global)",) * 3, ("item", 1))


def test_string_signature(fake_compile):
    kapi.kernel("(item(1), array(float32,1), array(f32,1), array(f32,1,C))")(add)
    assert fake_compile[0][1] == ("array(f32,1,C,global)",) * 3
    assert fake_compile[0][2] == ("item", 1)


def test_signature_arity_checked():
    with pytest.raises(kapi.InvalidKernelSpecializationError, match="parameter"):
        kapi.kernel(("item(1)", "f32"))(add)


def test_inspection_by_signature(fake_compile):
    k = kapi.kernel(add)
    sig = ("item(1)", "array(f32,1)", "array(f32,1)", "array(f32,1)")
    assert k.inspect_kir(sig).startswith("kir 1")
    assert k.inspect_llvm(sig).startswith("llvm:")
    assert isinstance(k.inspect_spirv(sig), bytes)


def test_dump_env_prints_stages(fake_compile, monkeypatch, capsys):
    monkeypatch.setenv("KAPI_DUMP", "kir,llvm")
    k = kapi.kernel(add)
    k.compile(("array(i32,1,C,global)",) * 3, ("item", 1))
    err = capsys.readouterr().err
    assert "---- KIR add(item(1)" in err and "---- LLVM IR add" in err


def test_parse_signature_types():
    idx, types = parse_signature(
        ("nditem(2)", np.float32, int, float, bool, "u8", "array(i64,3,F)")
    )
    assert idx == ("nditem", 2)
    assert types == ("f32", "i64", "f64", "bool", "u8", "array(i64,3,F,global)")
    assert parse_signature(("complex128", complex, "array(c64,1)", "f16"))[1] == (
        "c128",
        "c128",
        "array(c64,1,C,global)",
        "f16",
    )
    with pytest.raises(kapi.InvalidKernelSpecializationError):
        parse_signature(("float128",))
    with pytest.raises(kapi.InvalidKernelSpecializationError, match="first entry"):
        parse_signature(("f32", "item(1)"))


def test_device_func_marks_and_returns_the_function():
    def helper(x):
        return x + 1

    f = kapi.device_func(helper)
    assert f is helper and helper.__kapi_device_func__ is True
    assert f(1) == 2

    @kapi.device_func(("f32",))
    def g(x):
        return x

    assert g.__kapi_device_func__ and g.__kapi_device_signatures__ == [("f32",)]
    with pytest.raises(ValueError):
        kapi.device_func(3)


def test_scalar_aliases():
    assert kapi.int32(3).dtype == np.int32 and kapi.float_ is kapi.float32 == np.float32
    assert kapi.float_.type is np.float32 and np.dtype(kapi.f8) == np.float64


def test_dpjit_of_a_function_without_prange_runs_it():
    f = kapi.dpjit(lambda x: x + 1)  # tests/dpjit/test_dpjit.py covers the prange offload
    assert isinstance(f, kapi.DpjitFunction) and f(2) == 3 and f.kernels == []


def test_kernel_api_namespace_matches_numba_dpex():
    from kapi import kernel_api

    want = {
        "call_kernel",
        "group_barrier",
        "AddressSpace",
        "atomic_fence",
        "AtomicRef",
        "Group",
        "Item",
        "LocalAccessor",
        "MemoryOrder",
        "MemoryScope",
        "NdItem",
        "NdRange",
        "Range",
        "PrivateArray",
    }
    assert want <= set(kernel_api.__all__)
    assert all(hasattr(kernel_api, n) for n in want)
    assert kernel_api.Range is kapi.Range and kernel_api.call_kernel is kapi.call_kernel


def test_top_level_names_match_numba_dpex():
    for n in ("kernel", "device_func", "call_kernel", "call_kernel_async", "Range", "NdRange"):
        assert hasattr(kapi, n)
    for n in ("int32", "int64", "uint32", "uint64", "float32", "float64", "b1", "i4", "f8"):
        assert hasattr(kapi, n)


def test_numba_dpex_signature_types(fake_compile):
    sig = (kapi.ItemType(1), kapi.DpnpNdArray(ndim=1, dtype=kapi.int64, layout="C"), kapi.f4)
    kapi.kernel(sig)(lambda item, a, x: None)
    assert fake_compile[0][1:] == (("array(i64,1,C,global)", "f32"), ("item", 1))
    assert kapi.NdItemType(3) == "nditem(3)"


def test_usm_ndarray_takes_numba_dpex_argument_order_and_builds_signatures(fake_compile):
    # numba-dpex's order is (ndim, layout, dtype): its examples write usm_ndarray(1, "C", int64)
    t = kapi.usm_ndarray(2, "F", np.float32)
    assert t == "array(f32,2,F,global)" and (t.ndim, t.layout, t.dtype) == (2, "F", np.float32)
    assert kapi.USMNdArray(1).dtype == np.float64 and t.usm_type == "device"
    i64 = kapi.usm_ndarray(1, "C", kapi.int64)
    kapi.kernel(kapi.void(kapi.ItemType(1), i64))(lambda item, a: None)
    assert fake_compile[-1][1:] == (("array(i64,1,C,global)",), ("item", 1))
    with pytest.raises(kapi.KernelHasReturnValueError):  # a type called: a signature
        kapi.kernel(i64(kapi.ItemType(1), i64))(lambda item, a: None)
    with pytest.raises(ValueError, match="numba-dpex's order"):
        kapi.USMNdArray(2, np.float32, "F")  # kapi's earlier (ndim, dtype, layout)
    with pytest.raises(TypeError, match="exclusive"):
        kapi.USMNdArray(1, device="cpu", queue=kapi.devices()[0].default_queue)
    with pytest.raises(TypeError):
        kapi.USMNdArray(1, device=0)
