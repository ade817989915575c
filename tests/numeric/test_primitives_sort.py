"""kapi.sort, kapi.argsort, kapi.topk and kapi.unique (the radix sort) on every device,
against np.sort, np.argsort(kind="stable") and np.unique."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

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
    "float16",
    "float32",
    "float64",
]


def _keys(dtype, n, seed=0):
    """Full-range values with repeats; floats with NaN, +-inf, -0.0 and 0.0."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        h = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        h[::7] = h[0]  # repeats, for stability
        return h
    h = (rng.standard_normal(n) * 1000).astype(dt)
    h[::13] = np.round(h[::13] / 500)  # repeats
    h[::97] = np.nan
    h[3::101] = -np.nan  # a NaN with its sign bit set sorts last too
    h[5::89] = -np.inf
    h[6::89] = np.inf
    h[7::31] = -0.0
    h[8::31] = 0.0
    return h


def _eq(got, want):
    assert isinstance(got, kapi.Array)
    h = got.asnumpy()
    assert h.dtype == want.dtype and h.shape == want.shape, (h.dtype, h.shape, want.shape)
    np.testing.assert_array_equal(h, want)  # NaNs compare equal here


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort_match_numpy(dev, dtype):
    h = _keys(dtype, 5003, seed=1)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))


@pytest.mark.parametrize("dtype", ["uint32", "float64", "int16"])
def test_sort_large_many_chunks_per_group(dev, dtype):
    h = _keys(dtype, (1 << 21) + 3, seed=2)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))


@pytest.mark.parametrize("n", [1, 2, 255, 1024, 1025])
def test_sort_small_sizes(dev, n):
    h = _keys("int32", n, seed=n)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))


def test_sort_skips_bytes_that_never_differ(dev):
    """Small int64 values vary in one byte only; all-equal keys need no pass at all."""
    h = np.random.default_rng(3).integers(-100, 100, 9000)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))
    c = kapi.asarray(np.full(5000, 7, np.uint16), device=dev)
    _eq(kapi.sort(c), np.full(5000, 7, np.uint16))
    _eq(kapi.argsort(c), np.arange(5000))


@pytest.mark.parametrize(
    "dtype,hi", [("uint8", 256), ("uint16", 7), ("uint32", 1 << 16), ("uint64", 1 << 40),
                 ("int8", 100), ("int32", 1 << 20), ("int64", 1 << 62)]
)  # fmt: skip
def test_sort_finds_the_bits_that_vary(dev, monkeypatch, dtype, hi):
    """The keys kernel's OR of the keys and of their complements names exactly the bits in
    which the keys differ (those bytes get a pass), for every key width."""
    from kapi._numeric import sort as _sort

    seen = []
    passes = _sort._radix_passes

    def record(k, v, bits_vary, nbits, keep_input=False, hist=None, fresh=False, **kw):
        seen.append(bits_vary() if callable(bits_vary) else bits_vary)
        return passes(k, v, seen[-1], nbits, keep_input, hist, fresh, **kw)

    monkeypatch.setattr(_sort, "_radix_passes", record)
    dt = np.dtype(dtype)
    h = np.random.default_rng(4).integers(-hi if dt.kind == "i" else 0, hi, 7001).astype(dt)
    _eq(kapi.sort(kapi.asarray(h, device=dev)), np.sort(h))
    u = h.view(f"u{dt.itemsize}")
    if dt.kind == "i":
        u = u ^ u.dtype.type(1 << (8 * dt.itemsize - 1))
    want = int(np.bitwise_or.reduce(u)) & int(np.bitwise_or.reduce(~u))
    assert seen == [want]


@pytest.mark.parametrize("dtype,hi", [("bool", 2), ("uint8", 1), ("uint8", 200),
                                      ("uint32", 1 << 16), ("uint32", 1 << 32)])  # fmt: skip
def test_unsigned_sort_leaves_its_input_alone(dev, dtype, hi):
    """An ascending sort of unsigned keys radix-sorts the input's own memory (no key copy):
    with 0, 1, 2 or 4 passes the input stays as it was and the result is new memory."""
    h = np.random.default_rng(5).integers(0, hi, 6000, dtype=np.uint64).astype(dtype)
    a = kapi.asarray(h, device=dev)
    s = kapi.sort(a)
    _eq(s, np.sort(h))
    _eq(a, h)
    s[:] = s.dtype.type(1)  # (h of all zeros: a result sharing its memory would show)
    _eq(a, h)
    _eq(kapi.unique(a), np.unique(h))
    _eq(a, h)


@pytest.mark.parametrize("kind", ["onesweep", "ballot", "group"])
@pytest.mark.parametrize("in_place", [True, False])
def test_unsigned_argsort_leaves_its_input_alone(dev, monkeypatch, kind, in_place):
    """ARGSORT_IN_PLACE: an ascending argsort of unsigned keys by the parallel kinds reads
    the input's own memory as its keys (no key copy): 1-D and by rows, with 1 to 4 passes,
    the input stays as it was and the indices are np.argsort's (stable)."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", kind)
    monkeypatch.setattr(_radix, "ARGSORT_IN_PLACE", in_place)
    h1 = _keys("uint32", 5000, seed=21)
    a = kapi.asarray(h1, device=dev)
    assert _radix._keys_in_place(a, True, False) == in_place
    assert not _radix._keys_in_place(a, True, True)  # descending: keys are written
    for h in (h1, h1 >> np.uint32(24), h1 & np.uint32(0xFF00FF)):
        a = kapi.asarray(h, device=dev)
        _eq(kapi.argsort(a), np.argsort(h, kind="stable"))
        _eq(a, h)
    h2 = h1[:4800].reshape(60, 80)
    a2 = kapi.asarray(h2, device=dev)
    _eq(kapi.argsort(a2, axis=-1), np.argsort(h2, axis=-1, kind="stable"))
    _eq(a2, h2)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_2d_axes(dev, dtype, axis):
    h = _keys(dtype, 37 * 301, seed=4).reshape(37, 301)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a, axis=axis), np.sort(h, axis=axis))
    _eq(kapi.argsort(a, axis=axis), np.argsort(h, axis=axis, kind="stable"))
    _eq(kapi.sort(a.T, axis=axis), np.sort(h.T, axis=axis))


def test_sort_3d_and_views(dev):
    h = _keys("int32", 4 * 5 * 60, seed=5).reshape(4, 5, 60)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a, axis=1), np.sort(h, axis=1))
    _eq(kapi.argsort(a[:, ::-2, 3:50]), np.argsort(h[:, ::-2, 3:50], kind="stable"))


def test_sort_descending(dev):
    h = _keys("float32", 3000, seed=6)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a, descending=True), np.sort(h)[::-1])
    # stable descending: equal values keep their order (NaNs first)
    want = np.argsort(-h.astype(np.float64), kind="stable")
    nan = np.isnan(h)
    want = np.concatenate([np.flatnonzero(nan), want[~nan[want]]])
    _eq(kapi.argsort(a, descending=True), want)


def test_sort_empty_and_errors(dev):
    e = kapi.asarray(np.zeros(0, np.float32), device=dev)
    _eq(kapi.sort(e), np.zeros(0, np.float32))
    _eq(kapi.argsort(e), np.zeros(0, np.int64))
    _eq(kapi.sort(kapi.asarray(np.zeros((3, 0), np.int8), device=dev)), np.zeros((3, 0), np.int8))
    with pytest.raises(TypeError, match="complex"):
        kapi.sort(kapi.zeros(3, dtype=np.complex128, device=dev))
    with pytest.raises(TypeError, match="kapi array"):
        kapi.sort(np.arange(3))
    with pytest.raises(np.exceptions.AxisError):
        kapi.sort(kapi.zeros(3, device=dev), axis=1)
    with pytest.raises(np.exceptions.AxisError):
        kapi.sort(kapi.asarray(np.array(1.0), device=dev))
    with pytest.raises(ValueError, match="order="):
        kapi.sort(kapi.zeros(3, device=dev), order="x")


@pytest.mark.parametrize("dtype", ["int64", "float32", "uint16"])
@pytest.mark.parametrize("k", [1, 10, 500])
def test_topk(dev, dtype, k):
    h = _keys(dtype, 4000, seed=7)
    if np.dtype(dtype).kind == "f":
        h[np.isnan(h)] = 1.0
    a = kapi.asarray(h, device=dev)
    v, i = kapi.topk(a, k)
    # descending by value, ties by index
    order = np.lexsort((np.arange(h.size), -h.astype(np.float64)))[:k]
    _eq(i, order)
    _eq(v, h[order])


def test_topk_nan_is_largest_and_bounds(dev):
    h = np.array([1.0, np.nan, 3.0, 2.0, np.nan], np.float32)
    v, i = kapi.topk(kapi.asarray(h, device=dev), 3)
    _eq(i, np.array([1, 4, 2]))
    assert np.isnan(v.asnumpy()[:2]).all() and v.asnumpy()[2] == 3.0
    a = kapi.asarray(h, device=dev)
    assert kapi.topk(a, 0)[0].size == 0
    _eq(kapi.topk(a, 5)[1], np.array([1, 4, 2, 3, 0]))
    with pytest.raises(ValueError, match="out of range"):
        kapi.topk(a, 6)
    with pytest.raises(ValueError, match="1-D"):
        kapi.topk(kapi.zeros((2, 2), device=dev), 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_matches_numpy(dev, dtype):
    h = _keys(dtype, 3000, seed=8)
    if np.dtype(dtype).kind in "iu" and np.dtype(dtype).itemsize > 1:
        h = (h % 50).astype(dtype)  # many repeats
    a = kapi.asarray(h, device=dev)
    _eq(kapi.unique(a), np.unique(h))
    u, c = kapi.unique(a, return_counts=True)
    wu, wc = np.unique(h, return_counts=True)
    _eq(u, wu)
    _eq(c, wc.astype(np.int64))


def test_unique_2d_and_empty(dev):
    h = np.random.default_rng(9).integers(0, 9, (30, 40)).astype(np.int32)
    _eq(kapi.unique(kapi.asarray(h, device=dev)), np.unique(h))
    u, c = kapi.unique(kapi.asarray(np.zeros(0, np.float64), device=dev), return_counts=True)
    assert u.size == 0 and c.size == 0


@pytest.mark.parametrize("kind", ["ballot", "onesweep", "shuffle", "group", "serial"])
@pytest.mark.parametrize("dtype", ["uint32", "float64", "int8"])
def test_every_scatter_kind(dev, monkeypatch, kind, dtype):
    """The five ways a pass scatters (chunks ranked by sub-group ballots: GPUs; one kernel
    per pass with decoupled look-back; chunk split scans by sub-group shuffles; by
    work-group collectives; sequential blocks: kapi's CPU device) all sort right on every
    device (sub-groups of one work-item included)."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", kind)
    h = _keys(dtype, 200_003, seed=10)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))


