"""@kapi.dpjit: prange loops outlined into kernels and launched on every device, written the
numba-dpex way (only the imports differ), and the constructs it refuses at their file:line."""

import importlib
import math
import sys
import threading
import warnings

import numba
import numpy as np
import pytest
from kapi_testing import devices_or_skip, line_of, needs_cpu_device

import kapi
import kapi as dpex
from kapi import prange

DEVICES = devices_or_skip()
HERE = __file__


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def fp(dev):
    """The float dtype of a device (float64 where it has fp64)."""
    return np.float64 if dev.has_aspect_fp64 else np.float32


@dpex.device_func
def hypot_sq(x, y):
    return x * x + y * y


# -- offloaded loops -------------------------------------------------------------------------


@dpex.dpjit
def vector_add(a, b):
    c = dpex.empty_like(a)
    for i in prange(a.shape[0]):
        c[i] = a[i] + b[i]
    return c


def test_vector_add_output_allocated_inside(dev):
    ha, hb = np.arange(1000, dtype=np.float32), np.arange(1000, dtype=np.float32) % 7
    a, b = kapi.asarray(ha, device=dev), kapi.asarray(hb, device=dev)
    c = vector_add(a, b)
    assert isinstance(c, kapi.Array) and c.device == dev
    np.testing.assert_array_equal(c.asnumpy(), ha + hb)
    (k,) = vector_add.kernels  # one prange loop, one kernel, compiled (not run in CPython)
    assert k.signatures and "array(f32,1" in k.signatures[0]


@dpex.dpjit
def strided_fill(out, start, stop, step, v):
    for i in prange(start, stop, step):
        out[i] = v + i
    for i in dpex.prange(stop):  # the module attribute spelling; `stop` only
        out[i] += 1


@pytest.mark.parametrize("bounds", [(0, 20, 1), (3, 20, 4), (19, 2, -3), (5, 5, 1), (7, 3, 1)])
def test_prange_start_stop_step(dev, bounds):
    start, stop, step = bounds
    out = kapi.zeros(20, dtype=np.int64, device=dev)
    strided_fill(out, start, stop, step, 100)
    want = np.zeros(20, np.int64)
    for i in range(start, stop, step):
        want[i] = 100 + i
    want[:stop] += 1
    np.testing.assert_array_equal(out.asnumpy(), want)


def test_unit_bounds_index_without_wraparound_and_negative_starts_wrap(dev):
    # prange(n) and prange(a, b) with a >= 0 index as a hand-written kernel does (the index
    # is known >= 0: no negative-index wraparound, so the CPU vectorises it); a negative
    # start takes the general kernel, where out[-3] is out[n - 3] as in Python; each form
    # is its own kernel
    @dpex.dpjit
    def shifted(out, lo, hi):
        for i in prange(lo, hi):
            out[i] = i

    out = kapi.zeros(10, dtype=np.int64, device=dev)
    shifted(out, 2, 6)
    ((sig, kir),) = shifted.kernels[0].inspect_kir().items()
    assert "wrapidx" not in kir and "global_id" in kir
    shifted(out, -3, 1)
    assert len(shifted.kernels) == 2  # the general kernel, beside the first
    want = np.zeros(10, np.int64)
    want[2:6] = range(2, 6)
    want[[7, 8, 9, 0]] = [-3, -2, -1, 0]
    np.testing.assert_array_equal(out.asnumpy(), want)
    assert "wrapidx" in shifted.kernels[1].inspect_kir()[sig]
    shifted(out, 0, 10)  # prange(n)'s form: the index is the id itself
    (kir,) = shifted.kernels[2].inspect_kir().values()
    assert "wrapidx" not in kir and " and " not in kir and " mul " not in kir
    np.testing.assert_array_equal(out.asnumpy(), np.arange(10))


def test_prange_two_arguments_and_zero_step(dev):
    @dpex.dpjit
    def two(out, lo, hi, step):
        for i in prange(lo, hi):
            out[i] = i * 2
        for i in prange(0, 1, step):
            out[i] = -1

    out = kapi.zeros(8, dtype=np.int32, device=dev)
    two(out, 2, 6, 1)
    np.testing.assert_array_equal(out.asnumpy(), [-1, 0, 4, 6, 8, 10, 0, 0])
    with pytest.raises(ValueError, match="must not be zero"):
        two(out, 2, 6, 0)


@dpex.dpjit
def matrix_affine(a, s, t):
    out = dpex.empty_like(a)
    for i in prange(a.shape[0]):
        for j in prange(a.shape[1]):
            out[i, j] = a[i, j] * s + t[j]
    return out


def test_nested_prange_2d(dev):
    ha = np.arange(7 * 33, dtype=np.float32).reshape(7, 33)
    ht = np.arange(33, dtype=np.float32)
    a, t = kapi.asarray(ha, device=dev), kapi.asarray(ht, device=dev)
    out = matrix_affine(a, np.float32(3), t)
    np.testing.assert_array_equal(out.asnumpy(), ha * 3 + ht)
    # one 2-D kernel (not a 1-D kernel with a loop): its index space is item(2)
    (k,) = matrix_affine.kernels
    assert k.signatures[0].startswith("(item(2)")


@dpex.dpjit
def cube_index(out):
    for i in prange(1, out.shape[0]):
        for j in prange(out.shape[1]):
            for k in prange(0, out.shape[2], 2):
                out[i, j, k] = i * 10000 + j * 100 + k


def test_nested_prange_3d(dev):
    out = kapi.zeros((4, 5, 6), dtype=np.int32, device=dev)
    cube_index(out)
    want = np.zeros((4, 5, 6), np.int32)
    i, j, k = np.meshgrid(np.arange(1, 4), np.arange(5), np.arange(0, 6, 2), indexing="ij")
    want[i, j, k] = i * 10000 + j * 100 + k
    np.testing.assert_array_equal(out.asnumpy(), want)
    assert cube_index.kernels[0].signatures[0].startswith("(item(3)")


