"""print() and assert/raise in kernels, on every device: print's lines (captured at file
descriptor 1), in program order per work-item and after Python's own earlier prints; a failing
assert or raise makes the launch raise at the kernel's file:line with the work-item's id, and
the next launch works.

PYTEST_DONT_REWRITE: the kernels' asserts must stay Python's own (pytest would rewrite them).
"""

import shutil
import subprocess
import tempfile

import numpy as np
import pytest
from kapi_testing import devices_or_skip, line_of
from nvptx_util import finalise

import kapi
import pyfront
from kapi import kernel_api as kapi_api
from pyfront import UnsupportedConstructError

DEVICES = devices_or_skip()
HERE = __file__


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@kapi.kernel
def print_types(item, a, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, flag):
    i = item.get_id(0)
    print("item", i, "a[i] =", a[i], a[i] > 1.5)
    print(i8, u8, i16, u16, i32, u32, i64, u64)
    print(f32, f64, flag, 2.5, True, 7, "100% {braces}")


def test_print_all_types_in_order(dev, capfd):
    a = kapi.asarray(np.array([0.25, 3.0], dtype=np.float32), device=dev)
    args = [np.int8(-8), np.uint8(200), np.int16(-1600), np.uint16(60000)]
    args += [np.int32(-(2**31)), np.uint32(2**32 - 1), np.int64(-(2**63)), np.uint64(2**64 - 1)]
    args += [np.float32(0.1), np.float64(0.1), np.bool_(True)]
    print("python before")
    kapi.call_kernel(print_types, kapi.Range(1), a, *args)
    print("python after")
    out = capfd.readouterr().out.splitlines()
    assert out == [
        "python before",
        "item 0 a[i] = 0.25 False",
        "-8 200 -1600 60000 -2147483648 4294967295 -9223372036854775808 18446744073709551615",
        # floats: %.9g (f32) and %.17g (f64), enough digits to read the value back
        "0.100000001 0.10000000000000001 True 2.5 True 7 100% {braces}",
        "python after",
    ]


@kapi.kernel
def print_lines(item, a):
    i = item.get_id(0)
    print("first", i)
    print("second", i, a[i])


def test_print_lines_of_each_work_item_in_program_order(dev, capfd):
    n = 64
    a = kapi.asarray(np.arange(n, dtype=np.int32), device=dev)
    kapi.call_kernel(print_lines, kapi.Range(n), a)
    out = capfd.readouterr().out.splitlines()
    assert sorted(out) == sorted(
        [f"first {i}" for i in range(n)] + [f"second {i} {i}" for i in range(n)]
    )
    for i in range(n):  # whole lines, each work-item's in program order
        assert out.index(f"first {i}") < out.index(f"second {i} {i}")


@kapi.kernel
def checked(item, a, out):
    i = item.get_id(0)
    assert a[i] >= 0
    assert a[i] < 100, "too big"
    out[i] = a[i] * 2


def test_passing_asserts_do_not_raise(dev):
    a = kapi.asarray(np.arange(8, dtype=np.float32), device=dev)
    out = kapi.asarray(np.zeros(8, dtype=np.float32), device=dev)
    kapi.call_kernel(checked, kapi.Range(8), a, out)
    np.testing.assert_array_equal(out.asnumpy(), np.arange(8) * 2)


def test_failing_assert_raises_with_line_and_id_then_next_launch_works(dev):
    host = np.arange(16, dtype=np.float32)
    host[11] = -1
    a = kapi.asarray(host, device=dev)
    out = kapi.asarray(np.zeros(16, dtype=np.float32), device=dev)
    with pytest.raises(AssertionError) as ei:
        kapi.call_kernel(checked, kapi.Range(16), a, out)
    line = line_of(checked.py_func, "assert a[i] >= 0")
    assert str(ei.value) == f"{HERE}:{line}: in kernel 'checked', work-item (11,): assertion failed"
    assert ei.value.work_item == (11,) and ei.value.kernel_line == line
    host[11] = 500  # the second assert, with its message
    a = kapi.asarray(host, device=dev)
    with pytest.raises(AssertionError, match=r"work-item \(11,\): assertion failed: too big$"):
        kapi.call_kernel(checked, kapi.Range(16), a, out)
    host[11] = 1  # the process and the device stay usable
    kapi.call_kernel(checked, kapi.Range(16), kapi.asarray(host, device=dev), out)
    np.testing.assert_array_equal(out.asnumpy(), host * 2)


@kapi.device_func
def _checked_sqrt(x):
    if x < 0:
        raise ValueError("negative input")
    return x**0.5