@pytest.mark.parametrize("match", ["ballot", "atomic"])
@pytest.mark.parametrize("kind", ["ballot", "onesweep"])
def test_rank_matches_sort_right(dev, monkeypatch, kind, match):
    """Both ways the ranking finds a key's equal digits in its batch (KAPI_SORT_MATCH: eight
    ballots, or CUB's atomic OR of each lane's bit into its digit's word in local memory,
    which the digit's highest lane clears for the next batch), in both ranked kinds: random
    keys, keys of three values (most lanes of a batch share a digit: the atomic ORs
    collide, the words are cleared and reused batch after batch), a size ending inside a
    batch, and a stable argsort."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", kind)
    monkeypatch.setenv("KAPI_SORT_MATCH", match)
    rng = np.random.default_rng(21)
    few = (rng.integers(0, 3, 70_001) * 0x01010101).astype(np.uint32)
    for h in (_keys("uint32", 100_003, seed=20), few, _keys("int16", 4096 + 17, seed=22)):
        a = kapi.asarray(h, device=dev)
        _eq(kapi.sort(a), np.sort(h))
        _eq(kapi.argsort(a), np.argsort(h, kind="stable"))


def test_rank_match_must_be_known(monkeypatch):
    from kapi._numeric import sort_kernels as _sort_kernels

    monkeypatch.setenv("KAPI_SORT_MATCH", "vote")
    with pytest.raises(ValueError, match="KAPI_SORT_MATCH must be ballot or atomic"):
        _sort_kernels._rank_match()


# Tiles of the onesweep kind hold 256 * 16 keys on GPUs (256 * 8 with argsort's values) and
# 32 * 16 on kapi's CPU device (groups of 32 there): sizes below, at and past one tile.
# Argsort's tiles on GPUs: 256 * 12 keys (SORT_FIXED_GROUP), so 3071..3073 too.
_OS_SIZES = [1, 2, 255, 511, 512, 513, 3071, 3073, 4095, 4096, 4097, 3 * 4096 + 5, 1 << 20]


@pytest.mark.parametrize("n", _OS_SIZES)
def test_onesweep_sizes(dev, monkeypatch, n):
    """The "onesweep" kind (KAPI_SORT_SCATTER=onesweep: digit histograms from the keys pass,
    one kernel per pass, tiles taken by ticket, decoupled look-back over the tiles' status
    words) sorts and argsorts (stably) every size: one partial tile, whole tiles, tails."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    h = _keys("uint32", n, seed=n)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))


@pytest.mark.parametrize("fixed,or_all", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("n", [513, 4097, 3 * 4096 + 5])
def test_onesweep_fixed_group_and_or_all(dev, monkeypatch, fixed, or_all, n):
    """The onesweep kind with its kernels declaring their work-group size (SORT_FIXED_GROUP:
    @kapi.kernel's required_group_size) and the atomic match without a branch (SORT_OR_ALL:
    lanes past the tile OR 0): sort and stable argsort of sizes with partial tiles."""
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    monkeypatch.setattr(_radix, "SORT_FIXED_GROUP", fixed)
    monkeypatch.setattr(_sort_kernels, "SORT_OR_ALL", or_all)
    h = _keys("uint32", n, seed=n + 1)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))


@pytest.mark.parametrize("early,rank_local", [("1", False), ("2", False), ("1", True), ("0", True)])
@pytest.mark.parametrize("n", [513, 4097, 3 * 4096 + 5])
def test_onesweep_early_counts_and_rank_local(dev, monkeypatch, early, rank_local, n):
    """The onesweep pass publishing its tile's digit counts before its ranking (SORT_EARLY=1;
    2: its look-back before the ranking too) and keeping its ranks in local memory
    (SORT_RANK_LOCAL): sort and stable argsort of sizes with partial tiles, keys of 4 and 2
    bytes, ascending and descending, many equal keys."""
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    monkeypatch.setattr(_sort_kernels, "SORT_EARLY", early)
    monkeypatch.setattr(_sort_kernels, "SORT_RANK_LOCAL", rank_local)
    h = _keys("uint32", n, seed=n + 2)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))
    h16 = _keys("int16", n, seed=n + 3)
    a16 = kapi.asarray(h16, device=dev)
    _eq(kapi.sort(a16, descending=True), np.sort(h16)[::-1])
    _eq(kapi.argsort(a16), np.argsort(h16, kind="stable"))
    few = (np.arange(n) % 3).astype(np.uint32) * np.uint32(0x01010101)
    _eq(kapi.argsort(kapi.asarray(few, device=dev)), np.argsort(few, kind="stable"))


@pytest.mark.parametrize("persist,rank_local", [(1, False), (3, True)])
@pytest.mark.parametrize("n", [513, 4097, 3 * 4096 + 5, 100_003])
def test_onesweep_persistent_groups(dev, monkeypatch, persist, rank_local, n):
    """Persistent onesweep groups (SORT_PERSIST: a few groups per SM, each taking tile after
    tile by ticket and loading the next tile's keys while it finishes this one): sorts of
    sizes with partial tiles, many tiles per group and a group with no tile (one tile, more
    groups); argsort (values: one tile per group, as before) alongside."""
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    monkeypatch.setattr(_sort_kernels, "SORT_PERSIST", persist)
    monkeypatch.setattr(_sort_kernels, "SORT_RANK_LOCAL", rank_local)
    assert _sort_kernels._persists(False) and not _sort_kernels._persists(True)
    h = _keys("uint32", n, seed=n + 4)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))
    h64 = _keys("float64", n, seed=n + 5)
    _eq(kapi.sort(kapi.asarray(h64, device=dev), descending=True), np.sort(h64)[::-1])
    monkeypatch.setattr(_sort_kernels, "SORT_EARLY", "1")
    with pytest.raises(ValueError, match="KAPI_SORT_PERSIST does not combine"):
        _radix._onesweep_kernel_for(np.dtype(np.uint32), False, 16, (32,))


