"""What an assert costs: saxpy with and without `assert`, side by side, on every kapi device
(or the one named by KAPI_DEFAULT_DEVICE / argv[1] as a filter string). Prints the median of
REPEAT timed launches per size, in microseconds and GB/s (bytes: x and y read, y written).
A kernel with assert takes a hidden status buffer (zeroed before, read after each launch) and
checks its condition per element; one without is exactly today's kernel.

    PYTHONPATH=$PWD python bench/assert_cost.py [filter]
"""

import statistics
import sys
import time

import numpy as np

import kapi


def saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def saxpy_assert(item, a, x, y):
    i = item.get_id(0)
    assert x[i] >= 0, "x must be non-negative"
    y[i] = a * x[i] + y[i]


REPEAT = 30


def median_us(kernel, n, x, y):
    a = np.float32(2.0)
    kapi.call_kernel(kernel, kapi.Range(n), a, x, y)  # compile and warm up
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        kapi.call_kernel(kernel, kapi.Range(n), a, x, y)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main():
    wanted = sys.argv[1] if len(sys.argv) > 1 else None
    devs = [d for d in kapi.devices() if wanted is None or d.filter_string == wanted]
    plain, checked = kapi.kernel(saxpy), kapi.kernel(saxpy_assert)
    print(
        f"{'device':<22} {'n':>10} {'plain us':>10} {'assert us':>10} {'ratio':>6} "
        f"{'plain GB/s':>10} {'assert GB/s':>11}"
    )
    for dev in devs:
        for n in (1, 1 << 10, 1 << 20, 1 << 24):
            x = kapi.asarray(np.ones(n, dtype=np.float32), device=dev)
            y = kapi.asarray(np.zeros(n, dtype=np.float32), device=dev)
            tp, tc = median_us(plain, n, x, y), median_us(checked, n, x, y)
            gb = 12 * n / 1e3
            print(
                f"{dev.filter_string:<22} {n:>10} {tp:>10.1f} {tc:>10.1f} {tc / tp:>6.2f} "
                f"{gb / tp:>10.1f} {gb / tc:>11.1f}"
            )


if __name__ == "__main__":
    main()
