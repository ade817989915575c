"""dpbench-style workloads written with @kapi.dpjit + prange (issue 14), each in one run beside
Numba @njit(parallel=True) of the same source on the host CPU, and, on a machine with a GPU
and numba-cuda, kapi on the GPU beside the same algorithm written with numba-cuda's cuda.jit.

Workloads (float64, as dpbench's defaults): black-scholes; pairwise distance (a 2-D prange
nest); a k-means step (assignment, then the centroid update as per-block partial sums and a
2-D combine: three prange loops in one call); l2 norm of each row (dpbench's l2_norm) and of
the whole array (a prange `+=` reduction). Every result is checked (kapi against Numba
parallel, numba-cuda against Numba parallel) before timing. A time is the median of --reps
calls of the whole function (its launches and their wait; for the reduction the partials'
copy and the host combine), kapi and its peer timed in turn in three rounds, so that load on
a shared machine hits both alike, each round after an untimed call. Ratio: peer time / kapi
time (>= 1.0: kapi as fast).

    python3 bench/dpbench.py [--scale 0] [--reps 15] [--only black-scholes,...]
                             [--devices cpu,gpu]

--scale S multiplies every problem size by 2**S (negative on small machines; this folder's
RESULTS.md gives the sizes). Where kapi's GPU device or numba-cuda is missing, its rows say so.
"""

import argparse
import math
import statistics
import sys
import time

import numpy as np

np.row_stack = getattr(np, "row_stack", np.vstack)  # numba-cuda 0.30 on numpy 2.5 (TOOLCHAIN)

import numba  # noqa: E402

import kapi  # noqa: E402

# ---------------------------------------------------------------- the workloads (one source)


def black_scholes(price, strike, t, rate, volatility, call, put):
    mr = -rate
    sig_sig_two = volatility * volatility * 2
    for i in numba.prange(price.shape[0]):
        p = price[i]
        s = strike[i]
        tt = t[i]
        a = math.log(p / s)
        b = tt * mr
        z = tt * sig_sig_two
        c = 0.25 * z
        y = 1.0 / math.sqrt(z)
        w1 = (a - b + c) * y
        w2 = (a - b - c) * y
        d1 = 0.5 + 0.5 * math.erf(w1)
        d2 = 0.5 + 0.5 * math.erf(w2)
        se = math.exp(b) * s
        r = p * d1 - se * d2
        call[i] = r
        put[i] = r - p + se


def pairwise_distance(x1, x2, dist):
    dims = x1.shape[1]
    for i in numba.prange(x1.shape[0]):
        for j in numba.prange(x2.shape[0]):
            d = 0.0
            for k in range(dims):
                tmp = x1[i, k] - x2[j, k]
                d += tmp * tmp
            dist[i, j] = np.sqrt(d)


def kmeans_step(x, centroids, labels, psums, pcounts, new_centroids):
    n = x.shape[0]
    dims = x.shape[1]
    nclusters = centroids.shape[0]
    nblocks = psums.shape[0]
    per = (n + nblocks - 1) // nblocks
    # assignment: the nearest centroid of each point
    for p in numba.prange(n):
        best = 0
        bestd = np.inf
        for c in range(nclusters):
            dd = 0.0
            for j in range(dims):
                tmp = x[p, j] - centroids[c, j]
                dd += tmp * tmp
            if dd < bestd:
                bestd = dd
                best = c
        labels[p] = best
    # update, first pass: each block of points sums its points per cluster
    for b in numba.prange(nblocks):
        for c2 in range(nclusters):
            pcounts[b, c2] = 0
            for j in range(dims):
                psums[b, c2, j] = 0.0
        for q in range(b * per, min(b * per + per, n)):
            lab = labels[q]
            pcounts[b, lab] += 1
            for j in range(dims):
                psums[b, lab, j] += x[q, j]
    # update, second pass: the blocks' sums combined per cluster and dimension
    for ci in numba.prange(nclusters):
        for cj in numba.prange(dims):
            s = 0.0
            cnt = 0
            for b2 in range(nblocks):
                s += psums[b2, ci, cj]
                cnt += pcounts[b2, ci]
            if cnt > 0:
                new_centroids[ci, cj] = s / cnt
            else:
                new_centroids[ci, cj] = centroids[ci, cj]


