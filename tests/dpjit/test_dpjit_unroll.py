"""dpjit reduction kernels with several independent accumulators (_fold_loop, in
kapi/_dpjit/kernels.py): results against Numba njit(parallel=True) around every remainder of
the unrolled loop, in both kernel shapes (the GPU's strided tree, the CPU device's contiguous
blocks); what the kernels compile to (four loads in flight and no index wraparound in the PTX,
vector loads in the CPU device's host IR); and the launch's reuse of its partial-result arrays
(kapi/_dpjit/launching.py)."""

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi._dpjit import launching as _launching
from pyfront import KernelTypingError

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def _shapes(dev):
    # the CPU device runs both shapes (KAPI_DPJIT_REDUCE); a GPU its own tree
    return ["tree", "blocks"] if dev.device_type == "cpu" else [""]


def sums_skip_last(a, b):
    s = 0.0
    t = 0
    lo = np.inf
    hi = -np.inf
    p = 1.0
    x = 0.0
    for i in numba.prange(a.shape[0]):
        x = a[i] - b[i]
        if a[i] == 3.0:
            continue
        s += a[i] * b[i]
        t -= np.int64(b[i])
        lo = min(lo, x)
        hi = max(hi, x)
        p *= 1.0 + (i % 4099 == 1)  # exact products, in range
    return s, t, lo, hi, p, x


def two_skip_last(a, b):
    s = 0.0
    lo = np.inf
    x = 0.0
    for i in numba.prange(a.shape[0]):
        x = a[i] - b[i]
        if a[i] == 3.0:
            continue
        s -= a[i] * b[i]
        lo = min(x, lo)
    return s, lo, x


def three(a):
    s = 0
    hi = -1.0
    p = 1.0
    for i in numba.prange(a.shape[0]):
        s += np.int64(a[i])
        hi = max(hi, a[i])
        p *= 1.0 + (i % 4099 == 1)
    return s, hi, p


def bits(x):
    band = -1
    bor = np.uint16(0)
    bxor = np.int32(7)
    for i in numba.prange(x.shape[0]):
        band &= x[i] | 1024
        bor |= np.uint16(x[i])
        bxor ^= np.int32(x[i] * 7)
    return band, bor, bxor


def inner_loop(a):
    s = 0.0
    for i in numba.prange(a.shape[0]):
        for k in range(3):
            s += a[i] * k
    return s


def nest_2d(m):
    s = 0.0
    for i in numba.prange(m.shape[0]):
        for j in numba.prange(m.shape[1]):
            s += m[i, j] * (i - j)
    return s


def _run(fn, dev, *host):
    args = [kapi.asarray(a, device=dev) if isinstance(a, np.ndarray) else a for a in host]
    return kapi.dpjit(fn)(*args)


# sizes around the unrolled loop's remainders, a group, and several groups of every work-item
SIZES = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 17, 255, 4097, 70_001, 262_147]


@pytest.mark.parametrize("n", SIZES)
def test_unrolled_reductions_match_numba(dev, monkeypatch, n):
    rng = np.random.default_rng(n)
    a = rng.integers(0, 6, n).astype(np.float64)  # integer values: exact sums in any order
    b = rng.integers(-3, 4, n).astype(np.float64)
    # Numba's parallel loop leaves some thread's last value (it warns): that one is the
    # sequential run's
    last = (a[-1] - b[-1] if n else 0.0,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaParallelSafetyWarning)
        want5 = numba.njit(parallel=True)(sums_skip_last)(a, b)[:5] + last
        want2 = numba.njit(parallel=True)(two_skip_last)(a, b)[:2] + last
    want3 = numba.njit(parallel=True)(three)(a)
    for shape in _shapes(dev):
        monkeypatch.setenv("KAPI_DPJIT_REDUCE", shape)
        got = _run(sums_skip_last, dev, a, b)
        assert got == want5, (shape, got, want5)
        assert type(got[1]) is int and type(got[0]) is float
        assert _run(two_skip_last, dev, a, b) == want2
        assert _run(three, dev, a) == want3


@pytest.mark.parametrize("n", [0, 3, 6, 1000, 65_539])
def test_unrolled_bitwise_and_nested_reductions(dev, monkeypatch, n):
    # Numba's parfors have no bitwise reductions: compared with the sequential run
    x = np.arange(n, dtype=np.int64) * 37 % 4093
    m = np.arange(n, dtype=np.float64).reshape(-1, 1) % 11 if n else np.zeros((0, 3))
    for shape in _shapes(dev):
        monkeypatch.setenv("KAPI_DPJIT_REDUCE", shape)
        got = _run(bits, dev, x)
        assert got == bits(x)
        assert _run(nest_2d, dev, m) == numba.njit(parallel=True)(nest_2d)(m)
        assert _run(inner_loop, dev, x.astype(np.float64)) == inner_loop(x.astype(np.float64))