@dpex.dpjit
def row_sums(a):
    out = dpex.zeros(a.shape[0], dtype=a.dtype, device=a.device)
    for i in prange(a.shape[0]):
        acc = 0
        for j in range(a.shape[1]):
            acc += a[i, j]
        if i > 0:
            for _j in prange(i):  # not immediately nested: a sequential loop in the kernel
                acc += 1000
        out[i] = acc
    return out


def test_sequential_inner_loops(dev):
    ha = np.arange(6 * 9, dtype=np.int32).reshape(6, 9)
    out = row_sums(kapi.asarray(ha, device=dev))
    np.testing.assert_array_equal(out.asnumpy(), ha.sum(axis=1) + 1000 * np.arange(6))
    assert row_sums.kernels[0].signatures[0].startswith("(item(1)")


@dpex.dpjit
def triangle(out):
    for i in prange(out.shape[0]):
        for j in prange(i + 1):  # bounds use the outer variable: sequential inside the kernel
            out[i, j] = 1


def test_non_rectangular_nest_stays_1d(dev):
    out = kapi.zeros((5, 5), dtype=np.int32, device=dev)
    triangle(out)
    np.testing.assert_array_equal(out.asnumpy(), np.tril(np.ones((5, 5), np.int32)))
    assert triangle.kernels[0].signatures[0].startswith("(item(1)")


@dpex.dpjit
def sums(a, b):
    total = 0.0
    count = 0
    neg = np.int32(0)
    for i in prange(a.shape[0]):
        total += a[i] * 2
        if b[i] % 3 == 0:
            count += 1
        neg -= b[i]
    return total, count, neg


def test_reductions_float_and_int(dev):
    n = 1000
    ha = (np.arange(n) % 17).astype(fp(dev))  # integers stored as floats: exact in any order
    hb = np.arange(n, dtype=np.int32)
    total, count, neg = sums(kapi.asarray(ha, device=dev), kapi.asarray(hb, device=dev))
    assert type(total) is float and total == float((ha * 2).sum())
    assert type(count) is int and count == int((hb % 3 == 0).sum())
    # the host code is compiled by Numba, which returns an int32 as a Python int (as njit)
    assert type(neg) is int and neg == -hb.sum(dtype=np.int64)


@dpex.dpjit
def dot_from(a, b, start):
    s = start
    for i in prange(a.shape[0]):
        s += a[i] * b[i]
    return s


def test_reduction_adds_to_host_value_and_empty_range(dev):
    rng = np.random.default_rng(3)
    ha, hb = rng.random(777).astype(np.float32), rng.random(777).astype(np.float32)
    s = dot_from(kapi.asarray(ha, device=dev), kapi.asarray(hb, device=dev), np.float32(5))
    assert type(s) is float  # a float32 accumulator, returned by Numba as a Python float
    np.testing.assert_allclose(s, 5 + np.dot(ha.astype(np.float64), hb), rtol=1e-5)
    empty = kapi.empty(0, dtype=np.float32, device=dev)
    assert dot_from(empty, empty, 2.5) == 2.5  # zero iterations launch nothing


@dpex.dpjit
def scale_shift(x, scale, shift, out):
    n = x.shape[0]
    half = n // 2
    for i in prange(n):
        y = x[i] * scale + shift[i % 4]
        out[i] = math.sqrt(hypot_sq(y, 0.0)) + (1 if i < half else 0)


def test_scalar_and_array_free_variables_device_func_and_math(dev):
    hx = np.arange(-10, 10, dtype=np.float32)
    hs = np.array([0, 1, 2, 3], np.float32)
    x, shift = kapi.asarray(hx, device=dev), kapi.asarray(hs, device=dev)
    out = kapi.empty_like(x)
    scale_shift(x, np.float32(2), shift, out)
    y = hx * 2 + hs[np.arange(20) % 4]
    want = np.abs(y) + (np.arange(20) < 10)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


def test_closure_values_and_continue(dev):
    offset = 7

    @dpex.dpjit
    def odd_plus(out):
        for i in prange(out.shape[0]):
            if i % 2 == 0:
                continue
            out[i] = i + offset

    out = kapi.zeros(9, dtype=np.int64, device=dev)
    odd_plus(out)
    want = np.where(np.arange(9) % 2 == 1, np.arange(9) + 7, 0)
    np.testing.assert_array_equal(out.asnumpy(), want)


def _two_steps():
    class Settings:
        kernels = 2

    settings = Settings()

    def two_steps(a):
        b = dpex.empty_like(a)
        for i in prange(a.shape[0]):
            b[i] = a[i] + 1
        m = float(b.asnumpy().max())
        for i in prange(a.shape[0]):
            b[i] = b[i] / m
        return b, settings.kernels  # a Python object: Numba cannot type it

    return two_steps


def test_host_code_numba_cannot_compile_raises_at_the_functions_line(dev):
    two_steps = dpex.dpjit(_two_steps())
    a = kapi.asarray(np.arange(8, dtype=np.float32), device=dev)
    line = line_of(two_steps.py_func, "settings.kernels")
    with pytest.raises(kapi.HostCompileError) as ei:
        two_steps(a)
    assert isinstance(ei.value, kapi.KapiError) and isinstance(ei.value, TypeError)
    # numba-dpex raised Numba's TypingError: `except TypingError` in its tests and code holds
    assert isinstance(ei.value, numba.core.errors.TypingError)
    msg = str(ei.value)
    assert msg.startswith(f"{HERE}:{line_of(two_steps.py_func, 'def two_steps')}: dpjit: Numba")
    assert "Untyped global name 'settings'" in msg and f"line {line}" in msg
    assert "fallback=True" in msg
    assert two_steps._stats.launches == 0  # refused before anything ran
    with pytest.raises(kapi.HostCompileError):  # each call, from the recorded reason
        two_steps(a)
    assert list(two_steps.python_signatures) == [(two_steps.host.typeof_pyval(a),)]
    assert two_steps.host.signatures == []


