"""Pairwise Euclidean distance (dpbench's numba-dpex kernel, imports changed only).

D[i, j] = || X1[i] - X2[j] || for float32 and float64, on the default device, checked
against NumPy. `make demo` runs this file.
"""

import math
import sys
import time

import numpy as np

import kapi as dpex
from kapi import kernel_api as kapi


@dpex.kernel
def pairwise_distance(item: kapi.Item, X1, X2, D):
    i = item.get_id(1)
    j = item.get_id(0)
    X1_cols = X1.shape[1]
    d = X1.dtype.type(0.0)
    for k in range(X1_cols):
        tmp = X1[i, k] - X2[j, k]
        d += tmp * tmp
    D[i, j] = math.sqrt(d)


def run(dtype, n1=1024, n2=1024, dims=3, repeat=5):
    dev = dpex.Device()
    rng = np.random.default_rng(42)
    h1 = rng.random((n1, dims)).astype(dtype)
    h2 = rng.random((n2, dims)).astype(dtype)
    X1 = dpex.asarray(h1, device=dev)
    X2 = dpex.asarray(h2, device=dev)
    D = dpex.empty((n1, n2), dtype=dtype, device=dev)
    t0 = time.perf_counter()
    dpex.call_kernel(pairwise_distance, kapi.Range(n2, n1), X1, X2, D)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        dpex.call_kernel(pairwise_distance, kapi.Range(n2, n1), X1, X2, D)
        times.append(time.perf_counter() - t0)
    expect = np.sqrt(((h1[:, None, :] - h2[None, :, :]) ** 2).sum(axis=2))
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    ok = np.allclose(D.asnumpy(), expect, rtol=rtol, atol=rtol)
    name = np.dtype(dtype).name
    print(
        f"pairwise_distance {name} {n1}x{n2}x{dims} on {dev.name} ({dev.driver_name}): "
        f"first call {first * 1e3:.1f} ms (compiles), then {min(times) * 1e3:.3f} ms "
        f"-> {'OK' if ok else 'MISMATCH'}"
    )
    return ok


def main(n1=1024, n2=1024):
    dtypes = [np.float32]
    if dpex.Device().has_aspect_fp64:
        dtypes.append(np.float64)
    ok = all(run(dt, n1, n2) for dt in dtypes)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
