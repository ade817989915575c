"""Array programming without writing kernels: operators, NumPy ufuncs, a fused expression and
reductions on kapi arrays, each run as generated kernels on the device where the arrays live
(the default device), checked against NumPy."""

import sys
import time

import numpy as np

import kapi


@kapi.fuse
def gaussian(x, mu, y):
    return np.exp(-((x - mu) ** 2)) * y + 1


def main(n=1 << 20):
    rng = np.random.default_rng(0)
    hx = rng.uniform(-3, 3, (n // 256, 256)).astype(np.float32)
    hy = rng.uniform(0, 1, 256).astype(np.float32)
    x, y = kapi.asarray(hx), kapi.asarray(hy)  # compute follows data: everything runs here
    checks = {}

    z = x * 4 - y / 2  # operators, broadcasting (256,) against (n/256, 256), a weak scalar
    checks["x * 4 - y / 2"] = (z, hx * 4 - hy / 2)
    s = np.sin(x) ** 2 + np.cos(x) ** 2  # NumPy ufuncs through __array_ufunc__
    checks["sin^2 + cos^2"] = (s, np.sin(hx) ** 2 + np.cos(hx) ** 2)
    gaussian(x, 0.5, y)  # compiles the one fused kernel
    t0 = time.perf_counter()
    g = gaussian(x, 0.5, y)
    g.sycl_queue.wait()
    dt = time.perf_counter() - t0
    checks["fused exp(-(x - mu)^2) * y + 1"] = (g, np.exp(-((hx - 0.5) ** 2)) * hy + 1)
    m = x > 0
    m &= x < 1  # in place
    checks["0 < x < 1"] = (m, (hx > 0) & (hx < 1))
    checks["sum(axis=1)"] = (x.sum(axis=1), hx.sum(axis=1))
    checks["mean"] = (x.mean(), hx.mean())
    checks["max(axis=0, keepdims)"] = (x.max(axis=0, keepdims=True), hx.max(axis=0, keepdims=True))
    checks["argmin"] = (x.argmin(), hx.argmin())
    checks["count of 0 < x < 1"] = (m.sum(), m.asnumpy().sum())

    ok = True
    for name, (got, want) in checks.items():
        h = got.asnumpy()
        good = h.dtype == np.asarray(want).dtype and np.allclose(h, want, rtol=1e-4, atol=1e-5)
        ok &= bool(good)
        print(f"  {name:32s} {h.dtype}{list(h.shape)}: {'ok' if good else 'WRONG'}")
    print(
        f"array_ops n={x.size} on {x.device.name}: fused expression {dt * 1e3:.3f} ms "
        f"-> {'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
