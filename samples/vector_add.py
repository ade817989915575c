"""Vector addition, the smallest kapi program: c = a + b on the default device."""

import sys
import time

import numpy as np

import kapi as dpex
from kapi import kernel_api as kapi


@dpex.kernel
def vector_add(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]


def main(n=1 << 20):
    a = dpex.asarray(np.random.default_rng(0).random(n, dtype=np.float32))
    b = dpex.ones(n, dtype=np.float32)
    c = dpex.empty_like(a)
    dpex.call_kernel(vector_add, kapi.Range(n), a, b, c)  # compiles once
    t0 = time.perf_counter()
    dpex.call_kernel(vector_add, kapi.Range(n), a, b, c)
    dt = time.perf_counter() - t0
    ok = np.allclose(c.asnumpy(), a.asnumpy() + 1)
    gbs = 3 * 4 * n / dt / 1e9
    print(
        f"vector_add n={n} on {c.device.name}: {dt * 1e3:.3f} ms ({gbs:.1f} GB/s) -> "
        f"{'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