def test_host_code_numba_cannot_compile_runs_in_python_with_fallback(dev):
    two_steps = dpex.dpjit(fallback=True)(_two_steps())
    a = kapi.asarray(np.arange(8, dtype=np.float32), device=dev)
    line = line_of(two_steps.py_func, "settings.kernels")
    with pytest.warns(kapi.HostFallbackWarning) as rec:
        b, nkernels = two_steps(a)
    (w,) = rec
    msg = str(w.message)
    assert msg.startswith(f"{HERE}:{line_of(two_steps.py_func, 'def two_steps')}: dpjit: Numba")
    assert "Untyped global name 'settings'" in msg and f"line {line}" in msg
    assert "runs in CPython" in msg
    np.testing.assert_allclose(b.asnumpy(), (np.arange(8) + 1) / 8.0, rtol=1e-6)
    assert nkernels == 2
    with pytest.warns(kapi.HostFallbackWarning):  # each call (filters show it once a site)
        b, _ = two_steps(a)
    assert list(two_steps.python_signatures) == [(two_steps.host.typeof_pyval(a),)]
    assert two_steps.host.signatures == []
    np.testing.assert_allclose(b.asnumpy(), (np.arange(8) + 1) / 8.0, rtol=1e-6)


def test_fallback_option_takes_a_bool():
    with pytest.raises(TypeError, match="fallback= takes True or False"):
        dpex.dpjit(fallback="python")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fallback is kapi's option, not an ignored one
        assert dpex.dpjit(fallback=True)(lambda: 1).fallback is True


def test_recompiles_per_dtype(dev):
    for dt in (np.int32, np.float32, np.int64):
        h = np.arange(50).astype(dt)
        c = vector_add(kapi.asarray(h, device=dev), kapi.asarray(h, device=dev))
        assert c.dtype == dt
        np.testing.assert_array_equal(c.asnumpy(), h + h)
    sigs = vector_add.kernels[0].signatures
    assert any("array(i32" in s for s in sigs) and any("array(i64" in s for s in sigs)


def test_numpy_arrays_run_on_the_cpu_device():
    if not kapi.devices("cpu"):
        pytest.skip("no CPU device")
    h = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)

    @dpex.dpjit
    def twice(a, b):
        s = 0.0
        for i in prange(a.shape[0]):
            b[i] = a[i] * 2
            s += a[i]
        return s

    assert twice(h, out) == float(h.sum())
    np.testing.assert_array_equal(out, h * 2)


def test_numba_prange_spelling(dev):
    numba = pytest.importorskip("numba")

    @dpex.dpjit
    def fill(out):
        for i in numba.prange(out.shape[0]):
            out[i] = i * 3

    out = kapi.zeros(10, dtype=np.int32, device=dev)
    fill(out)
    np.testing.assert_array_equal(out.asnumpy(), np.arange(10) * 3)
    assert len(fill.kernels) == 1


def test_plain_range_is_not_offloaded_and_prange_is_range():
    @dpex.dpjit
    def host_loop(xs):
        t = 0
        for i in range(len(xs)):
            t = t + xs[i]
        return t

    assert host_loop((1, 2, 3)) == 6 and host_loop.kernels == []
    assert list(prange(2, 8, 3)) == [2, 5]


# -- options ---------------------------------------------------------------------------------


def test_options_accepted_with_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @dpex.dpjit(nopython=True, parallel=True)
        def quiet(x):
            return x + 1

    assert quiet(1) == 2

    @dpex.dpjit()
    def empty_parens(out):
        for i in prange(out.shape[0]):
            out[i] = 5

    out = kapi.zeros(3, dtype=np.int32)
    empty_parens(out)
    assert out.asnumpy().tolist() == [5, 5, 5] and len(empty_parens.kernels) == 1
    with pytest.warns(UserWarning, match="forceobj"):

        @dpex.dpjit(forceobj=True)
        def loud(x):
            return x + 2

    assert loud(1) == 3 and loud.__name__ == "loud"


def _kernel_kirs(fn):
    return [ck.kir for k in fn.kernels for ck in k.overloads.values()]


