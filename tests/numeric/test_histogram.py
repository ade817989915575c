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
