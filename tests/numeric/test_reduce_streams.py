"""The CPU driver's reductions reading each work-item's chunk as several streams
(KAPI_REDUCE_CPU_STREAMS, kapi/_numeric/reduce.py `_CPU_STREAMS`): every op against NumPy and
against the one-stream kernels, with NaN, ties and extremes planted in each stream, in the
elements after the streams and at sizes that are no multiple of the streams' steps; the
stream kernels load contiguous vectors; a bad switch value is refused."""

import re

import numpy as np
import pytest
from kapi_testing import devices_or_skip, host_ir_of, import_reduce_with

import kapi
from kapi._numeric import reduce as _reduce
from kapi._numeric import replay as _replay

CPU_DEVICES = [d for d in devices_or_skip() if d.device_type == "cpu"]

# One work-group per row (64 work-items) at N elements: float32 and int32 argmax chunks of
# 2304 (9 blocks of 256), each work-item's two streams [0, 1024) and [1024, 2048) of its
# chunk, then the elements loop; float64 (blocks of 128): chunks of 2176, the same streams;
# float32 max with 2 streams: chunks of 2080, streams of 1024; with 4: of 512.
N = 64 * 2048 + 777


@pytest.fixture(params=[1, 2, 4], ids=["streams1", "streams2", "streams4"])
def streams(request, monkeypatch):
    if not CPU_DEVICES:
        pytest.skip("no CPU device")
    monkeypatch.setattr(_reduce, "_CPU_STREAMS", request.param)
    monkeypatch.setattr(_reduce, "_CPU_CHUNK_ROUND", request.param > 1)
    monkeypatch.setattr(_reduce, "_CPU_ARG_STREAMS", min(request.param, 2))
    monkeypatch.setattr(_reduce, "ARG_SCHEME", "blocks")
    _reduce._src_for.cache_clear()
    _replay.clear_plans()
    yield request.param
    _reduce._src_for.cache_clear()
    _replay.clear_plans()


@pytest.fixture(params=[False, True], ids=["groups", "one-group"])
def one_group(request, monkeypatch):
    """one-group: a work-group per row, so that the planted positions below fall in known
    streams of the first work-items' chunks."""
    if request.param:
        monkeypatch.setattr(_reduce, "_MAX_GROUPS", 1)
    return request.param


def _arg_cases(dt):
    """(what, array) with the answer in one stream and a tie or NaN in another: a tie in the
    second stream's first block and the first stream's fourth (the first stream's is the
    first occurrence though the second stream reached it in an earlier step), NaN in one
    stream only and in both, extremes in the elements after the streams and in the second
    work-item's chunk, ties everywhere, all equal."""
    rng = np.random.default_rng(dt.itemsize)
    fl = dt.kind == "f"
    if fl:
        base = rng.uniform(-1, 1, N).astype(dt)
        hi, lo = dt.type(3), dt.type(-3)
    else:
        base = rng.integers(10, 20, N).astype(dt)
        hi, lo = dt.type(50), dt.type(1)
    out = []
    for ps in ([1027, 900], [1024, 1023], [1030, 5], [2100, 2200], [2304 + 1500, 2304 + 7]):
        h = base.copy()
        h[ps] = hi
        h[[p + 11 for p in ps]] = lo
        out.append((f"extremes at {ps}", h))
    if fl:
        for ps in ([1030], [1030, 1000], [2050], [5, 1500]):
            h = base.copy()
            h[ps] = np.nan
            h[700] = hi  # a larger number before, in the first stream
            out.append((f"NaN at {ps}", h))
        out.append(("all -inf", np.full(N, -np.inf, dt)))
    out.append(("ties", rng.integers(0, 3, N).astype(dt)))
    out.append(("all equal", np.full(N, 1, dt)))
    return out


# (argmin/argmax: one stream, the default, in every dtype; two, built but off, in two; 4 asks
# for what 2 gives them)
ARG_CASES = [(1, d) for d in ("float32", "float64", "int32", "uint8")] + [
    (2, "float32"),
    (2, "uint8"),
]


@pytest.mark.parametrize("streams, dtype", ARG_CASES, indirect=["streams"])
def test_arg_streams_against_numpy(streams, one_group, dtype):
    dt = np.dtype(dtype)
    for what, h in _arg_cases(dt):
        x = kapi.asarray(h, device=CPU_DEVICES[0])
        for op in ("argmax", "argmin"):
            got, want = int(getattr(x, op)()), int(getattr(h, op)())
            assert got == want, (streams, op, what, dtype, got, want)


