"""kapi.reduce, kapi.scan, kapi.cumsum and kapi.cumprod on every device, against NumPy's
reductions and accumulations (np.<ufunc>.reduce / .accumulate, np.cumsum)."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip, import_reduce_with

import kapi

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


DTYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
]


def _data(dtype, shape, seed=0, lo=-50, hi=50):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind == "u":
        return rng.integers(0, hi, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(lo, hi, shape).astype(dt)
    return rng.uniform(-4, 4, shape).astype(dt)


def _same(got, want, rtol=None, atol=None):
    assert isinstance(got, kapi.Array)
    h = got.asnumpy()
    want = np.asarray(want)
    assert h.dtype == want.dtype, (h.dtype, want.dtype)
    assert h.shape == want.shape, (h.shape, want.shape)
    if want.dtype.kind == "f":
        tol = rtol or (1e-4 if want.dtype == np.float32 else 1e-10)
        np.testing.assert_allclose(h, want, rtol=tol, atol=atol or tol)
    else:
        np.testing.assert_array_equal(h, want)


UFUNC = {
    "add": np.add,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


@kapi.device_func
def absmax(a, b):
    return max(abs(a), abs(b))


@kapi.device_func
def left(a, b):
    return a  # associative, not commutative: a scan of it keeps the first element


@kapi.device_func
def right(a, b):
    return b


# -- reduce -----------------------------------------------------------------------------------


OP_DTYPES = [
    (op, dt)
    for op in ["add", "mul", "min", "max", "and", "or", "xor"]
    for dt in DTYPES
    if not (op in ("and", "or", "xor") and dt.startswith("float"))
]


@pytest.mark.parametrize("op, dtype", OP_DTYPES)
def test_reduce_named_ops_match_numpy(dev, op, dtype):
    dt = np.dtype(dtype)
    h = _data(dtype, 3001, seed=1, lo=-2 if op == "mul" else -50, hi=3 if op == "mul" else 50)
    if op == "mul" and dt.kind == "f":
        h = (1 + h / 400).astype(dt)
    want = UFUNC[op].reduce(h)
    _same(kapi.reduce(op, kapi.asarray(h, device=dev)), want)


def test_reduce_ufuncs_and_aliases_name_the_same_ops(dev):
    h = _data("int32", 999, seed=2)
    a = kapi.asarray(h, device=dev)
    for op in (np.add, "sum", np.minimum, "minimum", np.maximum, "prod"):
        want = (
            np.multiply
            if op == "prod"
            else np.minimum
            if op in (np.minimum, "minimum")
            else np.maximum
            if op is np.maximum
            else np.add
        ).reduce(h)
        _same(kapi.reduce(op, a), want)


@pytest.mark.parametrize("kind", ["group", "serial"])
@pytest.mark.parametrize("n", [1, 255, 256, 257, 70_001, 1_000_003])
def test_reduce_device_function_any_size(dev, monkeypatch, kind, n):
    """Both ways to reduce (work-groups: GPUs; blocks per work-item: kapi's CPU device)."""
    from kapi._numeric import primitives as _primitives

    monkeypatch.setattr(_primitives, "REDUCE", kind)
    h = _data("float64", n, seed=n)
    _same(kapi.reduce(absmax, kapi.asarray(h, device=dev)), np.abs(h).max())


@pytest.mark.parametrize("op", ["add", "max", np.minimum, "prod"])
def test_reduce_named_ops_take_the_array_methods_kernels(dev, monkeypatch, op):
    """kapi.reduce of add/mul/min/max is x.sum()/prod()/min()/max()'s reduction (one scheme,
    the tuned one); KAPI_REDUCE_VIA_METHODS=0's generic kernel gives the same values."""
    from kapi._numeric import primitives as _primitives
    from kapi._numeric import reduce as _red

    h = _data("float32", 70_001, seed=11)
    if op == "prod":
        h = (1 + h / 4000).astype(np.float32)
    a = kapi.asarray(h, device=dev)
    seen = []
    real = _red.reduce

    def spy(method, *args, **kw):
        seen.append(method)
        return real(method, *args, **kw)

    monkeypatch.setattr(_red, "reduce", spy)
    got = kapi.reduce(op, a).asnumpy()
    assert seen == [{"add": "sum", "prod": "prod", "max": "max"}.get(op, "min")]
    monkeypatch.setattr(_primitives, "VIA_METHODS", False)
    seen.clear()
    generic = kapi.reduce(op, a).asnumpy()
    assert seen == []
    ufunc = op if isinstance(op, np.ufunc) else UFUNC[{"prod": "mul"}.get(op, op)]
    np.testing.assert_allclose(got, ufunc.reduce(h), rtol=1e-4)  # float32 sums: tree orders
    np.testing.assert_allclose(generic, got, rtol=1e-4)


WIDE_SIZES = [1, 2, 31, 32, 33, 4095, 4096, 4097, 70_001, (1 << 20) + 3]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", WIDE_SIZES)
def test_reduce_cpu_blocks_of_wide_folds(dev, dtype, n):
    """kapi's CPU device folds each block with 4 to 16 accumulators (blocks shorter than
    twice that in order), at sizes around those and the block boundaries; min, max and xor
    must be exact, sums exact for integers; a device function takes the same blocks."""
    h = _data(dtype, n, seed=n)
    a = kapi.asarray(h, device=dev)
    for op in ("min", "max", "add") + (() if h.dtype.kind == "f" else ("xor", "or")):
        _same(kapi.reduce(op, a), UFUNC[op].reduce(h, dtype=UFUNC[op].reduce(h).dtype))
    if h.dtype.kind in "iuf" and h.dtype.itemsize >= 4 and n > 1:  # (one element: itself)
        _same(kapi.reduce(absmax, a), np.abs(h).max())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [40, 4097, 300_001])
