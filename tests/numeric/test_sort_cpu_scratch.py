"""kapi's CPU sort and argsort with the buckets' passes through a scratch region per worker
(KAPI_SORT_CPU_SCRATCH) and the packed argsort by a wide first digit (KAPI_SORT_CPU_ARGSORT_WIDE):
the same results as NumPy and as the passes without them, and the fallback where the largest
bucket does not fit the scratch."""

import subprocess
import sys

import numpy as np
import pytest
from kapi_testing import host_ir_of, needs_cpu_device

import kapi
from kapi._numeric import sort_radix as _radix


@pytest.fixture
def cpu():
    needs_cpu_device()
    return kapi.Device("cpu")


def _stable_desc(h):
    """NumPy's stable argsort of h, descending (equal keys still in index order)."""
    o = np.argsort(h[::-1], kind="stable")[::-1]
    return (h.size - 1 - o).astype(np.int64)


def _scratch_runs(monkeypatch):
    """The scratch kernel's launches, recorded (its number of buckets each)."""
    runs = []
    orig = _radix._bucket_scratch

    def rec(plan, *a):
        runs.append(a[-1])
        return orig(plan, *a)

    monkeypatch.setattr(_radix, "_bucket_scratch", rec)
    return runs


def _check(x, h, argsort_only=False):
    """kapi's argsort (ascending, descending), topk and sort of x against NumPy's on h."""
    got = kapi.argsort(x).asnumpy()
    np.testing.assert_array_equal(got, np.argsort(h, kind="stable"))
    np.testing.assert_array_equal(kapi.argsort(x, descending=True).asnumpy(), _stable_desc(h))
    v, i = kapi.topk(x, 500)
    want = _stable_desc(h)[:500]
    np.testing.assert_array_equal(i.asnumpy(), want)
    np.testing.assert_array_equal(v.asnumpy(), h[want])
    if not argsort_only:
        np.testing.assert_array_equal(kapi.sort(x).asnumpy(), np.sort(h))
        np.testing.assert_array_equal(kapi.sort(x, descending=True).asnumpy(), np.sort(h)[::-1])
    return got


@pytest.mark.parametrize("mode", [1, 2])
@pytest.mark.parametrize("dtype", ["uint32", "int32", "float32", "uint16", "uint64"])
def test_cpu_scratch_buckets_as_numpy_and_as_without(cpu, monkeypatch, mode, dtype):
    """The buckets by persistent workers through their scratch regions (the last pass into the
    result, or into the scratch then copied out): sort, argsort, descending and topk as
    NumPy's and identical to the buckets' kernel without the scratch, with repeated keys
    across buckets, n a multiple of nothing, 3 workers (buckets drawn unevenly), keys
    varying in 2, 3 or 4 bytes (one, two or three passes per bucket); an unsigned input
    stays as it was."""
    monkeypatch.setattr(_radix, "CPU_MSD_MIN", 1 << 10)
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 3)
    monkeypatch.setattr(_radix, "CPU_SCRATCH", mode)
    runs = _scratch_runs(monkeypatch)
    dt = np.dtype(dtype)
    rng = np.random.default_rng(mode * 7 + dt.itemsize)
    n = 90_011
    for nbytes in sorted({2, 3, 4} & set(range(2, dt.itemsize + 1))) or [dt.itemsize]:
        u = rng.integers(0, 1 << (8 * nbytes), n, dtype=np.uint64)
        u[rng.integers(0, n, n // 5)] = u[:9].repeat(n // 45 + 1)[: n // 5]
        h = u.astype(f"u{dt.itemsize}").view(dt)
        if dt.kind == "f":
            h = np.where(np.isnan(h), 0, h).astype(dt)
            h[5::31] = -0.0
            h[6::31] = 0.0
        h0 = h.copy()
        x = kapi.asarray(h, device=cpu)
        before = len(runs)
        got = _check(x, h)
        np.testing.assert_array_equal(x.asnumpy(), h0)
        assert len(runs) > before  # the scratch path ran
        monkeypatch.setattr(_radix, "CPU_SCRATCH", 0)
        np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), got)
        np.testing.assert_array_equal(kapi.sort(x).asnumpy(), np.sort(h))
        monkeypatch.setattr(_radix, "CPU_SCRATCH", mode)


