"""Both reduction schemes of kapi/_numeric/reduce.py (contiguous chunks with several accumulators
for
the CPU driver, strided parts for GPUs) on every device, at sizes around their chunk, unroll
and group boundaries, against NumPy; and the CPU scheme's loads are contiguous vectors."""

import re

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi._numeric import reduce as _reduce
from kapi._numeric import replay as _replay

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


@pytest.fixture(params=["chunked", "strided"])
def scheme(request, monkeypatch):
    monkeypatch.setattr(_reduce, "_chunked", lambda x: request.param == "chunked")
    return request.param


SIZES = [1, 3, 4, 5, 63, 257, 64 * 256 + 1, 64 * 256 * 9 - 3, (1 << 20) + 7]


@pytest.mark.parametrize("n", SIZES)
def test_sum_min_max_any_all(dev, scheme, n):
    rng = np.random.default_rng(n)
    h = rng.uniform(-1, 1, n).astype(np.float32)
    x = kapi.asarray(h, device=dev)
    want = h.astype(np.float64).sum()
    assert float(x.sum()) == pytest.approx(want, rel=1e-4, abs=1e-3)
    assert float(x.min()) == h.min() and float(x.max()) == h.max()
    i = (h * 1000).astype(np.int32)
    xi = kapi.asarray(i, device=dev)
    assert int(xi.sum()) == int(i.sum())
    p = 1 + h.astype(np.float64) * 1e-6
    assert float(kapi.asarray(p, device=dev).prod()) == pytest.approx(np.prod(p), rel=1e-9)
    b = h > 0.999
    xb = kapi.asarray(b, device=dev)
    assert bool(xb.any()) == bool(b.any()) and bool(xb.all()) == bool(b.all())


