"""kapi's histogram (np.histogram on kapi arrays, `import kapi as dpnp`) on every device
against NumPy's: equal bins over the data's range or a given one, explicit edges, weights,
density, and the errors NumPy raises."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize(
    "kw",
    [
        {"bins": 7},
        {"bins": 5, "range": (0.2, 0.7)},
        {"bins": 4, "weights": True},
        {"bins": 3, "density": True},
    ],
    ids=["bins", "range", "weights", "density"],
)
def test_histogram_matches_numpy(dev, dtype, kw):
    if np.dtype(dtype) == np.float64 and not dev.has_aspect_fp64:
        pytest.skip("device without fp64")
    rng = np.random.default_rng(1)
    x = (rng.random(300) * (10 if np.dtype(dtype).kind == "i" else 1)).astype(dtype)
    x[:3] = x.max()  # values on the last edge count in the last bin
    kw = dict(kw)
    ours = dict(kw)
    if kw.get("weights"):
        kw["weights"] = rng.random(300)
        ours["weights"] = kapi.asarray(kw["weights"], device=dev)
    hist, edges = np.histogram(kapi.asarray(x, device=dev), **ours)
    want_hist, want_edges = np.histogram(x, **kw)
    assert hist.dtype == want_hist.dtype and edges.dtype == want_edges.dtype
    np.testing.assert_allclose(edges.asnumpy(), want_edges, rtol=1e-6)
    # float32 edges: NumPy computes them its own way, within float32's rounding
    rtol = 1e-6 if kw.get("density") and np.dtype(dtype) == np.float32 else 1e-10
    np.testing.assert_allclose(hist.asnumpy(), want_hist, rtol=rtol)


def test_histogram_edges_and_errors(dev):
    rng = np.random.default_rng(2)
    x = rng.random(100)
    edges = np.array([0.0, 0.1, 0.5, 0.55, 2.0])
    hist, e = kapi.histogram(kapi.asarray(x, device=dev), bins=kapi.asarray(edges, device=dev))
    np.testing.assert_array_equal(hist.asnumpy(), np.histogram(x, bins=edges)[0])
    np.testing.assert_array_equal(e.asnumpy(), edges)
    a = kapi.asarray(x, device=dev)
    with pytest.raises(ValueError, match="positive integer"):
        np.histogram(a, 0)
    with pytest.raises(ValueError, match="max must be larger than min"):
        np.histogram(a, 3, range=(1.0, 0.0))
    with pytest.raises(ValueError, match="same shape"):
        np.histogram(a, 3, weights=kapi.ones(5, device=dev))
    # one value: a bin of width 1 around it, as NumPy
    h, e = np.histogram(kapi.asarray(np.array([2.0, 2.0]), device=dev), 2)
    np.testing.assert_array_equal(e.asnumpy(), [1.5, 2.0, 2.5])
    np.testing.assert_array_equal(h.asnumpy(), [0, 2])


@pytest.mark.parametrize("scheme", ["chunks", "groups"])
@pytest.mark.parametrize("n", [0, 1, 1000, 100003])
def test_histogram_counts_without_sorting(dev, monkeypatch, scheme, n):
    """The counts kernels (a chunk a work-item on the CPU driver, a tile a work-group with
    local atomics on GPUs; both forced on every device) against NumPy: equal bins (the bin
    estimated, then moved to agree with the edges) and given edges (a binary search), values
    on every edge, outside the range, NaN and infinities, integers, bools and unsigned bytes
    compared in float64, one bin and many; no argsort (the general path's) is called."""
    from kapi._numeric import array_api as xp
    from kapi._numeric import histogram as H

    monkeypatch.setattr(H, "_per_chunk", lambda a: scheme == "chunks")
    monkeypatch.setattr(H, "_CPU_MIN_CHUNK", 64)  # several chunks at these sizes

    def no_sort(*a, **k):
        raise AssertionError("argsort called")

    monkeypatch.setattr(xp, "argsort", no_sort)
    rng = np.random.default_rng(n)
    base = rng.normal(0.5, 0.4, n)
    edges = np.array([-0.5, 0.0, 0.1, 0.1, 0.5, 0.55, 1.0, 2.0])
    if n >= 8:
        base[:8] = edges  # every edge, the last one closing the last bin
    for dt in (np.float64, np.float32, np.int32, np.uint8, np.bool_):
        h = base.astype(dt) if np.dtype(dt).kind == "f" else (base * 4).astype(dt)
        if np.dtype(dt).kind == "f" and n > 20:
            h[10:13] = [np.nan, np.inf, -np.inf]
        x = kapi.asarray(h, device=dev)
        cases = [
            {"bins": 1, "range": (0.0, 1.0)},
            {"bins": 7, "range": (-0.25, 1.5)},
            {"bins": 1000, "range": (0.0, 1.0)},
            {"bins": edges},
            {"bins": edges[:2]},
            {"bins": np.linspace(-1, 2, 1001)},
        ]
        if np.isfinite(h).all() and n:
            cases.append({"bins": 13})  # the data's own range
        for kw in cases:
            ours = dict(kw)
            if not isinstance(kw["bins"], int):
                ours["bins"] = kapi.asarray(kw["bins"], device=dev)
            got, _ = kapi.histogram(x, **ours)
            want, _ = np.histogram(h.astype(np.uint8) if dt == np.bool_ else h, **kw)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.asnumpy(), want, err_msg=f"{dt} {kw}")
    ints = np.arange(-3, 20, dtype=np.int64)  # integer edges, float data: float64 compares
    got, _ = kapi.histogram(kapi.asarray(base, device=dev), bins=kapi.asarray(ints, device=dev))
    np.testing.assert_array_equal(got.asnumpy(), np.histogram(base, bins=ints)[0])
    # float32 values on float32 equal-bin edges, many rounded below k / bins: the estimate
    # falls a bin short and the edges move it up (or down)
    for lo, hi in ((0.0, 1.0), (0.7, 3.3)):
        e32 = np.histogram(np.zeros(1, np.float32), bins=999, range=(lo, hi))[1]
        v = np.concatenate(
            [e32, np.nextafter(e32, np.float32(-9)), np.nextafter(e32, np.float32(9))]
        )
        got, _ = kapi.histogram(kapi.asarray(v, device=dev), bins=999, range=(lo, hi))
        np.testing.assert_array_equal(got.asnumpy(), np.histogram(v, bins=999, range=(lo, hi))[0])


