"""argmin/argmax against NumPy's answers on every device, with both first-pass schemes of
kapi/_numeric/reduce.py ("blocks": values folded as min/max, the index found once per
block or step; "pairs": (value, index) pairs element by element) and both layouts (the CPU
driver's contiguous chunks, the GPUs' strided parts): the first NaN wins, ties keep the
first index (across blocks, chunks and work-groups), -0.0 equals 0.0, all-equal and
all-infinite arrays, integer and bool types, sizes that are no multiple of a block."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

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
    import subprocess
    import sys
    from pathlib import Path

    env = {
        "PYTHONPATH": str(Path(kapi.__file__).parents[1]),
        "KAPI_REDUCE_ARG": "fast",
        "PATH": "/usr/bin:/bin",
    }
    r = subprocess.run(
        [sys.executable, "-c", "import kapi._numeric.reduce"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0
    assert "KAPI_REDUCE_ARG must be 'blocks', 'pairs' or 'keys', not 'fast'" in r.stderr


def test_cpu_blocks_load_vectors():
    """The CPU driver's argmax kernel (blocks scheme) folds its blocks with contiguous vector
    loads, as max does (no gathers: its indices need no wrap-around), which is what makes
    it run near max's speed."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if not any(d.device_type == "cpu" for d in DEVICES):
        pytest.skip("no CPU device")
    code = (
        "import numpy as np, kapi\n"
        "x = kapi.asarray(np.arange(1 << 16, dtype=np.float32), device='cpu')\n"
        "assert int(x.argmax()) == 65535\n"
    )
    env = dict(
        os.environ,
        KAPI_DUMP="host",
        KAPI_CACHE="0",
        KAPI_REDUCE_ARG="blocks",
        PYTHONPATH=str(Path(kapi.__file__).parents[1]),
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    first = r.stderr.split("define i32 @_reduce")[1]  # the first pass (compiled first)
    assert "load <16 x float>, <16 x float> addrspace(1)*" in first


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
