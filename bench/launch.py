"""Host time of one call_kernel: an empty kernel with three array arguments on the CPU device.

Prints the median over batches of the per-call time, beside numba-dpex's published figure
(140-270 us per call_kernel, numba-dpex 0.23 docs/benchmarks) and the raw runtime launch
(bench/launch_c.c) when built. Usage:
python bench/launch.py [calls per batch] [batches] [--json FILE] [--plot PNG]
"""

import argparse
import os
import statistics
import time

import numpy as np
import plotting

import kapi


@kapi.kernel
def empty(item, a, b, c):
    pass


def per_call_us(fn, calls, batches):
    samples = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples), min(samples)


def cupy_peer(calls, batches):
    """CuPy's RawKernel, the same empty kernel with three arrays, submitted the same way."""
    try:
        import cupy as cp
    except ImportError:
        print("(cupy does not import: no CuPy peer)")
        return None
    raw = cp.RawKernel(r'extern "C" __global__ void e(float*a,float*b,float*c){}', "e")
    ga = tuple(cp.zeros(1024, cp.float32) for _ in range(3))
    raw((1,), (1,), ga)
    cp.cuda.Device().synchronize()
    med, _ = per_call_us(lambda: raw((1,), (1,), ga), calls, batches)
    cp.cuda.Device().synchronize()
    print(f"cupy RawKernel (submit only, the peer):     median {med:.2f} us per call")
    return med


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("calls", nargs="?", type=int, default=2000, help="calls per batch")
    ap.add_argument("batches", nargs="?", type=int, default=15)
    plotting.add_args(ap)
    args = ap.parse_args()
    calls, batches = args.calls, args.batches
    dev = kapi.Device(os.environ.get("BENCH_DEVICE", "cpu"))
    a = kapi.zeros(1024, dtype=np.float32, device=dev)
    b = kapi.zeros(1024, dtype=np.float32, device=dev)
    c = kapi.zeros(1024, dtype=np.float32, device=dev)
    r = kapi.Range(1)
    kapi.call_kernel(empty, r, a, b, c)  # compile and build once

    med, best = per_call_us(lambda: kapi.call_kernel(empty, r, a, b, c), calls, batches)
    print(f"device: {dev.name} ({dev.driver_name})")
    print(
        f"kapi.call_kernel, empty kernel, 3 arrays: median {med:.2f} us, best {best:.2f} us "
        f"per call ({calls} calls x {batches} batches)"
    )
    nd = kapi.NdRange(64, 64)
    med_nd, _ = per_call_us(lambda: kapi.call_kernel(empty, nd, a, b, c), calls, batches)
    print(f"kapi.call_kernel, NdRange(64, 64):          median {med_nd:.2f} us per call")
    _, ev = kapi.call_kernel_async(empty, r, (), a, b, c)
    ev.wait()

    def run_async():
        kapi.call_kernel_async(empty, r, (), a, b, c)

    med_a, _ = per_call_us(run_async, calls, batches)
    dev.default_queue.wait()
    print(f"kapi.call_kernel_async (submit only):       median {med_a:.2f} us per call")
    if dev.is_gpu:
        peer = cupy_peer(calls, batches)
        if peer:
            ratios = plotting.Ratios()
            ratios.add(
                "asynchronous launch, empty kernel, 3 arrays", "CuPy RawKernel", peer / med_a
            )
            ratios.write(args, f"kapi's launch against CuPy's ({dev.name})")
    print("numba-dpex 0.23 call_kernel (published):    140-270 us per call")
    if dev.is_cpu:
        target = 5.0
        print(f"target < {target:.0f} us on the CPU device: {'met' if med < target else 'NOT met'}")
    else:
        print(
            "(a synchronous launch here includes the device round trip; the <5 us target is "
            "for the CPU device)"
        )


if __name__ == "__main__":
    main()
