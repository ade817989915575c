"""The CPU driver's interleaving of heavy work-item loops: a barrier-free kernel whose body is
long straight-line floating-point work (exp, log, sqrt, divisions, erf: black-scholes) gets
its vectorised work-item loop interleaved four times (independent vectors per iteration, so
that one iteration's long dependent chains overlap the next's); light kernels keep the
vectoriser's choice. KAPI_HOST_INTERLEAVE=0 restores the vectoriser's choice everywhere, a
power of two sets the count. The setting is read when a kernel is built, so each case runs in a
subprocess."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import devices_or_skip

CPU = [d for d in devices_or_skip() if ":cpu:" in d.filter_string]
pytestmark = pytest.mark.skipif(not CPU, reason="no CPU device")

SCRIPT = textwrap.dedent(
    """
    import math, sys, numpy as np, kapi

    @kapi.kernel
    def options(item, price, strike, t, rate, vol, call, put):
        f = price.dtype.type
        i = item.get_id(0)
        p, s, tt = price[i], strike[i], t[i]
        a = math.log(p / s)
        b = tt * -rate
        z = tt * vol * vol * f(2.0)
        c = f(0.25) * z
        y = f(1.0) / math.sqrt(z)
        d1 = f(0.5) + f(0.5) * math.erf((a - b + c) * y)
        d2 = f(0.5) + f(0.5) * math.erf((a - b - c) * y)
        se = math.exp(b) * s
        r = p * d1 - se * d2
        call[i] = r
        put[i] = r - p + se

    @kapi.kernel
    def saxpy(item, a, x, y):
        i = item.get_id(0)
        y[i] = a * x[i] + y[i]

    n = int(sys.argv[1])
    out = {}
    for dt in (np.float32, np.float64):
        rng = np.random.default_rng(3)
        args = [kapi.asarray(rng.uniform(lo, hi, n).astype(dt), device="cpu")
                for lo, hi in ((10, 50), (10, 50), (1, 2))]
        res = [kapi.zeros(n, dtype=dt, device="cpu") for _ in range(2)]
        kapi.call_kernel(options, kapi.Range(n), *args, dt(0.1), dt(0.2), *res)
        out[np.dtype(dt).name] = [r.asnumpy() for r in res]
        x = kapi.asarray(np.ones(n, dt), device="cpu")
        kapi.call_kernel(saxpy, kapi.Range(n), dt(2), x, kapi.zeros(n, dtype=dt, device="cpu"))
    np.savez(sys.argv[2], **{f"{k}_{j}": v[j] for k, v in out.items() for j in range(2)})
    """
)


def run(tmp_path, n, env):
    """Runs SCRIPT on n options under env: (the host IR dump, {dtype_j: output j})."""
    full = {
        k: v for k, v in os.environ.items() if k not in ("KAPI_HOST_INTERLEAVE", "KAPI_HOST_ERF")
    }
    full.update(env, KAPI_DUMP="host", KAPI_CACHE="0")
    full["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    path = tmp_path / f"out{len(list(tmp_path.iterdir()))}.npz"
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(n), str(path)], env=full, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    with np.load(path) as f:
        return r.stderr, {k: f[k] for k in f.files}


def notes(ir):
    """The "kapi-interleave" notes of the dump, in kernel order (options, saxpy per dtype):
    (count, operation count, instruction count)."""
    return re.findall(r'"kapi-interleave"="(\d+) \(work (-?\d+), size (\d+)\)"', ir)


def widest_sqrts(ir, ty):
    """How many sqrt calls of ty's widest vector the dump holds (the main vector body's: one per
    interleaved vector)."""
    widths = [int(w) for w in re.findall(rf"call <(\d+) x {ty}> @llvm\.sqrt\.v", ir)]
    return widths.count(max(widths)) if widths else 0


def reference(dt, n):
    rng = np.random.default_rng(3)
    p, s, t = (rng.uniform(lo, hi, n).astype(dt) for lo, hi in ((10, 50), (10, 50), (1, 2)))
    p, s, t = (v.astype(np.float64) for v in (p, s, t))
    from math import erf

    a = np.log(p / s)
    b = -0.1 * t
    z = t * 0.2 * 0.2 * 2
    y = 1 / np.sqrt(z)
    cndf = np.vectorize(lambda w: 0.5 + 0.5 * erf(w))
    d1, d2 = cndf((a - b + 0.25 * z) * y), cndf((a - b - 0.25 * z) * y)
    se = np.exp(b) * s
    r = p * d1 - se * d2
    return r, r - p + se


def test_heavy_loops_interleave_and_light_ones_do_not(tmp_path):
    """By default the options kernel (exp, log, sqrt, two erf, divisions) is marked with count
    4 and its vector body holds four sqrt vectors (the vectoriser's choice: one in double);
    saxpy is left alone. KAPI_HOST_INTERLEAVE=0 marks nothing, =2 marks 2."""
    ir, _ = run(tmp_path, 4096, {})
    marks = notes(ir)
    assert [m[0] for m in marks] == ["4", "0", "4", "0"], marks
    assert all(int(m[1]) >= 48 and int(m[2]) <= 512 for m in marks[::2])
    assert all(int(m[1]) < 48 for m in marks[1::2])
    off, _ = run(tmp_path, 4096, {"KAPI_HOST_INTERLEAVE": "0"})
    assert [m[0] for m in notes(off)] == ["0"] * 4
    assert widest_sqrts(ir, "double") == 4 and widest_sqrts(off, "double") < 4
    assert widest_sqrts(ir, "float") == 4 and widest_sqrts(off, "float") <= 4
    two, _ = run(tmp_path, 4096, {"KAPI_HOST_INTERLEAVE": "2"})
    assert [m[0] for m in notes(two)] == ["2", "0", "2", "0"]


@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_interleaved_results_are_the_vectorisers(tmp_path, n):
    """Interleaving changes which vector a work-item lands in, never its arithmetic: with erf
    as the driver's formulas (KAPI_HOST_ERF=ir: vector and scalar code agree bit for bit, where
    libmvec's vector erf and libm's scalar one differ in the last bits), the results agree bit
    for bit with KAPI_HOST_INTERLEAVE=0's, tails (n not a multiple of four vectors) included;
    and by default they agree with NumPy's to the kernel's precision."""
    _, same = run(tmp_path, n, {"KAPI_HOST_ERF": "ir"})
    _, off = run(tmp_path, n, {"KAPI_HOST_ERF": "ir", "KAPI_HOST_INTERLEAVE": "0"})
    for key in same:
        np.testing.assert_array_equal(same[key], off[key], err_msg=key)
    _, got = run(tmp_path, n, {})
    for dt, tol in ((np.float32, 2e-4), (np.float64, 1e-12)):
        for j, want in enumerate(reference(dt, n)):
            np.testing.assert_allclose(
                got[f"{np.dtype(dt).name}_{j}"], want, rtol=tol, atol=tol * 50
            )


def test_a_heavy_kernel_with_a_loop_is_left_alone(tmp_path):
    """A kernel with a loop (on the loop scheme under KAPI_HOST_LOOPVEC=0) is not marked however
    much work its body holds: its work-item loop is not innermost. The note says why (-1)."""
    script = textwrap.dedent(
        """
        import math, numpy as np, kapi

        @kapi.kernel
        def looped(item, x, out, m):
            i = item.get_id(0)
            v = x[i]
            acc = v * 0
            for k in range(m):
                acc += math.exp(v * k) * math.log(v + k) + math.sqrt(v + k) / (v + k + 1)
            out[i] = acc + math.erf(v) * math.exp(v) + math.log(v) * math.sqrt(v) / (v + 2)

        x = kapi.asarray(np.linspace(0.5, 1, 1000), device="cpu")
        out = kapi.zeros(1000, dtype=np.float64, device="cpu")
        kapi.call_kernel(looped, kapi.Range(1000), x, out, 3)
        v = np.linspace(0.5, 1, 1000)
        want = sum(np.exp(v * k) * np.log(v + k) + np.sqrt(v + k) / (v + k + 1) for k in range(3))
        want += np.vectorize(math.erf)(v) * np.exp(v) + np.log(v) * np.sqrt(v) / (v + 2)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-13)
        """
    )
    full = {k: v for k, v in os.environ.items() if k != "KAPI_HOST_INTERLEAVE"}
    full.update(KAPI_DUMP="host", KAPI_CACHE="0", KAPI_HOST_LOOPVEC="0")
    full["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "-c", script], env=full, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [m[:2] for m in notes(r.stderr)] == [("0", "-1")]


def test_a_huge_body_is_left_alone(tmp_path):
    """A body of more than 512 instructions is not interleaved however heavy (its vector body
    would be copied four times: compile time), and still computes what NumPy does."""
    steps = "\n".join("    v = math.exp(v * 0.5) * 0.25 + math.log(v + 2.0)" for _ in range(24))
    script = (
        "import math, numpy as np, kapi\n"
        "@kapi.kernel\n"
        "def huge(item, x, out):\n"
        "    i = item.get_id(0)\n"
        "    v = x[i]\n" + steps + "\n    out[i] = v\n"
        "x = np.linspace(0.5, 1, 1000)\n"
        "out = kapi.zeros(1000, dtype=np.float64, device='cpu')\n"
        "kapi.call_kernel(huge, kapi.Range(1000), kapi.asarray(x, device='cpu'), out)\n"
        "v = x.copy()\n"
        "for _ in range(24):\n"
        "    v = np.exp(v * 0.5) * 0.25 + np.log(v + 2.0)\n"
        "np.testing.assert_allclose(out.asnumpy(), v, rtol=1e-13)\n"
    )
    full = {k: v for k, v in os.environ.items() if k != "KAPI_HOST_INTERLEAVE"}
    full.update(KAPI_DUMP="host", KAPI_CACHE="0")
    full["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "-c", script], env=full, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    [(count, work, size)] = notes(r.stderr)
    assert count == "0" and int(work) >= 48 and int(size) > 512, (count, work, size)