@pytest.mark.parametrize("kind", ["onesweep", "ballot"])
def test_keys_pass_async(dev, monkeypatch, kind):
    """The keys pass launched without a wait (SORT_KEYS_ASYNC): the passes chosen from its
    bits that vary (all, some bytes alike, none) and its digit counts are those of the keys,
    for sort, stable argsort (keys copied and in place), descending and 2-D sorts."""
    from kapi._numeric import sort_radix as _radix

    if kind == "ballot" and not _radix._ballots_fit(dev):
        kind = "onesweep"  # (a device whose sub-groups the ballot scatter cannot use)
    monkeypatch.setattr(_radix, "SCATTER", kind)
    monkeypatch.setattr(_radix, "SORT_KEYS_ASYNC", True)
    for h in (
        _keys("uint32", 20_001, seed=7),
        _keys("float32", 20_001, seed=8),
        (np.arange(20_001) % 5).astype(np.uint32) << np.uint32(16),  # bytes 0, 1, 3 alike
        np.full(5000, 7, np.int64),  # no byte varies: no pass
    ):
        a = kapi.asarray(h, device=dev)
        _eq(kapi.sort(a), np.sort(h))
        _eq(kapi.argsort(a), np.argsort(h, kind="stable"))
        _eq(kapi.sort(a, descending=True), np.sort(h)[::-1])
    h2 = _keys("int32", 6 * 1001, seed=9).reshape(6, 1001)
    _eq(kapi.sort(kapi.asarray(h2, device=dev)), np.sort(h2))


@pytest.mark.parametrize("copies", [2, 8, 16])
@pytest.mark.parametrize("dtype", ["uint32", "float64", "int8"])
def test_keys_pass_count_copies(dev, monkeypatch, copies, dtype):
    """The keys pass counting each position's digits into several interleaved copies per
    group (SORT_HIST_COPIES; fewer for 8-byte keys, whose 8 positions would pass 32 KiB):
    the onesweep passes' digit starts, so sort and stable argsort, are NumPy's."""
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    monkeypatch.setattr(_sort_kernels, "SORT_HIST_COPIES", copies)
    assert _sort_kernels._hist_parts(4)[3] == min(copies, 8)
    assert _sort_kernels._hist_parts(8)[3] == min(copies, 4)
    h = _keys(dtype, 50_001, seed=copies)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))


def test_onesweep_cap_follows_rank_local_and_persist(monkeypatch):
    """The onesweep pass's register cap for keys alone: 64 by default, 48 with the ranks in
    local memory (SORT_RANK_LOCAL: 5 groups per SM), none for persistent groups (80
    registers); KAPI_SORT_MAXREG still overrides; argsort's (values) is its own."""
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    for name in ("KAPI_SORT_MAXREG", "KAPI_SORT_ARGSORT_MAXREG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_radix, "SORT_FIXED_GROUP", True)
    for local, persist, want in ((False, 0, 64), (True, 0, 48), (True, 3, None)):
        monkeypatch.setattr(_sort_kernels, "SORT_RANK_LOCAL", local)
        monkeypatch.setattr(_sort_kernels, "SORT_PERSIST", persist)
        assert _radix._rank_max_registers(True) == want
        assert _radix._rank_max_registers(True, True) == _radix.OS_MAX_REGISTERS_VALUES
    monkeypatch.setenv("KAPI_SORT_MAXREG", "56")
    assert _radix._rank_max_registers(True) == 56


def test_onesweep_early_source_order(monkeypatch):
    """Where SORT_EARLY puts the tile's counts: with 1 the status words are first stored
    between the loads and the ranking's first atomic match and the look-back follows the
    ranking; with 2 the look-back's loop precedes the match too; with 0 the first store
    follows the ranking. SORT_RANK_LOCAL stores each rank in local memory (rs) and keeps no
    private array of them."""
    from kapi._numeric import sort_kernels as _sort_kernels

    def order(early):
        monkeypatch.setattr(_sort_kernels, "SORT_EARLY", early)
        src = _sort_kernels._onesweep_src()
        return [src.index(x) for x in ("LOADKEYS", ".fetch_or(", ".store(", "while j >= 0:")]

    load, match, store, walk = order("0")
    assert load < match < store < walk
    load, match, store, walk = order("1")
    assert load < store < match < walk
    load, match, store, walk = order("2")
    assert load < store < walk < match
    monkeypatch.setenv("KAPI_SORT_EARLY", "3")
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", "import kapi._numeric.sort_kernels"],
                       capture_output=True, text=True)  # fmt: skip
    assert "KAPI_SORT_EARLY must be 0, 1 or 2, not '3'" in r.stderr
    monkeypatch.setenv("KAPI_SORT_EARLY", "0")
    monkeypatch.setenv("KAPI_SORT_PERSIST", "x")
    r = subprocess.run([sys.executable, "-c", "import kapi._numeric.sort_kernels"],
                       capture_output=True, text=True)  # fmt: skip
    assert "KAPI_SORT_PERSIST must be 0 (off) to 16, not 'x'" in r.stderr
    monkeypatch.setattr(_sort_kernels, "SORT_RANK_LOCAL", True)
    src = _sort_kernels._rank_local(_sort_kernels._narrow(_os_loaded(_sort_kernels)))
    assert "rs[pw + j * S] = np.uint16(base + pr)" in src
    assert "kj = K.permute_group_by_xor(sg, keys[j], 0)" in src
    assert "rank = K.PrivateArray" not in src and "mk, tl, rs):" in src


def _os_loaded(sk) -> str:
    """`_onesweep`'s source with its loads placed in (as sort_radix builds it)."""
    load = sk._rank_loads(sk._lean())[0]
    return sk._onesweep_src().replace("LOADKEYS\n", sk._dedent4(load).strip("\n") + "\n")


@pytest.mark.parametrize("early,cap,persist", [("1", 64, 0), ("0", 48, 0), ("0", 0, 3)])
def test_onesweep_rank_local_fits_the_cap(monkeypatch, early, cap, persist):
    """The onesweep pass for keys alone with its ranks in local memory fits 48 registers
    without spilling (5 groups of 256 per SM; ptxas sm_90), with its counts early the
    default cap of 64, persistent (SORT_PERSIST) 80 uncapped (3 groups per SM); every lane
    reaches each warp shuffle (the key permuted before the place's branch: a shuffle of all
    32 lanes inside it would leave a partial tile's lanes out)."""
    from nvptx_util import divergent_warp_sync, ptx_of

    from kapi._kernel.types import local_kir
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_sort_kernels, "SORT_EARLY", early)
    monkeypatch.setattr(_sort_kernels, "SORT_RANK_LOCAL", True)
    monkeypatch.setattr(_sort_kernels, "SORT_PERSIST", persist)
    monkeypatch.setenv("KAPI_SORT_MAXREG", str(cap))
    items = _radix._rank_items(True)
    kern, lm, _ = _radix._onesweep_kernel_for(np.dtype(np.uint32), False, items, (32,))
    assert lm[-1].dtype == np.uint16 and lm[-1].shape == (256 * items,)  # rs
    g, i64, i32 = "array(u32,1,C,global)", "array(i64,1,C,global)", "array(i32,1,C,global)"
    at = (g, i64, g, i64, g, i32, i64, "i64", "i64", "i64", "i64", "u32", "u32")
    ptx = ptx_of(kern.compile(at + tuple(local_kir(a.dtype, a.shape) for a in lm),
                              ("nditem", 1)).spirv)  # fmt: skip
    assert (f".maxnreg {cap}" in ptx) == bool(cap)
    assert lm[-2].shape == ((2,) if persist else (1,))  # tl: this tile and the next
    assert divergent_warp_sync(ptx, "_onesweep") == []
    assert ptx.count("shfl.sync.bfly") == items  # the keys' permutes
    assert _registers_sm90(ptx) <= (cap or 80)


@pytest.mark.parametrize("unroll", [2, 8])
@pytest.mark.parametrize("dtype", ["uint32", "int16", "float32"])
def test_keys_pass_unrolled(dev, monkeypatch, unroll, dtype):
    """The keys pass loading several keys per turn (SORT_KEYS_UNROLL; the rest one at a time)
    makes the same keys, indices and digit counts: every key mode (unsigned, signed, float),
    ascending and descending, sort and stable argsort, a size that leaves a remainder."""
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    monkeypatch.setattr(_sort_kernels, "SORT_KEYS_UNROLL", unroll)
    h = _keys(dtype, 70_001, seed=unroll)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.sort(a, descending=True), np.sort(h)[::-1])
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_onesweep_dtypes_and_descending(dev, monkeypatch, dtype):
    """Every dtype (1, 2, 4 and 8 byte keys: as many digit positions counted in the keys
    pass) ascending and descending, sort and stable argsort, against NumPy."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    h = _keys(dtype, 30_011, seed=4)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))
    _eq(kapi.sort(a, descending=True), np.sort(h)[::-1])  # NaNs first


def test_onesweep_argsort_is_stable_with_few_values(dev, monkeypatch):
    """Many equal keys across many tiles (every tile's count of a digit is large, and the
    look-back adds them in tile order): argsort keeps equal keys in index order."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    h = np.random.default_rng(5).integers(0, 3, 100_000).astype(np.int32) * 65537
    a = kapi.asarray(h, device=dev)
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))
    _eq(kapi.argsort(a, descending=True), np.argsort(-h, kind="stable"))


