"""The CPU driver's streaming entries: a loop-scheme kernel with a short body that writes some
of its global arrays without reading them (the triad, `a[i] = b[i] + s * c[i]`) gets a second
entry, NAME.kapi.stream, with those stores, where vectorised (whole lines), as streaming
stores; the driver launches it when
the launch stores at least the larger of 8 MiB, 1 MiB a core and the L3 (KAPI_CPU_STREAMING:
`0` never, `1` always). Kernels that read what they write (saxpy), order memory (atomics),
store in loops, scatter (no vector store) or do long floating-point work (black-scholes) keep
one entry. Settings are
read when a kernel is built or created, so each case runs in a subprocess; the disk cache's
binaries keep the entry."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import devices_or_skip, host_ir_of

CPU = [d for d in devices_or_skip() if ":cpu:" in d.filter_string]
pytestmark = pytest.mark.skipif(not CPU, reason="no CPU device")

KERNELS = textwrap.dedent(
    """
    import math, sys, numpy as np, kapi
    from kapi import kernel_api as K

    @kapi.kernel
    def triad(item, a, b, c, s):
        i = item.get_id(0)
        a[i] = b[i] + s * c[i]

    @kapi.kernel
    def two_outputs(item, x, lo, flags):
        i = item.get_id(0)
        lo[i] = np.int32(x[i] * 4)
        flags[i] = x[i] > 0

    @kapi.kernel
    def saxpy(item, a, x, y):
        i = item.get_id(0)
        y[i] = a * x[i] + y[i]

    @kapi.kernel
    def counted(item, x, y, cnt):
        i = item.get_id(0)
        y[i] = x[i] + 1
        K.AtomicRef(cnt, 0).fetch_add(1)

    @kapi.kernel
    def looped(item, x, y, m):
        i = item.get_id(0)
        for k in range(m):  # (a run-time count: a loop, not four stores)
            y[i, k] = x[i] * k

    @kapi.kernel
    def scatter(item, x, perm, y):
        i = item.get_id(0)
        y[perm[i]] = x[i]  # only written, but not in whole lines: no vector store

    @kapi.kernel
    def heavy(item, x, y):
        i = item.get_id(0)
        v = x[i]
        y[i] = math.exp(math.log(v) * 0.5) + math.erf(v) * math.sqrt(v) + math.exp(-v)
    """
)

RUN = KERNELS + textwrap.dedent(
    """
    n = int(sys.argv[1])
    dev = kapi.Device("cpu")
    rng = np.random.default_rng(5)
    hb, hc = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    a = kapi.empty(n, dtype=np.float32, device=dev)
    b, c = kapi.asarray(hb, device=dev), kapi.asarray(hc, device=dev)
    kapi.call_kernel(triad, kapi.Range(n), a, b, c, np.float32(3))
    hx = (rng.random(n, dtype=np.float32) - 0.5) * 1000
    x = kapi.asarray(hx, device=dev)
    lo = kapi.zeros(n + 7, dtype=np.int32, device=dev)
    flags = kapi.zeros(n + 7, dtype=np.bool_, device=dev)
    kapi.call_kernel(two_outputs, kapi.Range(n), x, lo[:n], flags[:n])
    y = kapi.asarray(hc.copy(), device=dev)
    kapi.call_kernel(saxpy, kapi.Range(n), np.float32(2), b, y)
    cnt = kapi.zeros(1, dtype=np.int64, device=dev)
    z = kapi.empty(n, dtype=np.float32, device=dev)
    kapi.call_kernel(counted, kapi.Range(n), b, z, cnt)
    np.savez(sys.argv[2], a=a.asnumpy(), lo=lo.asnumpy(), flags=flags.asnumpy(),
             y=y.asnumpy(), z=z.asnumpy(), cnt=cnt.asnumpy(), hb=hb, hc=hc, hx=hx)
    """
)


def _run(tmp_path, n, name, **env):
    script = tmp_path / "run.py"
    script.write_text(RUN)
    out = tmp_path / f"{name}.npz"
    e = dict(os.environ, KAPI_DRIVERS="cpu", **env)
    r = subprocess.run([sys.executable, str(script), str(n), str(out)], env=e,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return np.load(out)


def _check(d, n):
    np.testing.assert_array_equal(d["a"], d["hb"] + np.float32(3) * d["hc"])
    hx = d["hx"]
    np.testing.assert_array_equal(d["lo"][:n], (hx * 4).astype(np.int32))
    np.testing.assert_array_equal(d["flags"][:n], hx > 0)
    assert not d["lo"][n:].any() and not d["flags"][n:].any()  # past the view: untouched
    np.testing.assert_array_equal(d["y"], np.float32(2) * d["hb"] + d["hc"])
    np.testing.assert_array_equal(d["z"], d["hb"] + 1)
    assert d["cnt"][0] == len(d["hb"])


@pytest.mark.parametrize("setting", ["1", "0", "auto"])
def test_streaming_entries_give_the_same_values(tmp_path, setting):
    """Every kernel's values with the streaming entries always, never and by size (n odd: a
    tail of scalar stores; 2^21 + 3 elements: 8 MiB of triad output, which `auto` streams or
    not by this host's L3: the values must be the same either way)."""
    for n in (1000, (1 << 21) + 3):
        _check(_run(tmp_path, n, f"{setting}-{n}", KAPI_CPU_STREAMING=setting), n)


