"""The CPU device's elementwise kernels writing their outputs by streaming stores
(kernel_api.store_nontemporal; kapi/_numeric/ufunc.py's STREAMING, forced on here): the same
values as NumPy for every kind of output (dtypes, 2-D, broadcasting, `out=` views at odd offsets
whose vectors are not aligned, transposed outputs, which stay plain), and the switch."""

import numpy as np
import pytest
from kapi_testing import import_reduce_with, needs_cpu_device

import kapi
from kapi._numeric import replay as _replay
from kapi._numeric import streaming as _streaming
from kapi._numeric import ufunc as _uf


@pytest.fixture
def streaming(monkeypatch):
    needs_cpu_device()
    monkeypatch.setattr(_uf, "STREAMING", "1")
    _uf._LAUNCH_PLANS.clear()
    _replay.clear_plans()
    yield
    _uf._LAUNCH_PLANS.clear()
    _replay.clear_plans()


def _plain(fn):
    """fn()'s values with ordinary stores (STREAMING back to "1" after)."""
    _uf.STREAMING = "0"
    _uf._LAUNCH_PLANS.clear()
    _replay.clear_plans()
    try:
        return fn().asnumpy()
    finally:
        _uf.STREAMING = "1"
        _uf._LAUNCH_PLANS.clear()
        _replay.clear_plans()


def _host(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 20).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int64", "float16", "complex64"])
@pytest.mark.parametrize("shape", [(4099,), (37, 1001)])
def test_streamed_outputs_hold_numpy_values(streaming, dtype, shape):
    h, g = _host(dtype, shape, 1), _host(dtype, shape, 2)
    a, b = kapi.asarray(h, device="cpu"), kapi.asarray(g, device="cpu")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((a + b).asnumpy(), h + g)
        # a fused chain: bit for bit what plain stores give (float16 rounds once, complex
        # products may fuse, with or without streaming)
        np.testing.assert_array_equal((a * b - a).asnumpy(), _plain(lambda: a * b - a))
        np.testing.assert_array_equal((a * 3).asnumpy(), h * 3)  # a scalar leaf
        np.testing.assert_array_equal((a + b[..., :1]).asnumpy(), h + g[..., :1])  # broadcast


def test_streamed_bool_outputs(streaming):
    h, g = _host("float32", 5003, 3), _host("float32", 5003, 4)
    a, b = kapi.asarray(h, device="cpu"), kapi.asarray(g, device="cpu")
    np.testing.assert_array_equal((a < b).asnumpy(), h < g)
    np.testing.assert_array_equal(np.logical_and(a > 0, b > 0).asnumpy(), (h > 0) & (g > 0))


@pytest.mark.parametrize("offset", [0, 1, 3, 15])
def test_out_views_at_odd_offsets(streaming, offset):
    """out= a view starting `offset` elements into its buffer: vectors not 64-byte aligned
    take the plain stores of the CPU driver's address test; the elements around the view
    stay as they were."""
    n = 10_000
    h, g = _host("float32", n, 5), _host("float32", n, 6)
    a, b = kapi.asarray(h, device="cpu"), kapi.asarray(g, device="cpu")
    buf = kapi.asarray(np.full(n + 32, -7, np.float32), device="cpu")
    np.add(a, b, out=buf[offset : offset + n])
    got = buf.asnumpy()
    np.testing.assert_array_equal(got[offset : offset + n], h + g)
    assert (got[:offset] == -7).all() and (got[offset + n :] == -7).all()


def test_transposed_output_is_written_plainly(streaming):
    """An output whose last dimension is strided keeps ordinary stores (streaming ones would
    write partial lines)."""
    h = _host("float64", (300, 200), 7)
    a = kapi.asarray(h, device="cpu")
    out = kapi.asarray(np.zeros((200, 300)), device="cpu")
    np.multiply(a, 2.0, out=out.T)
    np.testing.assert_array_equal(out.asnumpy(), (h * 2).T)
    strided = _uf._broadcast_strides(out.T, (300, 200))
    assert not _uf._streams(out.T, [strided])


def test_generated_source_streams_only_when_asked():
    src = _uf.kernel_source("l0 + l1", [np.zeros(1), np.zeros(1)], 1, streaming=True)
    assert "K.store_nontemporal(out, (i,), l0 + l1)" in src
    assert "store_nontemporal" not in _uf.kernel_source("l0 + l1", [None, None], 2)


def test_auto_rule_by_size(monkeypatch):
    assert _streaming.pays("auto", 32 << 20, 16) and not _streaming.pays("auto", 16 << 20, 32)
    assert _streaming.pays("auto", 8 << 20, 2) and not _streaming.pays("auto", (8 << 20) - 1, 2)
    assert _streaming.pays("1", 4, 64) and not _streaming.pays("0", 1 << 40, 1)
    # an output the next kernel reads streams only when it outgrows the last-level cache too
    monkeypatch.setattr(_streaming, "last_level_cache_bytes", lambda: 300 << 20)
    assert not _streaming.pays("auto", 64 << 20, 16, read_next=True)
    assert _streaming.pays("auto", 300 << 20, 16, read_next=True)
    assert _streaming.pays("auto", 64 << 20, 16)


def test_last_level_cache_is_read(tmp_path):
    """The largest of the caches a sysfs-like folder lists (sizes as Linux writes them); 0
    where it lists none (a container without the folder: no output is then held back)."""
    for i, size in enumerate(["48K", "2048K", "300M", "bogus", "32K"]):
        (tmp_path / f"index{i}").mkdir()
        (tmp_path / f"index{i}" / "size").write_text(size + "\n")
    assert _streaming.last_level_cache_bytes(str(tmp_path)) == 300 << 20
    assert _streaming.last_level_cache_bytes(str(tmp_path / "none")) == 0
    assert _streaming.last_level_cache_bytes() >= 0


def test_bad_switch_is_refused():
    r = import_reduce_with("KAPI_ELEMENTWISE_CPU_STREAMING", "on", "kapi._numeric.ufunc")
    assert r.returncode != 0
    assert "KAPI_ELEMENTWISE_CPU_STREAMING must be 'auto', '0' or '1', not 'on'" in r.stderr