def l2_norm_rows(a, d):
    for i in numba.prange(a.shape[0]):
        s = 0.0
        for k in range(a.shape[1]):
            s += a[i, k] * a[i, k]
        d[i] = np.sqrt(s)


def l2_norm_total(a):
    s = 0.0
    for i in numba.prange(a.shape[0]):
        s += a[i] * a[i]
    return np.sqrt(s)


# ---------------------------------------------------------------- inputs


def _scaled(n, scale, minimum=64):
    return max(minimum, int(n * 2.0**scale))


def make_black_scholes(rng, scale):
    n = _scaled(1 << 24, scale)
    args = [rng.uniform(10, 50, n), rng.uniform(10, 50, n), rng.uniform(1, 2, n), 0.1, 0.2]
    return args + [np.zeros(n), np.zeros(n)], f"n={n}"


def make_pairwise(rng, scale):
    n = _scaled(4096, scale / 2)
    x1, x2 = rng.random((n, 3)), rng.random((n, 3))
    return [x1, x2, np.zeros((n, n))], f"{n}x{n}, 3 dims"


KM_CLUSTERS, KM_DIMS, KM_BLOCKS = 16, 4, 2048


def make_kmeans(rng, scale):
    n = _scaled(1 << 21, scale, KM_BLOCKS)
    x = rng.random((n, KM_DIMS))
    cent = x[rng.choice(n, KM_CLUSTERS, replace=False)].copy()
    outs = [
        np.zeros(n, np.int64),
        np.zeros((KM_BLOCKS, KM_CLUSTERS, KM_DIMS)),
        np.zeros((KM_BLOCKS, KM_CLUSTERS), np.int64),
        np.zeros((KM_CLUSTERS, KM_DIMS)),
    ]
    return [x, cent, *outs], f"{n} points, {KM_DIMS} dims, {KM_CLUSTERS} clusters"


def make_l2_rows(rng, scale):
    n = _scaled(1 << 22, scale)
    return [rng.random((n, 4)), np.zeros(n)], f"{n}x4"


def make_l2_total(rng, scale):
    n = _scaled(1 << 25, scale)
    return [rng.integers(-100, 100, n).astype(np.float64)], f"n={n}"  # exact sums


# (name, function, inputs, indices of the outputs to check, whether it returns a value)
WORKLOADS = [
    ("black-scholes", black_scholes, make_black_scholes, (5, 6), False),
    ("pairwise-distance", pairwise_distance, make_pairwise, (2,), False),
    ("kmeans-step", kmeans_step, make_kmeans, (2, 5), False),
    ("l2-norm-rows", l2_norm_rows, make_l2_rows, (1,), False),
    ("l2-norm-total", l2_norm_total, make_l2_total, (), True),
]

# ---------------------------------------------------------------- numba-cuda, same algorithms


cuda = None  # numba.cuda, once cuda_peers imported it