def _kernel_names(fn, dev, *host):
    f = kapi.dpjit(fn)
    f(*[kapi.asarray(a, device=dev) if isinstance(a, np.ndarray) else a for a in host])
    (k,) = f.kernels
    return set(k.py_func.__code__.co_varnames)


def _accumulators(names, k):
    return {n for n in names if n.startswith(f"__kapi_acc{k}_")}


def test_small_loop_free_bodies_are_unrolled(dev):
    # about eight independent accumulators in all: four copies of one or two reductions, two
    # of three or four, none of more (they are independent chains already)
    a = np.arange(100.0)
    names = _kernel_names(two_skip_last, dev, a, a)
    for k in (1, 2, 3):
        assert _accumulators(names, k) == {f"__kapi_acc{k}_s", f"__kapi_acc{k}_lo"}
    assert not _accumulators(names, 4)
    names = _kernel_names(three, dev, a)
    assert _accumulators(names, 1) == {"__kapi_acc1_s", "__kapi_acc1_hi", "__kapi_acc1_p"}
    assert not _accumulators(names, 2)
    assert not _accumulators(_kernel_names(sums_skip_last, dev, a, a), 1)
    # a body with a loop keeps one accumulator: its iterations are not worth repeating
    assert not _accumulators(_kernel_names(inner_loop, dev, a), 1)


def l2_total(a):
    s = 0.0
    for i in numba.prange(a.shape[0]):
        s += a[i] * a[i]
    return np.sqrt(s)