OPS = ("sum", "prod", "min", "max", "any", "all")


def _float_rtol(dt, n):
    """The relative error allowed a float sum or product of n positive terms near 1 against
    the float64 answer: 8 standard deviations of a random walk of n roundings. Any order of
    the operations is right; NumPy's is one of them, so NumPy's float32 answer is no
    reference (a float32 product of 131849 such terms was 1.0e-4 from NumPy's and 9.8e-5
    from the exact one, within its bound of n ulps, on 16 Xeon cores)."""
    return 8 * np.sqrt(max(n, 1)) * np.finfo(dt).eps


def _check_ops(h, x, what):
    for op in OPS:
        if op == "prod" and h.dtype.kind in "iub":
            continue  # overflows
        got = getattr(x, op)().asnumpy()
        if op in ("sum", "prod") and h.dtype.kind == "f":
            want = getattr(h.astype(np.float64), op)()
            rtol = _float_rtol(h.dtype, h.size)
            np.testing.assert_allclose(got, want, rtol=rtol, err_msg=f"{op} {what}")
            continue
        with np.errstate(all="ignore"):
            want = getattr(h, op)()
        np.testing.assert_array_equal(got, want, err_msg=f"{op} {what}")


def _check_exact_float_folds(dt, n, rng, x_of):
    """Float sums of small integers and products of powers of two are exact in any order, so
    a lost or doubled element shows even where rounding hides it in the test above."""
    h = rng.integers(0, 100, n).astype(dt)  # sum < 2^24: exact in float32
    assert x_of(h).sum().asnumpy() == h.astype(np.float64).sum(), ("sum", dt, n)
    h = np.ones(n, dt)
    places = rng.choice(n, min(n, 50), replace=False)
    h[places] = rng.choice([0.5, 2.0], places.size)
    assert x_of(h).prod().asnumpy() == h.astype(np.float64).prod(), ("prod", dt, n)


# (two streams, the default, in every dtype; one and four in a float and an integer type:
# the kernels' compiles are most of this file's time)
VALUE_CASES = [(2, d) for d in ("float32", "float64", "int32", "int64", "uint8", "bool")]
VALUE_CASES += [(s, d) for s in (1, 4) for d in ("float32", "int32")]