def cuda_peers():
    """{name: make(device arrays, scalars) -> run()}, or a string saying why there are none.
    (The kernels see numba.cuda as the global `cuda`, as numba-cuda's simulator needs.)"""
    global cuda
    try:
        from numba import cuda as numba_cuda

        if not numba_cuda.is_available():
            return "numba-cuda sees no GPU"
    except Exception as e:  # noqa: BLE001 - any import failure means no peer
        return f"numba-cuda does not import ({type(e).__name__}: {e})"
    cuda = numba_cuda

    @cuda.jit
    def c_black_scholes(price, strike, t, rate, vol, call, put):
        i = cuda.grid(1)
        if i < price.shape[0]:
            mr = -rate
            sig_sig_two = vol * vol * 2
            p = price[i]
            s = strike[i]
            tt = t[i]
            a = math.log(p / s)
            b = tt * mr
            z = tt * sig_sig_two
            c = 0.25 * z
            y = 1.0 / math.sqrt(z)
            w1 = (a - b + c) * y
            w2 = (a - b - c) * y
            d1 = 0.5 + 0.5 * math.erf(w1)
            d2 = 0.5 + 0.5 * math.erf(w2)
            se = math.exp(b) * s
            r = p * d1 - se * d2
            call[i] = r
            put[i] = r - p + se

    @cuda.jit
    def c_pairwise(x1, x2, dist):
        j, i = cuda.grid(2)  # x (the fastest) along j, as kapi's innermost prange
        if i < x1.shape[0] and j < x2.shape[0]:
            d = 0.0
            for k in range(x1.shape[1]):
                tmp = x1[i, k] - x2[j, k]
                d += tmp * tmp
            dist[i, j] = math.sqrt(d)

    @cuda.jit
    def c_assign(x, centroids, labels):
        p = cuda.grid(1)
        if p < x.shape[0]:
            best = 0
            bestd = np.inf
            for c in range(centroids.shape[0]):
                dd = 0.0
                for j in range(x.shape[1]):
                    tmp = x[p, j] - centroids[c, j]
                    dd += tmp * tmp
                if dd < bestd:
                    bestd = dd
                    best = c
            labels[p] = best

    @cuda.jit
    def c_partials(x, labels, psums, pcounts):
        b = cuda.grid(1)
        n, nblocks = x.shape[0], psums.shape[0]
        if b < nblocks:
            per = (n + nblocks - 1) // nblocks
            for c in range(psums.shape[1]):
                pcounts[b, c] = 0
                for j in range(x.shape[1]):
                    psums[b, c, j] = 0.0
            for q in range(b * per, min(b * per + per, n)):
                lab = labels[q]
                pcounts[b, lab] += 1
                for j in range(x.shape[1]):
                    psums[b, lab, j] += x[q, j]

    @cuda.jit
    def c_combine(centroids, psums, pcounts, new_centroids):
        cj, ci = cuda.grid(2)
        if ci < centroids.shape[0] and cj < centroids.shape[1]:
            s = 0.0
            cnt = 0
            for b in range(psums.shape[0]):
                s += psums[b, ci, cj]
                cnt += pcounts[b, ci]
            if cnt > 0:
                new_centroids[ci, cj] = s / cnt
            else:
                new_centroids[ci, cj] = centroids[ci, cj]

    @cuda.jit
    def c_l2_rows(a, d):
        i = cuda.grid(1)
        if i < a.shape[0]:
            s = 0.0
            for k in range(a.shape[1]):
                s += a[i, k] * a[i, k]
            d[i] = math.sqrt(s)

    group = 256  # kapi's reduction shape on a GPU: grid-stride loop, a block tree, partials

    @cuda.jit
    def c_sumsq(a, parts):
        tree = cuda.shared.array(256, numba.float64)
        s = 0.0
        for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
            s += a[i] * a[i]
        t = cuda.threadIdx.x
        tree[t] = s
        cuda.syncthreads()
        w = 128
        while w > 0:
            if t < w:
                tree[t] += tree[t + w]
            cuda.syncthreads()
            w //= 2
        if t == 0:
            parts[cuda.blockIdx.x] = tree[0]

    @cuda.jit
    def c_sumsq4(a, parts):
        # kapi's GPU shape since branch dpjit-perf2: four independent accumulators per
        # thread (four loads in flight), then the same block tree
        tree = cuda.shared.array(256, numba.float64)
        s0 = s1 = s2 = s3 = 0.0
        i, step, n = cuda.grid(1), cuda.gridsize(1), a.shape[0]
        while i + 3 * step < n:
            s0 += a[i] * a[i]
            s1 += a[i + step] * a[i + step]
            s2 += a[i + 2 * step] * a[i + 2 * step]
            s3 += a[i + 3 * step] * a[i + 3 * step]
            i += 4 * step
        while i < n:
            s0 += a[i] * a[i]
            i += step
        t = cuda.threadIdx.x
        tree[t] = (s0 + s1) + (s2 + s3)
        cuda.syncthreads()
        w = 128
        while w > 0:
            if t < w:
                tree[t] += tree[t + w]
            cuda.syncthreads()
            w //= 2
        if t == 0:
            parts[cuda.blockIdx.x] = tree[0]

    def blocks(n, threads=256):
        return (n + threads - 1) // threads

    def bs(price, strike, t, rate, vol, call, put):
        def run():
            c_black_scholes[blocks(price.shape[0]), 256](price, strike, t, rate, vol, call, put)
            cuda.synchronize()

        return run

    def pw(x1, x2, dist):
        grid = (blocks(x2.shape[0], 16), blocks(x1.shape[0], 16))

        def run():
            c_pairwise[grid, (16, 16)](x1, x2, dist)
            cuda.synchronize()

        return run

    def km(x, cent, labels, psums, pcounts, new):
        def run():
            c_assign[blocks(x.shape[0]), 256](x, cent, labels)
            c_partials[blocks(psums.shape[0]), 256](x, labels, psums, pcounts)
            c_combine[(1, 1), (KM_DIMS, KM_CLUSTERS)](cent, psums, pcounts, new)
            cuda.synchronize()

        return run

    def rows(a, d):
        def run():
            c_l2_rows[blocks(a.shape[0]), 256](a, d)
            cuda.synchronize()

        return run

    def total(a, kernel=c_sumsq, per_item=1):
        ngroups = max(1, min(blocks(a.shape[0], group * per_item), 1024))
        parts = cuda.device_array(ngroups)

        def run():
            kernel[ngroups, group](a, parts)
            return np.sqrt(parts.copy_to_host().sum())

        return run

    def total4(a):
        return total(a, c_sumsq4, 16)  # kapi's group count: 16 iterations per thread at least

    return {
        "black-scholes": bs,
        "pairwise-distance": pw,
        "kmeans-step": km,
        "l2-norm-rows": rows,
        "l2-norm-total": total,
        "l2-norm-total-x4": total4,
        "_to_device": cuda.to_device,
    }


