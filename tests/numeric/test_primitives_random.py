"""kapi.random: the raw Philox-4x32-10 blocks against Random123's known-answer vectors, the
generator's stream against a Python reference of Philox, and the distributions (moments and
Kolmogorov-Smirnov statistics, fixed seeds: deterministic) on every device."""

import math

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


# Random123's kat_vectors: counter (4 words), key (2 words) -> output (4 words)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


def _philox_ref(ctr, key):
    """Philox-4x32-10 in Python integers, written from the published algorithm."""
    c = list(ctr)
    k0, k1 = key
    m = 0xFFFFFFFF
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & m, (k1 + 0xBB67AE85) & m
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & m, (p0 >> 32) ^ c[3] ^ k1, p0 & m]
    return tuple(c)


def test_philox_known_answers(dev):
    ctr = np.array([c for c, _, _ in KAT], np.uint32)
    key = np.array([k for _, k, _ in KAT], np.uint32)
    got = kapi.random.philox4x32(ctr, key, device=dev)
    assert got.device == dev
    np.testing.assert_array_equal(got.asnumpy(), np.array([o for _, _, o in KAT], np.uint32))
    for c, k, o in KAT:
        assert _philox_ref(c, k) == o


def test_philox_many_blocks_match_the_reference(dev):
    rng = np.random.default_rng(0)
    ctr = rng.integers(0, 2**32, (257, 4), dtype=np.uint32)
    key = rng.integers(0, 2**32, (257, 2), dtype=np.uint32)
    got = kapi.random.philox4x32(ctr, key, device=dev).asnumpy()
    want = [
        _philox_ref(tuple(map(int, c)), tuple(map(int, k))) for c, k in zip(ctr, key, strict=True)
    ]
    np.testing.assert_array_equal(got, np.array(want, np.uint32))


def _words(g, n_counters, start=0):
    """The 32-bit words the generator g consumes, from its counter `start`."""
    k = (int(g._k0), int(g._k1))
    out = []
    for i in range(start, start + n_counters):
        out += _philox_ref((i & 0xFFFFFFFF, i >> 32, 0, 0), k)
    return np.array(out, np.uint64)


def test_uniform_stream_is_philox_of_the_counter(dev):
    g = kapi.random.default_rng(1234, device=dev)
    u32 = g.random(10, dtype=np.float32).asnumpy()
    w = _words(g, 3)
    np.testing.assert_array_equal(u32, ((w[:10] >> 8) * 2.0**-24).astype(np.float32))
    u64 = g.random(5, dtype=np.float64).asnumpy()  # continues after the 3 counters used
    w = _words(g, 3, start=3)
    a, b = w[0::2][:5], w[1::2][:5]
    np.testing.assert_array_equal(u64, ((a >> 5) * 67108864.0 + (b >> 6)) * 2.0**-53)


@pytest.mark.parametrize("staged", [False, True])
def test_staged_stores_give_the_same_stream(dev, monkeypatch, staged):
    """The GPUs' kernel (outputs staged in local memory, written coalesced) and the direct
    one put the same numbers at the same places, for sizes that end mid-counter and
    mid-group, and successive calls continue the stream."""
    from kapi import random as R

    ref = {}
    for st in (staged, not staged):
        monkeypatch.setattr(R, "STAGED", st)
        g = kapi.random.default_rng(77, device=dev)
        ref[st] = [
            g.random(n, dtype=dt).asnumpy() if kind == "u" else
            g.standard_normal(n, dtype=dt).asnumpy()
            for kind in ("u", "n")
            for dt in (np.float32, np.float64)
            for n in (1, 1027, 4 * 256 + 3)
        ]  # fmt: skip
    for m, (a, b) in enumerate(zip(ref[staged], ref[not staged], strict=True)):
        if m in (6, 7, 8):  # float32 normals: float32 log/sin/cos, which the
            # CPU driver's vectorised and scalar code compute to the last bit differently
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)
    w = _words(kapi.random.default_rng(77, device=dev), 1)
    np.testing.assert_array_equal(ref[True][0], ((w[:1] >> 8) * 2.0**-24).astype(np.float32))


def _normals_close(got, want, atol):
    """|got - want| within atol plus what an approximate float32 log (fastmath: PTX
    lg2.approx, ~2^-22 absolute in log2) costs a normal of radius r >= |want|: ~2e-7 / r."""
    bound = atol + 1e-6 * np.abs(want) + 3e-7 / np.maximum(np.abs(want), 1e-30)
    bad = np.abs(got - want) > bound
    assert not bad.any(), (got[bad][:5], want[bad][:5])


