"""@kapi.dpjit's host code (everything around the prange loops) compiled by Numba's njit:
sequential loops around pranges, scalar code between them, array expressions on kapi arrays,
reductions feeding host code. Each function is written once with numba.prange and run by Numba
(njit(parallel=True), NumPy arrays) and by kapi.dpjit on each device's arrays."""

import io
import math
import warnings

import numba
import numpy as np
import pytest
from kapi_testing import devices_or_skip, line_of

import kapi
import kapi as dpex
from kapi import prange

DEVICES = devices_or_skip()
HERE = __file__


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def fp(dev):
    return np.float64 if dev.has_aspect_fp64 else np.float32


def _both(fn, host_args, dev):
    """(Numba's result on NumPy arrays, dpjit's on dev, the DpjitFunction); array arguments
    are copied for each side (the functions write into them)."""
    want = numba.njit(parallel=True)(fn)(
        *[np.copy(a) if isinstance(a, np.ndarray) else a for a in host_args]
    )
    args = [kapi.asarray(a, device=dev) if isinstance(a, np.ndarray) else a for a in host_args]
    f = dpex.dpjit(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kapi.HostFallbackWarning)  # compiled, not CPython
        got = f(*args)
    return want, got, f


def _host(x):
    return x.asnumpy() if isinstance(x, kapi.Array) else x


# -- sequential loops around pranges -----------------------------------------------------------


def relax(a, b, steps):
    n = a.shape[0]
    for _ in range(steps):
        for i in numba.prange(1, n - 1):
            b[i] = (a[i - 1] + a[i + 1]) * 0.5
        for i in numba.prange(1, n - 1):
            a[i] = b[i]
    total = 0.0
    for i in numba.prange(n):
        total += a[i]
    return total


def test_sequential_loop_around_pranges_vs_numba(dev):
    a = np.zeros(64, fp(dev))
    a[0], a[-1] = 64.0, -32.0
    want, got, f = _both(relax, (a, np.zeros_like(a), 25), dev)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert len(f.kernels) == 3 and len(f.host.nopython_signatures) == 1


def shrink(x, tol):
    n = x.shape[0]
    rounds = 0
    total = 1e30
    while total > tol and rounds < 100:
        total = 0.0
        for i in numba.prange(n):
            x[i] = x[i] * 0.5
            total += abs(x[i])
        rounds += 1
        if rounds % 3 == 0:
            tol = tol * 1.5
    return rounds, total, tol, math.sqrt(total) + n // 3


def test_scalar_host_code_and_reductions_steering_a_while_loop_vs_numba(dev):
    x = np.linspace(-4, 4, 1001).astype(fp(dev))
    want, got, _ = _both(shrink, (x, 0.5), dev)
    assert got[0] == want[0] and type(got[0]) is int
    np.testing.assert_allclose(got[1:], want[1:], rtol=1e-5)
    assert want[0] > 3  # several rounds of host control flow


def normalise(a, out):
    s = 0.0
    for i in numba.prange(a.shape[0]):
        s += a[i] * a[i]
    norm = math.sqrt(s)
    if norm == 0.0:
        norm = 1.0
    hi = -np.inf
    for i in numba.prange(a.shape[0]):
        out[i] = a[i] / norm
        hi = max(hi, out[i])
    return norm, hi, hi * norm


def test_reductions_feed_host_code_vs_numba(dev):
    a = np.random.default_rng(5).random(5000).astype(fp(dev))
    out = np.zeros_like(a)
    want, got, f = _both(normalise, (a, out), dev)
    np.testing.assert_allclose(got, want, rtol=1e-5)


# -- array expressions and NumPy calls in host code ---------------------------------------------


def expressions(a, b):
    c = a + b * 2
    d = np.sqrt(c)
    s = d.sum()
    e = np.empty_like(a)
    for i in numba.prange(a.shape[0]):
        e[i] = d[i] / s
    m = -e
    e[1:3] = 0.0
    t = e[1:-1]
    big = np.maximum(c, 10.0) - a.max()
    return e, m, t, big, s, np.sum(a), a.mean(), a[0] + e[4], len(a), a.size, a.ndim


def test_array_expressions_between_loops_vs_numba(dev):
    ha = np.arange(40, dtype=fp(dev))
    hb = np.linspace(0, 1, 40).astype(fp(dev))
    want, got, f = _both(expressions, (ha, hb), dev)
    for w, g in zip(want[:4], got[:4], strict=True):
        assert isinstance(g, kapi.Array) and g.device == dev and g.dtype == w.dtype
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-5)
    np.testing.assert_allclose(got[4:8], want[4:8], rtol=1e-5)
    assert got[8:] == want[8:] == (40, 40, 1)
    (k,) = f.kernels  # one prange loop; the array expressions ran as kapi's array kernels
    assert "array(" in k.signatures[0]


