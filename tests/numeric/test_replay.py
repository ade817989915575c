"""Recorded launch plans (kapi/_numeric/replay.py): a reduction's host path runs once per (op,
shape,
strides, dtype, axis, keepdims, device), later calls replay its launches. A plan reused for
another key would compute the wrong thing: these tests interleave keys that differ in one
field each and compare every call (the recording one and the replays) with NumPy."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi._numeric import primitives as _primitives
from kapi._numeric import reduce as _reduce
from kapi._numeric import replay as _replay

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@pytest.fixture
def replays(monkeypatch):
    """Counts Plan.replay calls (so that a test knows the plans were used)."""
    calls = []
    orig = _replay.Plan.replay

    def counted(self, x):
        calls.append(self)
        return orig(self, x)

    monkeypatch.setattr(_replay.Plan, "replay", counted)
    return calls


def _check(got, want, atol=0.0):
    got = got.asnumpy() if isinstance(got, kapi.Array) else np.asarray(got)
    assert got.shape == np.shape(want)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)


def test_plans_never_mix_shapes_dtypes_axes_or_strides(dev, replays):
    rng = np.random.default_rng(0)
    h32 = rng.standard_normal((6, 10)).astype(np.float32)
    a32 = kapi.asarray(h32, device=dev)
    cases = [(a32, h32)]  # (kapi array, its NumPy twin); each differs from another in one way
    for dt in (np.float64, np.int32, np.bool_):  # dtype only
        h = (
            (h32 * 100).astype(dt)
            if dt == np.int32
            else (h32 > 0 if dt == np.bool_ else h32.astype(dt))
        )
        cases.append((kapi.asarray(h, device=dev), h))
    for view in (
        lambda a: a[:, :8],  # shape and strides
        lambda a: a.T,  # strides only, shape (10, 6)
        lambda a: a[::2],  # every other row
        lambda a: a[1:],  # the same shape and strides at another offset...
        lambda a: a[:-1],  # ...than this one
        lambda a: a.reshape(60),
        lambda a: a.reshape(3, 20),
    ):
        cases.append((view(a32), view(h32)))
    ops = ["sum", "max", "min", "argmax", "argmin", "mean", "prod", "any", "all"]
    axes = [None, 0, -1, (0,), (1, 0)]
    for _round in range(2):  # the first round records, the second replays
        for a, h in cases:
            for op in ops:
                for axis in axes:
                    if h.ndim == 1 and axis not in (None, 0, -1, (0,)):
                        continue
                    if op.startswith("arg") and isinstance(axis, tuple):
                        continue
                    for keepdims in (False, True):
                        if op.startswith("arg") and keepdims:
                            continue
                        hh = h.astype(np.float64) if op == "prod" else h
                        aa = a.astype(np.float64) if op == "prod" else a
                        kw = {} if op.startswith("arg") else {"keepdims": keepdims}
                        want = getattr(np, op)(hh, axis=axis, **kw)
                        got = getattr(aa, op)(axis=axis, **kw)
                        _check(got, want)
    assert len(replays) > 500  # the second round replayed (nearly) every call
    assert sum(p is not None for p in _reduce._PLANS.values()) > 500


def test_replay_reads_each_arrays_own_data(dev, replays):
    """Arrays of one key share a plan, never a result: each call reads its own x (the plan
    keeps the views of the last x only while that x lives)."""
    for k in range(5):
        h = np.arange(1000, dtype=np.float32) * (k + 1)
        a = kapi.asarray(h, device=dev)
        assert float(a.sum()) == pytest.approx(h.sum())
        assert int(a.argmax()) == 999
        del a  # its memory goes back to the pool: the next array may get it
    b = kapi.asarray(np.ones(1000, np.float32), device=dev)
    c = kapi.asarray(np.full(1000, 2, np.float32), device=dev)
    r1, r2, r3 = b.sum(), c.sum(), b.sum()
    assert (float(r1), float(r2), float(r3)) == (1000.0, 2000.0, 1000.0)
    assert r1 is not r3 and r1.flags.owndata == r3.flags.owndata
    assert len(replays) >= 10


def test_replayed_result_sees_x_as_it_was(dev, replays):
    """A replayed reduction returns without waiting; a later write of x on the device (an
    in-order queue) or from the host comes after it."""
    x = kapi.asarray(np.arange(1 << 16, dtype=np.float32), device=dev)
    want = float(np.arange(1 << 16, dtype=np.float32).sum(dtype=np.float64))
    x.sum()
    s1 = x.sum()
    x.fill(0)
    s2 = x.sum()
    x[...] = 1
    s3 = x.max()
    np.multiply(x, 3, out=x)
    assert float(s1) == pytest.approx(want, rel=1e-5)
    assert float(s2) == 0.0 and float(s3) == 1.0 and float(x.sum()) == 3 * (1 << 16)
    assert len(replays) >= 2


def test_out_and_lazy_inputs_with_plans(dev, replays):
    h = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = kapi.asarray(h, device=dev)
    out = kapi.empty(4, np.float32, device=dev)
    for _ in range(3):
        assert x.sum(axis=1, out=out) is out
        np.testing.assert_allclose(out.asnumpy(), h.sum(axis=1))
        # a lazy x is read inside the reduction (no plan: its expression is part of the key)
        np.testing.assert_allclose((x * 2 + 1).sum(axis=0).asnumpy(), (h * 2 + 1).sum(axis=0))
    assert len(replays) == 2


def test_cumsum_plans_never_mix(dev, monkeypatch):
    calls = []
    orig = _replay.Plan.replay
    monkeypatch.setattr(_replay.Plan, "replay", lambda p, x: calls.append(p) or orig(p, x))
    rng = np.random.default_rng(1)
    hs = [
        rng.integers(-9, 9, 5000).astype(np.int32),
        rng.integers(-9, 9, 5000).astype(np.int64),
        rng.integers(-9, 9, (50, 100)).astype(np.int32),
        rng.integers(-9, 9, 4999).astype(np.int32),
        rng.integers(0, 2, 300).astype(np.bool_),
    ]
    for _round in range(2):
        for h in hs:
            a = kapi.asarray(h, device=dev)
            for axis in (None, 0, -1) if h.ndim == 2 else (None, 0):
                np.testing.assert_array_equal(kapi.cumsum(a, axis=axis).asnumpy(),
                                              np.cumsum(h, axis=axis))  # fmt: skip
                np.testing.assert_array_equal(kapi.cumprod(a[:7], axis=0).asnumpy(),
                                              np.cumprod(h[:7], axis=0))  # fmt: skip
    assert len(calls) >= 10
    assert _primitives  # the plans live in kapi/_numeric/primitives.py's cache


def test_elementwise_launch_plans_never_mix(dev):
    """One expression over operands of other strides, offsets, dtypes and shapes, in turn and
    twice each: every launch works out its own views (kapi/_numeric/ufunc.py's launch plans)."""
    from kapi._numeric import ufunc as _ufunc

    h = np.arange(60, dtype=np.float32).reshape(6, 10)
    a = kapi.asarray(h, device=dev)
    pairs = [
        (a, h),
        (a.T, h.T),
        (a[::2], h[::2]),
        (a[1:], h[1:]),
        (a[:-1], h[:-1]),
        (a[:, ::-1], h[:, ::-1]),
        (a.astype(np.float64), h.astype(np.float64)),
        (a.astype(np.int32), h.astype(np.int32)),
        (a.reshape(60), h.reshape(60)),
    ]
    for _round in range(2):
        for x, hx in pairs:
            np.testing.assert_allclose((x * 2 + x).asnumpy(), hx * 2 + hx)
            out = kapi.empty(hx.shape, hx.dtype, device=dev)
            np.multiply(x, 3, out=out)
            np.testing.assert_allclose(out.asnumpy(), hx * 3)
    assert len(_ufunc._LAUNCH_PLANS) >= len(pairs)


def test_random_plans_keep_the_stream(dev, monkeypatch):
    """Generator calls of other sizes, shapes and dtypes in turn (each kept plan: kernel,
    range, local memory) give the numbers of a generator that plans nothing."""
    import kapi.random as kr

    calls = [(10, np.float32), ((2, 5), np.float32), (10, np.float64), (1000, np.float32)]
    calls += [(11, np.float64), ((3, 4, 5), np.float32)] * 2

    def draw():
        g = kr.default_rng(7, device=dev)
        outs = []
        for size, dt in calls:
            for kind in ("random", "standard_normal"):
                r = getattr(g, kind)(size, dtype=dt)
                assert r.shape == (size if isinstance(size, tuple) else (size,))
                assert r.dtype == dt and r.device == dev
                outs.append(r.asnumpy())
        return outs

    first = draw()  # plans made here and reused by the second half of `calls`
    assert kr._PLANS

    class Forgetful(dict):
        def __setitem__(self, key, value):  # keeps nothing: every call plans afresh
            pass

    monkeypatch.setattr(kr, "_PLANS", Forgetful())
    for x, y in zip(first, draw(), strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(first[0], first[2])  # the stream moves on between calls


def test_gpu_scheme_plans_on_every_device(dev, monkeypatch, replays):
    """The GPUs' schemes (strided parts, two passes; the column kernel for outer axes) record
    and replay too: forced here on every device, against NumPy, twice each."""
    monkeypatch.setattr(_reduce, "_chunked", lambda x: False)
    h = np.random.default_rng(3).standard_normal((64, 300)).astype(np.float32)
    a = kapi.asarray(h, device=dev)
    cases = [(a, h), (a.T, h.T), (a[:, :257], h[:, :257]), (a.reshape(19200), h.reshape(19200))]
    for _round in range(2):
        for x, hx in cases:
            for op in ("sum", "max", "argmax", "any", "mean"):
                for axis in (None, 0, -1):
                    want = getattr(np, op)(hx, axis=axis)
                    _check(getattr(x, op)(axis=axis), want, atol=1e-4)  # f32 sums' rounding
    assert len(replays) >= 50
