"""Monte Carlo pi with kapi.random's Philox generator and kapi.reduce with a device function:
random points in the unit square, the fraction inside the quarter circle. Everything runs on
the default device; the check counts the same points with NumPy, compares them with the CPU
device's numbers from the same seed (the generator's numbers are the same on every device) and
bounds the estimate's error."""

import math
import sys
import time

import numpy as np

import kapi


@kapi.device_func
def add(a, b):
    return a + b


def main(n=1 << 22):
    rng = kapi.random.default_rng(2024)
    x = rng.random(n, dtype=np.float32)  # the default device, 2^22 numbers each
    y = rng.random(n, dtype=np.float32)

    def count():
        return int(kapi.reduce(add, (x * x + y * y < 1).astype(np.int64)))

    count()  # the first call compiles the kernels
    t0 = time.perf_counter()
    est = 4 * count() / n
    dt = time.perf_counter() - t0
    # the count on the host from the same numbers, and (where kapi's CPU device is loaded) the
    # same numbers from a second generator with the same seed on it
    hx, hy = x.asnumpy(), y.asnumpy()
    same = True
    if any(d.device_type == "cpu" for d in kapi.devices()):
        cpu = kapi.random.default_rng(2024, device="cpu")
        cx, cy = cpu.random(n, dtype=np.float32).asnumpy(), cpu.random(n, dtype=np.float32)
        same = np.array_equal(cx, hx) and np.array_equal(cy.asnumpy(), hy)
    want = 4 * int(np.count_nonzero(hx * hx + hy * hy < 1)) / n
    err = abs(est - math.pi)
    ok = same and est == want and err < 5 * math.sqrt(math.pi * (4 - math.pi) / n)
    print(
        f"pi ~ {est:.6f} (error {err:.2e}) from {n} points on {x.device.name}: "
        f"{dt * 1e3:.3f} ms -> {'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