def test_allocation_attributes_and_indexing_in_host_code(dev):
    @dpex.dpjit
    def build(a):
        z = dpex.zeros((a.shape[0], 2), dtype=a.dtype, device=a.device)
        f = dpex.full(3, 7)
        o = dpex.ones_like(a, dtype=np.int32)
        o[0] = 5
        z[1, :] = a[2:4]
        for i in prange(o.shape[0]):
            o[i] += i
        v = o[0] + o[-1]
        w = z[1]
        w += 0.5
        h = dpex.asarray(np.arange(3.0), device=a.device).astype(np.float32)
        return z, f, o, v, z.ndim, z.size, len(z), h

    ha = np.arange(6, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kapi.HostFallbackWarning)
        z, f, o, v, ndim, size, n, h = build(kapi.asarray(ha, device=dev))
    assert z.device == o.device == dev and z.dtype == np.float32 and o.dtype == np.int32
    want_z = np.zeros((6, 2), np.float32)
    want_z[1] = ha[2:4] + 0.5
    np.testing.assert_array_equal(z.asnumpy(), want_z)
    assert f.dtype == np.int64 and f.asnumpy().tolist() == [7, 7, 7]
    np.testing.assert_array_equal(o.asnumpy(), [5, 2, 3, 4, 5, 6])
    assert (v, ndim, size, n) == (11, 2, 12, 6)
    assert h.device == dev and h.dtype == np.float32 and h.asnumpy().tolist() == [0, 1, 2]


def test_numpy_like_on_numpy_arrays_stays_numpy():
    if not kapi.devices("cpu"):
        pytest.skip("no CPU device")

    @dpex.dpjit
    def twice(a):
        out = np.zeros_like(a)
        for i in prange(a.shape[0]):
            out[i] = a[i] * 2
        return out

    h = np.arange(10, dtype=np.int64)
    out = twice(h)
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, h * 2)
    assert twice.host.nopython_signatures


# -- compiled, not interpreted --------------------------------------------------------------------


def test_host_code_is_compiled_by_numba(dev):
    @dpex.dpjit
    def busy(a, n):
        # a host loop of n iterations around one prange: compiled by Numba's njit
        acc = 0
        for k in range(n):
            acc = (acc * 31 + k) % 1000003
        for i in prange(a.shape[0]):
            a[i] = acc
        return acc

    a = kapi.zeros(4, dtype=np.int64, device=dev)
    got = busy(a, 10**6)
    want = 0
    for k in range(10**6):
        want = (want * 31 + k) % 1000003
    assert got == want and a.asnumpy().tolist() == [want] * 4
    disp = busy.host
    assert isinstance(disp, numba.core.registry.CPUDispatcher)
    (sig,) = disp.nopython_signatures
    assert str(sig.args[0]) == "kapi.Array(int64, 1d)" and busy.python_signatures == {}
    text = io.StringIO()
    disp.inspect_types(file=text)  # Numba's typed IR of the host function
    assert "acc = " in text.getvalue() and ":: int64" in text.getvalue()


def test_scalar_arguments_keep_their_kernel_types(dev):
    # Numba boxes an int32/float32 as a Python int/float on its way back to Python; the
    # launch converts it back, so the kernel compiles for i32/f32 as when called from Python
    @dpex.dpjit
    def axpy(a, x, k):
        out = dpex.empty_like(x)
        for i in prange(x.shape[0]):
            out[i] = a * x[i] + k
        return out

    x = kapi.asarray(np.arange(5, dtype=np.float32), device=dev)
    out = axpy(np.float32(2), x, np.int32(3))
    np.testing.assert_array_equal(out.asnumpy(), np.arange(5) * 2 + 3)
    (sig,) = axpy.kernels[0].signatures
    assert sig.startswith("(item(1), f32, i32, array(f32,1")  # a, k, out, x


# -- what Numba cannot compile --------------------------------------------------------------------


def _uses_dict():
    registry = {"scale": 3}

    def uses_dict(a):
        k = registry["scale"]  # a dict global: Numba cannot type it
        for i in prange(a.shape[0]):
            a[i] = i * k

    return uses_dict


def test_what_numba_cannot_compile_raises_at_the_line(dev):
    uses_dict = dpex.dpjit(_uses_dict())
    a = kapi.zeros(4, dtype=np.int64, device=dev)
    with pytest.raises(kapi.HostCompileError) as ei:
        uses_dict(a)
    msg = str(ei.value)
    assert msg.startswith(f"{HERE}:{line_of(uses_dict.py_func, 'def uses_dict')}: dpjit")
    assert f"line {line_of(uses_dict.py_func, 'registry[')}" in msg
    with pytest.raises(kapi.HostCompileError):  # each call is refused, not only the first
        uses_dict(a)
    assert a.asnumpy().tolist() == [0, 0, 0, 0]  # refused calls ran nothing
    assert uses_dict.kernels == []