def test_streaming_entries_from_the_disk_cache(tmp_path):
    """The second process loads the kernels' binaries (the native blob records the entries)
    and launches the streaming entries (KAPI_CPU_STREAMING=1) with the same values."""
    env = {"KAPI_CACHE": "1", "KAPI_CACHE_DIR": str(tmp_path / "cache"), "KAPI_CPU_STREAMING": "1"}
    first = _run(tmp_path, 4099, "first", **env)
    assert any((tmp_path / "cache").rglob("*")), "nothing was written to the disk cache"
    second = _run(tmp_path, 4099, "second", **env)
    _check(first, 4099)
    _check(second, 4099)


def _functions(ir: str) -> dict[str, str]:
    return {
        m.group(1): m.group(0)
        for m in re.finditer(r"^define [^@]*@([\w.]+)\(.*?^}", ir, re.S | re.M)
    }


def test_which_kernels_get_streaming_entries():
    code = KERNELS + textwrap.dedent(
        """
        n = 4096
        dev = kapi.Device("cpu")
        f = lambda: kapi.ones(n, dtype=np.float32, device=dev)

        def call(*args, real=kapi.call_kernel):
            try:
                real(*args)
            except kapi.KapiError as e:  # built for a CPU this one is not: the listing matters
                if "cannot run here" not in str(e):
                    raise

        kapi.call_kernel = call
        kapi.call_kernel(triad, kapi.Range(n), f(), f(), f(), np.float32(3))
        lo, flags = kapi.zeros(n, dtype=np.int32, device=dev), kapi.zeros(n, dtype=bool, device=dev)
        kapi.call_kernel(two_outputs, kapi.Range(n), f(), lo, flags)
        kapi.call_kernel(saxpy, kapi.Range(n), np.float32(2), f(), f())
        one = kapi.zeros(1, dtype=np.int64, device=dev)
        kapi.call_kernel(counted, kapi.Range(n), f(), f(), one)
        rows = kapi.ones((n, 4), dtype=np.float32, device=dev)
        kapi.call_kernel(looped, kapi.Range(n), f(), rows, 4)
        kapi.call_kernel(heavy, kapi.Range(n), f(), f())
        perm = kapi.asarray(np.random.default_rng(1).permutation(n), device=dev)
        kapi.call_kernel(scatter, kapi.Range(n), f(), perm, f())
        """
    )
    fns = _functions(host_ir_of(code, KAPI_HOST_CPU="skylake-avx512"))
    assert "triad.kapi.stream" in fns and "two_outputs.kapi.stream" in fns, list(fns)
    stream = fns["triad.kapi.stream"]
    assert re.search(r"store <\d+ x float> [^\n]*align (32|64), !nontemporal", stream), stream
    assert "!nontemporal" not in fns["triad.kapi.run"]
    for plain in ("saxpy", "counted", "looped", "heavy", "scatter"):
        assert f"{plain}.kapi.run" in fns and f"{plain}.kapi.stream" not in fns, plain


def test_streaming_entries_can_be_turned_off():
    code = KERNELS + textwrap.dedent(
        """
        f = lambda: kapi.ones(64, dtype=np.float32, device="cpu")
        kapi.call_kernel(triad, kapi.Range(64), f(), f(), f(), np.float32(3))
        """
    )
    assert "triad.kapi.stream" not in _functions(host_ir_of(code, KAPI_HOST_STREAMS="0"))
