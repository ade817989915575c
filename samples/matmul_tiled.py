"""Tiled matrix multiplication with work-group local memory and barriers (NdRange).

Each work-group computes a TILE x TILE block of C, staging tiles of A and B in local memory.
"""

import sys
import time

import numpy as np

import kapi as dpex
from kapi import kernel_api as kapi

TILE = 16


@dpex.kernel
def matmul(nditem: kapi.NdItem, A, B, C, tileA, tileB):
    col = nditem.get_global_id(0)
    row = nditem.get_global_id(1)
    lc = nditem.get_local_id(0)
    lr = nditem.get_local_id(1)
    tile = nditem.get_local_range(0)
    n = A.shape[1]
    acc = C.dtype.type(0)
    for t in range(n // tile):
        tileA[lr, lc] = A[row, t * tile + lc]
        tileB[lr, lc] = B[t * tile + lr, col]
        kapi.group_barrier(nditem.get_group())
        for k in range(tile):
            acc += tileA[lr, k] * tileB[k, lc]
        kapi.group_barrier(nditem.get_group())
    C[row, col] = acc


def main(n=256):
    rng = np.random.default_rng(1)
    ha = rng.random((n, n), dtype=np.float32)
    hb = rng.random((n, n), dtype=np.float32)
    A, B = dpex.asarray(ha), dpex.asarray(hb)
    C = dpex.zeros((n, n), dtype=np.float32)
    tA = kapi.LocalAccessor((TILE, TILE), np.float32)
    tB = kapi.LocalAccessor((TILE, TILE), np.float32)
    space = kapi.NdRange((n, n), (TILE, TILE))
    dpex.call_kernel(matmul, space, A, B, C, tA, tB)
    t0 = time.perf_counter()
    dpex.call_kernel(matmul, space, A, B, C, tA, tB)
    dt = time.perf_counter() - t0
    ok = np.allclose(C.asnumpy(), ha @ hb, rtol=1e-4)
    print(
        f"matmul_tiled {n}x{n} f32 tile {TILE} on {C.device.name}: {dt * 1e3:.2f} ms "
        f"({2 * n**3 / dt / 1e9:.2f} GFLOP/s) -> {'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
