"""argmin/argmax against NumPy's answers on every device, with both first-pass schemes of
kapi/_numeric/reduce.py ("blocks": values folded as min/max, the index found once per
block or step; "pairs": (value, index) pairs element by element) and both layouts (the CPU
driver's contiguous chunks, the GPUs' strided parts): the first NaN wins, ties keep the
first index (across blocks, chunks and work-groups), -0.0 equals 0.0, all-equal and
all-infinite arrays, integer and bool types, sizes that are no multiple of a block."""

import re

import numpy as np
import pytest
from kapi_testing import devices_or_skip, host_ir_of, import_reduce_with

import kapi
from kapi._numeric import reduce as _reduce
from kapi._numeric import replay as _replay

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@pytest.fixture(params=["chunked", "strided"])
def layout(request, monkeypatch):
    monkeypatch.setattr(_reduce, "_chunked", lambda x: request.param == "chunked")
    _replay.clear_plans()
    yield request.param
    _replay.clear_plans()


@pytest.fixture(params=["blocks", "pairs", "keys"])
def scheme(request, monkeypatch):
    monkeypatch.setattr(_reduce, "ARG_SCHEME", request.param)
    _replay.clear_plans()
    yield request.param
    _replay.clear_plans()


# 1, under a block, a block (256 float32 on the CPU driver), odd sizes, several groups
SIZES = [1, 5, 255, 256, 257, 4097, 3 * 65536 + 17]


def _both(x, h, what=""):
    for op in ("argmax", "argmin"):
        got, want = int(getattr(x, op)()), int(getattr(h, op)())
        assert got == want, (op, what, h.dtype, h.size, got, want)