@kapi.kernel
def raising_2d(item, a):
    i, j = item.get_id(0), item.get_id(1)
    a[i, j] = _checked_sqrt(a[i, j])
    if a[i, j] > 1e30:
        raise OverflowError


def test_raise_in_device_function_2d(dev):
    host = np.ones((4, 6), dtype=np.float32)
    host[2, 5] = -4
    a = kapi.asarray(host, device=dev)
    with pytest.raises(ValueError) as ei:
        kapi.call_kernel(raising_2d, kapi.Range(4, 6), a)
    line = line_of(_checked_sqrt, "raise ValueError")
    assert str(ei.value) == (
        f"negative input ({HERE}:{line}: in kernel 'raising_2d', work-item (2, 5))"
    )
    host[2, 5] = np.inf
    with pytest.raises(OverflowError, match=r"work-item \(2, 5\)"):
        kapi.call_kernel(raising_2d, kapi.Range(4, 6), kapi.asarray(host, device=dev))


def test_async_launch_raises_at_wait(dev):
    a = kapi.asarray(np.array([1, -1], dtype=np.float32), device=dev)
    out = kapi.asarray(np.zeros(2, dtype=np.float32), device=dev)
    host_ev, ev = kapi.call_kernel_async(checked, kapi.Range(2), (), a, out)
    assert host_ev is ev
    with pytest.raises(AssertionError, match=r"work-item \(1,\)"):
        ev.wait()
    ev.wait()  # reported once


def test_kernels_without_assert_have_no_status_argument():
    sig = ("item(1)", "array(f32,1,C,global)", "array(f32,1,C,global)")

    def plain(item, a, out):
        out[item.get_id(0)] = a[item.get_id(0)]

    k = kapi.kernel(plain)
    assert "kapi.status" not in k.inspect_llvm(sig)
    assert "kapi.status" in checked.inspect_llvm(sig)
    assert checked.overloads and not k.overloads[(("item", 1), sig[1:])].raises


def test_print_and_assert_reach_ptx():
    """The CUDA path without a GPU: vprintf with an 8-byte-slot argument buffer, and the
    status buffer's compare-exchange, in PTX that ptxas accepts (when installed)."""
    sig = "(item(1), array(f32,1,C,global), array(f32,1,C,global))"
    checked.compile(("array(f32,1,C,global)",) * 2, ("item", 1))

    @kapi.kernel
    def both(item, a, out):
        i = item.get_id(0)
        print("i", i, a[i], a[i] > 0)
        assert a[i] >= 0
        out[i] = a[i]

    both.compile(("array(f32,1,C,global)",) * 2, ("item", 1))
    ptx, _ = finalise(both.inspect_spirv(sig))
    assert "call.uni" in ptx and "vprintf" in ptx and "atom.global.cas.b32" in ptx
    _ptxas(ptx)