def test_tree_kernel_ptx_has_four_loads_in_flight_and_no_wraparound(monkeypatch, tmp_path):
    """The GPU's shape through the NVPTX finaliser (compiled here on the CPU device): the
    unrolled loop issues four independent loads and fused multiply-adds, with no negative-
    index wraparound on the index; ptxas assembles it."""
    from nvptx_util import finalise

    cpu = [d for d in DEVICES if d.device_type == "cpu"]
    if not cpu:
        pytest.skip("no CPU device")
    monkeypatch.setenv("KAPI_DPJIT_REDUCE", "tree")
    f = kapi.dpjit(l2_total)
    h = np.arange(5000.0)
    assert f(kapi.asarray(h, device=cpu[0])) == pytest.approx(np.sqrt((h * h).sum()))
    (k,) = f.kernels
    (sig,) = k.signatures
    ptx, table = finalise(k.inspect_spirv(sig), [k.__name__])
    assert k.__name__ in table
    loops = re.split(r"\n\$L__BB\d+_\d+:", ptx)
    unrolled = [b for b in loops if b.count("ld.global.f64") == 4]
    assert unrolled, ptx
    assert unrolled[0].count("fma.rn.f64") == 4
    assert "shr.s64" not in ptx  # the wraparound test of a possibly negative index
    assert "bar.sync" in ptx or "barrier.sync" in ptx
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not Path(ptxas).is_file():
        pytest.skip("the CUDA toolkit's ptxas is not installed")
    path = tmp_path / "tree.ptx"
    path.write_text(ptx)
    r = subprocess.run(
        [ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / "tree.cubin")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_blocks_kernel_loads_vectors(tmp_path):
    """The CPU device's shape: the contiguous accumulators become vector loads and adds in
    the host IR (the serial chain of one accumulator does not vectorise)."""
    if not any(d.device_type == "cpu" for d in DEVICES):
        pytest.skip("no CPU device")
    code = (
        "import numba, numpy as np, kapi\n"
        "def l2(a):\n"
        "    s = 0.0\n"
        "    for i in numba.prange(a.shape[0]):\n"
        "        s += a[i] * a[i]\n"
        "    return s\n"
        "x = kapi.asarray(np.ones(1 << 16), device='cpu')\n"
        "assert kapi.dpjit(l2)(x) == 65536.0\n"
    )
    env = dict(
        os.environ,
        KAPI_DUMP="host",
        KAPI_CACHE="0",
        PYTHONPATH=str(Path(kapi.__file__).parents[1]),
    )
    script = tmp_path / "l2.py"  # dpjit reads the function's source
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "define i32 @l2__prange0" in r.stderr
    assert re.search(r"load <\d+ x double>, <\d+ x double> addrspace\(1\)\*", r.stderr)
    assert re.search(r"fadd <\d+ x double>", r.stderr)


def test_launches_reuse_their_partial_arrays(dev, monkeypatch):
    """Repeated calls take the same partial-result arrays (no allocation per call); on a GPU
    they are host memory the kernel writes, read in place after the launch's one wait."""
    made = []
    init = _launching._Buffers.__init__

    def counting(self, plan, nparts):
        init(self, plan, nparts)
        made.append(self)

    monkeypatch.setattr(_launching._Buffers, "__init__", counting)
    h = np.arange(10_000.0)
    a = kapi.asarray(h, device=dev)
    f = kapi.dpjit(l2_total)
    want = np.sqrt((h * h).sum())
    for _ in range(5):
        assert f(a) == pytest.approx(want, rel=1e-14)
    assert len(made) == 1
    (part,) = made[0].parts
    assert part.usm_type == ("device" if dev.device_type == "cpu" else "host")
    assert f(kapi.asarray(h[:7], device=dev)) == pytest.approx(np.sqrt((h[:7] ** 2).sum()))
    assert len(made) == 2  # another geometry: its own arrays


# -- trip counts compiled in -------------------------------------------------------------------


def pairwise(x1, x2, dist):
    dims = x1.shape[1]
    for i in numba.prange(x1.shape[0]):
        for j in numba.prange(x2.shape[0]):
            d = 0.0
            for k in range(dims):
                tmp = x1[i, k] - x2[j, k]
                d += tmp * tmp
            dist[i, j] = np.sqrt(d)


def scaled_rows(a, reps, out):
    s = 0.0
    for i in numba.prange(a.shape[0]):
        t = 0.0
        for _ in range(1, reps + 1):
            t += a[i]
        out[i] = t * reps  # `reps` is read outside range(): it stays a parameter
        s += t
    return s


def counted(a, m):
    s = 0
    for i in numba.prange(a.shape[0]):
        for k in range(m):
            s += a[i] + k
    return s


def _params(k):
    code = k.py_func.__code__
    return code.co_varnames[: code.co_argcount]


@pytest.mark.parametrize("dims", [1, 3, 16, 17])
def test_small_trip_counts_compile_in_and_match_numba(dev, dims):
    rng = np.random.default_rng(dims)
    x1, x2 = rng.random((37, dims)), rng.random((53, dims))
    want = np.zeros((37, 53))
    numba.njit(parallel=True)(pairwise)(x1, x2, want)
    f = kapi.dpjit(pairwise)
    dist = kapi.zeros((37, 53), device=dev)
    f(kapi.asarray(x1, device=dev), kapi.asarray(x2, device=dev), dist)
    np.testing.assert_allclose(dist.asnumpy(), want, rtol=1e-14)
    (k,) = f.kernels
    # up to 16 the count is a constant of the kernel (one kernel per value), beyond it a
    # parameter
    assert ("dims" in _params(k)) == (dims > 16)


def test_trip_count_kernels_per_value_and_reductions(dev):
    a = np.arange(1000, dtype=np.int64)
    f = kapi.dpjit(counted)
    x = kapi.asarray(a, device=dev)
    nj = numba.njit(parallel=True)(counted)
    for m in (0, 2, 5, 2, 40, 41, -3):
        assert f(x, m) == nj(a, m)
    # 0, 2, 5 compiled in (2 twice: one kernel); 40, 41 and -3 share the general kernel
    assert sorted("m" in _params(k) for k in f.kernels) == [False, False, False, True]


def test_variables_read_outside_range_stay_parameters(dev):
    h = np.arange(100.0)
    out = kapi.zeros(100, device=dev)
    want_out = np.zeros(100)
    want = numba.njit(parallel=True)(scaled_rows)(h, 3, want_out)
    f = kapi.dpjit(scaled_rows)
    assert f(kapi.asarray(h, device=dev), 3, out) == want
    np.testing.assert_array_equal(out.asnumpy(), want_out)
    (k,) = f.kernels
    assert "reps" in _params(k)


def row_norms(a, d):
    for i in numba.prange(a.shape[0]):
        s = 0.0
        for k in range(a.shape[1]):
            s += a[i, k] * a[i, k]
        d[i] = np.sqrt(s)


def bad_axis(a, d):
    for i in numba.prange(a.shape[0]):
        s = 0.0
        for k in range(a.shape[2]):
            s += a[i, k]
        d[i] = s


@pytest.mark.parametrize("cols", [4, 40])
def test_shape_bounds_compile_in_and_match_numba(dev, cols):
    h = np.random.default_rng(cols).random((301, cols))
    want = np.zeros(301)
    numba.njit(parallel=True)(row_norms)(h, want)
    f = kapi.dpjit(row_norms)
    d = kapi.zeros(301, device=dev)
    f(kapi.asarray(h, device=dev), d)
    np.testing.assert_allclose(d.asnumpy(), want, rtol=1e-14)
    (k,) = f.kernels
    # `a.shape[1]` in the range bound: passed by the launch, compiled in up to 16
    assert ("__kapi_dim1_a" in _params(k)) == (cols > 16)
    consts = [c.cell_contents for c in k.py_func.__closure__ or ()]
    assert (cols in consts) == (cols <= 16)


def test_shape_bound_of_a_missing_axis_is_the_kernels_error(dev):
    f = kapi.dpjit(bad_axis)
    with pytest.raises(KernelTypingError, match="test_dpjit_unroll.py") as e:
        f(kapi.zeros((3, 4), device=dev), kapi.zeros(3, device=dev))
    assert "__kapi_dim" not in str(e.value)