def test_cpu_scratch_limit_and_fallback(cpu, monkeypatch):
    """A largest bucket whose region fits CPU_SCRATCH_BYTES exactly takes the scratch; one
    word less, and it takes the buckets' kernel: the same results either way."""
    monkeypatch.setattr(_radix, "CPU_MSD_MIN", 1 << 10)
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_SCRATCH", 1)
    runs = _scratch_runs(monkeypatch)
    n = 50_001
    h = np.random.default_rng(3).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    h[::17] = h[1]
    largest = int(np.bincount(h >> 24, minlength=256).max())
    words = -(-largest // 8) * 8 + 8
    x = kapi.asarray(h, device=cpu)
    monkeypatch.setattr(_radix, "CPU_SCRATCH_BYTES", words * 8)
    got = _check(x, h)
    assert runs and len(runs) == 5  # argsort x 2, topk, sort x 2
    monkeypatch.setattr(_radix, "CPU_SCRATCH_BYTES", words * 8 - 8)
    np.testing.assert_array_equal(_check(x, h), got)
    assert len(runs) == 5  # the fallback: no scratch


def test_cpu_scratch_small_and_empty_buckets(cpu, monkeypatch):
    """Many empty and one-key buckets (2,000 keys over the top byte's 256 values, keys
    varying in the top byte and one bit below it) and skewed keys (most equal: the LSD
    passes, no scratch) sort as NumPy."""
    monkeypatch.setattr(_radix, "CPU_MSD_MIN", 1 << 10)
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_SCRATCH", 2)
    runs = _scratch_runs(monkeypatch)
    rng = np.random.default_rng(5)
    n = 2_003
    h = (rng.integers(0, 200, n, dtype=np.uint32) << np.uint32(24)) | (
        rng.integers(0, 2, n, dtype=np.uint32) << np.uint32(3)
    )
    _check(kapi.asarray(h, device=cpu), h)
    assert runs
    ran = len(runs)
    skew = np.where(np.arange(40_000) % 7 == 0, rng.integers(0, 1 << 32, 40_000), 12345)
    skew = skew.astype(np.uint32)
    _check(kapi.asarray(skew, device=cpu), skew)
    assert len(runs) == ran  # unbalanced: the LSD passes


@pytest.mark.parametrize("wide,bits,scratch", [(10, 8, 0), (10, 8, 1), (11, 11, 2), (9, 11, 1)])
def test_cpu_argsort_wide_first_digit(cpu, monkeypatch, wide, bits, scratch):
    """The packed argsort first by a digit of KAPI_SORT_CPU_ARGSORT_WIDE bits where the top
    byte balances too, its buckets by bytes or by two digits of 11 bits, with and without the
    scratch: the same indices (and topk's keys) as NumPy and as by the top byte; keys that
    leave the wide digit unbalanced take the byte path."""
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", 1 << 16)
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", wide)
    monkeypatch.setattr(_radix, "CPU_BUCKET_BITS", bits)
    monkeypatch.setattr(_radix, "CPU_SCRATCH", scratch)
    runs = []
    orig = _radix._msd_wide
    monkeypatch.setattr(_radix, "_msd_wide", lambda *a: runs.append(orig(*a)) or runs[-1])
    rng = np.random.default_rng(wide + bits)
    n = 150_007
    for h in (
        rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32),
        (rng.integers(0, 1 << 28, n) - (1 << 27)).astype(np.int32),
        rng.standard_normal(n).astype(np.float32),
    ):
        h[::13] = h[4]
        x = kapi.asarray(h, device=cpu)
        before = len(runs)
        got = _check(x, h, argsort_only=True)
        monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", 0)
        np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), got)
        monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", wide)
        if h.dtype != np.float32:  # (normal floats: few exponents, unbalanced either way)
            assert len(runs) > before and runs[-1] is not None


def test_cpu_argsort_wide_digit_limits(cpu, monkeypatch):
    """The argsort's wide first digit only from CPU_WIDE_MIN keys and up to buckets of
    CPU_MSD_BUCKET_BYTES on average: outside them the top byte first, the same indices."""
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", 10)
    runs = []
    orig = _radix._msd_wide
    monkeypatch.setattr(_radix, "_msd_wide", lambda *a: runs.append(orig(*a)) or runs[-1])
    n = 100_003
    h = np.random.default_rng(8).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    x = kapi.asarray(h, device=cpu)
    want = np.argsort(h, kind="stable")
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", n + 1)  # too few keys
    np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), want)
    assert runs == []
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", 1 << 16)
    monkeypatch.setattr(_radix, "CPU_MSD_BUCKET_BYTES", (8 * n >> 10) - 1)  # buckets too large
    np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), want)
    assert runs == []
    monkeypatch.setattr(_radix, "CPU_MSD_BUCKET_BYTES", 8 * n >> 10)
    np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), want)
    assert len(runs) == 1 and runs[0] is not None


