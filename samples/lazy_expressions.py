"""Lazy fusion on kapi arrays: a chain of operators and ufuncs builds one expression and runs
as ONE kernel when its value is needed (kapi's own array programming, not numba-dpex).
Checks the results against NumPy, shows that an input changed after the expression was
built does not change its result, and times the fused chain against the same operators run
one at a time (KAPI_LAZY=0's behaviour)."""

import subprocess
import sys
import time

import numpy as np

import kapi


def gauss(x, m, y):
    return np.exp(-((x - m) ** 2)) * y + np.sin(x) / 2  # 7 operations, one kernel


def timed(fn, reps=5):
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn().asnumpy()[:1]  # reading the result is what runs a pending expression
    return (time.perf_counter() - t0) / reps


def main(n=1 << 20):
    rng = np.random.default_rng(0)
    hx = rng.uniform(-3, 3, n).astype(np.float32)
    hy = rng.uniform(0, 1, n).astype(np.float32)
    x, y = kapi.asarray(hx), kapi.asarray(hy)
    ok = True

    g = gauss(x, 0.5, y)  # nothing has run yet: g is pending, its metadata known
    print(f"  pending result: shape {g.shape}, dtype {g.dtype}, on {g.device.name}")
    want = gauss(hx, np.float32(0.5), hy)
    good = g.dtype == want.dtype and np.allclose(g.asnumpy(), want, rtol=1e-5, atol=1e-6)
    print(f"  exp(-(x - m)^2) * y + sin(x) / 2: {'ok' if good else 'WRONG'}")
    ok &= good

    r = 2 * x + 1  # built now...
    x[:10] = 100.0  # ...x changes before r is read: r keeps the values x had
    good = np.array_equal(r.asnumpy(), 2 * hx + 1)
    print(f"  snapshot (input written after the expression): {'ok' if good else 'WRONG'}")
    ok &= good
    x[:10] = kapi.asarray(hx[:10])

    # types as NumPy 2 gives them: np.int8 is strong, the Python int -1 weak
    mixed = (x > 0).astype(np.int8) * 3 + kapi.where(y < 0.5, np.int8(1), -1)
    want = (hx > 0).astype(np.int8) * 3 + np.where(hy < 0.5, np.int8(1), -1)
    h = mixed.asnumpy()
    good = h.dtype == np.int8 and np.array_equal(h, want)
    print(f"  bool -> int8, where with weak scalars: {h.dtype} {'ok' if good else 'WRONG'}")
    ok &= good

    fused = timed(lambda: gauss(x, 0.5, y))
    code = (
        "import sys, time, numpy as np, kapi\n"
        f"sys.path.insert(0, {str(__file__.rsplit('/', 1)[0])!r})\n"
        "from lazy_expressions import gauss, timed\n"
        "x = kapi.asarray(np.linspace(-3, 3, 1 << 20, dtype=np.float32))\n"
        "print(timed(lambda: gauss(x, 0.5, x)))\n"
    )
    env = {**__import__("os").environ, "KAPI_LAZY": "0"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if r.returncode == 0:
        eager = float(r.stdout.split()[-1])
        print(f"  one kernel per operator (KAPI_LAZY=0): {eager * 1e3:.2f} ms")
    else:
        print(r.stderr[-1000:])
        ok = False
    print(
        f"lazy_expressions n={n} on {x.device.name}: fused chain {fused * 1e3:.2f} ms "
        f"-> {'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