@pytest.mark.parametrize("v32", [True, False])
@pytest.mark.parametrize("varying", [0, 1, 2, 3, 4])
def test_onesweep_argsort_values_between_passes(dev, monkeypatch, v32, varying):
    """Argsort's onesweep passes carry the indices as int32 between passes (SORT_V32) in the
    halves of one int64 buffer, the first pass making them and the last widening them: keys
    varying in 0 (no pass: the indices are written on their own) to 4 bytes, so every count
    of passes and both buffers ends the argsort; and the int64 passes as before."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    monkeypatch.setattr(_radix, "SORT_V32", v32)
    n = 3 * 4096 + 17
    rng = np.random.default_rng(varying)
    h = (rng.integers(0, 1 << (8 * varying), n) if varying else np.zeros(n, np.int64)).astype(
        np.uint32
    ) | np.uint32(0x5A000000 if varying < 4 else 0)
    assert _radix._iota_first(dev, n, True) == v32
    a = kapi.asarray(h, device=dev)
    _eq(kapi.argsort(a), np.argsort(h, kind="stable"))
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.topk(a, 5)[1], np.argsort(-h.astype(np.int64), kind="stable")[:5])


def test_onesweep_rows_count_their_own_digits(dev, monkeypatch):
    """2-D sorts radix-sort row numbers (keys no `_keys` pass made): their digit counts come
    from `_keys_in` run over them alone (`_digit_hist`)."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    h = _keys("float32", 7 * 3001, seed=6).reshape(7, 3001)
    a = kapi.asarray(h, device=dev)
    _eq(kapi.sort(a), np.sort(h))
    _eq(kapi.argsort(a, axis=0), np.argsort(h, axis=0, kind="stable"))