@pytest.mark.parametrize(("value", "flags"), [(True, "fast"), ({"afn", "nnan"}, "afn nnan")])
def test_fastmath_reaches_the_prange_kernels_and_the_host(dev, value, flags):
    t = fp(dev)

    @dpex.dpjit(fastmath=value)
    def fast_sqrt(a, out):
        s = math.sqrt(a[0])  # host code: Numba compiles it with the same option
        for i in prange(a.shape[0]):
            out[i] = math.sqrt(a[i]) + s

    @dpex.dpjit
    def plain_sqrt(a, out):
        for i in prange(a.shape[0]):
            out[i] = math.sqrt(a[i])

    a_np = np.linspace(1, 100, 1000).astype(t)
    a = kapi.asarray(a_np, device=dev)
    out = kapi.empty(1000, dtype=t, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fastmath is honoured, so not warned about
        fast_sqrt(a, out)
    tol = 1e-6 if t == np.float32 else 1e-12
    np.testing.assert_allclose(out.asnumpy(), np.sqrt(a_np) + np.sqrt(a_np[0]), rtol=tol)
    plain_sqrt(a, out)
    kirs, plain = _kernel_kirs(fast_sqrt), _kernel_kirs(plain_sqrt)
    assert kirs and all(f"fastmath {flags} {{" in k for k in kirs)
    assert plain and not any("fastmath" in k for k in plain)
    assert fast_sqrt.host.targetoptions["fastmath"] == value


def test_fastmath_bad_flag_is_refused_at_decoration():
    with pytest.raises(ValueError, match="unrecognized fastmath flag 'quick'"):

        @dpex.dpjit(fastmath={"quick"})
        def nope(a):
            for i in prange(a.shape[0]):
                a[i] = 0


# -- refused constructs, at their file:line --------------------------------------------------


def refused(fn, text, match, *args, cls=kapi.UnsupportedPrangeError):
    with pytest.raises(cls, match=match) as ei:
        fn(*args)
    assert f"{HERE}:{line_of(fn.py_func, text)}:" in str(ei.value)
    return ei.value


def test_last_value_rules_are_enforced():
    @dpex.dpjit
    def used_after(a):
        for i in prange(a.shape[0]):
            t = a[i]
        return t

    refused(
        used_after, "t = a[i]", "`t` is read after the prange loop but has no value", kapi.zeros(4)
    )

    @dpex.dpjit
    def conditional(a):
        t = 0.0
        for i in prange(a.shape[0]):
            if a[i] > 0:
                t = a[i]
        return t

    refused(conditional, "t = a[i]", "needs an unconditional `t = ...`", kapi.zeros(4))

    @dpex.dpjit
    def skipped(a):
        t = 0.0
        for i in prange(a.shape[0]):
            if i == 2:
                continue
            t = a[i]
        return t

    refused(skipped, "t = a[i]", "before any `continue`", kapi.zeros(4))

    @dpex.dpjit
    def reads_first(a):
        t = 1.0
        for i in prange(a.shape[0]):
            a[i] = t
            t = 2.0
        a[0] = 0

    refused(reads_first, "t = 2.0", "may read `t` before assigning it", kapi.zeros(4))

    @dpex.dpjit
    def tuple_store(a):
        t = 1.0
        for i in prange(a.shape[0]):
            t = a[i]
            t, u = a[i], 2
            a[i] = u
        return t

    refused(tuple_store, "t, u = a[i], 2", "may assign it only with `t = ...`", kapi.zeros(4))

    @dpex.dpjit
    def not_a_number(a):
        t = "x"
        for i in prange(a.shape[0]):
            t = a[i]
        return t

    with pytest.raises(TypeError, match="`t` is read after the prange loop.*holds str"):
        not_a_number(kapi.zeros(4))


def test_nonlocal_assignment_is_refused():
    count = 0

    @dpex.dpjit
    def assigns_nonlocal(a):
        nonlocal count
        for i in prange(a.shape[0]):
            count = i

    refused(assigns_nonlocal, "count = i", "assigns `count`, a global, nonlocal", kapi.zeros(4))
    assert issubclass(kapi.UnsupportedPrangeError, NotImplementedError)
    assert issubclass(kapi.UnsupportedPrangeError, kapi.KapiError)


def test_break_return_yield_else_are_refused():
    @dpex.dpjit
    def with_break(a):
        for i in prange(a.shape[0]):
            if i > 2:
                break
            a[i] = 1

    refused(with_break, " break", "`break`", kapi.zeros(4))

    @dpex.dpjit
    def with_return(a):
        for i in prange(a.shape[0]):
            return i

    refused(with_return, "return i", "`return`", kapi.zeros(4))

    @dpex.dpjit
    def with_yield(a):
        for i in prange(a.shape[0]):
            yield i * 2

    refused(with_yield, "yield i * 2", "`yield`", kapi.zeros(4))

    @dpex.dpjit
    def with_else(a):
        for i in prange(a.shape[0]):
            a[i] = 1
        else:
            a[0] = 2

    refused(with_else, "for i in prange", "`else:`", kapi.zeros(4))


def test_break_of_an_inner_loop_is_allowed(dev):
    @dpex.dpjit
    def first_big(a, out):
        for i in prange(a.shape[0]):
            out[i] = -1
            for j in range(a.shape[1]):
                if a[i, j] > 5:
                    out[i] = j
                    break

    ha = np.array([[1, 9, 9], [1, 2, 3], [7, 0, 8]], np.int32)
    out = kapi.zeros(3, dtype=np.int32, device=dev)
    first_big(kapi.asarray(ha, device=dev), out)
    np.testing.assert_array_equal(out.asnumpy(), [1, -1, 0])


def test_unsupported_reductions_are_refused():
    @dpex.dpjit
    def floordiv(a):
        p = 1.0
        for i in prange(a.shape[0]):
            p //= a[i]
        return p

    refused(
        floordiv, "p //= a[i]", r"`p //= ...` is not supported; prange reductions", kapi.ones(4)
    )

    @dpex.dpjit
    def int_quot(a):
        q = 1
        for i in prange(a.shape[0]):
            q /= a[i]
        return q

    with pytest.raises(TypeError, match=r"`q` holds an integer; a `/=` reduction needs a float"):
        int_quot(kapi.ones(4))

    @dpex.dpjit
    def mixed(a):
        p = 1.0
        for i in prange(a.shape[0]):
            p *= a[i]
            p += 1.0
        return p

    refused(mixed, "p += 1.0", r"different operators.*ADD, MUL", kapi.ones(4))

    @dpex.dpjit
    def float_and(a):
        m = 0.0
        for i in prange(a.shape[0]):
            m &= a[i]
        return m

    with pytest.raises(TypeError, match=r"`m` is a float; `&`, `\|` and `\^` reductions"):
        float_and(kapi.ones(4, dtype=np.int64))


def test_reduction_variable_read_in_body_is_refused():
    @dpex.dpjit
    def peek(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += a[i]
            a[i] = s

    refused(peek, "a[i] = s", "reduction variable", kapi.ones(4))


def test_source_not_available():
    ns = {"dpex": dpex, "prange": prange}
    exec(
        compile("def nosrc(a):\n    for i in prange(3):\n        a[i] = 1\n", "<gen>", "exec"),
        ns,
    )
    f = dpex.dpjit(ns["nosrc"])
    with pytest.raises(NotImplementedError, match=r"<gen>:1: dpjit needs the source"):
        f(kapi.zeros(3))


def test_kernel_compile_error_names_user_line():
    @dpex.dpjit
    def bad(a):
        for i in prange(a.shape[0]):
            a[i] = [1.0][0]

    with pytest.raises(kapi.KapiError) as ei:
        bad(kapi.zeros(3, dtype=np.float32))
    assert f"{HERE}:{line_of(bad.py_func, '[1.0][0]')}" in str(ei.value)


# -- reductions against Numba's njit(parallel=True) ------------------------------------------
# Each function is written once with numba.prange and run both by Numba on NumPy arrays and by
# kapi.dpjit on each device's arrays.


def reduce_all(a, b):
    s = 0.0
    d = np.float32(100)
    p = 1.0
    q = 1e6
    lo = np.inf
    hi = -np.inf
    for i in numba.prange(a.shape[0]):
        s += a[i] * 2
        d -= b[i]
        p *= 1.0 + a[i] * 1e-3
        q /= 1.0 + b[i] * 1e-4
        lo = min(lo, a[i])
        hi = max(a[i] - b[i], hi)
    return s, d, p, q, lo, hi


def reduce_ints(x):
    s = 5
    m = 3
    lo = 1 << 40
    hi = np.int32(-(1 << 31))
    for i in numba.prange(x.shape[0]):
        v = x[i]
        s += v
        m = m * ((v % 3) + 1)  # wraps in int64 on both sides
        lo = min(v, lo)
        hi = max(hi, v)
    return s, m, lo, hi


def reduce_bits(x):
    # Numba's parfors have no bitwise reductions: compared with the sequential run
    band = -1
    bor = np.uint16(0)
    bxor = np.int32(7)
    for i in numba.prange(x.shape[0]):
        band &= x[i] | 1024
        bor |= np.uint16(x[i])
        bxor ^= np.int32(x[i] * 7)
    return band, bor, bxor


def reduce_2d(a):
    s = 0.0
    hi = -1.0
    for i in numba.prange(a.shape[0]):
        for j in numba.prange(a.shape[1]):
            if a[i, j] < 0.1:
                continue
            s = s + a[i, j] * (i + 1)
            hi = max(hi, a[i, j] * j)
    return s, hi


def reduce_span(a, start, stop):
    s = 0
    for i in numba.prange(start, stop):
        s += a[i] * i
    return s


def reduce_strided(a, start, stop):
    # Numba's prange takes step 1 only: compared with the sequential run
    t = 0
    for i in numba.prange(stop - 1, start - 1, -3):
        t = max(t, a[i] * 1000 + i)
    return t


def _njit(fn):
    return numba.njit(parallel=True)(fn)


def _both(fn, host_args, dev):
    want = _njit(fn)(*host_args)
    args = [kapi.asarray(a, device=dev) if isinstance(a, np.ndarray) else a for a in host_args]
    return want, dpex.dpjit(fn)(*args)


def test_reductions_every_operator_floats_vs_numba(dev):
    rng = np.random.default_rng(11)
    n = 100_003  # several groups and a grid-stride loop over them, a ragged last group
    a = rng.integers(-50, 50, n).astype(fp(dev))  # integer values: sums are exact in any order
    b = rng.integers(0, 9, n).astype(np.float32)
    want, got = _both(reduce_all, (a, b), dev)
    assert type(got[0]) is float and got[0] == want[0]
    assert type(got[1]) is float and got[1] == want[1]  # float32 d, boxed as by Numba
    np.testing.assert_allclose(got[2], want[2], rtol=1e-9 if dev.has_aspect_fp64 else 1e-4)
    np.testing.assert_allclose(got[3], want[3], rtol=1e-9 if dev.has_aspect_fp64 else 1e-4)
    assert got[4:] == want[4:]


def test_reductions_ints_vs_numba(dev):
    x = np.random.default_rng(12).integers(0, 60000, 50_000).astype(np.int64)
    want, got = _both(reduce_ints, (x,), dev)
    assert [type(g) for g in got] == [int, int, int, int] == [type(w) for w in want]
    assert [int(g) for g in got] == [int(w) for w in want]


def test_bitwise_reductions_vs_sequential(dev):
    x = np.random.default_rng(14).integers(0, 60000, 30_000).astype(np.int64)
    want = reduce_bits(x)  # outside a jit, numba.prange is range: the sequential loop
    got = dpex.dpjit(reduce_bits)(kapi.asarray(x, device=dev))
    assert [type(g) for g in got] == [int, int, int]  # Numba boxes every integer as int
    assert [int(g) for g in got] == [int(w) for w in want]
    assert got[0] != -1 and got[1] != 0  # the values do combine


def test_reduction_2d_nest_continue_and_assign_form_vs_numba(dev):
    a = np.random.default_rng(13).random((37, 300)).astype(fp(dev))
    want, got = _both(reduce_2d, (a,), dev)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    assert got[1] == want[1]
    assert got[1] != -1.0  # the loop did reduce


@pytest.mark.parametrize("bounds", [(0, 1000), (17, 996), (4, 4)])
def test_reduction_bounds_and_empty_vs_numba(dev, bounds):
    a = np.arange(1000, dtype=np.int32)
    want, got = _both(reduce_span, (a, *bounds), dev)
    assert got == want
    got = dpex.dpjit(reduce_strided)(kapi.asarray(a, device=dev), *bounds)
    assert got == reduce_strided(a, *bounds)


def test_reduction_is_a_group_tree_not_atomics(dev):
    @dpex.dpjit
    def three(a, b):
        s, c, m = 0.0, 0, np.int32(0)
        for i in prange(a.shape[0]):
            s += a[i]
            c += 1
            m = max(m, b[i])
        return s, c, m

    n = 3000
    got = three(
        kapi.ones(n, dtype=fp(dev), device=dev),
        kapi.asarray(np.arange(n, dtype=np.int32), device=dev),
    )
    assert got == (float(n), n, n - 1)
    ((sig, kir),) = three.kernels[0].inspect_kir().items()
    assert "atomic" not in kir
    if dev.is_cpu:  # blocks of iterations, one partial per work-item: no barrier, no tree
        assert sig.startswith("(item(1)")
        assert "group_reduce" not in kir and "barrier" not in kir
    else:  # an nd-range: work-groups combine the values
        assert sig.startswith("(nditem(1)")
        assert "group_reduce i64 add work_group" in kir
        assert "group_reduce i32 max work_group" in kir


# -- private variables and last values ----------------------------------------------------------


def privates(a, out):
    t = 0.5  # assigned in the body too, never read after the loop: private to each iteration
    c = 3
    for i in numba.prange(a.shape[0]):
        t = a[i] * c
        if t > 10:
            t = 10.0
        out[i] = t
    t = -1.0  # assigned again, not read
    return c


def test_private_variables_vs_numba(dev):
    a = np.arange(40, dtype=fp(dev)) * 0.75
    out_n = np.zeros_like(a)
    want = _njit(privates)(a, out_n)
    out = kapi.zeros(40, dtype=fp(dev), device=dev)
    f = dpex.dpjit(privates)
    got = f(kapi.asarray(a, device=dev), out)
    assert got == want == 3
    np.testing.assert_array_equal(out.asnumpy(), out_n)
    # t is the kernel's own variable (not an argument), the loop a plain Range kernel
    (sig,) = f.kernels[0].signatures
    arr = f"array({'f64' if dev.has_aspect_fp64 else 'f32'},1,C,global)"
    assert sig == f"(item(1), {arr}, i64, {arr}, i64, i64)"  # a, c, out, start, step


def loop_var_last(a, n):
    for i in numba.prange(n):
        a[i] = 1
    return i  # noqa: B023


def test_loop_variable_last_value_vs_sequential(dev):
    # Numba leaves the index of whichever iteration a thread ran last (3 or 6 here, with a
    # NumbaParallelSafetyWarning); kapi leaves Python's: the last index, one of Numba's answers
    want = loop_var_last(np.zeros(10, np.int64), 7)
    got = dpex.dpjit(loop_var_last)(kapi.zeros(10, dtype=np.int64, device=dev), 7)
    assert got == want == 6

    @dpex.dpjit
    def nest(a, n, m, i, j):
        for i in prange(n):
            for j in prange(2, m, 3):
                a[i, j] = 1
        return i, j

    b = kapi.zeros((4, 9), dtype=np.int32, device=dev)
    assert nest(b, 4, 9, -5, -7) == (3, 8)
    # a loop that runs no iteration leaves its variable as it was (per loop of the nest)
    assert nest(b, 4, 2, -5, -7) == (3, -7)
    assert nest(b, 0, 9, -5, -7) == (-5, -7)


def last_values(a, b):
    x = 0.0
    k = np.int32(-1)
    s = 0.0
    for i in numba.prange(a.shape[0]):
        x = a[i] * 2
        k = np.int32(i)
        k += 1
        s += a[i]
        if x > 5:
            x = x + b[i]
        b[i] = x
    return x, k, s


def test_last_values_with_reductions_vs_sequential(dev):
    # Numba leaves the value of some iteration (NumbaParallelSafetyWarning, its choice varies
    # with the threads); kapi leaves the sequentially last one, one of Numba's answers
    n = 70_001
    a = np.linspace(0, 9, n).astype(fp(dev))
    hb = np.zeros(n, fp(dev))
    want = last_values(a, hb.copy())  # numba.prange is range outside a jit
    got = dpex.dpjit(last_values)(kapi.asarray(a, device=dev), kapi.asarray(hb, device=dev))
    assert type(got[0]) is float and type(got[1]) is int
    assert got[:2] == want[:2] and got[1] == n
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5)
    empty = kapi.empty(0, dtype=fp(dev), device=dev)
    assert dpex.dpjit(last_values)(empty, empty) == (0.0, -1, 0.0)  # values from before


@pytest.mark.parametrize("shape", ["tree", "blocks"])
def test_both_reduction_shapes_on_the_cpu_device(shape, monkeypatch):
    # the CPU device runs blocks by default and GPUs the tree; each shape runs on the CPU
    # device too (KAPI_DPJIT_REDUCE), where both are checked against Numba / the sequential loop
    if not kapi.devices("cpu"):
        pytest.skip("no CPU device")
    monkeypatch.setenv("KAPI_DPJIT_REDUCE", shape)
    rng = np.random.default_rng(21)
    a = rng.integers(-50, 50, 100_003).astype(np.float64)
    b = rng.integers(0, 9, 100_003).astype(np.float32)
    f = dpex.dpjit(reduce_all)
    assert f(a, b)[:2] == _njit(reduce_all)(a, b)[:2]
    assert f(a[:5], b[:5])[4:] == _njit(reduce_all)(a[:5], b[:5])[4:]  # fewer than a block
    sig = f.kernels[0].signatures[0]
    assert sig.startswith("(nditem(1)" if shape == "tree" else "(item(1)")
    x = np.arange(1000, dtype=np.int32)
    for bounds in [(0, 1000), (17, 996), (999, 1000), (4, 4)]:
        assert dpex.dpjit(reduce_span)(x, *bounds) == _njit(reduce_span)(x, *bounds)
        assert dpex.dpjit(reduce_strided)(x, *bounds) == reduce_strided(x, *bounds)
    m = rng.random((37, 300))
    want, got = _njit(reduce_2d)(m), dpex.dpjit(reduce_2d)(m)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    assert got[1] == want[1]
    c = np.linspace(0, 9, 70_001)
    got, want = dpex.dpjit(last_values)(c, c.copy()), last_values(c, c.copy())
    assert got[:2] == want[:2]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)
    monkeypatch.setenv("KAPI_DPJIT_REDUCE", "atomics")
    with pytest.raises(ValueError, match="KAPI_DPJIT_REDUCE must be 'tree' or 'blocks'"):
        dpex.dpjit(reduce_span)(x, 0, 10)