@pytest.mark.parametrize(
    "var,value,match",
    [
        ("KAPI_SORT_CPU_SCRATCH", "3", "must be 0, 1 or 2"),
        ("KAPI_SORT_CPU_ARGSORT_WIDE", "8", "must be 0 or 9..14"),
        ("KAPI_SORT_CPU_ARGSORT_WIDE_BIG", "8", "must be 0 or 9..14"),
        ("KAPI_SORT_CPU_WIDE_WC", "nt", "must be 'auto', '0' or '1'"),
        ("KAPI_SORT_CPU_STREAMING", "2", "must be 'auto', '0' or '1'"),
    ],
)
def test_cpu_scratch_switches_refuse_other_values(var, value, match):
    """The switches read at import refuse values they do not take, naming the choices."""
    r = subprocess.run(
        [sys.executable, "-c", "import kapi._numeric.sort_radix"],
        env={**__import__("os").environ, var: value},
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0
    assert "ValueError" in r.stderr and match in r.stderr


def test_cpu_argsort_wide_vary_one_read(cpu, monkeypatch):
    """KAPI_SORT_CPU_VARY_WIDE: the wide digit's count finds the bits in which the keys differ
    (no reductions), its digit placed by the last keys' top varying bit: keys whose top bit
    is the guessed one take that count; keys whose top varying bit is lower (the guess
    wrong) are counted again at their own; keys that follow them with the top bit varying
    again too. The same indices as NumPy and as with the reductions, each time."""
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", 1 << 16)
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", 10)
    monkeypatch.setattr(_radix, "_WIDE_TOP", {})
    monkeypatch.setattr(_radix, "CPU_FUSED_VARY", False)  # (else the top byte's count)
    reduced, used = [], []
    orig_vary, orig_wide = _radix._vary, _radix._msd_wide
    monkeypatch.setattr(_radix, "_vary", lambda k: reduced.append(1) or orig_vary(k))

    def wide(*a):
        used.append(a[-1] is not None)
        return orig_wide(*a)

    monkeypatch.setattr(_radix, "_msd_wide", wide)
    rng = np.random.default_rng(21)
    n = 120_007
    full = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    low = (rng.integers(0, 1 << 27, n) + (1 << 26)).astype(np.uint32)  # top varying bit 26
    flt = rng.random(n, dtype=np.float32)
    cases = [(full, True), (low, False), (low, True), (flt, False), (full, False)]
    for h, guessed in cases:
        h[::11] = h[2]
        x = kapi.asarray(h, device=cpu)
        monkeypatch.setattr(_radix, "CPU_VARY_WIDE", True)
        before = len(used)
        got = kapi.argsort(x).asnumpy()
        np.testing.assert_array_equal(got, np.argsort(h, kind="stable"))
        assert used[before:] == [guessed] and not reduced
        monkeypatch.setattr(_radix, "CPU_VARY_WIDE", False)
        np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), got)
        assert reduced and used[-1] is False
        reduced.clear()


def test_cpu_argsort_wide_table_by_host_or_scan(cpu, monkeypatch):
    """KAPI_SORT_CPU_HOST_SCAN: the wide digit's table of counts per block scanned by the host
    (which reads the buckets' starts from it anyway) or by kapi's scan: the same indices as
    NumPy either way, for keys with runs of equal ones and for floats."""
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", 1 << 16)
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", 10)
    rng = np.random.default_rng(31)
    n = 130_003
    u = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    u[1000:3000] = u[7]
    for h in (u, rng.random(n, dtype=np.float32)):
        x = kapi.asarray(h, device=cpu)
        monkeypatch.setattr(_radix, "CPU_HOST_SCAN", True)
        got = _check(x, h, argsort_only=True)
        monkeypatch.setattr(_radix, "CPU_HOST_SCAN", False)  # the table by kapi's scan
        np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), got)