def test_onesweep_falls_back_past_30_bits(monkeypatch):
    """Status words keep counts in 30 bits: from 2^30 keys the ballot scatter runs instead."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "onesweep")
    assert _radix._pass_kind(DEVICES[0], (1 << 30) - 1) == "onesweep"
    assert _radix._pass_kind(DEVICES[0], 1 << 30) == "ballot"
    monkeypatch.setattr(_radix, "SCATTER", "nonesuch")
    with pytest.raises(ValueError, match="onesweep"):
        _radix._scatter_kind(DEVICES[0])


@pytest.mark.parametrize(
    "withv,items,width,order",
    [(False, 16, "1", "acquire"), (False, 16, "4", "relaxed"), (False, 8, "8", "relaxed"),
     (True, 8, "2", "acquire")],
)  # fmt: skip
@pytest.mark.parametrize("match", ["ballot", "atomic"])
def test_onesweep_ptx_spins_on_reloaded_status_words(
    monkeypatch, withv, items, width, order, match
):
    """The onesweep pass kernel as NVIDIA GPUs get it (sub-groups of 32, groups of 256):
    ballot ranking (8 redux.sync per key batch) that no lane-varying branch guards, keys in
    registers without spills, and a look-back whose status loads are volatile/acquire loads
    inside the wait loop (read again on every turn, not hoisted: a hoisted load would spin
    forever); ptxas assembles it for sm_90."""
    import re

    from nvptx_util import divergent_warp_sync, ptx_of

    from kapi._kernel.types import local_kir
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setenv("KAPI_SORT_LOOKBACK", width)
    monkeypatch.setenv("KAPI_SORT_LOOKBACK_ORDER", order)
    monkeypatch.setenv("KAPI_SORT_MATCH", match)
    monkeypatch.setattr(_radix, "OS_MAX_REGISTERS", None)  # uncapped (the cap: below)
    monkeypatch.setattr(_radix, "OS_MAX_REGISTERS_LOCAL", None)  # (ranks in local memory)
    kern, lm, wg = _radix._onesweep_kernel_for(np.dtype(np.uint32), withv, items, (32,))
    assert wg == 256
    g, i64 = "array(u32,1,C,global)", "array(i64,1,C,global)"
    argtypes = (g, i64, g, i64, g, "array(i32,1,C,global)", i64, "i64", "i64", "i64", "i64")
    argtypes += ("u32", "u32") + tuple(local_kir(a.dtype, a.shape) for a in lm)
    ptx = ptx_of(kern.compile(argtypes, ("nditem", 1)).spirv)
    _match_counts(ptx, match, items)
    assert "ld.local" not in ptx and "st.local" not in ptx
    assert divergent_warp_sync(ptx, "_onesweep") == []
    # the wait: a block that loads the status word and branches back to itself or earlier
    loads = [m.start() for m in re.finditer(r"ld\.(volatile|acquire)[.\w]*global\.u32", ptx)]
    assert len(loads) == int(width), loads  # the window's loads, none hoisted or merged
    labels = {m.group(1): m.start() for m in re.finditer(r"^(\$L__BB\d+_\d+):", ptx, re.M)}
    for at in loads:
        back = [
            m for m in re.finditer(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ptx)
            if m.start() > at and labels[m.group(1)] < at
        ]  # fmt: skip
        assert back, "a status load is not inside the wait loop"
    fences = ptx.count("membar.gl") + ptx.count("fence.")
    assert (fences > 0) == (order == "acquire")  # relaxed: no fence per turn of the wait
    assert len(re.findall(r"st\.(volatile|release)[.\w]*global\.u32", ptx)) == 3
    assert _registers_sm90(ptx) <= 128


@pytest.mark.parametrize("kind", ["_onesweep", "_rank_scatter"])
def test_lean_sort_kernels_index_without_wraparound_per_key(monkeypatch, kind):
    """SORT_LEAN: the places a key is loaded from, placed at in local memory and written to
    are known >= 0, so the NVIDIA kernels' per-key code has no negative-index wraparound (a
    `shr.s64 63` test and select): their count does not grow with the keys per work-item,
    where the former code (SORT_LEAN off) adds some per key."""
    import re

    from nvptx_util import ptx_of

    from kapi._kernel.types import local_kir
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    g, i64 = "array(u32,1,C,global)", "array(i64,1,C,global)"

    def wraps(items):
        if kind == "_onesweep":
            kern, lm, _ = _radix._onesweep_kernel_for(np.dtype(np.uint32), True, items, (32,))
            at = (g, i64, g, i64, g, "array(i32,1,C,global)", i64, "i64", "i64", "i64", "i64")
            at += ("u32", "u32")
        else:
            kern, lm, _ = _radix._rank_kernel_for(np.dtype(np.uint32), True, items, (32,))
            at = (g, i64, g, i64, i64, "i64", "i64", "i64", "u32", "u32")
        ptx = ptx_of(kern.compile(at + tuple(local_kir(a.dtype, a.shape) for a in lm),
                                  ("nditem", 1)).spirv)  # fmt: skip
        return len(re.findall(r"shr\.s64 %rd\d+, %rd\d+, 63;", ptx))

    assert wraps(4) == wraps(8)
    monkeypatch.setattr(_sort_kernels, "SORT_LEAN", False)
    assert wraps(8) >= wraps(4) + 3 * 4  # 3 per key: placed (2) and written (1)


def test_onesweep_narrow_indices_add_in_32_bits(monkeypatch):
    """SORT_NARROW: the onesweep pass (n < 2^30) computes a key's place in the input, in the
    tile and in the output in 32 bits, widened once at the address (mul.wide.u32); with
    SORT_NARROW off each is 64-bit adds and shifts: 8 or more 64-bit instructions per key."""
    import re

    from nvptx_util import ptx_of

    from kapi._kernel.types import local_kir
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    g, i32, i64 = "array(u32,1,C,global)", "array(i32,1,C,global)", "array(i64,1,C,global)"

    def wide(items):
        kern, lm, _ = _radix._onesweep_kernel_for(np.dtype(np.uint32), True, items, (32,), True)
        at = (g, i32, g, i32, g, i32, i64, "i64", "i64", "i64", "i64", "u32", "u32")
        ptx = ptx_of(kern.compile(at + tuple(local_kir(a.dtype, a.shape) for a in lm),
                                  ("nditem", 1)).spirv)  # fmt: skip
        ops = re.findall(r"^\s*((?:add|sub|shl|shr|and|or|min|max)\.[su]?[b]?64)\b", ptx, re.M)
        return len(ops), ptx.count("mul.wide.u32")

    (w4, m4), (w8, m8) = wide(4), wide(8)
    # per key: loaded, placed in the tile (key and value), written (key and value)
    assert m8 - m4 >= 4 * 4
    monkeypatch.setattr(_sort_kernels, "SORT_NARROW", False)
    # and the NVPTX finaliser's own narrowing of values below 2^32 off, which would otherwise
    # find the same 32-bit places in the 64-bit arithmetic
    monkeypatch.setenv("KAPI_CUDA_NARROW", "0")
    (o4, n4), (o8, n8) = wide(4), wide(8)
    assert n8 == n4  # 64-bit places: no widening multiply per key
    assert o8 - o4 >= w8 - w4 + 4 * 8  # at least 8 more 64-bit instructions per key


@pytest.mark.parametrize("withv,iota", [(False, False), (True, False), (True, True)])
def test_onesweep_default_register_cap_does_not_spill(withv, iota):
    """The onesweep pass as GPUs get it by default (atomic match, lean, argsort's int32
    values; the first pass making the indices; the group size declared) fits its register
    cap (OS_MAX_REGISTERS: 4 groups of 256 per SM at 64) without spilling, and argsort's
    uncapped pass (12 keys per work-item) 80 registers (3 groups per SM)."""
    from nvptx_util import ptx_of

    from kapi._kernel.types import local_kir
    from kapi._numeric import sort_radix as _radix

    items = _radix._os_items_values() if withv else _radix._rank_items(True)
    kern, lm, _ = _radix._onesweep_kernel_for(np.dtype(np.uint32), withv, items, (32,), withv, iota)
    g, i64, i32 = "array(u32,1,C,global)", "array(i64,1,C,global)", "array(i32,1,C,global)"
    vt = i32 if withv else i64
    at = (g, vt, g, vt, g, i32, i64, "i64", "i64", "i64", "i64", "u32", "u32")
    ptx = ptx_of(kern.compile(at + tuple(local_kir(a.dtype, a.shape) for a in lm),
                              ("nditem", 1)).spirv)  # fmt: skip
    cap = _radix._rank_max_registers(True, withv)
    if cap:
        assert f".maxnreg {cap}" in ptx
    else:
        assert ".maxnreg" not in ptx
    # capped: 4 groups of 256 per SM at 64; uncapped (argsort's 12 keys): 3 up to 85
    assert _registers_sm90(ptx) <= (cap or 80)


@pytest.mark.parametrize("withv,iota", [(False, False), (True, False), (True, True)])
def test_onesweep_fixed_group_names_whole_warps(monkeypatch, withv, iota):
    """With SORT_FIXED_GROUP the onesweep pass requires its group of 256 (8 whole warps on
    NVIDIA GPUs), so every warp-synchronous instruction's member mask is the constant -1 (no
    mask computed from the group size, which ptxas guarded with a divergence check at each);
    with SORT_OR_ALL too it fits the default cap of 64 registers without spilling."""
    import re

    from nvptx_util import ptx_of

    from kapi._kernel.types import local_kir
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    def ptx_for(fixed, or_all):
        monkeypatch.setattr(_radix, "SORT_FIXED_GROUP", fixed)
        monkeypatch.setattr(_sort_kernels, "SORT_OR_ALL", or_all)
        items = _radix._os_items_values() if withv else _radix._rank_items(True)
        kern, lm, _ = _radix._onesweep_kernel_for(
            np.dtype(np.uint32), withv, items, (32,), withv, iota
        )
        g, i64, i32 = "array(u32,1,C,global)", "array(i64,1,C,global)", "array(i32,1,C,global)"
        vt = i32 if withv else i64
        at = (g, vt, g, vt, g, i32, i64, "i64", "i64", "i64", "i64", "u32", "u32")
        at += tuple(local_kir(a.dtype, a.shape) for a in lm)
        return ptx_of(kern.compile(at, ("nditem", 1)).spirv)

    sync = re.compile(r"(bar\.warp\.sync|shfl\.sync\.\w+\.b32)\s+([^;]*);")

    def masks(ptx):
        return {m.group(2).split(",")[-1].strip() for m in sync.finditer(ptx)}

    assert masks(ptx_for(True, False)) == {"-1"}
    assert "-1" not in masks(ptx_for(False, False))
    ptx = ptx_for(True, True)
    assert masks(ptx) == {"-1"}
    assert _registers_sm90(ptx) <= (_radix._rank_max_registers(True, withv) or 80)


def _scatter_ptxs(entry: str, want) -> list[str]:
    """The PTX of each cached sort kernel `entry` whose source `want` accepts, compiled for
    uint32 keys: the sort just run made one; others of the same source may be cached with
    other @kapi.kernel options (the group size declared or not, register caps) by earlier
    tests in this process, and each of them must pass the same checks."""
    from nvptx_util import ptx_of

    from kapi._numeric import primitives as _primitives

    kerns = [
        k for (src, *_), k in _primitives._KERNELS.items() if f"def {entry}(" in src and want(src)
    ]
    out = [
        ptx_of(c.spirv)
        for k in kerns
        for sig, c in k.overloads.items()
        if sig[1][0] == "array(u32,1,C,global)"
    ]
    assert out, f"no cached {entry} kernel for uint32 keys"
    return out


def _assemble_sm90(ptx: str):
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not shutil.which(ptxas):
        pytest.skip("ptxas not found (install the CUDA toolkit to assemble the PTX)")
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        r = subprocess.run([ptxas, "-arch=sm_90", str(src), "-o", str(Path(d) / "k.cubin")],
                           capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr


def _registers_sm90(ptx: str) -> int:
    """ptxas -v's register count for the PTX (asserts no spills)."""
    import re
    import shutil
    import subprocess

    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not shutil.which(ptxas):
        pytest.skip("ptxas not found (install the CUDA toolkit to assemble the PTX)")
    r = subprocess.run([ptxas, "-arch=sm_90", "-v", "-", "-o", "/dev/null"], input=ptx,
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert " 0 bytes spill stores" in r.stderr, r.stderr
    return int(re.search(r"Used (\d+) registers", r.stderr).group(1))


# Registers per work-item that ptxas may use for the NVIDIA scatter ((with values, keys per
# work-item) -> bound; 65536 registers per SM hold 65536 / (256 * bound) groups of 256):
# measured with the next chunk's keys prefetched, sort 64, 80, 128 (4, 8, 16 keys per
# work-item), argsort 61, 80, 114 (2, 4, 8). Sort with 8 took 128 before the ranks were packed
# and the batch places made constant offsets (69 then, without the prefetch).
_RANK_REGS = {(False, 4): 64, (False, 8): 80, (False, 16): 128, (True, 2): 64, (True, 4): 80,
              (True, 8): 120}  # fmt: skip


def _match_counts(ptx: str, match: str, batches: int, popc=True):
    """The ranking's digit matching in PTX: 8 warp ballots (redux.sync) per key batch, or one
    shared-memory atomic OR ("atomic"); then one hardware popcount per batch either way
    (popc: where the sub-group size is 32; LLVM drops a count of one possible bit)."""
    import re

    ors = len(re.findall(r"\b(atom|red)\.shared\.or\.b32", ptx))
    want = (8 * batches, 0) if match == "ballot" else (0, batches)
    assert (ptx.count("redux.sync"), ors) == want
    if popc:
        assert ptx.count("popc.b32") == batches  # kernel_api.popcount


@pytest.mark.parametrize("match", ["ballot", "atomic"])
@pytest.mark.parametrize("items", [4, 8, 16])
@pytest.mark.parametrize("withv", [False, True])
def test_rank_scatter_ptx_ranks_by_ballots_in_registers(monkeypatch, withv, items, match):
    """The GPUs' scatter kernel as NVIDIA GPUs get it (sub-groups of 32, groups of 256; each
    KAPI_SORT_KEYS_PER_ITEM the benchmark compares), through the NVPTX finaliser: its ranking
    is warp ballots (redux.sync, 8 per key batch, no work-group barrier per bit) or one
    shared-memory atomic OR per batch (KAPI_SORT_MATCH=atomic), with no lane-varying branch
    around a warp-synchronous instruction, its keys and ranks stay in registers (no
    local-memory stack arrays, no spills, few registers: occupancy), and ptxas assembles it
    for sm_90."""
    from nvptx_util import divergent_warp_sync, ptx_of

    from kapi._kernel.types import local_kir
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setenv("KAPI_SORT_MATCH", match)
    n = items // 2 if withv else items
    kern, lm, wg = _radix._rank_kernel_for(np.dtype(np.uint32), withv, n, (32,))
    assert wg == 256
    g, i64 = "array(u32,1,C,global)", "array(i64,1,C,global)"
    argtypes = (g, i64, g, i64, i64, "i64", "i64", "i64", "u32", "u32")
    argtypes += tuple(local_kir(a.dtype, a.shape) for a in lm)
    ptx = ptx_of(kern.compile(argtypes, ("nditem", 1)).spirv)
    _match_counts(ptx, match, n)
    assert "ld.local" not in ptx and "st.local" not in ptx
    assert ptx.count("bar.sync") <= 6  # work-group barriers per chunk, none per key batch
    assert divergent_warp_sync(ptx, "_rank_scatter") == []  # every lane reaches every ballot
    assert _registers_sm90(ptx) <= _RANK_REGS[(withv, n)]


@pytest.mark.parametrize("items", ["4", "8", "16"])
@pytest.mark.parametrize("withv", [False, True])
def test_rank_scatter_ptx_of_this_device_assembles(monkeypatch, withv, items):
    """The scatter kernel as this device's sort compiled it (on kapi's CPU device: sub-groups
    of one work-item) also passes the warp checks and assembles for sm_90."""
    from nvptx_util import divergent_warp_sync

    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "ballot")
    monkeypatch.setenv("KAPI_SORT_MATCH", "ballot")
    monkeypatch.setenv("KAPI_SORT_KEYS_PER_ITEM", items)
    a = kapi.asarray(np.arange(5000, dtype=np.uint32)[::-1].copy(), device=DEVICES[0])
    (kapi.argsort if withv else kapi.sort)(a)
    n = int(items) // 2 if withv else int(items)
    ptxs = _scatter_ptxs(
        "_rank_scatter",
        lambda src: (
            ("vals = K.PrivateArray" in src) == withv
            and f"keys = K.PrivateArray({n}, np.uint32)" in src
            and f"    L = {_radix._rank_wg(DEVICES[0])}\n" in src  # not the NVIDIA form
            and "fetch_or(lb" not in src  # the ballot match, not an atomic one cached too
            # (the atomic match ORs `lb`, or `lbj` in its branchless form)
        ),
    )
    for ptx in ptxs:
        _match_counts(ptx, "ballot", n, popc=False)  # sub-groups of 1 on kapi's CPU device
        assert divergent_warp_sync(ptx, "_rank_scatter") == []
        _assemble_sm90(ptx)


