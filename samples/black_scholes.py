"""Black-Scholes European option pricing (dpbench's kernel form), checked against NumPy."""

import math
import sys
import time

import numpy as np

import kapi as dpex
from kapi import kernel_api as kapi


@dpex.kernel
def black_scholes(item, nopt, price, strike, t, rate, volatility, call, put):
    mr = -rate
    sig_sig_two = volatility * volatility * 2
    i = item.get_id(0)
    P = price[i]
    S = strike[i]
    T = t[i]
    a = math.log(P / S)
    b = T * mr
    z = T * sig_sig_two
    c = 0.25 * z
    y = 1.0 / math.sqrt(z)
    w1 = (a - b + c) * y
    w2 = (a - b - c) * y
    d1 = 0.5 + 0.5 * math.erf(w1)
    d2 = 0.5 + 0.5 * math.erf(w2)
    Se = math.exp(b) * S
    r = P * d1 - Se * d2
    call[i] = r
    put[i] = r - P + Se


def reference(price, strike, t, rate, vol):
    from math import erf

    verf = np.vectorize(erf)
    mr = -rate
    z = t * vol * vol * 2
    a = np.log(price / strike)
    b = t * mr
    y = 1.0 / np.sqrt(z)
    w1 = (a - b + 0.25 * z) * y
    w2 = (a - b - 0.25 * z) * y
    d1 = 0.5 + 0.5 * verf(w1)
    d2 = 0.5 + 0.5 * verf(w2)
    se = np.exp(b) * strike
    call = price * d1 - se * d2
    return call, call - price + se


def main(n=1 << 16):
    dev = dpex.Device()
    dtype = np.float64 if dev.has_aspect_fp64 else np.float32
    rng = np.random.default_rng(7)
    price = rng.uniform(10, 50, n).astype(dtype)
    strike = rng.uniform(10, 50, n).astype(dtype)
    t = rng.uniform(1, 2, n).astype(dtype)
    rate, vol = dtype(0.1), dtype(0.2)
    args = [dpex.asarray(x) for x in (price, strike, t)]
    call = dpex.empty(n, dtype=dtype)
    put = dpex.empty(n, dtype=dtype)
    dpex.call_kernel(black_scholes, kapi.Range(n), n, *args, rate, vol, call, put)
    t0 = time.perf_counter()
    dpex.call_kernel(black_scholes, kapi.Range(n), n, *args, rate, vol, call, put)
    dt = time.perf_counter() - t0
    ec, ep = reference(price, strike, t, rate, vol)
    tol = 1e-4 if dtype == np.float32 else 1e-9
    ok = np.allclose(call.asnumpy(), ec, rtol=tol, atol=tol) and np.allclose(
        put.asnumpy(), ep, rtol=tol, atol=tol
    )
    print(
        f"black_scholes n={n} {np.dtype(dtype).name} on {dev.name}: {dt * 1e3:.3f} ms -> "
        f"{'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
