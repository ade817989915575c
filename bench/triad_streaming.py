"""The CPU driver's streaming entries on the triad (`a[i] = b[i] + s * c[i]`, float32) in ONE
process, round by round: two copies of the kernel, one created under KAPI_CPU_STREAMING=0 (its
plain entry always) and one under KAPI_CPU_STREAMING=1 (its streaming entry always; the setting
is read when a kernel object is created), timed in turn, the order alternating; then the
default (`auto`: streaming from the L3's size up) for the record. Prints medians in ms and
GB/s (12 bytes an element) and the ratio round by round.

    PYTHONPATH=$PWD python bench/triad_streaming.py [--log2n 24] [--rounds 9]
"""

from __future__ import annotations

import argparse
import os
import statistics

import numpy as np
from timing import median_batch

import kapi


def make(name: str):
    """A triad kernel of its own name: its own module and kernel object (the same source would
    share one, created under the first setting)."""
    src = (
        f"def triad_{name}(item, a, b, c, s):\n    i = item.get_id(0)\n    a[i] = b[i] + s * c[i]\n"
    )
    g: dict = {}
    exec(compile(src, f"<triad {name}>", "exec"), g)  # noqa: S102 - our own source
    return kapi.kernel(g[f"triad_{name}"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    n = 1 << args.log2n
    dev = next(d for d in kapi.devices() if d.device_type == "cpu")
    a, b, c = (kapi.ones(n, dtype=np.float32, device=dev) for _ in range(3))
    kernels = {}
    for name, setting in (("plain", "0"), ("streaming", "1"), ("auto", "auto")):
        os.environ["KAPI_CPU_STREAMING"] = setting
        k = kernels[name] = make(name)
        kapi.call_kernel(k, kapi.Range(n), a, b, c, np.float32(3))  # created under setting
        assert (a.asnumpy() == 4).all()
    os.environ.pop("KAPI_CPU_STREAMING")
    sync = dev.default_queue.wait
    times = {name: [] for name in kernels}
    for r in range(args.rounds):
        order = list(kernels) if r % 2 == 0 else list(kernels)[::-1]
        for name in order:
            k = kernels[name]

            def launch(k=k):
                kapi.call_kernel(k, kapi.Range(n), a, b, c, np.float32(3))

            times[name].append(median_batch(launch, sync, 3, 5, 0.05))
    print(f"{dev.name}, {dev.max_compute_units} compute units; triad of 2^{args.log2n} float32")
    for name, t in times.items():
        ratio = statistics.median(p / q for p, q in zip(times["plain"], t, strict=True))
        med = statistics.median(t)
        print(
            f"  {name:10s} {med * 1e3:8.3f} ms  {12 * n / med / 1e9:7.1f} GB/s  {ratio:5.2f}x "
            "plain's speed (round by round)"
        )


if __name__ == "__main__":
    main()