def test_fallback_warns_at_the_line_and_can_be_made_an_error(dev):
    uses_dict = dpex.dpjit(fallback=True)(_uses_dict())
    a = kapi.zeros(4, dtype=np.int64, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kapi.HostFallbackWarning)
        with pytest.raises(kapi.HostFallbackWarning) as ei:
            uses_dict(a)
    msg = str(ei.value)
    assert msg.startswith(f"{HERE}:{line_of(uses_dict.py_func, 'def uses_dict')}: dpjit")
    assert f"line {line_of(uses_dict.py_func, 'registry[')}" in msg
    with warnings.catch_warnings():  # each call is refused, not only the first
        warnings.simplefilter("error", kapi.HostFallbackWarning)
        with pytest.raises(kapi.HostFallbackWarning):
            uses_dict(a)
    assert a.asnumpy().tolist() == [0, 0, 0, 0]  # refused calls ran nothing
    with pytest.warns(kapi.HostFallbackWarning, match="runs in CPython"):
        uses_dict(a)
    assert a.asnumpy().tolist() == [0, 3, 6, 9]  # the loop still ran as a kernel
    assert len(uses_dict.kernels) == 1


def test_keyword_only_parameters_keep_host_code_in_python(dev):
    @dpex.dpjit
    def fill(a, *, v):
        for i in prange(a.shape[0]):
            a[i] = v

    a = kapi.zeros(3, dtype=np.int64, device=dev)
    fill(a, v=4)
    assert a.asnumpy().tolist() == [4, 4, 4] and fill.host is None


# -- kernels launched from host code -------------------------------------------------------------


@dpex.kernel
def bump(item, a, k):
    i = item.get_id(0)
    a[i] += k


@dpex.kernel
def doubled(nd, a, out):
    i = nd.get_global_id(0)
    out[i] = a[i] * 2


@dpex.dpjit
def bumps(a, n):
    for r in range(n):  # a compiled host loop of launches
        dpex.call_kernel(bump, dpex.Range(a.shape[0]), a, np.int32(r))
    out = dpex.empty_like(a)
    dpex.call_kernel(doubled, dpex.NdRange((a.shape[0],), (4,)), a, out)
    for i in prange(a.shape[0]):
        out[i] += 1
    return out


def test_call_kernel_range_and_ndrange_in_host_code(dev):
    # numba-dpex's call_kernel is callable inside dpjit, and Range/NdRange are built there
    a = kapi.zeros(16, dtype=np.int32, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kapi.HostFallbackWarning)
        out = bumps(a, 5)
    assert a.asnumpy().tolist() == [10] * 16 and out.asnumpy().tolist() == [21] * 16
    assert "i32)" in bump.signatures[0]  # np.int32(r) reached the kernel as an int32
    assert bumps.host.nopython_signatures and bumps.python_signatures == {}
    with pytest.raises(kapi.KapiError, match="does not divide"):  # kapi's errors, raised
        bad_group(a)


@dpex.dpjit
def bad_group(a):
    dpex.call_kernel(doubled, dpex.NdRange((a.shape[0],), (5,)), a, a)


@dpex.dpjit
def add_and_sum(a, k):
    s = 0.0
    for i in prange(a.shape[0]):
        a[i] += k
        s += a[i]
    return s


@dpex.dpjit
def repeated(a, n):
    t = 0.0
    for _ in range(n):
        t += add_and_sum(a, 1.0)  # another dpjit function: its compiled host code
    return t


def test_dpjit_calls_dpjit(dev):
    a = kapi.zeros(8, dtype=fp(dev), device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kapi.HostFallbackWarning)
        t = repeated(a, 3)
    assert t == 8 * (1 + 2 + 3) and a.asnumpy().tolist() == [3] * 8
    assert add_and_sum.host.nopython_signatures and repeated.host.nopython_signatures


def test_a_result_of_another_type_than_compiled_for_is_a_clear_error():
    # a result's dtype is decided while Numba compiles (NumPy's rules, the default device);
    # where kapi gives another one at run time (a device without fp64), the call stops
    from kapi._dpjit import host as _dpjit_host

    with pytest.raises(TypeError, match=r"zeros gave a 1-d float32 array where its compiled "):
        _dpjit_host._expect(kapi.zeros(2, dtype=np.float32), np.dtype(np.float64), 1, "zeros")
    with pytest.raises(TypeError, match=r"`add` gave int where .* expects a 2-d int64 array"):
        _dpjit_host._expect(3, np.dtype(np.int64), 2, "`add`")