def test_cpu_fused_vary_counts_the_last_top_byte(cpu, monkeypatch):
    """KAPI_SORT_CPU_FUSED_VARY counts the byte that varied on top in the last such keys of the
    same width: keys varying in their low three bytes are counted again once (the top byte
    guessed), then taken from the fused count; the same results as NumPy each time."""
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_FUSED_VARY", True)
    monkeypatch.setattr(_radix, "_BYTE_TOP", {})
    counts = []
    orig = _radix._serial_hist
    monkeypatch.setattr(_radix, "_serial_hist", lambda k, sh: counts.append(int(sh)) or orig(k, sh))
    h = np.random.default_rng(41).integers(0, 1 << 24, 70_001, dtype=np.uint64).astype(np.uint32)
    x = kapi.asarray(h, device=cpu)
    for again in (True, False, False):
        counts.clear()
        np.testing.assert_array_equal(kapi.sort(x).asnumpy(), np.sort(h))
        assert counts == ([16] if again else [])
    assert _radix._BYTE_TOP == {32: 16}


def test_cpu_argsort_big_first_digit(cpu, monkeypatch):
    """From CPU_WIDE_BIG_MIN keys the packed argsort's first digit is CPU_ARGSORT_WIDE_BIG (12)
    bits and its buckets go by digits of up to 10 bits (two passes for the 20 bits below it):
    the same indices (and topk's keys) as NumPy and as by the 10-bit digit, for uint32, int32
    and [0, 1) float32 keys; below that size, the 10-bit digit."""
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", 1 << 16)
    monkeypatch.setattr(_radix, "CPU_WIDE_BIG_MIN", 1 << 17)
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", 10)
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE_BIG", 12)
    bits = []
    orig = _radix._bucket_scratch
    monkeypatch.setattr(
        _radix, "_bucket_scratch", lambda plan, *a: bits.append((a[-1], a[-2][0])) or orig(plan, *a)
    )
    rng = np.random.default_rng(51)
    n = 150_007
    for h in (
        rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32),
        (rng.integers(0, 1 << 30, n) - (1 << 29)).astype(np.int32),
        rng.random(n, dtype=np.float32),
    ):
        h[::9] = h[5]
        x = kapi.asarray(h, device=cpu)
        bits.clear()
        got = _check(x, h, argsort_only=True)
        nb, digits = bits[0]
        assert nb == 4096 and len(digits) == 2  # (two passes: 10-bit digits, or two bytes)
        monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE_BIG", 0)
        bits.clear()
        np.testing.assert_array_equal(kapi.argsort(x).asnumpy(), got)
        assert bits[0][0] == 1024
        monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE_BIG", 12)
    small = h[: (1 << 17) - 1]
    bits.clear()
    np.testing.assert_array_equal(
        kapi.argsort(kapi.asarray(small, device=cpu)).asnumpy(), np.argsort(small, kind="stable")
    )
    assert bits[0][0] == 1024


def _entries(monkeypatch):
    """The sort kernels' entries built or looked up, in order."""
    seen = []
    orig = _radix._kernel
    monkeypatch.setattr(_radix, "_kernel", lambda src, entry, *a, **k: (
        seen.append(entry) or orig(src, entry, *a, **k)
    ))  # fmt: skip
    return seen


@pytest.mark.parametrize("cores, wide", [(2, 10), (13, 10), (13, 13)])
def test_cpu_argsort_wide_pass_write_combining(cpu, monkeypatch, cores, wide):
    """The argsort's pass by the wide digit through per-digit line buffers
    (KAPI_SORT_CPU_WIDE_WC): the same indices as NumPy and as the pass without them, with each
    digit's run of a block starting and ending anywhere in a line (lines shared with the
    neighbouring blocks go out by plain stores, whole ones by streaming stores), digits with
    one key or none, runs shorter than a line and repeated keys; "auto" from
    CPU_WIDE_WC_CORES cores; digits of 10 and 13 bits (1,024 and 8,192 lines a block)."""
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: cores)
    monkeypatch.setattr(_radix, "CPU_WIDE_MIN", 1 << 16)
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", wide)
    seen = _entries(monkeypatch)
    rng = np.random.default_rng(cores)
    n = 200_003
    full = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    full[::50] = full[3]  # (a bucket of 4,000: within n // (2 * cores))
    sparse = full.copy()  # digits 0..5 of the top ten bits: runs of a few keys per block
    sparse[rng.integers(0, n, 600)] = rng.integers(0, 6 << 22, 600, dtype=np.uint32)
    flt = rng.random(n, dtype=np.float32)
    for h in (full, sparse, flt):
        x = kapi.asarray(h, device=cpu)
        want = np.argsort(h, kind="stable")
        got = {}
        for wc in ("1", "0", "auto"):
            monkeypatch.setattr(_radix, "CPU_WIDE_WC", wc)
            seen.clear()
            got[wc] = kapi.argsort(x).asnumpy()
            np.testing.assert_array_equal(got[wc], want, err_msg=wc)
            buffered = "_scatter_wide_wc" in seen
            assert buffered == (wc == "1" or (wc == "auto" and cores >= 8)), (wc, seen)
            assert buffered != ("_scatter_wide" in seen)