@pytest.mark.parametrize("which", ["reduce_all", "reduce_bits", "last_values"])
def test_reduction_kernel_finalises_for_cuda(which, monkeypatch):
    # the CUDA driver's PTX of a reduction / last-value kernel (needs no GPU): a barrier tree,
    # no atomics
    from nvptx_util import finalise

    needs_cpu_device()
    monkeypatch.setenv("KAPI_DPJIT_REDUCE", "tree")  # a GPU's shape, compiled on the CPU

    fn = globals()[which]
    a = np.arange(500, dtype=np.float64)
    args = (a.astype(np.int64),) if which == "reduce_bits" else (a, a.astype(np.float32))
    if which == "last_values":
        args = (a, a.copy())
    f = dpex.dpjit(fn)
    f(*args)  # NumPy arrays: compiled and run on the CPU device
    (k,) = f.kernels
    (sig,) = k.signatures
    ptx, table = finalise(k.inspect_spirv(sig), [k.__name__])
    assert k.__name__ in table
    assert "bar.sync" in ptx or "barrier.sync" in ptx
    assert "atom." not in ptx


# -- asynchronous launches -----------------------------------------------------------------------


@dpex.dpjit
def three_steps(a, reps):
    n = a.shape[0]
    b = dpex.empty_like(a)
    for i in prange(n):
        b[i] = a[i] * 2
    half = n // 2  # sizes and new arrays between loops: no wait
    c = dpex.zeros(a.shape, dtype=a.dtype, device=a.device)
    for i in prange(half, n):
        c[i] = b[i] + 1
    for i in prange(half):
        c[i] = b[i] - 1
    for _r in range(reps):  # in a host loop: the last launch of its body waits
        for i in prange(n):
            b[i] = c[i] + 1
        for i in prange(n):
            c[i] = b[i] * 2
    return b, c