@pytest.mark.parametrize(
    "f32_math, sincos, fast",
    [(True, True, True), (True, True, False), (True, False, False), (False, True, False)],
)
def test_float32_normals_are_box_muller_of_the_stream(dev, monkeypatch, f32_math, sincos, fast):
    """float32 normals are Box-Muller of the counter's words (pairs (w0, w1), (w2, w3)): in
    float32 math (the default) within 4e-6 of the float64 formula (the documented accuracy:
    a few float32 ulps), with the generator's own cos and sin (SINCOS, the default) or
    math.cos and math.sin, in float64 math (KAPI_NORMAL_F32=0) within float32 rounding. With
    fastmath (the default, FASTMATH) the log and sqrt may be approximate: a small radius r
    then costs up to ~2e-7 / r more."""
    from kapi import random as R

    monkeypatch.setattr(R, "NORMAL_F32", f32_math)
    monkeypatch.setattr(R, "SINCOS", sincos)
    monkeypatch.setattr(R, "FASTMATH", fast)
    g = kapi.random.default_rng(31, device=dev)
    z = g.standard_normal(4 * 3000, dtype=np.float32).asnumpy()
    w = _words(g, 3000)
    u1 = ((w[0::2] >> 8) + 1) * 2.0**-24
    u2 = (w[1::2] >> 8) * 2.0**-24
    rad = np.sqrt(-2.0 * np.log(u1))
    want = np.empty(z.size)
    want[0::2], want[1::2] = rad * np.cos(2 * np.pi * u2), rad * np.sin(2 * np.pi * u2)
    tol = 4e-6 if f32_math else 1e-6
    if fast:
        _normals_close(z, want, tol)
    else:
        np.testing.assert_allclose(z, want, rtol=1e-6, atol=tol)
    assert np.abs(z - want).max() > 0  # float32 results, not the float64 ones
    assert np.isfinite(z).all()


def test_same_seed_same_numbers_on_every_device():
    ref = None
    for d in DEVICES:
        g = kapi.random.Generator(99, device=d)
        got = (
            g.random(1001, dtype=np.float32).asnumpy(),
            g.random((3, 7)).asnumpy(),
            g.standard_normal(999, dtype=np.float32).asnumpy(),
        )
        if ref is None:
            ref = got
            continue
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])
        _normals_close(got[2], ref[2], 1e-6)  # fastmath: approximate log and sqrt on GPUs


def test_reproducible_and_advancing(dev):
    a = kapi.random.default_rng(7, device=dev)
    b = kapi.random.default_rng(7, device=dev)
    x1, x2 = a.random(100).asnumpy(), a.random(100).asnumpy()
    np.testing.assert_array_equal(x1, b.random(100).asnumpy())
    assert not np.array_equal(x1, x2)
    c = kapi.random.default_rng(8, device=dev)
    assert not np.array_equal(x1, c.random(100).asnumpy())


def _ks(sample, cdf) -> float:
    x = np.sort(sample.astype(np.float64))
    f = cdf(x)
    n = x.size
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


_norm_cdf = np.vectorize(lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2))))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_distribution(dev, dtype):
    g = kapi.random.default_rng(2024, device=dev)
    x = g.random(200_001, dtype=dtype)
    assert x.dtype == dtype and x.shape == (200_001,) and x.device == dev
    h = x.asnumpy()
    assert h.min() >= 0 and h.max() < 1
    assert abs(h.mean() - 0.5) < 4 * math.sqrt(1 / 12 / h.size)
    assert abs(h.var() - 1 / 12) < 0.002
    # KS: 1.63/sqrt(n) is the 1% critical value; the seed is fixed, so this never flakes
    assert _ks(h, lambda v: v) < 1.63 / math.sqrt(h.size)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_distribution(dev, dtype):
    g = kapi.random.default_rng(77, device=dev)
    z = g.standard_normal((400, 251), dtype=dtype)
    assert z.dtype == dtype and z.shape == (400, 251)
    h = z.asnumpy().ravel()
    n = h.size
    assert abs(h.mean()) < 4 / math.sqrt(n)
    assert abs(h.var() - 1) < 4 * math.sqrt(2 / n)
    assert abs(np.mean(h**3)) < 4 * math.sqrt(15 / n)  # skewness
    assert abs(np.mean(h**4) - 3) < 4 * math.sqrt(96 / n)  # kurtosis
    assert _ks(h[:20000], _norm_cdf) < 1.63 / math.sqrt(20000)