def _positions(n):
    """Indices where planted extremes go: the ends, block (256, 128) and chunk boundaries,
    and spread through the array."""
    ps = {0, n - 1, n // 2, n // 3, 127, 128, 255, 256, 511, 512, 32767, 32768, 65536, n - 257}
    return sorted(p for p in ps if 0 <= p < n)


@pytest.mark.parametrize("n", SIZES)
def test_float32_ties_nan_zero_sign(dev, layout, scheme, n):
    rng = np.random.default_rng(n)
    base = rng.uniform(-1, 1, n).astype(np.float32)
    pos = _positions(n)
    # ties: the same extreme at every position, the first index wins
    h = base.copy()
    h[pos] = 7.0
    h[pos[::-1][: max(1, len(pos) // 2)]] = -7.0
    _both(kapi.asarray(h, device=dev), h, "ties")
    # all equal (the first element), all -inf (argmax: 0), all +inf (argmin: 0)
    for fill in (0.5, -np.inf, np.inf):
        h = np.full(n, fill, np.float32)
        _both(kapi.asarray(h, device=dev), h, f"all {fill}")
    # -0.0 equals 0.0: the first of either is the extreme
    h = np.zeros(n, np.float32)
    h[: n // 2] = -0.0
    _both(kapi.asarray(h, device=dev), h, "-0.0 first")
    h = -h
    _both(kapi.asarray(h, device=dev), h, "0.0 first")
    # NaN: the first one wins, wherever the extremes are
    for p in (pos[0], pos[len(pos) // 2], pos[-1]):
        h = base.copy()
        h[pos] = 7.0
        h[p] = np.nan
        h[min(n - 1, p + 3)] = np.nan
        _both(kapi.asarray(h, device=dev), h, f"NaN at {p}")


@pytest.mark.parametrize(
    "dtype", ["float64", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "bool"]
)
@pytest.mark.parametrize("n", [257, 3 * 65536 + 17])
def test_other_dtypes(dev, layout, dtype, n):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(n + dt.itemsize)
    if dt == np.bool_:
        h = rng.random(n) < 0.5
    elif dt.kind == "f":
        h = rng.uniform(-1, 1, n).astype(dt)
    else:
        info = np.iinfo(dt)
        h = rng.integers(max(info.min, -100), min(info.max, 100), n, dtype=dt, endpoint=True)
    _both(kapi.asarray(h, device=dev), h, "random")
    if dt != np.bool_:
        # the type's own extremes, tied at boundaries; then all equal
        hi = np.finfo(dt).max if dt.kind == "f" else np.iinfo(dt).max
        lo = np.finfo(dt).min if dt.kind == "f" else np.iinfo(dt).min
        pos = _positions(n)
        h[pos[1:]] = hi
        h[pos[2:-1]] = lo
        _both(kapi.asarray(h, device=dev), h, "type extremes")
    h = np.zeros(n, dt)
    _both(kapi.asarray(h, device=dev), h, "all equal")
    if dt.kind == "f":
        h[[n - 5, 3]] = np.nan
        _both(kapi.asarray(h, device=dev), h, "NaN")


def test_axis_keepdims_and_rows(dev, layout, scheme):
    rng = np.random.default_rng(7)
    h = rng.uniform(-1, 1, (37, 1001)).astype(np.float32)
    h[5, 700] = h[5, 900] = np.nan
    h[6, 3] = h[6, 999] = 5.0  # a tie within a row
    h[:, 500] = h[:, 200]  # ties across each row
    x = kapi.asarray(h, device=dev)
    for op in ("argmax", "argmin"):
        for axis in (0, 1, -1):
            for keepdims in (False, True):
                got = getattr(x, op)(axis=axis, keepdims=keepdims).asnumpy()
                want = getattr(h, op)(axis=axis, keepdims=keepdims)
                assert got.shape == want.shape and got.dtype == want.dtype
                np.testing.assert_array_equal(got, want, err_msg=f"{op} axis={axis}")


def test_lazy_expression(dev, layout, scheme):
    """The argument of a pending expression, computed as the reduction reads it (the blocks
    scheme's search reads the expression again)."""
    rng = np.random.default_rng(8)
    a = rng.uniform(-1, 1, 70001)
    b = rng.uniform(-1, 1, 70001)
    x, y = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    assert int(((x - y) ** 2).argmax()) == int(((a - b) ** 2).argmax())
    assert int((x * y).argmin()) == int((a * b).argmin())


def test_empty_raises(dev, scheme):
    e = kapi.asarray(np.zeros(0, np.float32), device=dev)
    for op in ("argmax", "argmin"):
        with pytest.raises(ValueError, match=f"attempt to get {op} of an empty sequence"):
            getattr(e, op)()


def test_bad_scheme_switch_is_refused():
    r = import_reduce_with("KAPI_REDUCE_ARG", "fast")
    assert r.returncode != 0
    assert "KAPI_REDUCE_ARG must be 'blocks', 'pairs' or 'keys', not 'fast'" in r.stderr


def test_cpu_blocks_load_vectors():
    """The CPU driver's argmax kernel (blocks scheme) folds its blocks with contiguous vector
    loads, as max does (no gathers: its indices need no wrap-around), which is what makes
    it run near max's speed."""
    if not any(d.device_type == "cpu" for d in DEVICES):
        pytest.skip("no CPU device")
    code = (
        "import numpy as np, kapi\n"
        "x = kapi.asarray(np.arange(1 << 16, dtype=np.float32), device='cpu')\n"
        "assert int(x.argmax()) == 65535\n"
    )
    ir = host_ir_of(code, KAPI_REDUCE_ARG="blocks")
    first = ir.split("define i32 @_reduce")[1]  # the first pass (compiled first)
    # (32 accumulators: <32 x float>, two vectors of 16 on AVX-512)
    assert re.search(r"load <(16|32) x float>, <\1 x float> addrspace\(1\)\*", first)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_all_type_extremes(dev, layout, scheme, dtype):
    """Every element the type's minimum (argmax: 0) or maximum (argmin: 0): no block beats
    the identity, and the first is still the answer."""
    info = np.iinfo(dtype)
    n = 3 * 65536 + 17
    for fill in (info.min, info.max):
        h = np.full(n, fill, dtype)
        _both(kapi.asarray(h, device=dev), h, f"all {fill}")


@pytest.mark.parametrize("arg_scheme", ["blocks", "keys"])
def test_gpu_kernels_finalise_to_ptx(tmp_path, monkeypatch, arg_scheme):
    """The strided (GPU) arg-reduction kernels of both new schemes go through the NVPTX
    finaliser and ptxas for sm_90 (this machine's CPU device generates them when told to)."""
    import shutil
    import subprocess
    from pathlib import Path

    from nvptx_util import ptx_of

    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    libdevice = Path(ptxas).resolve().parents[1] / "nvvm" / "libdevice" / "libdevice.10.bc"
    if not libdevice.is_file():
        pytest.skip(f"the CUDA toolkit (ptxas, libdevice) is not installed: {libdevice}")
    monkeypatch.setattr(_reduce, "_chunked", lambda x: False)
    monkeypatch.setattr(_reduce, "ARG_SCHEME", arg_scheme)
    monkeypatch.setattr(_reduce, "_KERNELS", {})
    _replay.clear_plans()
    cpu = DEVICES[0]
    for dt in (np.float32, np.int32):
        h = np.random.default_rng(2).uniform(-9, 9, 50000).astype(dt)
        x = kapi.asarray(h, device=cpu)
        assert int(x.argmax()) == int(h.argmax()) and int(x.argmin()) == int(h.argmin())
    _replay.clear_plans()
    names = {k.py_func.__name__ for k in _reduce._KERNELS.values()}
    assert ("_reduce_keys" in names) == (arg_scheme == "keys"), names
    spirvs = [ck.spirv for k in _reduce._KERNELS.values() for ck in k.overloads.values()]
    assert len(spirvs) >= 4
    for n, spirv in enumerate(spirvs):
        path = tmp_path / f"r{n}.ptx"
        path.write_text(ptx_of(spirv, libdevice))
        r = subprocess.run(
            [ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / f"r{n}.cubin")],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr


CPU_DEVICES = [d for d in DEVICES if d.device_type == "cpu"]


@pytest.fixture(params=["lanes", "before", "defer"])
def cpu_settings(request, monkeypatch):
    """The CPU driver's reduction settings now ("lanes": each accumulator lane keeps its
    extreme and block, 128 bytes of accumulators), before (KAPI_REDUCE_CPU=before) and lanes
    with the block searched once per group ("defer", _CPU_ARG_DEFER), in one process as
    bench/argred.py switches them: the same answers from all."""
    if not CPU_DEVICES:
        pytest.skip("no CPU device")
    for k, v in _reduce.CPU_SETTINGS["before" if request.param == "before" else "lanes"].items():
        monkeypatch.setattr(_reduce, k, v)
    monkeypatch.setattr(_reduce, "_CPU_ARG_DEFER", request.param == "defer")
    monkeypatch.setattr(_reduce, "ARG_SCHEME", "blocks")
    _reduce._src_for.cache_clear()
    _replay.clear_plans()
    yield request.param
    _reduce._src_for.cache_clear()
    _replay.clear_plans()


def _lane_cases(n, dt):
    """Arrays aimed at the lanes scheme (blocks of 256 elements, 32 or 16 lanes): the extreme
    reached by different lanes in different blocks (the earlier block wins, whatever the
    lane), by one lane twice, NaN in the first block, the last block, the tail after the last
    whole block and in several lanes, -0.0 beside 0.0, all equal, many ties."""
    rng = np.random.default_rng(n + dt.itemsize)
    fl = dt.kind == "f"
    if dt == np.bool_:
        base = np.zeros(n, dt)
        hi = lo = None
    elif fl:
        base = rng.uniform(-1, 1, n).astype(dt)
        hi, lo = dt.type(3), dt.type(-3)
    else:
        base = rng.integers(10, 20, n).astype(dt)
        hi, lo = dt.type(50), dt.type(1)
    out = [("base", base)]
    few = rng.integers(0, 3, n).astype(dt)  # ties everywhere
    out.append(("ties", few))
    if hi is not None:
        for a, b in ((300, 40), (40, 300), (257, 600), (n - 1, n - 2), (5, 5 + 256)):
            if 0 <= min(a, b) and max(a, b) < n:
                h = base.copy()
                h[[a, b]] = hi
                h[[n - 1 - a, n - 1 - b]] = lo
                out.append((f"extremes at {a}, {b}", h))
    if fl:
        last_block = (n // 256) * 256 - 1
        for ps in ([0], [n - 1], [last_block, 3], [n // 2 + 7, n // 3, n // 3 + 1], [700, 20]):
            ps = [p for p in ps if 0 <= p < n]
            if ps:
                h = base.copy()
                h[ps] = np.nan
                out.append((f"NaN at {ps}", h))
        z = np.zeros(n, dt)
        z[rng.random(n) < 0.5] = -0.0
        out.append(("signed zeros", z))
        out.append(("all -inf", np.full(n, -np.inf, dt)))
        out.append(("all +inf", np.full(n, np.inf, dt)))
    out.append(("all equal", np.full(n, 1, dt)))
    return out


@pytest.mark.parametrize("one_group", [False, True], ids=["groups", "one-group"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("n", [1, 31, 256, 257, 511, 4097, 3 * 65536 + 17])
def test_cpu_lanes_against_numpy(cpu_settings, dtype, n, one_group, monkeypatch):
    """one_group: one work-group per row, so each work-item's chunk spans many blocks (up to
    48 here; with a group per core a small machine's chunks hold one or two)."""
    if one_group:
        monkeypatch.setattr(_reduce, "_MAX_GROUPS", 1)
    dt = np.dtype(dtype)
    for what, h in _lane_cases(n, dt):
        x = kapi.asarray(h, device=CPU_DEVICES[0])
        _both(x, h, f"{cpu_settings}: {what}")


def test_cpu_lanes_rows_axis(cpu_settings):
    """Rows of a 2-D array (each row its own chunks): NaN, ties and extremes per row."""
    rng = np.random.default_rng(9)
    h = rng.integers(0, 4, (6, 70001)).astype(np.float32)
    h[1, [5, 69000]] = np.nan
    h[2, 66000] = 9.0
    h[3, :] = 0.0
    h[4, 300] = -9.0
    x = kapi.asarray(h, device=CPU_DEVICES[0])
    for op in ("argmax", "argmin"):
        for axis, keepdims in ((1, False), (1, True), (0, False), (None, False)):
            got = getattr(x, op)(axis=axis, keepdims=keepdims)
            want = getattr(h, op)(axis=axis, keepdims=keepdims)
            np.testing.assert_array_equal(np.asarray(got.asnumpy()), want, err_msg=op)


def test_cpu_settings_switch_the_kernels(cpu_settings):
    """The switch changes the generated kernels (lanes: per-lane extremes and blocks, 32
    float32 accumulators; before: one value per block, 16)."""
    src = _reduce._src_for("argmax", np.dtype(np.float32), True, True, None, "blocks")
    lanes = "s0 = j if t0 else s0" in src
    assert lanes == (cpu_settings != "before")
    assert ("acci = accb * 2" in src) == (cpu_settings == "defer")
    src = _reduce._src_for("max", np.dtype(np.float32), True, True)
    assert ("a31 = ident" in src) == (cpu_settings != "before")
    assert "a15 = ident" in src


def test_bad_cpu_switch_is_refused():
    r = import_reduce_with("KAPI_REDUCE_CPU", "fast")
    assert r.returncode != 0
    assert "KAPI_REDUCE_CPU must be 'lanes' or 'before', not 'fast'" in r.stderr