def _ptxas(ptx):
    """ptxas accepts the PTX for sm_90 (checked where the CUDA toolkit is installed)."""
    if not shutil.which("ptxas"):
        return
    with tempfile.TemporaryDirectory() as d:
        with open(f"{d}/k.ptx", "w") as f:
            f.write(ptx)
        cmd = ["ptxas", "-arch=sm_90", f"{d}/k.ptx", "-o", f"{d}/k.cubin"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


# ---- what stays unsupported, with its line ----


def _err(fn, args=("array(f32,1,C,global)",)):
    with pytest.raises(UnsupportedConstructError) as ei:
        pyfront.compile_kernel(fn, list(args), index=("item", 1))
    return ei.value


def test_print_of_an_array_is_an_error():
    def k(item, x):
        print(x)

    err = _err(k)
    assert err.construct == "print" and err.lineno == line_of(k, "print(")
    assert "array elements" in str(err)


def test_raise_with_run_time_argument_is_an_error():
    def k(item, x):
        if x[0] < 0:
            raise ValueError(x[0])

    err = _err(k)
    assert err.construct == "raise" and err.lineno == line_of(k, "raise ")
    assert "constant arguments" in str(err)


def test_strings_outside_print_and_raise_stay_errors():
    def k(item, x):
        s = "abc"
        x[0] = len(s)

    assert _err(k).construct == "string"


@kapi.kernel
def assert_then_barrier(nd_item, a, out):
    i = nd_item.get_global_id(0)
    assert a[i] >= 0
    kapi_api.group_barrier(nd_item.get_group())
    out[i] = a[i] + 1


def test_assert_before_a_barrier_on_the_host_device(dev):
    """The fiber scheme lets the other work-items of the group pass the barrier. On GPUs a
    work-item leaving before a barrier its group reaches is undefined, as an early return."""
    if not dev.is_cpu:
        pytest.skip("undefined on GPUs: a barrier must be reached by the whole group")
    host = np.arange(32, dtype=np.float32)
    host[5] = -1
    out = kapi.asarray(np.zeros(32, dtype=np.float32), device=dev)
    with pytest.raises(AssertionError, match=r"work-item \(5,\)"):
        kapi.call_kernel(
            assert_then_barrier, kapi.NdRange(32, 8), kapi.asarray(host, device=dev), out
        )
    host[5] = 5
    kapi.call_kernel(assert_then_barrier, kapi.NdRange(32, 8), kapi.asarray(host, device=dev), out)
    np.testing.assert_array_equal(out.asnumpy(), host + 1)


@kapi.kernel
def print_only(item, a):
    i = item.get_id(0)
    if i == 0:
        print("n =", a.shape[0])
    a[i] = a[i] * 2


def test_printing_kernel_ptx_with_coarsening(dev, capfd):
    """A kernel that prints may still get the CUDA driver's coarsened entry: both entries call
    vprintf and assemble."""
    a = kapi.asarray(np.ones(4, dtype=np.float32), device=dev)
    kapi.call_kernel(print_only, kapi.Range(4), a)
    assert capfd.readouterr().out == "n = 4\n"
    ptx, _ = finalise(print_only.inspect_spirv("(item(1), array(f32,1,C,global))"))
    assert ptx.count("vprintf,") >= 1
    _ptxas(ptx)


def test_concurrent_launches_each_see_their_own_failure(dev):
    """Two threads launching one asserting kernel: each launch reads its own status buffer."""
    import threading

    good_host = np.arange(256, dtype=np.float32) % 50
    good = kapi.asarray(good_host, device=dev)
    bad_host = good_host.copy()
    bad_host[200] = -3
    bad = kapi.asarray(bad_host, device=dev)
    results = {}

    def run(name, a):
        out = kapi.asarray(np.zeros(256, dtype=np.float32), device=dev)
        errors = 0
        for _ in range(20):
            try:
                kapi.call_kernel(checked, kapi.Range(256), a, out)
            except AssertionError as e:
                assert e.work_item == (200,)
                errors += 1
        results[name] = errors

    ts = [threading.Thread(target=run, args=(n, a)) for n, a in (("good", good), ("bad", bad))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results == {"good": 0, "bad": 20}


@kapi.kernel
def print_constants(item, a):
    print(np.float32(0.1), 0.1, -3, True, "tab\there", a[0])


def test_print_constants_are_formatted_by_python(dev, capfd):
    a = kapi.asarray(np.array([0.1], dtype=np.float32), device=dev)
    kapi.call_kernel(print_constants, kapi.Range(1), a)
    assert capfd.readouterr().out == "0.1 0.1 -3 True tab\there 0.100000001\n"


@kapi.kernel
def print_keywords(item, a):
    i = item.get_id(0)
    print("a", i, a[i], sep=", ", end=";\n")
    print("no newline", end="")
    print(" then one")


def test_print_sep_and_end(dev, capfd):
    a = kapi.asarray(np.array([7], dtype=np.int64), device=dev)
    kapi.call_kernel(print_keywords, kapi.Range(1), a)
    assert capfd.readouterr().out == "a, 0, 7;\nno newline then one\n"


def test_assert_in_a_dpjit_prange_body(dev):
    @kapi.dpjit
    def double_non_negative(a):
        for i in kapi.prange(a.shape[0]):
            assert a[i] >= 0, "negative"
            a[i] = a[i] * 2
        return a

    host = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(
        double_non_negative(kapi.asarray(host, device=dev)).asnumpy(), host * 2
    )
    host[3] = -1
    with pytest.raises(AssertionError, match=r"__prange0', work-item \(3,\): .*: negative$"):
        double_non_negative(kapi.asarray(host, device=dev))


def test_print_of_more_than_32_values_is_an_error():
    def k(item, x):
        v = x[0]
        print(v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v,
              v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v)  # fmt: skip

    err = _err(k)
    assert err.construct == "print" and "at most 32" in str(err)


@kapi.kernel
def print_star(item, a):
    t = (a[0], item.get_id(0), 3)
    print(*t)


def test_print_spreads_a_tuple(dev, capfd):
    a = kapi.asarray(np.array([1.5], dtype=np.float64), device=dev)
    kapi.call_kernel(print_star, kapi.Range(1), a)
    assert capfd.readouterr().out == "1.5 0 3\n"