def test_uniform_normal_out_and_errors(dev):
    g = kapi.random.Generator(5, device=dev)
    u = g.uniform(-2.0, 3.0, 10000).asnumpy()
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.1
    nz = g.normal(10.0, 0.5, 10000, dtype=np.float32).asnumpy()
    assert nz.dtype == np.float32 and abs(nz.mean() - 10) < 0.05 and abs(nz.std() - 0.5) < 0.05
    out = kapi.empty((4, 5), dtype=np.float32, device=dev)
    assert g.random(out=out) is out
    assert 0 <= out.asnumpy().min() and out.asnumpy().max() < 1
    assert g.random().shape == ()
    assert kapi.random.default_rng(g) is g
    with pytest.raises(TypeError, match="float32 or float64"):
        g.random(3, dtype=np.int32)
    with pytest.raises(TypeError, match="float32 or float64"):
        g.standard_normal(out=kapi.zeros(3, dtype=np.int8, device=dev))
    with pytest.raises(ValueError, match="as many keys"):
        kapi.random.philox4x32(np.zeros((2, 4), np.uint32), np.zeros((1, 2), np.uint32), dev)


@pytest.mark.parametrize("cpw", [2, 4])
@pytest.mark.parametrize("staged", [False, True])
def test_counters_per_work_item_give_the_same_stream(dev, monkeypatch, cpw, staged):
    """CPW counters per work-item (KAPI_RANDOM_CPW) put the same numbers at the same places
    as one per work-item, for sizes that end mid-counter, mid-work-item and mid-group, and
    successive calls continue the stream."""
    from kapi import random as R

    def draw(c):
        monkeypatch.setattr(R, "CPW", c)
        monkeypatch.setattr(R, "STAGED", staged)
        g = kapi.random.default_rng(91, device=dev)
        return [
            getattr(g, kind)(n, dtype=dt).asnumpy()
            for kind in ("random", "standard_normal")
            for dt in (np.float32, np.float64)
            for n in (1, 5, 4 * 256 * cpw + 7, 1027)
        ]

    for a, b in zip(draw(1), draw(cpw), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cpw", [1, 4])
@pytest.mark.parametrize("write", ["full", "v4"])
def test_write_outs_and_philox_words_give_the_same_stream(dev, monkeypatch, write, cpw):
    """The staged kernel's write-outs (KAPI_RANDOM_WRITE: unchecked full groups, 4
    consecutive outputs per work-item) and the Philox rounds on uint64 words
    (KAPI_PHILOX32=1: uint32) put exactly the same numbers at the same places as the defaults, for
    sizes that end mid-counter, mid-group, at a group's end, and over several groups; one
    counter per work-item too (2 float64 outputs each: no 4 to store together)."""
    from kapi import random as R

    group = 4 * cpw * R.WG  # outputs of one float32 group

    def draw(w, p32):
        monkeypatch.setattr(R, "WRITE", w)
        monkeypatch.setattr(R, "PHILOX32", p32)
        monkeypatch.setattr(R, "STAGED", True)
        monkeypatch.setattr(R, "CPW", cpw)
        g = kapi.random.default_rng(17, device=dev)
        return [
            getattr(g, kind)(n, dtype=dt).asnumpy()
            for kind in ("random", "standard_normal")
            for dt in (np.float32, np.float64)
            for n in (1, 5, group, 3 * group, 2 * group + 7)
        ]

    ref = draw("strided", False)
    for got in (draw(write, False), draw("strided", True)):
        for a, b in zip(ref, got, strict=True):
            np.testing.assert_array_equal(b, a)


def test_centred_angle_normals_match_the_polynomials(dev, monkeypatch):
    """KAPI_NORMAL_SINCOS=centred (math.cos/math.sin of the angle moved into [-pi, pi), the
    outputs negated) gives the polynomials' float32 normals within 4e-6 (fastmath's
    approximate cos/sin on NVIDIA GPUs: 2**-21.4 absolute, times radii up to ~6), staged or
    not."""
    from kapi import random as R

    def draw(mode, staged):
        monkeypatch.setattr(R, "SINCOS", mode)
        monkeypatch.setattr(R, "STAGED", staged)
        return kapi.random.default_rng(29, device=dev).standard_normal(70001, np.float32)

    for staged in (False, True):
        ref = draw(True, staged).asnumpy()
        got = draw("centred", staged).asnumpy()
        np.testing.assert_allclose(got, ref, rtol=0, atol=4e-6)
        assert np.abs(got - ref).max() > 0  # the other path ran
