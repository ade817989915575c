"""Soak and concurrency: many launches (sync and async) from several Python threads on shared
and separate arrays, checking results and resident memory as it goes, then many distinct
kernels compiled, reporting memory per kernel. Issue 12, item 2.

    PYTHONPATH=. python tools/soak.py [--launches 1000000] [--threads 8] [--kernels 1000]
                                      [--check-every 100000] [--device FILTER]

Targets: under 1 MB of resident-memory growth per 10^5 launches (after the first interval,
which warms caches), under 2 MB per compiled kernel. Exit status 1 when a result is wrong or a
target is missed. tests/reliability/test_soak.py runs a tiny version.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import numpy as np

import kapi
from kapi import kernel_api as kapi_api

N = 256  # elements per array


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def make_kernels():
    @kapi.kernel
    def add_one(item, a):
        i = item.get_id(0)
        a[i] = a[i] + 1

    @kapi.kernel
    def count(item, c):
        kapi_api.AtomicRef(c, 0).fetch_add(1)

    return add_one, count


def launches(args, dev, log=print) -> dict:
    """args.launches launches over args.threads threads; returns the figures."""
    add_one, count = make_kernels()
    shared = kapi.zeros(1, dtype=np.int64, device=dev)  # every thread counts into it
    own = [kapi.zeros(N, dtype=np.int64, device=dev) for _ in range(args.threads)]
    per_thread = args.launches // (2 * args.threads)  # iterations: two launches each
    interval = max(1, args.check_every // (2 * args.threads))
    done = [0] * args.threads
    errors: list[str] = []
    samples: list[tuple[int, int]] = []
    barrier = threading.Barrier(args.threads)
    lock = threading.Lock()

    def worker(t):
        try:
            a = own[t]
            expect = 0
            for n in range(per_thread):
                if n % 2:  # async: wait on the event before the next launch reads the array
                    kapi.wait_all(kapi.call_kernel_async(add_one, kapi.Range(N), (), a))
                else:
                    kapi.call_kernel(add_one, kapi.Range(N), a)
                kapi.call_kernel(count, kapi.Range(1), shared)
                expect += 1
                done[t] = 2 * (n + 1)
                if (n + 1) % interval == 0:
                    got = a.asnumpy()
                    if not (got == expect).all():
                        errors.append(f"thread {t}: {got[:4]}... after {expect} launches")
                        return
                    barrier.wait()  # every thread at the same point: one RSS sample
                    if t == 0:
                        with lock:
                            samples.append((sum(done), rss_bytes()))
                            log(f"  {sum(done):>9} launches  rss {samples[-1][1] / 2**20:8.1f} MB")
                    barrier.wait()
        except threading.BrokenBarrierError:
            pass
        except Exception as e:  # reported, not raised: the others must not wait forever
            errors.append(f"thread {t}: {type(e).__name__}: {e}")
            barrier.abort()

    t0 = time.time()
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(args.threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    secs = time.time() - t0
    total = 2 * per_thread * args.threads
    if not errors and int(shared.asnumpy()[0]) != per_thread * args.threads:
        errors.append(f"shared counter {int(shared.asnumpy()[0])} != {per_thread * args.threads}")
    # growth per 10^5 launches after the first interval (caches, pools and arenas warm up)
    growth = None
    if len(samples) >= 3:
        (l0, r0), (l1, r1) = samples[1], samples[-1]
        growth = (r1 - r0) / max(1, l1 - l0) * 1e5
    return {
        "launches": total,
        "seconds": round(secs, 1),
        "launches_per_s": round(total / secs),
        "rss_samples_mb": [round(r / 2**20, 1) for _, r in samples],
        "growth_mb_per_1e5": None if growth is None else round(growth / 2**20, 3),
        "errors": errors,
    }


def compiles(args, dev, log=print) -> dict:
    """args.kernels distinct kernels compiled and launched once each; memory per kernel."""
    a = kapi.zeros(16, dtype=np.int64, device=dev)
    kernels = []
    errors = []

    def one(k):
        ns: dict = {}
        exec(f"def soak_k{k}(item, a):\n    i = item.get_id(0)\n    a[i] = i * {k} + {k % 7}\n", ns)
        kern = kapi.kernel(ns[f"soak_k{k}"])
        kapi.call_kernel(kern, kapi.Range(16), a)
        got = a.asnumpy()
        if not (got == np.arange(16) * k + k % 7).all():
            errors.append(f"kernel {k}: {got[:4]}")
        kernels.append(kern)  # kept alive, as a program keeps its kernels

    warm = min(20, args.kernels // 10 + 1)
    for k in range(warm):  # the first compiles load LLVM's and Numba's lazily built state
        one(k)
    r0, t0 = rss_bytes(), time.time()
    for k in range(warm, args.kernels):
        one(k)
        if (k + 1) % max(1, args.kernels // 5) == 0:
            log(f"  {k + 1:>6} kernels  rss {rss_bytes() / 2**20:8.1f} MB")
    n = max(1, args.kernels - warm)
    return {
        "kernels": args.kernels,
        "seconds_per_kernel": round((time.time() - t0) / n, 3),
        "mb_per_kernel": round((rss_bytes() - r0) / n / 2**20, 3),
        "errors": errors,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--launches", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--check-every", type=int, default=100_000)
    ap.add_argument("--kernels", type=int, default=1000)
    ap.add_argument("--device", default=None)
    a = ap.parse_args(argv)
    devs = [kapi.Device(a.device)] if a.device else kapi.devices()
    ok = True
    report = {}
    for dev in devs:
        print(f"{dev.filter_string}: {a.launches} launches from {a.threads} threads")
        r1 = launches(a, dev)
        print(f"{dev.filter_string}: {a.kernels} distinct kernels")
        r2 = compiles(a, dev)
        report[dev.filter_string] = {"launch": r1, "compile": r2}
        g = r1["growth_mb_per_1e5"]
        ok &= not r1["errors"] and not r2["errors"] and (g is None or g < 1.0)
        ok &= r2["mb_per_kernel"] < 2.0
    print(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