def _waits(fn):
    return fn._stats.launches, fn._stats.waits


def test_consecutive_loops_wait_once(dev):
    h = np.arange(1000, dtype=np.float32)
    a = kapi.asarray(h, device=dev)
    b, c = three_steps(a, 0)
    want_c = np.where(np.arange(1000) < 500, 2 * h - 1, 2 * h + 1)
    np.testing.assert_array_equal(c.asnumpy(), want_c)
    before = _waits(three_steps)
    b, c = three_steps(a, 3)
    launches, waits = (x - y for x, y in zip(_waits(three_steps), before, strict=True))
    assert (launches, waits) == (9, 1 + 3)  # three loops, one wait; then one per repetition
    for _ in range(3):
        want_b = want_c + 1
        want_c = want_b * 2
    np.testing.assert_array_equal(b.asnumpy(), want_b)
    np.testing.assert_array_equal(c.asnumpy(), want_c)


def test_host_reads_and_results_wait(dev):
    @dpex.dpjit
    def steps(a):
        b = dpex.empty_like(a)
        for i in prange(a.shape[0]):
            b[i] = a[i] + 1
        for i in prange(a.shape[0]):  # waits: the host reads the arrays next
            b[i] = b[i] * 3
        top = float(b.asnumpy().max())
        for i in prange(a.shape[0]):  # no wait: the reduction after it waits for both
            b[i] = b[i] / top
        s = 0.0
        for i in prange(a.shape[0]):
            s += b[i]
        return b, s

    h = np.arange(1, 9, dtype=np.float32)
    b, s = steps(kapi.asarray(h, device=dev))
    want = (h + 1) * 3 / ((h.max() + 1) * 3)
    np.testing.assert_allclose(b.asnumpy(), want, rtol=1e-6)
    assert s == pytest.approx(float(want.sum()), rel=1e-6)
    assert _waits(steps) == (4, 2)


