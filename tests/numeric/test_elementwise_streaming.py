"""The CPU device's elementwise kernels with their results written by streaming stores: they only
write `out`, so the CPU driver builds each a streaming entry (KAPI_HOST_STREAMS) and launches it
for large results (KAPI_CPU_STREAMING). Forced on (`1`) and off (`0`), each in a subprocess (the
setting is read when a kernel object is created), every kind of output holds NumPy's values and
the same bits either way: dtypes, 2-D, broadcasting, fused chains, `out=` views at odd offsets
whose vectors are not aligned (the driver's address test writes those plainly), transposed
outputs (strided: no vector stores, so no streaming ones)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import needs_cpu_device

import kapi
from kapi._numeric import streaming as _streaming

# The cases' inputs, in the subprocess and here alike.
HOST = textwrap.dedent(
    """
    def host(dtype, shape, seed):
        rng = np.random.default_rng(seed)
        if np.dtype(dtype) == np.bool_:
            return rng.random(shape) < 0.5
        if np.dtype(dtype).kind == "c":
            return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
        return (rng.standard_normal(shape) * 20).astype(dtype)
    """
)
_NS: dict = {"np": np}
exec(HOST, _NS)  # noqa: S102 - the test's own source
host = _NS["host"]

CASES = (
    "import sys, numpy as np, kapi\n"
    + HOST
    + textwrap.dedent(
        """
    out = {}
    np.seterr(all="ignore")
    for dtype in ("float32", "float64", "int8", "int64", "float16", "complex64"):
        for shape in ((4099,), (37, 1001)):
            h, g = host(dtype, shape, 1), host(dtype, shape, 2)
            a, b = kapi.asarray(h, device="cpu"), kapi.asarray(g, device="cpu")
            key = f"{dtype}-{len(shape)}"
            out[key + "-add"] = (a + b).asnumpy()
            out[key + "-chain"] = (a * b - a).asnumpy()  # one fused kernel
            out[key + "-scalar"] = (a * 3).asnumpy()
            out[key + "-bcast"] = (a + b[..., :1]).asnumpy()
    h, g = host("float32", 5003, 3), host("float32", 5003, 4)
    a, b = kapi.asarray(h, device="cpu"), kapi.asarray(g, device="cpu")
    out["less"] = (a < b).asnumpy()
    out["and"] = np.logical_and(a > 0, b > 0).asnumpy()
    n = 10_000
    h, g = host("float32", n, 5), host("float32", n, 6)
    a, b = kapi.asarray(h, device="cpu"), kapi.asarray(g, device="cpu")
    for offset in (0, 1, 3, 15):
        buf = kapi.asarray(np.full(n + 32, -7, np.float32), device="cpu")
        np.add(a, b, out=buf[offset : offset + n])
        out[f"view{offset}"] = buf.asnumpy()
    h = host("float64", (300, 200), 7)
    t = kapi.asarray(np.zeros((200, 300)), device="cpu")
    np.multiply(kapi.asarray(h, device="cpu"), 2.0, out=t.T)
    out["transposed"] = t.asnumpy()
    np.savez(sys.argv[1], **out)
    """
    )
)


def _run(tmp_path, setting: str, dump: bool = False):
    """CASES in a subprocess with KAPI_CPU_STREAMING=setting: its results (and, with dump, the
    host IR of its kernels, the disk cache off)."""
    path = tmp_path / f"cases{setting}.npz"
    env = dict(os.environ, KAPI_CPU_STREAMING=setting, PYTHONPATH=os.path.dirname(
        os.path.dirname(kapi.__file__)))  # fmt: skip
    if dump:
        env.update(KAPI_DUMP="host", KAPI_CACHE="0")
    r = subprocess.run(
        [sys.executable, "-c", CASES, str(path)], env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr[-3000:]
    with np.load(path) as f:
        return {k: f[k] for k in f.files}, r.stderr


def _want(key):
    """NumPy's answer for a case of CASES."""
    with np.errstate(all="ignore"):
        if key in ("less", "and"):
            h, g = host("float32", 5003, 3), host("float32", 5003, 4)
            return h < g if key == "less" else (h > 0) & (g > 0)
        if key.startswith("view"):
            off, n = int(key[4:]), 10_000
            want = np.full(n + 32, -7, np.float32)
            want[off : off + n] = host("float32", n, 5) + host("float32", n, 6)
            return want
        if key == "transposed":
            return (host("float64", (300, 200), 7) * 2).T
        dtype, nd, op = key.split("-")
        shape = (4099,) if nd == "1" else (37, 1001)
        h, g = host(dtype, shape, 1), host(dtype, shape, 2)
        return {"add": h + g, "scalar": h * 3, "bcast": h + g[..., :1], "chain": None}[op]


def test_streamed_elementwise_results_hold_numpy_values(tmp_path):
    needs_cpu_device()
    streamed, ir = _run(tmp_path, "1", dump=True)
    plain, _ = _run(tmp_path, "0")
    assert "_elementwise.kapi.stream(" in ir  # the driver built streaming entries
    assert streamed.keys() == plain.keys()
    for key, got in streamed.items():
        # bit for bit what plain stores give (float16 rounds once, complex products may fuse,
        # with or without streaming)
        np.testing.assert_array_equal(got, plain[key], err_msg=key)
        want = _want(key)
        if want is not None:
            np.testing.assert_array_equal(got, want, err_msg=key)


def test_auto_rule_by_size():
    assert _streaming.pays("auto", 32 << 20, 16) and not _streaming.pays("auto", 16 << 20, 32)
    assert _streaming.pays("auto", 8 << 20, 2) and not _streaming.pays("auto", (8 << 20) - 1, 2)
    assert _streaming.pays("1", 4, 64) and not _streaming.pays("0", 1 << 40, 1)


@pytest.mark.parametrize("value", ["on", "", "2"])
def test_bad_setting_is_refused(value):
    with pytest.raises(ValueError, match="must be 'auto', '0' or '1'"):
        _streaming.parse("KAPI_SCAN_CPU_STREAMING", value)