def test_shuffle_scatter_ptx_has_no_divergent_shuffles(monkeypatch):
    """The "shuffle" scatter (KAPI_SORT_SCATTER=shuffle): its sub-group scans are warp
    shuffles that every lane reaches, and ptxas assembles it for sm_90."""
    from nvptx_util import divergent_warp_sync

    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", "shuffle")
    kapi.sort(kapi.asarray(np.arange(5000, dtype=np.uint32)[::-1].copy(), device=DEVICES[0]))
    for ptx in _scatter_ptxs(
        "_scatter", lambda src: "sg = it.get_sub_group()" in src and "vl[p] = v" not in src
    ):
        assert "shfl.sync.up" in ptx
        assert divergent_warp_sync(ptx, "_scatter") == []
        _assemble_sm90(ptx)


def test_default_kind_by_device_and_values(monkeypatch):
    """Without KAPI_SORT_SCATTER: GPUs with sub-groups of 32 sort keys alone and keys with
    values (argsort) by "onesweep" ("ballot" from 2^30 keys); kapi's CPU device by "serial";
    sub-groups too wide for 32-bit ballots by "shuffle"."""
    from types import SimpleNamespace

    from kapi._numeric import sort_radix as _radix

    monkeypatch.setattr(_radix, "SCATTER", None)
    monkeypatch.delenv("KAPI_SORT_SCATTER", raising=False)
    gpu = SimpleNamespace(sub_group_sizes=[32], device_type="gpu", name="gpu")
    assert (_radix._scatter_kind(gpu), _radix._scatter_kind(gpu, True)) == ("onesweep",) * 2
    assert _radix._pass_kind(gpu, 1 << 30) == "ballot"  # past onesweep's 30-bit counts
    monkeypatch.setattr(_radix, "ONESWEEP_KEYS_ONLY", False)  # KAPI_SORT_ONESWEEP_KEYS=0
    assert (_radix._scatter_kind(gpu), _radix._scatter_kind(gpu, True)) == ("ballot", "onesweep")
    assert _radix._pass_kind(gpu, 1 << 30, True) == "ballot"
    wide = SimpleNamespace(sub_group_sizes=[64], device_type="gpu", name="wide")
    assert _radix._scatter_kind(wide, True) == "shuffle"
    cpu = SimpleNamespace(sub_group_sizes=[1], device_type="cpu", name="cpu")
    assert _radix._scatter_kind(cpu, True) == "serial"


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint32", "int64", "float32", "f8"])
@pytest.mark.parametrize("n", [1023, 1024, 1025, 4097, 70_001, (1 << 20) + 3])
def test_cpu_blocks_sort_and_stable_argsort(dev, dtype, n):
    """kapi's CPU device sorts by blocks (at least 4 per core from 1024 keys, a work-group
    each, four counters per digit): sizes around the block counts, every block's histogram
    and scatter, and argsort's stability across blocks (repeats of few values)."""
    h = _keys(dtype, n, seed=n)
    a = kapi.asarray(h, device=dev)
    np.testing.assert_array_equal(kapi.sort(a).asnumpy(), np.sort(h))
    np.testing.assert_array_equal(kapi.argsort(a).asnumpy(), np.argsort(h, kind="stable"))
    few = (np.random.default_rng(n).integers(0, 5, n) * 3).astype(dtype)
    b = kapi.asarray(few, device=dev)
    np.testing.assert_array_equal(kapi.argsort(b).asnumpy(), np.argsort(few, kind="stable"))
    np.testing.assert_array_equal(
        kapi.argsort(b, descending=True).asnumpy(), np.argsort(-few.astype("f8"), kind="stable")
    )


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "int32", "float32", "uint64", "f8"])
@pytest.mark.parametrize("vary_bytes", [2, 3, 4])
def test_cpu_msd_then_buckets(dev, monkeypatch, dtype, vary_bytes):
    """kapi's CPU device sorts by the top varying digit first, then each of the 256 buckets
    by the other digits in one work-item (an odd or even number of them: the result ends in
    either buffer), where the buckets balance; skewed keys take the LSD passes. Sort,
    argsort (stable: repeated keys) and an unsigned input that must stay as it was."""
    from kapi._numeric import sort_radix as _radix

    if dev.device_type != "cpu":
        pytest.skip("the CPU device's scheme")
    monkeypatch.setattr(_radix, "CPU_MSD_MIN", 1 << 10)
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)  # the same scheme on any host
    used = []
    orig = _radix._msd_sort
    monkeypatch.setattr(_radix, "_msd_sort", lambda *a: used.append(orig(*a)) or used[-1])
    dt = np.dtype(dtype)
    bits = min(8 * vary_bytes, 8 * dt.itemsize)
    n = 70_001
    rng = np.random.default_rng(vary_bytes)
    u = rng.integers(0, 1 << bits, n, dtype=np.uint64)
    u[rng.integers(0, n, n // 4)] = u[:8].repeat(n // 32 + 1)[: n // 4]  # repeats
    h = u.astype(f"u{dt.itemsize}").view(dt)
    if dt.kind == "f":
        h = np.where(np.isnan(h), 0, h).astype(dt)
    a = kapi.asarray(h, device=dev)
    np.testing.assert_array_equal(kapi.sort(a).asnumpy(), np.sort(h))
    np.testing.assert_array_equal(kapi.argsort(a).asnumpy(), np.argsort(h, kind="stable"))
    uk = h.view(f"u{dt.itemsize}")
    c = kapi.asarray(uk, device=dev)
    np.testing.assert_array_equal(kapi.sort(c).asnumpy(), np.sort(uk))
    np.testing.assert_array_equal(c.asnumpy(), uk)
    if dt.kind == "u" and bits > 8:  # uniform unsigned keys: balanced buckets
        assert used and all(r is not None for r in used)
    sk = np.random.default_rng(1).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    sk[: n * 9 // 10] &= 0xFFFFFF  # nine keys in ten in the top digit's bucket 0
    skew = kapi.asarray(sk, device=dev)
    used.clear()
    np.testing.assert_array_equal(kapi.argsort(skew).asnumpy(), np.argsort(sk, kind="stable"))
    assert used == [None]  # unbalanced: the LSD passes


@pytest.mark.parametrize("dtype", ["uint16", "int32", "float32", "uint64", "float64"])
def test_cpu_sort_buckets_count_once(dev, monkeypatch, dtype):
    """kapi's CPU sort counts each bucket's digits in one read, shifts by constants
    (_bucket_pack_src on keys alone): the same as np.sort and as the kernel that counts per
    digit (KAPI_SORT_CPU_BUCKET_COUNT_ONCE=0), descending too; the kernel ran (without the
    scratch, KAPI_SORT_CPU_SCRATCH=0, whose kernel is another)."""
    from kapi._numeric import sort_radix as _radix

    if dev.device_type != "cpu":
        pytest.skip("the CPU device's scheme")
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_SCRATCH", 0)
    n = 100_003
    dt = np.dtype(dtype)
    u = np.random.default_rng(5).integers(0, 1 << (8 * dt.itemsize), n, dtype=np.uint64)
    h = u.astype(f"u{dt.itemsize}").view(dt)
    if dt.kind == "f":
        h = np.where(np.isnan(h), 0, h).astype(dt)
    a = kapi.asarray(h, device=dev)
    srcs = []
    orig = _radix._bucket_pack_src
    monkeypatch.setattr(_radix, "_bucket_pack_src", lambda *x: srcs.append(x) or orig(*x))
    got = kapi.sort(a).asnumpy()
    np.testing.assert_array_equal(got, np.sort(h))
    np.testing.assert_array_equal(kapi.sort(a, descending=True).asnumpy(), np.sort(h)[::-1])
    assert len(srcs) == 2 and all(x[2] == 0 for x in srcs)  # keys alone
    monkeypatch.setattr(_radix, "CPU_BUCKET_COUNT_ONCE", False)
    np.testing.assert_array_equal(kapi.sort(a).asnumpy(), got)
    assert len(srcs) == 2


def _stable_order(h, descending=False):
    """NumPy's stable argsort of h, descending (equal keys still in index order) too."""
    if not descending:
        return np.argsort(h, kind="stable")
    o = np.argsort(h[::-1], kind="stable")[::-1]  # (NaNs first), ties in index order
    return (h.size - 1 - o).astype(np.int64)


def _packed_runs(monkeypatch):
    """The calls of the CPU argsort's packed MSD scheme from here on (a list, one per call)."""
    from kapi._numeric import sort_radix as _radix

    runs = []
    orig = _radix._msd_packed
    monkeypatch.setattr(_radix, "_msd_packed", lambda *a: runs.append(1) or orig(*a))
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)  # the same scheme on any host
    return runs


@pytest.mark.parametrize("dtype", ["uint32", "int32", "float32", "uint16", "int16", "float16"])
@pytest.mark.parametrize("n", [(1 << 16) - 1, 1 << 16, (1 << 16) + 1, 300_007])
@pytest.mark.parametrize("descending", [False, True])
def test_cpu_packed_argsort(dev, monkeypatch, dtype, n, descending):
    """kapi's CPU device argsorts keys of up to 32 bits by the top digit first, each key
    going out with its index as one 64-bit word, then each bucket's words by the other
    digits (_msd_packed), from 2^16 keys where the buckets balance (the LSD passes where
    not): stable across buckets and blocks (repeats that span the top digit's
    buckets), NaNs last, -0.0 and 0.0 equal, int64 indices; the same indices as the keys
    and int64 indices in two arrays (KAPI_SORT_CPU_PACK=0), and with the first pass's
    stores gathered by cache line or not (KAPI_SORT_CPU_WC); an unsigned input (read in
    place) left as it was."""
    from kapi._numeric import sort_radix as _radix

    if dev.device_type != "cpu":
        pytest.skip("the CPU device's scheme")
    runs = _packed_runs(monkeypatch)
    h = _keys(dtype, n, seed=n)
    h[n // 3 :: 11] = h[n // 2]  # a key repeated from the first block to the last
    h0 = h.copy()
    a = kapi.asarray(h, device=dev)
    got = kapi.argsort(a, descending=descending)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.asnumpy(), _stable_order(h, descending))
    np.testing.assert_array_equal(a.asnumpy(), h0)
    ran = len(runs)
    if h.dtype.kind in "iu":  # (the floats' few exponents may skew the top digit)
        assert ran == (n >= 1 << 16)
    monkeypatch.setattr(_radix, "CPU_WC", not _radix.CPU_WC)  # the other first pass
    np.testing.assert_array_equal(kapi.argsort(a, descending=descending).asnumpy(), got.asnumpy())
    assert len(runs) == 2 * ran
    monkeypatch.setattr(_radix, "CPU_PACK", False)
    np.testing.assert_array_equal(kapi.argsort(a, descending=descending).asnumpy(), got.asnumpy())
    assert len(runs) == 2 * ran


@pytest.mark.parametrize("vary_bytes", [2, 3, 4])
def test_cpu_packed_buffers_and_keys(dev, monkeypatch, vary_bytes):
    """The packed scheme's words end in the result after an odd or even number of bucket
    passes (keys varying in 2, 3 or 4 bytes); topk (keys written from the words, beside the
    indices) and a 2-D argsort along either axis agree with NumPy; keys that do not take
    the scheme (all equal, a single varying byte: the indices written first, then the
    passes; skewed to one bucket: the LSD passes on words, topk's keys written from them)
    still give the stable order."""
    if dev.device_type != "cpu":
        pytest.skip("the CPU device's scheme")
    runs = _packed_runs(monkeypatch)
    n = 200_003
    rng = np.random.default_rng(vary_bytes)
    h = rng.integers(0, 1 << (8 * vary_bytes), n, dtype=np.uint64).astype(np.uint32)
    h[::9] = h[7]  # ties in one bucket, in every block
    a = kapi.asarray(h, device=dev)
    np.testing.assert_array_equal(kapi.argsort(a).asnumpy(), np.argsort(h, kind="stable"))
    f = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    f = np.where(np.isnan(f), 0, f).astype(np.float32)  # every exponent: balanced buckets
    v, i = kapi.topk(kapi.asarray(f, device=dev), 1000)
    want = _stable_order(f, True)[:1000]
    np.testing.assert_array_equal(i.asnumpy(), want)
    np.testing.assert_array_equal(v.asnumpy(), f[want])
    assert len(runs) == 2
    m = h.reshape(-1, 1)[: 1000 * 200].reshape(1000, 200).astype(np.int32) - (1 << 20)
    b = kapi.asarray(m, device=dev)
    for axis in (0, 1, None):
        want = np.argsort(m, axis=axis, kind="stable")
        np.testing.assert_array_equal(kapi.argsort(b, axis=axis).asnumpy(), want)
    runs.clear()
    for keys in (
        np.full(n, 7, np.uint32),  # no varying digit
        np.arange(n, dtype=np.uint32) % 200,  # one varying digit
        np.where(np.arange(n) % 10 == 0, f.view(np.uint32), f.view(np.uint32) & 0xFFFFFF),
    ):
        k = kapi.asarray(keys, device=dev)  # (the last: nine in ten in bucket 0)
        np.testing.assert_array_equal(kapi.argsort(k).asnumpy(), np.argsort(keys, kind="stable"))
        np.testing.assert_array_equal(
            kapi.argsort(k, descending=True).asnumpy(), _stable_order(keys, True)
        )
    u = rng.random(n, dtype=np.float32)  # few exponents: the LSD passes, packed too
    u[::5] = u[3]
    v, i = kapi.topk(kapi.asarray(u, device=dev), 5000)  # keys written from the words
    want = _stable_order(u, True)[:5000]
    np.testing.assert_array_equal(i.asnumpy(), want)
    np.testing.assert_array_equal(v.asnumpy(), u[want])
    assert runs == []


@pytest.mark.parametrize("wide", [12, 9])
def test_cpu_packed_wide_first_digit(dev, monkeypatch, wide):
    """Packed argsort keys whose top varying byte does not balance (uniform [0, 1) floats:
    half the keys in one exponent) go first by a wider digit ending at their top varying bit
    (_msd_wide, KAPI_SORT_CPU_WIDE bits), then each of its 2^wide buckets by the bytes below:
    the stable order (repeats across buckets and blocks), descending and topk's keys too, the
    same as the LSD passes on words (KAPI_SORT_CPU_WIDE=0); keys that leave the wide digit
    unbalanced as well (most of them equal) take those LSD passes."""
    from kapi._numeric import sort_radix as _radix

    if dev.device_type != "cpu":
        pytest.skip("the CPU device's scheme")
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_WIDE", wide)
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", 1 << 16)
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", 0)  # (the wide digit only where unbalanced)
    runs = []
    orig = _radix._msd_wide
    monkeypatch.setattr(_radix, "_msd_wide", lambda *a: runs.append(orig(*a)) or runs[-1])
    n = 200_003
    rng = np.random.default_rng(wide)
    u = rng.random(n, dtype=np.float32)
    u[::13] = u[4]
    u[7::29] = 0.0
    u[8::29] = -0.0  # equal to 0.0 for argsort: index order
    x = kapi.asarray(u, device=dev)
    got = kapi.argsort(x).asnumpy()
    np.testing.assert_array_equal(got, np.argsort(u, kind="stable"))
    np.testing.assert_array_equal(
        kapi.argsort(x, descending=True).asnumpy(), _stable_order(u, True)
    )
    v, i = kapi.topk(x, 3000)
    want = _stable_order(u, True)[:3000]
    np.testing.assert_array_equal(i.asnumpy(), want)
    np.testing.assert_array_equal(v.asnumpy(), u[want])
    assert len(runs) == 3 and all(r is not None for r in runs)
    monkeypatch.setattr(_radix, "CPU_WIDE", 0)
    np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), got)
    assert len(runs) == 3
    monkeypatch.setattr(_radix, "CPU_WIDE", wide)
    most = np.where(np.arange(n) % 5 == 0, u, np.float32(0.25))  # four in five equal
    y = kapi.asarray(most, device=dev)
    np.testing.assert_array_equal(kapi.argsort(y).asnumpy(), np.argsort(most, kind="stable"))
    assert runs[-1] is None  # unbalanced: the LSD passes on words