# ---------------------------------------------------------------- running


def paired(f_kapi, f_peer, reps, rounds=3):
    """(wall, process CPU) median seconds per call of each: `rounds` rounds, each timing
    about reps / rounds calls of kapi, then of the peer, after one untimed call (a parallel
    runtime's threads may spin on the cores for a while after its last call: Numba's OpenMP
    ones do). CPU time is every thread's, so it is the work done whatever else runs on a
    loaded machine (with OMP_WAIT_POLICY=passive: without it Numba's spinning counts)."""
    out = {f_kapi: ([], []), f_peer: ([], [])}
    per = max(1, -(-reps // rounds))
    for _ in range(rounds):
        for f in (f_kapi, f_peer):
            f()
            wall, cpu = out[f]
            for _ in range(per):
                t0, c0 = time.perf_counter(), time.process_time()
                f()
                wall.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
    med = statistics.median
    return [(med(out[f][0]), med(out[f][1])) for f in (f_kapi, f_peer)]


def host_of(x):
    return x.asnumpy() if isinstance(x, kapi.Array) else x.copy_to_host()


def check(name, who, got, want, outs, returns):
    for k in outs:
        np.testing.assert_allclose(host_of(got[k]), want[k], rtol=1e-9, atol=1e-9, err_msg=who)
    if returns:
        np.testing.assert_allclose(got[-1], want[-1], rtol=1e-12, err_msg=who)


ROWS = []


def report(workload, size, where, t_kapi, peer, t_peer):
    """t_kapi, t_peer: (wall, CPU) seconds; the ratio is of wall times, CPU times only on
    the CPU device (the GPU rows' host CPU time is the waiting)."""
    ratio = t_peer[0] / t_kapi[0]
    ROWS.append((workload, where, t_kapi[0], peer, t_peer[0], ratio))
    cpu = ""
    if where == "cpu":
        cpu = f"   CPU time {t_kapi[1] * 1e3:9.3f} / {t_peer[1] * 1e3:9.3f} ms"
    print(
        f"{workload:<18} {size:<36} {where:<4} kapi {t_kapi[0] * 1e3:9.3f} ms  "
        f"{peer:<15} {t_peer[0] * 1e3:9.3f} ms  ratio {ratio:5.2f}x{cpu}",
        flush=True,
    )


def run_workload(spec, opt, rng, peers, gpu):
    name, fn, make, outs, returns = spec
    args, size = make(rng, opt.scale)
    t0 = time.perf_counter()
    nj = numba.njit(parallel=True)(fn)
    want_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want_ret = nj(*want_args)
    want = [*want_args, want_ret]
    dj = kapi.dpjit(fn)
    if "cpu" in opt.devices:
        kargs = [kapi.asarray(a, device="cpu") if isinstance(a, np.ndarray) else a for a in args]
        got = [*kargs, dj(*kargs)]
        check(name, "kapi cpu", got, want, outs, returns)
        hargs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        t_kapi, t_nj = paired(lambda: dj(*kargs), lambda: nj(*hargs), opt.reps)
        report(name, size, "cpu", t_kapi, "numba parallel", t_nj)
    if "gpu" in opt.devices:
        if gpu is None:
            print(f"{name:<18} gpu: kapi has no GPU device here", flush=True)
            return time.perf_counter() - t0
        kargs = [kapi.asarray(a, device=gpu) if isinstance(a, np.ndarray) else a for a in args]
        got = [*kargs, dj(*kargs)]
        check(name, "kapi gpu", got, want, outs, returns)
        if isinstance(peers, str):
            print(f"{name:<18} gpu: no numba-cuda peer ({peers})", flush=True)
            return time.perf_counter() - t0
        dev = peers["_to_device"]
        cargs = [dev(a) if isinstance(a, np.ndarray) else a for a in args]
        crun = peers[name](*cargs)
        got = [*cargs, crun()]
        check(name, "numba-cuda", got, want, outs, returns)
        t_kapi, t_cuda = paired(lambda: dj(*kargs), crun, opt.reps)
        report(name, size, "gpu", t_kapi, "numba-cuda", t_cuda)
        if f"{name}-x4" in peers:  # the peer with kapi's unrolled loop too (not in the mean)
            crun4 = peers[f"{name}-x4"](*cargs)
            got = [*cargs, crun4()]
            check(name, "numba-cuda x4", got, want, outs, returns)
            t_kapi, t_cuda = paired(lambda: dj(*kargs), crun4, opt.reps)
            report(name, size, "gpu", t_kapi, "numba-cuda x4", t_cuda)
            ROWS.pop()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.0)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--only", default="")
    ap.add_argument("--devices", default="cpu,gpu")
    opt = ap.parse_args()
    opt.devices = set(opt.devices.split(","))
    only = set(opt.only.split(",")) - {""}
    gpus = kapi.devices("gpu") if "gpu" in opt.devices else []
    gpu = gpus[0] if gpus else None
    peers = cuda_peers() if gpu is not None else "no GPU"
    cpu = kapi.devices("cpu")[0]
    print(
        f"dpbench workloads, float64; kapi CPU device {cpu.name} ({cpu.max_compute_units} "
        f"units), GPU {gpu.name if gpu else '-'}; numba {numba.__version__}, "
        f"{numba.config.NUMBA_NUM_THREADS} threads",
        flush=True,
    )
    rng = np.random.default_rng(0)
    for spec in WORKLOADS:
        if only and spec[0] not in only:
            continue
        secs = run_workload(spec, opt, rng, peers, gpu)
        print(f"  ({spec[0]}: {secs:.1f} s with compiles and checks)", file=sys.stderr)
    for where in ("cpu", "gpu"):
        ratios = [r[5] for r in ROWS if r[1] == where]
        if ratios:
            geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
            print(f"{where}: geometric mean ratio {geo:.2f}x, min {min(ratios):.2f}x")


if __name__ == "__main__":
    main()