@pytest.mark.parametrize("scheme", ["chunks", "groups"])
@pytest.mark.parametrize("n", [0, 1, 1000, 100003])
def test_histogram_sums_of_weights_without_sorting(dev, monkeypatch, scheme, n):
    """Weights go through the counts kernels too (both schemes forced on every device), each
    value adding its weight: float, integer and boolean weights, equal bins and given edges,
    values on every edge, outside and NaN; NumPy's result and its dtype (the weights'), and no
    argsort."""
    from kapi._numeric import array_api as xp
    from kapi._numeric import histogram as H

    monkeypatch.setattr(H, "_per_chunk", lambda a: scheme == "chunks")
    monkeypatch.setattr(H, "_CPU_MIN_CHUNK", 64)

    def no_sort(*a, **k):
        raise AssertionError("argsort called")

    monkeypatch.setattr(xp, "argsort", no_sort)
    rng = np.random.default_rng(n)
    h = rng.normal(0.5, 0.4, n).astype(np.float32)
    edges = np.array([-0.5, 0.0, 0.1, 0.1, 0.5, 0.55, 1.0, 2.0], dtype=np.float32)
    if n >= 8:
        h[:8] = edges
    if n > 20:
        h[10] = np.nan
    x = kapi.asarray(h, device=dev)
    wtypes = [np.float32, np.int32, np.int64, np.uint8, np.bool_]
    if dev.has_aspect_fp64:
        wtypes.append(np.float64)
    for wt in wtypes:
        w = (rng.random(n) * 5 - (2 if np.dtype(wt).kind == "i" else 0)).astype(wt)
        kw_all = [{"bins": 7, "range": (-0.25, 1.5)}, {"bins": 1000, "range": (0.0, 1.0)}]
        if wt != np.bool_:  # NumPy's search path cannot subtract booleans
            kw_all += [{"bins": edges}, {"bins": np.linspace(-1, 2, 101)}]
        for kw in kw_all:
            ours = dict(kw, weights=kapi.asarray(w, device=dev))
            if not isinstance(kw["bins"], int):
                ours["bins"] = kapi.asarray(kw["bins"], device=dev)
            got, _ = kapi.histogram(x, **ours)
            want, _ = np.histogram(h, weights=w, **kw)
            assert got.dtype == want.dtype, (wt, kw)
            msg = f"{wt} {kw}"
            if np.dtype(wt).kind == "f":
                # against float64 sums (NumPy's given edges subtract float32 running sums);
                # GPUs add float32 weights in float32, as CuPy does
                want = np.histogram(h, weights=w.astype(np.float64), **kw)[0]
                rtol = 2e-5 if wt == np.float32 else 1e-12
                atol = 8 * np.finfo(np.float64).eps * float(w.sum())  # NumPy's running sums
                np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=atol, err_msg=msg)
            else:
                np.testing.assert_array_equal(got.asnumpy(), want, err_msg=msg)