@pytest.mark.parametrize("dtype", ["float32", "uint32"])
def test_cpu_sort_wide_first_digit(dev, monkeypatch, dtype):
    """A sort (keys alone) whose top varying byte does not balance goes by the wide first
    digit too (_msd_wide without values): the same as np.sort and as the LSD passes
    (KAPI_SORT_CPU_WIDE=0), descending too; an unsigned input (sorted where it is, the
    buckets' second buffer a new array) stays as it was."""
    from kapi._numeric import sort_radix as _radix

    if dev.device_type != "cpu":
        pytest.skip("the CPU device's scheme")
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", 1 << 16)
    monkeypatch.setattr(_radix, "CPU_WIDE", 12)
    runs = []
    orig = _radix._msd_wide
    monkeypatch.setattr(_radix, "_msd_wide", lambda *a: runs.append(orig(*a)) or runs[-1])
    n = 150_001
    u = np.random.default_rng(9).random(n, dtype=np.float32)
    u[::11] = u[2]
    h = u if dtype == "float32" else u.view(np.uint32) >> 1  # few exponents: skewed
    h0 = h.copy()
    x = kapi.asarray(h, device=dev)
    got = kapi.sort(x).asnumpy()
    np.testing.assert_array_equal(got, np.sort(h))
    np.testing.assert_array_equal(kapi.sort(x, descending=True).asnumpy(), np.sort(h)[::-1])
    np.testing.assert_array_equal(x.asnumpy(), h0)
    assert len(runs) == 2 and all(r is not None for r in runs)
    monkeypatch.setattr(_radix, "CPU_WIDE", 0)
    np.testing.assert_array_equal(kapi.sort(x).asnumpy(), got)
    assert len(runs) == 2