@pytest.mark.parametrize("n", [1, 5, 63, 64 * 128 + 1, N])
@pytest.mark.parametrize("streams, dtype", VALUE_CASES, indirect=["streams"])
def test_value_streams_against_numpy(streams, one_group, dtype, n):
    """sum, prod, min, max, any, all; a NaN in one stream only (the second, third or fourth of
    the first work-item's chunk, or after them) makes min and max NaN."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(n)
    if dt == np.bool_:
        h = rng.random(n) < 0.999
    elif dt.kind == "f":
        h = (1 + rng.uniform(-1, 1, n) * 1e-3).astype(dt)
    else:
        h = rng.integers(0, 100, n).astype(dt)
    x = kapi.asarray(h, device=CPU_DEVICES[0])
    _check_ops(h, x, f"{dtype} n={n}")
    if dt.kind == "f":
        _check_exact_float_folds(dt, n, rng, lambda a: kapi.asarray(a, device=CPU_DEVICES[0]))
    if dt.kind == "f" and n == N:
        for p in (600, 1030, 1600, 2060, 2080 + 5):
            g = h.copy()
            g[p] = np.nan
            _check_ops(g, kapi.asarray(g, device=CPU_DEVICES[0]), f"NaN at {p}")


def test_streams_give_the_same_answers(monkeypatch):
    """Every op's answer with 2 and 4 streams is the one-stream kernels' (argmin/argmax, min,
    max, any, all exactly), on rows of a 2-D array along both axes with keepdims."""
    if not CPU_DEVICES:
        pytest.skip("no CPU device")
    rng = np.random.default_rng(5)
    h = rng.integers(0, 50, (3, 40001)).astype(np.float32)
    h[1, 30001] = np.nan
    x = kapi.asarray(h, device=CPU_DEVICES[0])
    monkeypatch.setattr(_reduce, "ARG_SCHEME", "blocks")
    res = {}
    for s in (1, 2, 4):
        monkeypatch.setattr(_reduce, "_CPU_STREAMS", s)
        monkeypatch.setattr(_reduce, "_CPU_CHUNK_ROUND", s > 1)
        monkeypatch.setattr(_reduce, "_CPU_ARG_STREAMS", min(s, 2))
        _reduce._src_for.cache_clear()
        _replay.clear_plans()
        for op in ("argmax", "argmin", "min", "max", "sum", "any", "all"):
            for axis, keepdims in ((1, False), (1, True), (None, False)):
                res[s, op, axis, keepdims] = getattr(x, op)(axis=axis, keepdims=keepdims).asnumpy()
    _reduce._src_for.cache_clear()
    _replay.clear_plans()
    for (s, op, axis, keepdims), got in res.items():
        one = res[1, op, axis, keepdims]
        want = getattr(h, op)(axis=axis, keepdims=keepdims)
        if op == "sum":
            np.testing.assert_allclose(got, one, rtol=1e-5)
            np.testing.assert_allclose(got, want, rtol=1e-5)
        else:
            np.testing.assert_array_equal(got, one, err_msg=f"{s} {op} {axis}")
            np.testing.assert_array_equal(got, want, err_msg=f"{s} {op} {axis}")


def test_streams_switch_the_kernels(streams):
    s = _reduce._cpu_streams(1 << 30, 64, 4)  # the switch, whatever the size
    assert s == streams
    src = _reduce._src_for("max", np.dtype(np.float32), True, True, None, "pairs", False, s)
    assert ("j + 1 * h + 0" in src) == (streams > 1)
    assert ("j + 3 * h + 0" in src) == (streams == 4)
    src = _reduce._src_for("argmax", np.dtype(np.float32), True, True, None, "blocks", False, s)
    assert ("j + 1 * h + 0" in src) == (streams > 1)
    assert "j + 2 * h" not in src  # argmin/argmax: at most 2
    # the second pass (partials) reads one stream
    assert "* h" not in _reduce._src_for("max", np.dtype(np.float32), False, True)


def test_stream_kernels_load_vectors():
    """With 2 streams max's and argmax's first pass load each stream as contiguous vectors (a
    vector across the streams' lanes was a gather: 6x (max) to 20x (argmax) slower on the
    dev box)."""
    if not CPU_DEVICES:
        pytest.skip("no CPU device")
    for op in ("max", "argmax"):
        code = (
            "import numpy as np, kapi\n"
            "from kapi._numeric import reduce as R\n"
            "R._CPU_ARG_STREAMS = 2\n"
            "x = kapi.asarray(np.arange(1 << 16, dtype=np.float32), device='cpu')\n"
            f"assert int(x.{op}()) == 65535\n"
        )
        ir = host_ir_of(code, KAPI_REDUCE_ARG="blocks", KAPI_REDUCE_CPU_STREAMS="2")
        first = ir.split("define i32 @_reduce")[1].split("\ndefine ")[0]
        loads = re.findall(r"load <(16|32) x float>, <\1 x float> addrspace\(1\)\*", first)
        assert len(loads) >= 2, op
        assert not re.search(r"masked\.gather\.v(32|64)f32\.v\1p1f32", first), op


def test_bad_streams_switch_is_refused():
    r = import_reduce_with("KAPI_REDUCE_CPU_STREAMS", "3")
    assert r.returncode != 0
    assert "KAPI_REDUCE_CPU_STREAMS must be auto, 1, 2 or 4, not '3'" in r.stderr


def test_auto_streams_by_chunk(monkeypatch):
    """auto (the default): four streams once each quarter of a work-item's chunk spans a
    page, else two; forced counts whatever the size."""
    monkeypatch.setattr(_reduce, "_CPU_STREAMS", None)
    page = _reduce._CPU_STREAM_PART_BYTES
    assert _reduce._cpu_streams(4096 * page, 4096, 4) == 4  # float32 chunks of 4 pages
    assert _reduce._cpu_streams(4096 * page - 4096, 4096, 4) == 2
    assert _reduce._cpu_streams(1 << 24, 4096, 4) == 4  # 2^24 float32 on 16 cores
    assert _reduce._cpu_streams(1 << 22, 4096, 4) == 2
    assert _reduce._cpu_streams(1 << 23, 4096, 8) == 4  # float64: bytes count
    assert _reduce._cpu_streams(1 << 23, 4096, 2) == 2
    assert _reduce._cpu_streams(100, 0, 4) == 2
    monkeypatch.setattr(_reduce, "_CPU_STREAMS", 1)
    assert _reduce._cpu_streams(1 << 30, 64, 4) == 1


def test_auto_streams_pick_four_for_large_rows(monkeypatch):
    """With auto, a row large enough for four pages a chunk reads four streams (the kernel
    launched says so) and a small one two, and both give NumPy's answers."""
    if not CPU_DEVICES:
        pytest.skip("no CPU device")
    dev = CPU_DEVICES[0]
    monkeypatch.setattr(_reduce, "_CPU_STREAMS", None)
    monkeypatch.setattr(_reduce, "_CPU_CHUNK_ROUND", True)
    _reduce._src_for.cache_clear()
    _replay.clear_plans()
    srcs = []
    kernel = _reduce._kernel
    monkeypatch.setattr(_reduce, "_kernel", lambda src, *a: srcs.append(src) or kernel(src, *a))
    groups, wg = _reduce._groups(kapi.empty(1, device=dev), 1 << 30)
    items = groups * wg
    big = items * _reduce._CPU_STREAM_PART_BYTES + 77  # float32: four pages a chunk
    rng = np.random.default_rng(11)
    for n, want_streams in ((big, 4), (items * 256 + 5, 2)):
        h = rng.integers(-1000, 1000, n).astype(np.float32)
        h[n - 3] = 5000  # in the last chunk's elements after the streams
        x = kapi.asarray(h, device=dev)
        for op in ("max", "sum", "min"):
            srcs.clear()
            got = getattr(x, op)().asnumpy()
            np.testing.assert_array_equal(got, getattr(h, op)(), err_msg=f"{op} {n}")
            first = [s for s in srcs if "* h +" in s]
            assert len(first) == 1, (op, n)
            assert ("j + 3 * h + 0" in first[0]) == (want_streams == 4), (op, n)
            assert "j + 1 * h + 0" in first[0]
    _reduce._src_for.cache_clear()
    _replay.clear_plans()