def test_reduce_cpu_wide_fold_nan_anywhere(dev, dtype, n):
    """A NaN in any accumulator's lane, in a block's ordered tail or in the first element
    makes min and max NaN (np.minimum.reduce)."""
    for pos in sorted({0, 1, n // 2 + 5, n - 1}):
        h = _data(dtype, n, seed=pos)
        h[pos] = np.nan
        a = kapi.asarray(h, device=dev)
        assert np.isnan(float(kapi.reduce("max", a))) and np.isnan(float(kapi.reduce("min", a)))


def test_reduce_nan_propagates_like_numpy(dev):
    h = _data("float32", 5000, seed=3)
    h[4321] = np.nan
    a = kapi.asarray(h, device=dev)
    assert np.isnan(float(kapi.reduce("min", a)))
    assert np.isnan(float(kapi.reduce("max", a)))


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_reduce_axis_and_keepdims(dev, axis):
    h = _data("int64", (7, 300, 5), seed=4)
    a = kapi.asarray(h, device=dev)
    _same(kapi.reduce("max", a, axis=axis), np.maximum.reduce(h, axis=axis))
    _same(kapi.reduce(absmax, a, axis=axis, keepdims=True), np.abs(h).max(axis=axis, keepdims=True))
    _same(kapi.reduce("add", a, keepdims=True), h.sum(keepdims=True))


def test_reduce_strided_view_and_dtype(dev):
    h = _data("int8", (40, 60), seed=5)
    a = kapi.asarray(h, device=dev)
    _same(kapi.reduce("add", a[::3, ::-2]), np.add.reduce(h[::3, ::-2], axis=None))
    _same(kapi.reduce("add", a, dtype=np.int16), h.astype(np.int16).sum(dtype=np.int16))
    _same(kapi.reduce("max", a.T, axis=0), h.T.max(axis=0))


def test_reduce_empty_takes_identity_or_raises(dev):
    e = kapi.asarray(np.zeros(0, np.float64), device=dev)
    assert float(kapi.reduce("add", e)) == 0.0
    assert float(kapi.reduce("min", e)) == np.inf
    assert float(kapi.reduce(absmax, e, identity=0.0)) == 0.0
    with pytest.raises(ValueError, match="no identity"):
        kapi.reduce(absmax, e)
    z = kapi.asarray(np.zeros((3, 0), np.int32), device=dev)
    _same(kapi.reduce("add", z, axis=1), np.zeros(3, np.int64))


def test_reduce_bad_op_and_input():
    with pytest.raises(ValueError, match="unknown operation 'avg'"):
        kapi.reduce("avg", kapi.zeros(3))
    with pytest.raises(TypeError, match="device_func"):
        kapi.reduce(lambda a, b: a + b, kapi.zeros(3))
    with pytest.raises(TypeError, match="kapi array"):
        kapi.reduce("add", np.zeros(3))
    with pytest.raises(TypeError, match="complex"):
        kapi.reduce("add", kapi.zeros(3, dtype=np.complex64))
    with pytest.raises(np.exceptions.AxisError):
        kapi.reduce("add", kapi.zeros((2, 3)), axis=2)
    with pytest.raises(TypeError, match="one integer axis"):
        kapi.reduce("add", kapi.zeros((2, 3)), axis=(0, 1))

    @kapi.device_func
    def three(a, b, c):
        return a

    with pytest.raises(TypeError, match=r"three\(a, b, c\) must take two arguments"):
        kapi.scan(kapi.zeros(3), three)


# -- scan -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_matches_numpy(dev, dtype):
    h = _data(dtype, 5000, seed=6)
    # float32 sums round differently in a tree than sequentially: scale the tolerance
    _same(kapi.cumsum(kapi.asarray(h, device=dev)), np.cumsum(h), atol=1e-6 * np.abs(h).sum())


@pytest.mark.parametrize("dtype", ["int32", "uint16", "float64"])
def test_cumprod_matches_numpy(dev, dtype):
    h = _data(dtype, 700, seed=7, lo=-2, hi=3)
    if np.dtype(dtype).kind == "f":
        h = (1 + h / 300).astype(dtype)
    _same(kapi.cumprod(kapi.asarray(h, device=dev)), np.cumprod(h))


SIZES_KINDS = [
    (n, k) for n in (1, 256, 257, 4097, 300_001) for k in ("subgroup", "group", "serial")
]
SIZES_KINDS.append((1_200_007, None))  # the device's own scan


@pytest.mark.parametrize("n, kind", SIZES_KINDS)
def test_scan_sizes_and_exclusive(dev, monkeypatch, kind, n):
    from kapi._numeric import scan as _scan

    monkeypatch.setattr(_scan, "SCAN", kind)
    h = _data("int64", n, seed=n)
    a = kapi.asarray(h, device=dev)
    inc = np.cumsum(h)
    _same(kapi.scan(a), inc)
    _same(kapi.scan(a, "add", inclusive=False), np.concatenate([[0], inc[:-1]]))
    _same(kapi.scan(a, "max"), np.maximum.accumulate(h))
    ex = kapi.scan(a, "min", inclusive=False).asnumpy()
    assert ex[0] == np.iinfo(np.int64).max
    np.testing.assert_array_equal(ex[1:], np.minimum.accumulate(h)[:-1])


CPU_SCAN_SIZES = [4095, 4096, 4097, 5000, 64 * 1024 - 1, 300_001, (1 << 21) + 17]


# (the vec scheme, not the default, at two of the sizes and for four dtypes: 4- and 8-byte
# lanes, float and integer, a narrow input summed in 64 bits)
CPU_SCAN_CASES = [(n, "chain", dt) for n in CPU_SCAN_SIZES for dt in DTYPES]
CPU_SCAN_CASES += [
    (n, s, dt)
    for n in (4097, 300_001)
    for s in ("vec",)
    for dt in ("float32", "float64", "int32", "uint8")
]


@pytest.mark.parametrize("n, scheme, dtype", CPU_SCAN_CASES)
def test_scan_cpu_blocks(dev, monkeypatch, dtype, n, scheme):
    """The named operations' scan on kapi's CPU device (from 4096 elements), both schemes:
    "chain" (one launch: chunks by ticket, folded, their carries by look-back, scanned by
    vector tiles) and "vec" (blocks folded, their totals scanned, blocks scanned by vector
    tiles, two a work-item); sizes leave the last work-item with fewer or shorter blocks and
    a tail of single elements. Every dtype, inclusive and exclusive; NaN propagating
    through max. Plain stores at every size (the largest would stream: the streaming
    kernels' own test is test_scan_cpu_streaming_stores, and each dtype's streaming kernels
    here cost 15-20 s of compiles on 2 cores)."""
    from kapi._numeric import scan as _scan

    monkeypatch.setattr(_scan, "SCAN_CPU", scheme)
    monkeypatch.setattr(_scan, "SCAN_STREAMING", "0")
    h = _data(dtype, n, seed=n)
    a = kapi.asarray(h, device=dev)
    tol = 1e-3 if h.dtype == np.float32 else None  # float32 cumsum: NumPy sums in order too
    _same(kapi.cumsum(a), np.cumsum(h), rtol=tol, atol=tol and 1e-2 * n**0.5)
    for op in ("max", "min") + (() if h.dtype.kind == "f" else ("xor",)):
        _same(kapi.scan(a, op), UFUNC[op].accumulate(h))
        ex = kapi.scan(a, op, inclusive=False).asnumpy()
        np.testing.assert_array_equal(ex[1:], UFUNC[op].accumulate(h)[:-1])
    if h.dtype.kind == "f":
        h[n // 3] = np.nan
        got = kapi.scan(kapi.asarray(h, device=dev), "max").asnumpy()
        np.testing.assert_array_equal(got, np.maximum.accumulate(h))


@pytest.mark.parametrize("tiles, streams", [(1, 1), (2, 1), (4, 1), (2, 2), (1, 4)])
@pytest.mark.parametrize("dtype", ["float32", "int8", "int64"])
def test_scan_cpu_vec_tiles(dev, monkeypatch, dtype, tiles, streams):
    """The chain scheme (the default) with 1, 2 or 4 tiles a step and 1, 2 or 4 blocks a
    chunk: blocks whose length leaves tails from 0 to a step (n from 4096 up to a step past
    it), and n = 300,001 (a short last chunk, its later blocks empty); each element's
    inclusive and exclusive value as NumPy's (integers exactly), min and max too."""
    from kapi._numeric import scan as _scan

    if dev.device_type != "cpu":
        pytest.skip("the chain scheme is kapi's CPU device's (GPUs scan by sub-groups)")
    monkeypatch.setattr(_scan, "SCAN_CPU", "chain")
    monkeypatch.setattr(_scan, "SCAN_VEC_TILES", tiles)
    monkeypatch.setattr(_scan, "SCAN_VEC_STREAMS", streams)
    step = tiles * _scan._vec_lanes(np.dtype(dtype))
    for n in [*range(4096, 4096 + step + 2, max(1, step // 4)), 300_001]:
        h = _data(dtype, n, seed=n + tiles)  # (cumsum of int8 scans int64, as NumPy's)
        a = kapi.asarray(h, device=dev)
        tol = {"float32": 1e-4, "float64": 1e-12}.get(dtype)  # (a tree's rounding)
        _same(kapi.cumsum(a), np.cumsum(h), rtol=tol, atol=tol and 10 * tol * n**0.5)
        ex = kapi.scan(a, "add", inclusive=False).asnumpy()
        assert ex[0] == 0
        want = np.cumsum(h).astype(ex.dtype)[:-1]  # (int8 wraps in its own dtype here)
        np.testing.assert_allclose(ex[1:], want, rtol=tol or 0, atol=tol and 10 * tol * n**0.5 or 0)
        for op in ("max", "min"):
            _same(kapi.scan(a, op), UFUNC[op].accumulate(h))


@pytest.mark.parametrize("chunk", [None, 64])
def test_scan_cpu_rows(dev, monkeypatch, chunk):
    """Several rows (an axis): each row's blocks and carries are its own. With chunks of 64
    bytes (chunk), the chain scheme's chunks are one step each: hundreds a row, looking back
    over many chunks, the tickets running across the rows."""
    from kapi._numeric import scan as _scan

    if chunk and dev.device_type != "cpu":
        pytest.skip("the chain scheme's chunks are kapi's CPU device's (GPUs scan by sub-groups)")
    if chunk:
        monkeypatch.setattr(_scan, "SCAN_CHAIN_BYTES", chunk)
    h = _data("int64", (5, 9001), seed=3)
    a = kapi.asarray(h, device=dev)
    _same(kapi.cumsum(a, axis=1), np.cumsum(h, axis=1))
    _same(kapi.cumsum(a, axis=0), np.cumsum(h, axis=0))
    _same(
        kapi.scan(a, "min", axis=1, inclusive=False)[:, 1:],
        np.minimum.accumulate(h, axis=1)[:, :-1],
    )


@pytest.mark.parametrize("scheme", ["chain", "vec"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "int16"])
def test_scan_cpu_streaming_stores(dev, monkeypatch, dtype, scheme):
    """The CPU scan writing its output by streaming stores (store_nontemporal, forced on):
    the same values, 1-D (rows start 64-byte aligned: streaming vector stores) and rows of an
    odd length (most rows start unaligned: the plain stores of the host's address test), with
    hundreds of chunks and look-backs (the chain's totals published with release after the
    chunk's streaming stores)."""
    from kapi._numeric import scan as _scan

    if dev.device_type != "cpu":
        pytest.skip("streaming stores are the CPU scan's (GPUs scan by sub-groups)")
    monkeypatch.setattr(_scan, "SCAN_CPU", scheme)
    monkeypatch.setattr(_scan, "SCAN_STREAMING", "1")
    monkeypatch.setattr(_scan, "SCAN_CHAIN_BYTES", 2048)
    for shape in [(300_001,), (7, 40_003)]:
        h = _data(dtype, shape, seed=len(shape))
        a = kapi.asarray(h, device=dev)
        tol = {"float32": 1e-4, "float64": 1e-12}.get(dtype)
        n = shape[-1]
        axis = len(shape) - 1
        _same(kapi.cumsum(a, axis=axis), np.cumsum(h, axis=axis), rtol=tol,
              atol=tol and 10 * tol * n**0.5)  # fmt: skip
        _same(kapi.scan(a, "max", axis=axis), np.maximum.accumulate(h, axis=axis))
        ex = kapi.scan(a, "min", axis=axis, inclusive=False).asnumpy()
        np.testing.assert_array_equal(ex[..., 1:], np.minimum.accumulate(h, axis=axis)[..., :-1])


def test_scan_cpu_streaming_by_size(monkeypatch):
    """auto: streaming stores for outputs of at least 8 MiB and 1 MiB a core."""
    from kapi._numeric import scan as _scan

    monkeypatch.setattr(_scan, "SCAN_STREAMING", "auto")
    assert _scan._streaming(8 << 20, 2) and not _scan._streaming((8 << 20) - 1, 2)
    assert not _scan._streaming(16 << 20, 32) and _scan._streaming(32 << 20, 32)
    monkeypatch.setattr(_scan, "SCAN_STREAMING", "0")
    assert not _scan._streaming(1 << 40, 1)
    monkeypatch.setattr(_scan, "SCAN_STREAMING", "1")
    assert _scan._streaming(4, 16)


@pytest.mark.parametrize(
    "var, value, says",
    [
        ("KAPI_SCAN_CPU", "lock", "KAPI_SCAN_CPU must be 'chain' or 'vec', not 'lock'"),
        ("KAPI_SCAN_CPU_CHUNK", "0", "KAPI_SCAN_CPU_CHUNK must be a positive number of bytes"),
        (
            "KAPI_SCAN_CPU_STREAMING",
            "yes",
            "KAPI_SCAN_CPU_STREAMING must be 'auto', '0' or '1', not 'yes'",
        ),
    ],
)
def test_bad_scan_switch_is_refused(var, value, says):
    r = import_reduce_with(var, value, "kapi._numeric.scan")
    assert r.returncode != 0
    assert says in r.stderr


def test_scan_cpu_chain_threads(dev, monkeypatch):
    """The chain scheme's work-items wait for each other's chunks (a look-back): scans from
    four host threads at once, each with hundreds of chunks, all finish with the right
    values (none waits on a chunk of another launch)."""
    import threading

    from kapi._numeric import scan as _scan

    if dev.device_type != "cpu":
        pytest.skip("the chain scheme is kapi's CPU device's (GPUs scan by sub-groups)")
    monkeypatch.setattr(_scan, "SCAN_CPU", "chain")
    monkeypatch.setattr(_scan, "SCAN_CHAIN_BYTES", 1024)
    hs = [_data("int64", 100_003 + 7 * k, seed=k) for k in range(4)]
    got = [None] * 4

    def work(k):
        a = kapi.asarray(hs[k], device=dev)
        got[k] = [kapi.cumsum(a).asnumpy() for _ in range(3)]

    ts = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in ts), "a chained scan did not finish"
    for k in range(4):
        for r in got[k]:
            np.testing.assert_array_equal(r, np.cumsum(hs[k]))


@pytest.mark.parametrize("groups", [3, 4096])
@pytest.mark.parametrize("sums", ["reduce", "scan"])
def test_gpu_scan_phase_one_shapes(dev, monkeypatch, sums, groups):
    """The GPUs' scan ("subgroup") with either phase 1 (a segment's total folded as a
    reduction, in any order, for the named operations; or scanned in order) and few or many
    segments: every named operation as NumPy's, NaN propagating, the last chunk partial."""
    from kapi._numeric import scan as _scan

    monkeypatch.setattr(_scan, "SCAN", "subgroup")
    monkeypatch.setattr(_scan, "SCAN_SUMS", sums)
    monkeypatch.setattr(_scan, "SCAN_GROUPS", groups)
    n = 100_003
    h = _data("int32", n, seed=21)
    a = kapi.asarray(h, device=dev)
    _same(kapi.cumsum(a), np.cumsum(h))
    _same(kapi.scan(a, "min"), np.minimum.accumulate(h))
    _same(kapi.scan(a, "xor"), np.bitwise_xor.accumulate(h))
    _same(
        kapi.scan(a, "or", inclusive=False),
        np.concatenate([[0], np.bitwise_or.accumulate(h)[:-1]]).astype(np.int32),
    )
    _same(kapi.scan(a, "and"), np.bitwise_and.accumulate(h))
    _same(kapi.scan(a, left), np.full(n, h[0]))
    m = ((h % 3) + 1).astype(np.uint32)
    _same(
        kapi.scan(kapi.asarray(m, device=dev), "mul", dtype=np.uint32),
        np.multiply.accumulate(m).astype(np.uint32),
    )
    f = _data("float64", n, seed=22)
    f[77_777] = np.nan
    got = kapi.scan(kapi.asarray(f, device=dev), "max").asnumpy()
    np.testing.assert_array_equal(got, np.maximum.accumulate(f))
    b = _data("bool", n, seed=23)
    _same(kapi.scan(kapi.asarray(b, device=dev), "or"), np.logical_or.accumulate(b))


@pytest.mark.parametrize("items", [1, 16])
def test_gpu_scan_items_per_work_item(dev, monkeypatch, items):
    """The GPUs' scan with other run lengths per work-item (KAPI_SCAN_ITEMS): in order, with
    a partial last chunk, inclusive and exclusive."""
    from kapi._numeric import scan as _scan

    monkeypatch.setattr(_scan, "SCAN", "subgroup")
    monkeypatch.setattr(_scan, "SCAN_ITEMS", items)
    n = 70_001
    h = _data("int64", n, seed=24)
    a = kapi.asarray(h, device=dev)
    _same(kapi.cumsum(a), np.cumsum(h))
    _same(kapi.scan(a, "add", inclusive=False), np.concatenate([[0], np.cumsum(h)[:-1]]))
    _same(kapi.scan(a, right), h)


@pytest.mark.parametrize("kind", ["subgroup", "group", "serial"])
@pytest.mark.parametrize("n", [1000, 300_001])
def test_scan_keeps_operand_order(dev, monkeypatch, kind, n):
    """left/right are associative but not commutative: any reordering changes the result.
    Every way to scan (sub-groups: GPUs; work-groups; sequential blocks: kapi's CPU device)
    on every device."""
    from kapi._numeric import scan as _scan

    monkeypatch.setattr(_scan, "SCAN", kind)
    h = _data("int32", n, seed=8)
    a = kapi.asarray(h, device=dev)
    _same(kapi.scan(a, left), np.full(n, h[0]))
    _same(kapi.scan(a, right), h)
    _same(
        kapi.scan(a, right, inclusive=False, identity=np.int32(-7)),
        np.concatenate([[-7], h[:-1]]).astype(np.int32),
    )


@pytest.mark.parametrize("kind", ["subgroup", "group", "serial"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumsum_axis(dev, monkeypatch, kind, axis):
    from kapi._numeric import scan as _scan

    monkeypatch.setattr(_scan, "SCAN", kind)
    h = _data("float32", (33, 517), seed=9)
    a = kapi.asarray(h, device=dev)
    tol = 1e-6 * np.abs(h).sum()
    _same(kapi.cumsum(a, axis=axis), np.cumsum(h, axis=axis), atol=tol)
    _same(kapi.cumsum(a.T, axis=axis), np.cumsum(h.T, axis=axis), atol=tol)
    hi = _data("uint8", (4, 5, 6), seed=10)
    _same(kapi.cumsum(kapi.asarray(hi, device=dev), axis=1), np.cumsum(hi, axis=1))


def test_cumsum_dtype_out_and_edges(dev):
    h = _data("int32", 100, seed=11)
    a = kapi.asarray(h, device=dev)
    _same(kapi.cumsum(a, dtype=np.float64), np.cumsum(h, dtype=np.float64))
    out = kapi.zeros(100, dtype=np.int64, device=dev)
    assert kapi.cumsum(a, out=out) is out
    _same(out, np.cumsum(h))
    _same(kapi.cumsum(kapi.asarray(np.zeros(0, np.int64), device=dev)), np.zeros(0, np.int64))
    _same(kapi.cumsum(kapi.asarray(np.array(5.0), device=dev)), np.cumsum(np.array(5.0)))
    with pytest.raises(ValueError, match="identity"):
        kapi.scan(a, absmax, inclusive=False)
    with pytest.raises(ValueError, match="out must be"):
        kapi.cumsum(a, out=kapi.zeros(3, device=dev))


def test_device_placement_follows_the_input(dev):
    a = kapi.asarray(np.arange(10, dtype=np.int32), device=dev)
    for r in (kapi.reduce("add", a), kapi.cumsum(a), kapi.scan(a, right)):
        assert r.device == a.device


# -- the CUDA path without a GPU ----------------------------------------------------------------


def test_primitive_kernels_finalise_to_ptx(tmp_path, monkeypatch):
    """Every kernel that reduce, scan, sort/argsort (every key width, with and without
    indices), topk, unique and the random generator build goes through the NVPTX finaliser,
    and ptxas assembles it for sm_90 (the GPU run covers the launches)."""
    import shutil
    import subprocess
    from pathlib import Path

    from nvptx_util import ptx_of

    from kapi._numeric import primitives as _primitives
    from kapi._numeric import scan as _scan

    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    libdevice = Path(ptxas).resolve().parents[1] / "nvvm" / "libdevice" / "libdevice.10.bc"
    if not libdevice.is_file():
        pytest.skip(f"the CUDA toolkit (ptxas, libdevice) is not installed: {libdevice}")
    cpu = DEVICES[0]
    for dt in ("int8", "uint16", "float32", "float64"):  # every key width of the sort
        a = kapi.asarray(_data(dt, (6, 50), seed=1), device=cpu)
        kapi.sort(a)
        kapi.argsort(a.reshape(300))
        kapi.unique(a, return_counts=True)
        kapi.reduce("max", a, axis=0)
        kapi.cumsum(a)
    b = kapi.asarray(_data("int32", 600, seed=2), device=cpu)
    kapi.topk(b, 3)
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_primitives, "REDUCE", "group")  # the reductions on GPUs
    kapi.reduce("max", b)
    kapi.reduce(absmax, b)
    for kind in ("subgroup", "group"):  # the scans on GPUs
        monkeypatch.setattr(_scan, "SCAN", kind)
        kapi.cumsum(b)
        kapi.scan(b, right)
        kapi.cumsum(kapi.asarray(_data("bool", 900, seed=4), device=cpu))
    for kind in _radix.KINDS:  # every way a radix pass can scatter
        monkeypatch.setattr(_radix, "SCATTER", kind)
        kapi.argsort(b)
        kapi.sort(kapi.asarray(_data("uint64", 99, seed=3), device=cpu))
    kapi.scan(b, right, inclusive=False, identity=np.int32(0))
    kapi.reduce(absmax, b)
    g = kapi.random.default_rng(0, device=cpu)
    for staged in (False, True):  # the direct stores (CPU) and the staged ones (GPUs)
        monkeypatch.setattr(kapi.random, "STAGED", staged)
        for dt in (np.float32, np.float64):
            g.random(10, dtype=dt)
            g.standard_normal(10, dtype=dt)
    kapi.random.philox4x32(np.zeros((1, 4), np.uint32), np.zeros((1, 2), np.uint32), cpu)
    spirvs = [ck.spirv for k in _primitives._KERNELS.values() for ck in k.overloads.values()]
    assert len(spirvs) >= 30
    for n, spirv in enumerate(spirvs):
        ptx = ptx_of(spirv, libdevice)
        assert ".entry" in ptx
        path = tmp_path / f"k{n}.ptx"
        path.write_text(ptx)
        r = subprocess.run(
            [ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / f"k{n}.cubin")],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