WAIT_FREE = {  # host statement between two loops -> whether the first loop goes without a wait
    "n2 = a.shape[0] * 2 + len(a)": True,
    "n2 = n * 2": False,  # n is a parameter: it could be an array
    "d = a.dtype": True,
    "t = np.zeros((n, 3), dtype=np.float64)": True,  # a shape is read as integers
    "t = np.full(n, 2.0)": True,
    "t = np.pi * 2 + a.shape[0]": True,
    "t = dpex.full_like(a, 1.5)": True,
    "t = b": True,
    "pass": True,
    "x = a[0]": False,  # an element: the host reads the array
    "t = a + 1": False,  # an array expression
    "t = np.full(n, a)": False,  # a value from an array-valued name
    "print(n, end='')": False,  # any call of a function that is not an allocation
    "print(n)": False,
    "n2 = int(a.sum())": False,
}


@pytest.mark.parametrize("stmt", list(WAIT_FREE))
def test_which_host_code_lets_a_launch_go_without_a_wait(stmt, tmp_path, monkeypatch):
    if not kapi.devices("cpu"):
        pytest.skip("no CPU device")
    name = f"dpjit_wait_case{list(WAIT_FREE).index(stmt)}"
    mod = tmp_path / f"{name}.py"
    mod.write_text(
        "import numpy as np\nimport kapi as dpex\nfrom kapi import prange\n\n\n"
        "def f(a, b, n):\n"
        "    for i in prange(n):\n"
        "        b[i] = a[i] * 2\n"
        f"    {stmt}\n"
        "    for i in prange(a.shape[0]):\n"
        "        b[i] += 1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # Numba compiles the host code of all but two (the rules are the same in CPython)
    compiled = stmt not in ("t = np.full(n, a)", "print(n, end='')")
    f = dpex.dpjit(fallback=not compiled)(importlib.import_module(name).f)
    a, b = np.arange(16.0), np.zeros(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error" if compiled else "ignore", kapi.HostFallbackWarning)
        f(a, b, 16)
    np.testing.assert_array_equal(b, a * 2 + 1)
    assert _waits(f) == (2, 1 if WAIT_FREE[stmt] else 2), stmt
    assert bool(f.host.nopython_signatures) == compiled
    del sys.modules[name]


def test_errors_of_launches_not_waited_for_still_raise(dev):
    @dpex.dpjit
    def checked(a, b, step):
        for i in prange(a.shape[0]):
            assert a[i] >= 0, "negative"
            b[i] = a[i] * 2
        for i in prange(0, a.shape[0], step):  # after the first without a wait
            b[i] += 1
        return b

    h = np.arange(8, dtype=np.float32)
    a, b = kapi.asarray(h, device=dev), kapi.empty(8, dtype=np.float32, device=dev)
    np.testing.assert_array_equal(checked(a, b, 1).asnumpy(), h * 2 + 1)
    h[3] = -1
    with pytest.raises(AssertionError, match=r"__prange0', work-item \(3,\): .*: negative$"):
        checked(kapi.asarray(h, device=dev), b, 1)
    before = _waits(checked)
    with pytest.raises(ValueError, match="must not be zero"):  # the host fails between them
        checked(a, b, 0)
    assert _waits(checked)[1] == before[1] + 1  # the first loop was still waited for
    before = _waits(checked)
    checked(a, b, 1)
    assert _waits(checked)[1] == before[1] + 1
    assert checked.host.nopython_signatures and checked.python_signatures == {}


def test_calls_in_threads_keep_their_own_pending_launches(dev):
    @dpex.dpjit
    def chain(a, b, c):
        for i in prange(a.shape[0]):  # no wait: the next loop is queued behind it
            b[i] = a[i] + 1
        for i in prange(a.shape[0]):
            c[i] = b[i] * 2
        return c

    def work(k, out):
        h = np.arange(64, dtype=np.float32) + k
        a = kapi.asarray(h, device=dev)
        for _ in range(5):
            b, c = kapi.empty_like(a), kapi.empty_like(a)
            out[k] = np.array_equal(chain(a, b, c).asnumpy(), (h + 1) * 2)

    out: dict = {}
    threads = [threading.Thread(target=work, args=(k, out)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {0: True, 1: True, 2: True, 3: True}
    assert chain.host.nopython_signatures  # the pending list never passed through Numba
    assert chain._calls.stack == []  # this thread's: no call left open


def test_a_loop_without_iterations_still_waits_for_the_earlier_ones(dev):
    @dpex.dpjit
    def two(a, b, m):
        for i in prange(a.shape[0]):
            b[i] = a[i] + 1
        for i in prange(m):
            b[i] = 0
        return b

    a = kapi.asarray(np.arange(5, dtype=np.int32), device=dev)
    b = two(a, kapi.zeros(5, dtype=np.int32, device=dev), 0)
    assert _waits(two) == (1, 1)
    np.testing.assert_array_equal(b.asnumpy(), np.arange(1, 6))


def test_loops_on_different_queues_wait_between_them():
    if not kapi.devices("cpu"):
        pytest.skip("no CPU device")
    cpu = kapi.devices("cpu")[0]

    @dpex.dpjit
    def across(a, b, c):
        for i in prange(a.shape[0]):
            a[i] = i
        for i in prange(b.shape[0]):  # another queue: no order with the first launch
            b[i] = c[i] * 2
        return a, b

    q1, q2 = kapi.Queue(cpu), kapi.Queue(cpu)
    a = kapi.zeros(10, dtype=np.int64, queue=q1)
    b, c = kapi.zeros(10, dtype=np.int64, queue=q2), kapi.ones(10, dtype=np.int64, queue=q2)
    across(a, b, c)
    assert _waits(across) == (2, 2)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(10))
    np.testing.assert_array_equal(b.asnumpy(), np.full(10, 2))
    across(c, b, c)  # both on q2: one wait, and the second loop sees the first's values
    assert _waits(across) == (4, 3)
    np.testing.assert_array_equal(b.asnumpy(), np.arange(10) * 2)


def test_reductions_reuse_their_buffers_across_calls_and_threads(dev):
    # a loop's partial-result arrays are kept between calls; concurrent calls take their own
    import concurrent.futures

    @dpex.dpjit
    def total(a, s):
        for i in prange(a.shape[0]):
            s += a[i]
        return s

    arrays = [kapi.asarray(np.full(5000 + k, k, np.int64), device=dev) for k in range(8)]
    want = [k * (5000 + k) for k in range(8)]
    assert [total(a, 0) for a in arrays] == want
    assert [total(a, np.int32(1)) for a in arrays] == [np.int32(w + 1) for w in want]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(total, arrays, [0] * 8)) == want


# -- numba-dpex code that kapi serves: dpnp-named allocations, shifts, strides -------------

import kapi as dpnp  # noqa: E402 - the porting guide's spelling of numba-dpex's dpnp


@dpex.dpjit
def _nearest_rows(x, k, out):
    # dpbench's knn_numba_dpex_p allocates an array per iteration, of a run-time size
    for i in prange(x.shape[0]):
        q = dpnp.empty(shape=(k, 2))
        z = np.zeros(k, dtype=np.int64)
        for j in range(k):
            q[j, 0] = x[i] + j
            z[j] = j
        s = 0.0
        for j in range(k):
            s += q[j, 0] + z[j]
        out[i] = s


def test_arrays_allocated_in_a_prange_body_are_private_to_the_iteration(dev):
    x = kapi.asarray(np.arange(6.0), device=dev)
    out = kapi.zeros(6, device=dev)
    for k in (3, 20):  # one kernel per size, compiled in
        _nearest_rows(x, k, out)
        want = [sum(float(i) + j + j for j in range(k)) for i in range(6)]
        np.testing.assert_allclose(out.asnumpy(), want)
    with pytest.raises(dpex.UnsupportedPrangeError, match="size of an array allocated"):
        _nearest_rows(x, -1, out)


def test_shift_assignments_and_strides_in_host_code(dev):
    @dpex.dpjit
    def shifts(a, b):
        a <<= b
        c = a.copy()
        c >>= 1
        return c, a.strides

    a = kapi.asarray(np.arange(1, 7, dtype=np.int64).reshape(2, 3), device=dev)
    b = kapi.ones((2, 3), dtype=np.int64, device=dev)
    c, strides = shifts(a, b)
    want = np.arange(1, 7).reshape(2, 3)
    assert (a.asnumpy() == want << 1).all() and (c.asnumpy() == want).all()
    assert strides == (24, 8)


def test_dpnp_named_allocations_in_host_code(dev):
    @dpex.dpjit
    def alloc(n):
        a = dpnp.empty(n, dtype=dpnp.float32)
        b = dpnp.zeros((n, 2), dtype=dpnp.int64)
        c = dpnp.full_like(a, 2.0)
        for i in prange(n):
            a[i] = c[i] + 1
        return a, b

    a, b = alloc(5)
    assert (a.asnumpy() == 3).all() and a.dtype == np.float32 and b.shape == (5, 2)


def test_like_allocations_take_numpys_shape(dev):
    # dpbench's gpairs: np.zeros_like(results, shape=(nopt, nbins)) under dpnp's names
    a = kapi.ones(4, dtype=np.int32, device=dev)
    b = dpnp.zeros_like(a, shape=(2, 3))
    assert b.shape == (2, 3) and b.dtype == np.int32 and b.device == dev
    assert (dpnp.full_like(a, 7, shape=5).asnumpy() == 7).all()

    @dpex.dpjit
    def like(a):
        return dpnp.ones_like(a, shape=(2, 2))

    assert (like(a).asnumpy() == np.ones((2, 2), np.int32)).all()