@pytest.mark.parametrize("unroll", [False, True], ids=["one-pair", "four-pairs"])
@pytest.mark.parametrize("n", [5, 64 * 256 + 1, (1 << 20) + 7])
def test_arg_reductions_first_occurrence(dev, scheme, n, unroll, monkeypatch):
    monkeypatch.setattr(_reduce, "ARG_UNROLL", unroll)
    h = np.zeros(n, np.float64)
    h[n // 3] = h[n - 1] = 5.0  # a tie across chunks: the first index wins
    h[n // 2] = h[1 if n > 1 else 0] = -5.0
    x = kapi.asarray(h, device=dev)
    assert int(x.argmax()) == int(h.argmax())
    assert int(x.argmin()) == int(h.argmin())
    h[n - 2] = np.nan
    x = kapi.asarray(h, device=dev)
    assert int(x.argmax()) == n - 2 and np.isnan(float(x.max()))


def test_rows_and_nan(dev, scheme):
    h = np.random.default_rng(1).uniform(-1, 1, (37, 1001))
    h[5, 700] = np.nan
    x = kapi.asarray(h, device=dev)
    np.testing.assert_allclose(x.sum(axis=1).asnumpy(), h.sum(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(x.max(axis=1).asnumpy(), h.max(axis=1))
    np.testing.assert_array_equal(x.argmin(axis=0).asnumpy(), h.argmin(axis=0))
    np.testing.assert_allclose(x.mean(axis=0).asnumpy(), h.mean(axis=0), rtol=1e-12)


def test_cpu_scheme_loads_vectors(tmp_path, monkeypatch):
    """The chunked sum's host IR loads contiguous vectors (no wrap-around selects, no
    gathers from the array): what makes it run at memory speed on the CPU driver."""
    import subprocess
    import sys

    cpu = [d for d in DEVICES if d.device_type == "cpu"]
    if not cpu:
        pytest.skip("no CPU device")
    code = (
        "import numpy as np, kapi\n"
        "x = kapi.asarray(np.ones(1 << 16, np.float32), device='cpu')\n"
        "assert float(x.sum()) == 65536.0\n"
    )
    env = dict(
        __import__("os").environ,
        KAPI_DUMP="host",
        KAPI_CACHE="0",
        PYTHONPATH=str(__import__("pathlib").Path(kapi.__file__).parents[1]),
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ir = r.stderr
    assert "define i32 @_reduce" in ir
    # (16 accumulators: the vectoriser makes 8 chains of <2 x float>; 4 before: one <4 x float>)
    assert re.search(r"load <(2|4|8|16) x float>, <\1 x float> addrspace\(1\)\*", ir)


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "strided"])
def test_reduction_kernels_finalise_to_ptx(tmp_path, monkeypatch, chunked):
    """Both schemes' kernels go through the NVPTX finaliser and ptxas (the strided one is
    what the CUDA device runs; this machine's CPU device generates it when told to)."""
    import shutil
    import subprocess
    from pathlib import Path

    from nvptx_util import ptx_of

    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    libdevice = Path(ptxas).resolve().parents[1] / "nvvm" / "libdevice" / "libdevice.10.bc"
    if not libdevice.is_file():
        pytest.skip(f"the CUDA toolkit (ptxas, libdevice) is not installed: {libdevice}")
    monkeypatch.setattr(_reduce, "_chunked", lambda x: chunked)
    monkeypatch.setattr(_reduce, "_KERNELS", {})
    cpu = DEVICES[0]
    x = kapi.asarray(np.random.default_rng(2).uniform(-1, 1, (3, 5000)), device=cpu)
    for op in ("sum", "prod", "min", "max", "argmin", "argmax", "any", "all"):
        getattr(x, op)(axis=1).asnumpy()
    (x > 0).sum().asnumpy()
    ((x * 2 - 1) ** 2).sum(axis=1).asnumpy()  # a lazy expression read inside the reduction
    (x.T > 0.5).any(axis=0).asnumpy()
    for op in ("sum", "max", "argmin", "all"):  # GPUs: the column kernel (rows across memory)
        getattr(x if op != "all" else x > 0, op)(axis=0).asnumpy()
    spirvs = [ck.spirv for k in _reduce._KERNELS.values() for ck in k.overloads.values()]
    assert len(spirvs) >= 10
    for n, spirv in enumerate(spirvs):
        path = tmp_path / f"r{n}.ptx"
        path.write_text(ptx_of(spirv, libdevice))
        r = subprocess.run(
            [ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / f"r{n}.cubin")],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr


def test_reductions_read_lazy_expressions(dev, scheme):
    """A reduction of a pending (lazy) expression computes it as it reads (no elementwise
    kernel, no temporary; the pending array stays pending), on both schemes; a leaf that
    cannot be seen as (rows, n) falls back to evaluating first. Results as NumPy's."""
    from kapi._numeric import lazy as _lazy

    rng = np.random.default_rng(5)
    a, b = rng.uniform(-1, 1, (40, 30)), rng.uniform(-1, 1, (40, 30))
    x, y = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    p = (x - y) ** 2
    assert float(p.sum()) == pytest.approx(((a - b) ** 2).sum(), rel=1e-12)
    np.testing.assert_allclose(p.mean(axis=0).asnumpy(), ((a - b) ** 2).mean(axis=0))
    np.testing.assert_allclose(p.max(axis=1).asnumpy(), ((a - b) ** 2).max(axis=1))
    q = x.T * 2 + y.T  # strided leaves
    np.testing.assert_array_equal(q.argmax(axis=1).asnumpy(), (a.T * 2 + b.T).argmax(axis=1))
    assert int((x > y).sum()) == int((a > b).sum())
    assert bool((x > 5).any()) is False and bool((x < 5).all()) is True
    h8 = (a * 100).astype(np.int8)
    i8 = kapi.asarray(h8, device=dev)
    assert int((i8 + i8).sum()) == int((h8 + h8).sum())  # int8 wraps, then sums in int64
    assert type(p) is _lazy._Pending and type(q) is _lazy._Pending  # never evaluated
    c = kapi.asarray(rng.uniform(-1, 1, 30), device=dev)
    r = x * c  # c broadcast: not one stride over all of x; x * c is evaluated first
    assert float(r.sum()) == pytest.approx((a * c.asnumpy()).sum(), rel=1e-12)
    assert type(r) is not _lazy._Pending
    r = x * c
    np.testing.assert_allclose(r.sum(axis=1).asnumpy(), (a * c.asnumpy()).sum(axis=1))
    assert type(r) is _lazy._Pending  # per row, c is one stride: read inside the reduction


CASES = [
    ((37, 1001), 0),
    ((1 << 16, 2), 0),
    ((3000, 5), 0),
    ((1001, 37), 0),
    ((300, 3), 0),
    ((5, 6, 7), (0, 1)),
    ((4, 9, 700), 0),
    ((300, 2000), 0),  # GPUs: the partials folded by the column kernel too
    ((9, 512), 0),  # the CPU driver: rows in whole groups of 256, none left over
    ((3, 4, 600), (0, 1)),  # and 600 = two groups and 88 left over
]


@pytest.mark.parametrize("shape,axis", CASES)
def test_reductions_across_memory(dev, scheme, monkeypatch, shape, axis):
    """Reductions over an outer axis (rows across memory) read the array in place, by a
    column kernel (neighbouring work-items, neighbouring rows; parts folded by a second
    launch): on GPUs strided parts, on the CPU driver contiguous blocks of rows, its rows in
    whole groups and those left over in a launch of their own; both as NumPy."""
    launches = []
    name = "_launch_cols" if scheme == "strided" else "_launch_cols_cpu"
    real = getattr(_reduce, name)
    monkeypatch.setattr(_reduce, name, lambda *a, **k: launches.append(a[3]) or real(*a, **k))
    rng = np.random.default_rng(len(shape) * 100 + shape[0])
    h = rng.uniform(-1, 1, shape)
    h.flat[17] = np.nan
    h.flat[5] = h.flat[shape[-1] + 5] = 7.0  # a tie in one column: the first row wins
    x = kapi.asarray(h, device=dev)
    tol = 1e-14 * h.size  # (a column sum near 0 loses its relative precision)
    got = x.sum(axis=axis).asnumpy()
    np.testing.assert_allclose(got, h.sum(axis=axis), rtol=1e-12, atol=tol)
    np.testing.assert_array_equal(x.max(axis=axis).asnumpy(), h.max(axis=axis))
    np.testing.assert_array_equal(x.min(axis=axis).asnumpy(), h.min(axis=axis))
    if isinstance(axis, int):
        np.testing.assert_array_equal(x.argmax(axis=axis).asnumpy(), h.argmax(axis=axis))
        np.testing.assert_array_equal(x.argmin(axis=axis).asnumpy(), h.argmin(axis=axis))
    b = h > 0.5
    xb = kapi.asarray(b, device=dev)
    np.testing.assert_array_equal(xb.any(axis=axis).asnumpy(), b.any(axis=axis))
    np.testing.assert_array_equal(xb.all(axis=axis).asnumpy(), b.all(axis=axis))
    i = np.nan_to_num(h * 100).astype(np.int8)
    np.testing.assert_array_equal(
        kapi.asarray(i, device=dev).sum(axis=axis).asnumpy(), i.sum(axis=axis)
    )
    got = x.mean(axis=axis, keepdims=True).asnumpy()
    want = h.mean(axis=axis, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=tol * want.size / h.size)
    f = np.asfortranarray(h)  # F order: the same axis now lies along memory
    np.testing.assert_allclose(
        kapi.asarray(f, device=dev).sum(axis=axis).asnumpy(), h.sum(axis=axis)
    )
    assert launches  # the column kernel ran (no transposed copy)


def test_gpu_group_count_stays_within_cuda_grid_limits():
    """CUDA reports 64 compute units per SM (8448 on an H100): the groups of a 2^28-element
    sum must still fit one grid dimension (65535) -- they once asked for 65536."""
    from types import SimpleNamespace

    from kapi._numeric import reduce as _reduce

    gpu = SimpleNamespace(device=SimpleNamespace(max_compute_units=8448, device_type="gpu"))
    for rows in (1, 3, 1000):
        g, wg = _reduce._groups(gpu, 1 << 28, rows)
        assert wg == _reduce._WG
        assert 1 <= g * rows <= max(rows, _reduce._GPU_ROW_GROUPS) and g <= 65535


ARG_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "f4", "f8"]


@pytest.mark.parametrize("dt", ARG_DTYPES)
@pytest.mark.parametrize("n", [1, 127, 256, 257, 4099, (1 << 17) + 5])
def test_chunked_extremes_every_dtype(dev, dt, n):
    """The CPU scheme's wide accumulators (32 of 4 bytes, 16 of 8) and its argmin/argmax by
    blocks (the block's extreme, then its first index) at sizes around a block (256 elements
    of 4 bytes, 128 of 8) and a chunk: values in a small range, so ties across blocks and
    chunks are many and the first occurrence must win, as NumPy's."""
    rng = np.random.default_rng(n)
    h = rng.integers(0, 7, n).astype(dt)
    x = kapi.asarray(h, device=dev)
    assert x.max().asnumpy() == h.max() and x.min().asnumpy() == h.min()
    assert int(x.argmax()) == int(h.argmax()) and int(x.argmin()) == int(h.argmin())
    if n > 300 and dt != "bool":  # the extremes once, late in a later block
        h[n - 3] = 9
        h[n - 200] = 0 if np.dtype(dt).kind == "u" else -1
        h[n - 100] = 0 if np.dtype(dt).kind == "u" else -1
        x = kapi.asarray(h, device=dev)
        assert int(x.argmax()) == n - 3 == int(h.argmax())
        assert int(x.argmin()) == int(h.argmin()) and x.min().asnumpy() == h.min()


@pytest.mark.parametrize("dt", ["f4", "f8"])
@pytest.mark.parametrize("n", [5, 300, 4099, (1 << 17) + 5])
def test_chunked_extremes_nan_and_infinities(dev, dt, n):
    """NaN wins min/max/argmin/argmax at its first occurrence, as in NumPy, wherever it
    falls (first block, a later block, the tail); arrays all -inf or all +inf give index 0."""
    rng = np.random.default_rng(n + 1)
    for pos in sorted({0, n // 3, n - 1}):
        h = rng.uniform(-1, 1, n).astype(dt)
        h[pos] = np.nan
        h[min(n - 1, pos + 1 + n // 5)] = np.nan  # a later NaN does not take the index
        x = kapi.asarray(h, device=dev)
        assert int(x.argmax()) == int(h.argmax()) == pos
        assert int(x.argmin()) == int(h.argmin()) == pos
        assert np.isnan(float(x.max())) and np.isnan(float(x.min()))
    for v in (-np.inf, np.inf):
        h = np.full(n, v, dt)
        x = kapi.asarray(h, device=dev)
        assert int(x.argmax()) == 0 and int(x.argmin()) == 0
        assert float(x.max()) == v == float(x.min())


@pytest.mark.parametrize("rows", [2, 5, 256, 300])
def test_cpu_columns_in_parts(dev, monkeypatch, rows):
    """The CPU column kernel splits a long reduced axis into contiguous parts (few columns:
    every core gets some) and folds the partials with a second launch: ties and NaN across
    parts keep NumPy's first occurrence, -0.0 and 0.0 as NumPy, integers exactly."""
    monkeypatch.setattr(_reduce, "_chunked", lambda x: True)
    parts = []
    real = _reduce._launch_cols_cpu
    monkeypatch.setattr(
        _reduce, "_launch_cols_cpu", lambda *a, **k: parts.append(a[3]) or real(*a, **k)
    )
    n = 20000
    h = np.random.default_rng(rows).uniform(-1, 1, (n, rows))
    h[n - 7, :] = 3.0  # a tie across parts: row 11 (below) comes first
    h[11, :] = 3.0
    h[n // 2, 0] = np.nan  # NaN in a middle part wins max and argmax (and the later tie)
    h[n - 3, -1] = -5.0
    h[7, -1] = -5.0
    x = kapi.asarray(h, device=dev)
    np.testing.assert_array_equal(x.argmax(axis=0).asnumpy(), h.argmax(axis=0))
    np.testing.assert_array_equal(x.argmin(axis=0).asnumpy(), h.argmin(axis=0))
    np.testing.assert_array_equal(x.max(axis=0).asnumpy(), h.max(axis=0))
    np.testing.assert_array_equal(x.min(axis=0).asnumpy(), h.min(axis=0))
    np.testing.assert_allclose(x.sum(axis=0).asnumpy(), h.sum(axis=0), rtol=1e-10, atol=1e-9)
    assert parts[0] > 1 and parts[-1] == 1  # split, then the partials' pass
    i = np.nan_to_num(h * 50).astype(np.int8)
    np.testing.assert_array_equal(kapi.asarray(i, device=dev).sum(axis=0).asnumpy(), i.sum(0))
    z = np.zeros((n, rows), np.float32)
    z[: n // 2] = -0.0
    np.testing.assert_array_equal(
        np.signbit(kapi.asarray(z, device=dev).max(axis=0).asnumpy()), np.signbit(z.max(0))
    )


@pytest.mark.parametrize("shape", [(5000, 16), (70000, 3), (300, 700), (3, 100000)])
def test_cpu_short_rows_a_work_item_each(dev, monkeypatch, shape):
    """The CPU driver gives the rows of a reduction together as many work-items as one long
    row gets: many short rows a work-item each (no group reduction), long rows a group or
    more; rows past a grid dimension's 65535 in several launches. All as NumPy."""
    monkeypatch.setattr(_reduce, "_chunked", lambda x: True)
    rows, n = shape
    h = np.random.default_rng(n).uniform(-1, 1, shape).astype(np.float32)
    h[:, n // 2] = h[:, n - 1] = 2.0  # ties: the first wins
    h[rows // 2, n - 1] = np.nan
    x = kapi.asarray(h, device=dev)
    np.testing.assert_array_equal(x.argmax(axis=1).asnumpy(), h.argmax(axis=1))
    np.testing.assert_array_equal(x.max(axis=1).asnumpy(), h.max(axis=1))
    np.testing.assert_array_equal(x.argmin(axis=1).asnumpy(), h.argmin(axis=1))
    np.testing.assert_allclose(x.sum(axis=1).asnumpy(), h.sum(axis=1), rtol=1e-4, atol=1e-3)
    b = h > 0.99
    np.testing.assert_array_equal(kapi.asarray(b, device=dev).any(axis=1).asnumpy(), b.any(1))
    groups, wg = _reduce._groups(x, n, rows)
    items = groups * wg * rows
    one_row = _reduce._groups(x, 1 << 30)
    assert items < one_row[0] * one_row[1] + rows  # the rows together: one long row's
    assert wg * _reduce._CPU_PER_ITEM <= max(n, _reduce._CPU_PER_ITEM)  # each folds enough


@pytest.mark.parametrize("solo", [True, False], ids=["solo", "groups-of-one"])
@pytest.mark.parametrize("shape", [(4099, 1), (4099, 16), (5000, 37), (4161, 300)])
def test_cpu_rows_a_work_item_alone(dev, monkeypatch, solo, shape):
    """Rows a work-item each on the CPU driver: solo (groups of several rows, no group
    collectives, the rows left over in a last group of their own) and, switched off, a group
    of one work-item a row with its group reductions; both as NumPy. argmax/argmin's elements
    after whole blocks (all of a short row's) are folded by value and searched: the extreme
    there, tied with a block's, NaN there and in a block; -0.0; int8 at its identity; bools;
    a lazy expression read inside the reduction."""
    monkeypatch.setattr(_reduce, "_chunked", lambda x: True)
    monkeypatch.setattr(_reduce, "_CPU_GROUPS_PER_UNIT", 1)  # rows enough on any machine
    monkeypatch.setattr(_reduce, "_CPU_ARG_GROUPS_PER_UNIT", 1)
    monkeypatch.setattr(_reduce, "_CPU_PER_ITEM", 1 << 20)  # and long rows a work-item too
    monkeypatch.setattr(_reduce, "_CPU_SOLO", solo)
    _replay.clear_plans()
    srcs = []
    real = _reduce._kernel
    monkeypatch.setattr(_reduce, "_kernel", lambda src, *a: srcs.append(src) or real(src, *a))
    rows, n = shape
    rng = np.random.default_rng(n)
    h = rng.uniform(-1, 1, shape)
    h[0, n - 1] = 5.0  # the extreme in the tail
    h[1, [min(3, n - 1), n - 1]] = 5.0  # a tie: the first wins
    h[2, n - 1] = np.nan  # NaN in the tail
    h[3, [0, n - 1]] = np.nan  # NaN first, and again in the tail
    h[4, :] = -0.0
    h[4, n // 2] = 0.0
    h[rows - 1, n - 1] = -7.0  # the last row: in the group of the rows left over
    for dt in (np.float64, np.float32):
        a = h.astype(dt)
        x = kapi.asarray(a, device=dev)
        for op in ("argmax", "argmin", "max", "min"):
            got = getattr(x, op)(axis=1).asnumpy()
            np.testing.assert_array_equal(got, getattr(a, op)(axis=1), err_msg=f"{dt} {op}")
        assert np.array_equal(np.signbit(x.max(axis=1).asnumpy()), np.signbit(a.max(axis=1)))
        np.testing.assert_allclose(x.sum(axis=1).asnumpy(), a.sum(axis=1), rtol=1e-4, atol=1e-4)
        lazy = (x * 2 - 1).max(axis=1).asnumpy()
        np.testing.assert_array_equal(lazy, (a * 2 - 1).max(axis=1))
    i = np.full(shape, -128, np.int8)  # every element the identity of max
    i[::3, n // 2] = 5
    xi = kapi.asarray(i, device=dev)
    np.testing.assert_array_equal(xi.argmax(axis=1).asnumpy(), i.argmax(axis=1))
    np.testing.assert_array_equal(xi.max(axis=1).asnumpy(), i.max(axis=1))
    np.testing.assert_array_equal(xi.sum(axis=1).asnumpy(), i.sum(axis=1))
    b = h > 0.9
    xb = kapi.asarray(b, device=dev)
    np.testing.assert_array_equal(xb.any(axis=1).asnumpy(), b.any(axis=1))
    np.testing.assert_array_equal(xb.argmax(axis=1).asnumpy(), b.argmax(axis=1))
    assert _reduce._groups(x, n, rows) == (1, 1)  # the case this test is about
    collectives = [s for s in srcs if "reduce_over_group" in s]
    assert (not collectives) == solo, len(collectives)
    if dev.device_type == "cpu":  # (a GPU's thousands of units: a row a group, none left)
        assert len(_reduce._row_blocks(rows, True, dev.max_compute_units)) == 2  # rows left over


@pytest.mark.parametrize("block", [8, 0], ids=["blocks", "elements"])
@pytest.mark.parametrize("shape", [(7, 300), (8, 16), (1003, 40), (20000, 3)])
def test_cpu_column_arg_blocks(dev, monkeypatch, block, shape):
    """The CPU column kernel's argmin/argmax in blocks of 8 (folded by value, the index
    searched in the block that first held the extreme) and element by element: the extreme in
    a later block tied with an earlier one, in the elements after the last whole block, NaN
    there and in a block, a column all -inf (the identity), int8 at its identity; as NumPy."""
    monkeypatch.setattr(_reduce, "_chunked", lambda x: True)
    monkeypatch.setattr(_reduce, "_CPU_COLS_ARG_BLOCK", block)
    monkeypatch.setattr(_reduce, "_CPU_COLS_ARG_MIN", 1)
    _replay.clear_plans()
    srcs = []
    real = _reduce._kernel
    monkeypatch.setattr(_reduce, "_kernel", lambda src, *a: srcs.append(src) or real(src, *a))
    n, cols = shape  # reduced along axis 0: n elements a column
    h = np.random.default_rng(n).uniform(-1, 1, shape)
    h[[min(9, n - 1), n - 1], 0] = 4.0  # a tie: the first wins
    h[n - 1, 1] = 6.0  # the extreme last (after the whole blocks when n % 8)
    h[[n // 2, n - 1], 2] = np.nan  # NaN first in a block, again at the end
    h[:, 3 % cols] = -np.inf if cols > 3 else h[:, 3 % cols]
    h[n - 1, cols - 1] = -9.0
    for dt in (np.float64, np.float32):
        a = h.astype(dt)
        x = kapi.asarray(a, device=dev)
        for op in ("argmax", "argmin"):
            got = getattr(x, op)(axis=0).asnumpy()
            np.testing.assert_array_equal(got, getattr(a, op)(axis=0), err_msg=f"{dt} {op}")
    i = np.full(shape, -128, np.int8)
    i[n // 2 :: 5, ::2] = 7
    xi = kapi.asarray(i, device=dev)
    np.testing.assert_array_equal(xi.argmax(axis=0).asnumpy(), i.argmax(axis=0))
    np.testing.assert_array_equal(xi.argmin(axis=0).asnumpy(), i.argmin(axis=0))
    blocked = [s for s in srcs if "_reduce_cols_cpu" in s and "accb" in s]
    assert bool(blocked) == bool(block)