@pytest.fixture
def one_launch(request, monkeypatch):
    """The reductions in one launch (_CPU_ONE_LAUNCH, the default: the last work-group to
    finish folds the partials) or in two (the partials' second launch, as GPUs do), with a
    group per core."""
    if not CPU_DEVICES:
        pytest.skip("no CPU device")
    monkeypatch.setattr(_reduce, "_CPU_ONE_LAUNCH", request.param)
    monkeypatch.setattr(_reduce, "ARG_SCHEME", "blocks")
    _reduce._src_for.cache_clear()
    _replay.clear_plans()
    yield request.param
    _reduce._src_for.cache_clear()
    _replay.clear_plans()


# (two launches: float32 and int32 cover the second pass's folds)
@pytest.mark.parametrize(
    "one_launch, dtype",
    [(True, "float32"), (True, "int32"), (True, "bool"), (False, "float32"), (False, "int32")],
    ids=["one-float32", "one-int32", "one-bool", "two-float32", "two-int32"],
    indirect=["one_launch"],
)
def test_one_launch_against_numpy(one_launch, dtype):
    """Every op, three calls each (the recorded plan replayed: the counts go back to 0), on
    a row of several groups' partials with ties and NaN across groups, rows of a 2-D array
    along both axes, and a lazy expression read inside the reduction."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(7)
    n = 3 * 65536 + 17
    if dt == np.bool_:
        h = rng.random(n) < 0.5
    elif dt.kind == "f":
        h = rng.uniform(-1, 1, n).astype(dt)
        h[[70001, 190000]] = 5  # a tie across groups: the first wins
        h[[100, 150000]] = -5
    else:
        h = rng.integers(0, 100, n).astype(dt)
    dev = CPU_DEVICES[0]
    cases = [("row", h)]
    if dt.kind == "f":
        g = h.copy()
        g[[150001, 120000]] = np.nan
        cases.append(("NaN", g))
    for what, a in cases:
        x = kapi.asarray(a, device=dev)
        for _ in range(3):
            for op in ("argmax", "argmin", "max", "min", "any", "all", "sum"):
                got, want = getattr(x, op)().asnumpy(), getattr(a, op)()
                if op == "sum" and dt.kind == "f":
                    np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=what)
                else:
                    np.testing.assert_array_equal(got, want, err_msg=f"{op} {what}")
    h2 = h[: 6 * 32768].reshape(6, 32768)
    x2 = kapi.asarray(h2, device=dev)
    for op in ("argmax", "max", "sum"):
        for axis in (0, 1):
            got, want = getattr(x2, op)(axis=axis).asnumpy(), getattr(h2, op)(axis=axis)
            np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=f"{op} {axis}")
    if dt.kind == "f":
        x = kapi.asarray(h, device=dev)
        np.testing.assert_allclose(float((x * 2).sum()), float((h * 2).sum()), rtol=1e-4)
    counts = _reduce._counts(dev.default_queue, x.usm_type).asnumpy()
    assert not counts.any()