@pytest.mark.parametrize("bits", [12, 10, 13])
def test_cpu_packed_bucket_digit_bits(dev, monkeypatch, bits):
    """The packed argsort's buckets by digits of up to KAPI_SORT_CPU_BUCKET_BITS bits (fewer
    passes, of equal width, overlapping where the bits do not divide evenly): the same
    indices as by bytes, for keys varying in 32, 24 (signed) and
    some middle bits, after the byte first digit and the wide one, topk's keys too."""
    from kapi._numeric import sort_radix as _radix

    if dev.device_type != "cpu":
        pytest.skip("the CPU device's scheme")
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", 1 << 16)
    monkeypatch.setattr(_radix, "CPU_WIDE", 12)
    n = 100_003
    rng = np.random.default_rng(bits)
    for h in (
        rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32),
        (rng.integers(0, 1 << 24, n) - (1 << 23)).astype(np.int32),
        (rng.integers(0, 1 << 20, n) * 8).astype(np.uint32),  # the low 3 bits never vary
        rng.random(n, dtype=np.float32),  # the wide first digit
    ):
        h[::13] = h[6]
        x = kapi.asarray(h, device=dev)
        monkeypatch.setattr(_radix, "CPU_BUCKET_BITS", bits)
        got = kapi.argsort(x).asnumpy()
        np.testing.assert_array_equal(got, np.argsort(h, kind="stable"))
        v, i = kapi.topk(x, 100)
        want = _stable_order(h, True)[:100]
        np.testing.assert_array_equal(i.asnumpy(), want)
        np.testing.assert_array_equal(v.asnumpy(), h[want])
        monkeypatch.setattr(_radix, "CPU_BUCKET_BITS", 8)
        np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), got)
    # 24 bits: two digits of 12 (by 12 or 13 bits), or the three bytes (by 10: as many)
    monkeypatch.setattr(_radix, "CPU_BUCKET_BITS", bits)
    want = (0, 8, 16) if bits == 10 else ((0, 12), (12, 12))
    assert _radix._bucket_digits((0, 8, 16), 24, (1 << 32) - 1) == want
    assert _radix._bucket_digits((0, 8, 16), 18, (1 << 30) - 1) == ((0, 9), (9, 9))


@pytest.mark.parametrize("dtype", ["uint32", "int16", "float32", "uint64"])
def test_cpu_fused_vary_and_top_count(dev, monkeypatch, dtype):
    """With KAPI_SORT_CPU_FUSED_VARY=1 the MSD pass's count of the top byte also finds the bits
    in which the keys differ (no reductions): sort and argsort as NumPy's and as without it,
    for keys whose top byte varies and keys whose top byte never does (their count is then
    of another byte)."""
    from kapi._numeric import sort_radix as _radix

    if dev.device_type != "cpu":
        pytest.skip("the CPU device's scheme")
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    n = 90_001
    dt = np.dtype(dtype)
    rng = np.random.default_rng(11)
    for bits in (8 * dt.itemsize, 8 * dt.itemsize - 8):  # the top byte varies, or not
        u = rng.integers(0, 1 << min(bits, 63), n, dtype=np.uint64)
        h = u.astype(f"u{dt.itemsize}").view(dt)
        if dt.kind == "f":
            h = np.where(np.isnan(h), 0, h).astype(dt)
        h[::7] = h[3]
        x = kapi.asarray(h, device=dev)
        monkeypatch.setattr(_radix, "CPU_FUSED_VARY", True)
        got = kapi.argsort(x).asnumpy()
        np.testing.assert_array_equal(got, np.argsort(h, kind="stable"))
        np.testing.assert_array_equal(kapi.sort(x).asnumpy(), np.sort(h))
        monkeypatch.setattr(_radix, "CPU_FUSED_VARY", False)
        np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), got)


@pytest.mark.parametrize("value", ["24", "12", "3", "x"])
def test_keys_per_item_refuses_untried_values(monkeypatch, value):
    """KAPI_SORT_KEYS_PER_ITEM takes 2, 4, 8 or 16 (the sizes run on GPUs); any other value,
    24 among them (it lost the device on an H200), is a ValueError naming the choices."""
    from kapi._numeric import sort_radix as _radix

    monkeypatch.setenv("KAPI_SORT_KEYS_PER_ITEM", value)
    with pytest.raises(ValueError, match="must be one of 2, 4, 8, 16"):
        _radix._rank_items()


def test_argsort_tiles_have_their_own_size_and_cap(monkeypatch):
    """The onesweep pass with values takes 12 keys per work-item, uncapped, where the group
    size is declared (SORT_FIXED_GROUP), else half the keys' own with their cap;
    KAPI_SORT_ARGSORT_ITEMS / _MAXREG set them (bad values: a ValueError naming the choices)."""
    from kapi._numeric import sort_kernels as _sort_kernels
    from kapi._numeric import sort_radix as _radix

    for name in ("ARGSORT_ITEMS", "ARGSORT_MAXREG", "KEYS_PER_ITEM", "MAXREG"):
        monkeypatch.delenv("KAPI_SORT_" + name, raising=False)
    monkeypatch.setattr(_radix, "SORT_FIXED_GROUP", True)
    assert (_radix._os_items_values(), _radix._rank_max_registers(True, True)) == (12, None)
    want = (
        _radix.OS_MAX_REGISTERS_LOCAL if _sort_kernels._ranks_local() else _radix.OS_MAX_REGISTERS
    )
    assert _radix._rank_max_registers(True, False) == want
    monkeypatch.setattr(_radix, "SORT_FIXED_GROUP", False)
    assert _radix._os_items_values() == _radix._rank_items(True) // 2
    assert _radix._rank_max_registers(True, True) == _radix.OS_MAX_REGISTERS
    monkeypatch.setenv("KAPI_SORT_ARGSORT_ITEMS", "16")
    monkeypatch.setenv("KAPI_SORT_ARGSORT_MAXREG", "0")
    assert (_radix._os_items_values(), _radix._rank_max_registers(True, True)) == (16, None)
    monkeypatch.setenv("KAPI_SORT_ARGSORT_ITEMS", "24")
    with pytest.raises(ValueError, match="KAPI_SORT_ARGSORT_ITEMS must be one of 4, 8, 12, 16"):
        _radix._os_items_values()
    monkeypatch.setenv("KAPI_SORT_ARGSORT_MAXREG", "8")
    with pytest.raises(ValueError, match="KAPI_SORT_ARGSORT_MAXREG must be 0"):
        _radix._rank_max_registers(True, True)