def test_optional_output_argument_and_branches_on_arrays(dev):
    @dpex.dpjit
    def plus_one(a, out=None, double=False):
        if out is None:  # Numba prunes the branch per argument types
            out = dpex.empty_like(a)
        b = a * 2 if double else a
        for i in prange(a.shape[0]):
            out[i] = b[i] + 1
        return out

    a = kapi.asarray(np.arange(4, dtype=np.int64), device=dev)
    given = kapi.zeros(4, dtype=np.int64, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kapi.HostFallbackWarning)
        made = plus_one(a)
        back = plus_one(a, given, True)
    assert made.asnumpy().tolist() == [1, 2, 3, 4]
    assert back is given and given.asnumpy().tolist() == [1, 3, 5, 7]
    assert len(plus_one.host.nopython_signatures) == 2


def test_arange_reshape_and_transpose_in_host_code(dev):
    @dpex.dpjit
    def grid(n, m, d):
        a = dpex.arange(n * m, device=d)
        b = a.reshape(n, m)
        t = b.T
        for i in prange(m):
            for j in prange(n):
                t[i, j] += 100  # writes through the views into a
        return a, b, t, a.reshape((m, n)), dpex.arange(0.0, 1.0, 0.25, device=d)

    with warnings.catch_warnings():
        warnings.simplefilter("error", kapi.HostFallbackWarning)
        a, b, t, r, f = grid(2, 3, dev)
    want = np.arange(6) + 100
    assert a.dtype == np.int64 and a.device == dev
    np.testing.assert_array_equal(a.asnumpy(), want)
    assert b.shape == (2, 3) and t.shape == (3, 2) and r.shape == (3, 2)
    np.testing.assert_array_equal(t.asnumpy(), want.reshape(2, 3).T)
    np.testing.assert_array_equal(r.asnumpy(), want.reshape(3, 2))
    assert f.dtype == fp(dev) and f.asnumpy().tolist() == [0, 0.25, 0.5, 0.75]


def test_refusal_names_kapis_own_typing_reason(dev):
    def made(a, code):
        return dpex.zeros(a.shape[0], dtype=code, device=a.device)

    a = kapi.zeros(2, device=dev)
    strict, lenient = dpex.dpjit(made), dpex.dpjit(fallback=True)(made)
    with pytest.raises(kapi.HostCompileError, match="dtype= must be a NumPy type") as ei:
        strict(a, "f4")  # a string variable, not a constant: Numba cannot read it
    assert f"line {line_of(made, 'dpex.zeros(')}" in str(ei.value)
    with pytest.warns(kapi.HostFallbackWarning, match="dtype= must be a NumPy type") as rec:
        out = lenient(a, "f4")
    assert f"line {line_of(made, 'dpex.zeros(')}" in str(rec[0].message)
    assert out.dtype == np.float32 and out.device == dev  # and CPython ran it


def test_host_code_histogram_transpose_and_dpjit_in_a_kernel(dev):
    @kapi.dpjit
    def bin_of(x, edges):  # a dpjit function called in a prange body: a device function
        n = edges.shape[0] - 1
        if x == edges[-1]:
            return n - 1
        return int(n * (x - edges[0]) / (edges[-1] - edges[0]))

    @kapi.dpjit
    def f(a, w, n):
        counts, edges = np.histogram(a, n)
        weighted = np.histogram(a, n, weights=w)[0]
        bins = dpex.empty(a.shape, dtype=np.int64, device=a.device)  # written where a is
        for i in prange(a.shape[0]):
            bins[i] = bin_of(a[i], edges)
        t = np.transpose(np.reshape(a, (2, 5, 10)), axes=(1, 0, 2)).copy()
        return counts, weighted, edges, bins, t

    rng = np.random.default_rng(3)
    a, w = rng.random(100), rng.random(100)
    counts, weighted, edges, bins, t = f(
        kapi.asarray(a, device=dev), kapi.asarray(w, device=dev), 7
    )
    want, want_edges = np.histogram(a, 7)
    np.testing.assert_array_equal(counts.asnumpy(), want)
    np.testing.assert_allclose(weighted.asnumpy(), np.histogram(a, 7, weights=w)[0], rtol=1e-12)
    np.testing.assert_allclose(edges.asnumpy(), want_edges, rtol=1e-12)
    np.testing.assert_array_equal(np.bincount(kapi.asnumpy(bins), minlength=7), want)
    np.testing.assert_array_equal(t.asnumpy(), np.transpose(a.reshape(2, 5, 10), (1, 0, 2)))