def test_cpu_argsort_result_by_streaming_stores(cpu, monkeypatch):
    """The buckets' copy into the sort's and argsort's results (KAPI_SORT_CPU_STREAMING): the
    whole lines of each bucket's places by streaming stores, the elements before and after
    them plain, for buckets starting anywhere in a line and buckets shorter than a line, keys
    of 4 and 8 bytes (16 and 8 to a line) and packed words (8); "auto" by the result's size
    (streaming.pays)."""
    monkeypatch.setattr(_radix, "CPU_MSD_MIN", 1 << 10)
    monkeypatch.setattr(_radix, "_msd_cores", lambda device: 2)
    monkeypatch.setattr(_radix, "CPU_SCRATCH", 2)
    srcs = []
    orig = _radix._bucket_scratch_src
    monkeypatch.setattr(_radix, "_bucket_scratch_src", lambda *a: srcs.append(orig(*a)) or srcs[-1])
    rng = np.random.default_rng(17)
    for n, dt in ((70_001, np.uint32), (3_001, np.uint32), (50_003, np.uint64)):
        h = rng.integers(0, np.iinfo(dt).max, n, dtype=np.uint64).astype(dt)
        h[::5] = h[1]
        x = kapi.asarray(h, device=cpu)
        for setting in ("1", "0", "auto"):
            monkeypatch.setattr(_radix, "CPU_STREAMING", setting)
            srcs.clear()
            _check(x, h)
            streamed = any("K.store_nontemporal(out" in src for src in srcs)
            assert streamed == (setting == "1"), (n, setting)  # (auto: results of 8 MiB up)


def test_cpu_argsort_write_combining_stores_whole_lines():
    """The buffered pass writes a full line as whole vector streaming stores (the line's words
    loaded, then stored: in turn they stayed eight scalar stores), and the buckets' copy into
    the result streams vectors: in the CPU driver's host code."""
    needs_cpu_device()
    ir = host_ir_of(
        "import numpy as np, kapi\n"
        "from kapi._numeric import sort_radix as R\n"
        "R.CPU_WIDE_MIN = 1 << 16\n"
        "R.CPU_ARGSORT_WIDE = 10\n"
        "R.CPU_SCRATCH = 2\n"
        "h = np.random.default_rng(1).integers(0, 1 << 32, 200_003).astype(np.uint32)\n"
        "x = kapi.asarray(h, device='cpu')\n"
        "assert (kapi.argsort(x).asnumpy() == np.argsort(h, kind='stable')).all()\n",
        KAPI_SORT_CPU_WIDE_WC="1",
        KAPI_SORT_CPU_STREAMING="1",
    )
    for entry in ("_scatter_wide_wc", "_bucket_scr"):
        body = ir[ir.index(f"@{entry}.kapi.run(") :]
        body = body[: body.index("\n}\n")]
        vec_nt = [ln for ln in body.splitlines() if "store <" in ln and "!nontemporal" in ln]
        assert vec_nt, entry
    # (the copy's loop after its vector loop streams scalars; the buffered pass has none)
    body = ir[ir.index("@_scatter_wide_wc.kapi.run(") :]
    body = body[: body.index("\n}\n")]
    assert not [ln for ln in body.splitlines() if "store i64" in ln and "!nontemporal" in ln]


def test_cpu_argsort_wide_digit_grows_with_the_keys(monkeypatch):
    """From twice CPU_WIDE_BIG_MIN keys the big digit widens a bit per doubling (its buckets
    keep their size), up to 14 bits; CPU_WIDE_BIG_SCALE off: the same digit at every size."""
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE", 10)
    monkeypatch.setattr(_radix, "CPU_ARGSORT_WIDE_BIG", 12)
    big = _radix.CPU_WIDE_BIG_MIN
    sizes = (big - 1, big, 2 * big - 1, 2 * big, 3 * big, 4 * big, 64 * big)
    assert [_radix._argsort_wide(n) for n in sizes] == [10, 12, 12, 13, 13, 14, 14]
    monkeypatch.setattr(_radix, "CPU_WIDE_BIG_SCALE", False)
    assert [_radix._argsort_wide(n) for n in sizes] == [10, 12, 12, 12, 12, 12, 12]
