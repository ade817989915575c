"""@kapi.guvectorize in numba-cuda's form: a function over core-dimension rows becomes a
generalized ufunc over kapi arrays, one work-item per loop point (kapi's own array
programming; numba-dpex has no guvectorize). A batched matrix-vector product and a per-row
mean/standard deviation with two outputs, checked against NumPy."""

import sys
import time

import numpy as np

import kapi


@kapi.guvectorize(
    ["void(float32[:, :], float32[:], float32[:])", "void(float64[:, :], float64[:], float64[:])"],
    "(m,n),(n)->(m)",
)
def matvec(A, v, out):
    for i in range(A.shape[0]):
        s = 0.0
        for k in range(A.shape[1]):
            s += A[i, k] * v[k]
        out[i] = s


@kapi.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n)->(),()")
def mean_std(x, mean, std):
    s = 0.0
    for k in range(x.shape[0]):
        s += x[k]
    m = s / x.shape[0]
    q = 0.0
    for k in range(x.shape[0]):
        q += (x[k] - m) * (x[k] - m)
    mean[0] = m
    std[0] = (q / x.shape[0]) ** 0.5


def main(batch=512, m=64, n=48):
    rng = np.random.default_rng(0)
    hA = rng.uniform(-1, 1, (batch, m, n)).astype(np.float32)
    hv = rng.uniform(-1, 1, n).astype(np.float32)  # one vector, broadcast over the batch
    A, v = kapi.asarray(hA), kapi.asarray(hv)
    matvec(A, v)  # compiles
    t0 = time.perf_counter()
    r = matvec(A, v)
    h = r.asnumpy()
    dt = time.perf_counter() - t0
    ok = h.shape == (batch, m) and np.allclose(h, hA @ hv, rtol=1e-4, atol=1e-5)
    print(f"  matvec (m,n),(n)->(m) over {batch} matrices: {h.shape} {'ok' if ok else 'WRONG'}")

    hx = rng.normal(3, 2, (batch, 1000))
    mean, std = mean_std(kapi.asarray(hx))
    good = np.allclose(mean.asnumpy(), hx.mean(-1)) and np.allclose(std.asnumpy(), hx.std(-1))
    print(f"  mean_std (n)->(),(): two outputs of shape {mean.shape} {'ok' if good else 'WRONG'}")
    ok &= good

    out = kapi.empty((batch, m), np.float32)
    matvec(A, v * 2, out=out)  # a lazy operand (v * 2) and out=
    good = np.allclose(out.asnumpy(), hA @ (hv * 2), rtol=1e-4, atol=1e-5)
    print(f"  out= and a lazy operand: {'ok' if good else 'WRONG'}")
    ok &= good
    print(
        f"guvectorize batch={batch} on {A.device.name}: matvec {dt * 1e3:.3f} ms "
        f"-> {'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
