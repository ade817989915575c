"""When kapi's generated CPU kernels write their outputs by streaming stores
(kernel_api.store_nontemporal). A streaming store does not read the output's cache line before
writing it (8 bytes of memory traffic a float32 element of a copy-like kernel instead of 12),
but leaves the output out of the caches: it pays for outputs larger than the cores' own
caches, written once. cumsum of float32 (bench/RESULTS.md): on 16 Xeon cores 1.13x at 16 MiB,
1.54x at 64 MiB, 1.32x at 256 MiB; on 2 Zen 4 cores 0.86-0.93x at 1-4 MiB, 1.05x at 8 MiB,
1.08-1.12x at 16-64 MiB. Hence: outputs of at least 8 MiB, and at least 1 MiB a core.

An output that the next kernel reads (an elementwise result) costs that reader too when it
is left out of a cache that would have held it: on the 16 Xeon cores (300 MiB of L3) `y = a +
b` then `y * c` ran at 0.78-0.91x with streaming stores for 16-64 MiB outputs and 1.20x at 256
MiB, where `a + b` alone ran at 1.21-1.29x at every size (bench/elementwise_ab.py). So those
outputs stream only when they are also at least the size of the last-level cache."""

from __future__ import annotations

import functools
import glob

_MIN_BYTES = 8 << 20
_MIN_BYTES_PER_CORE = 1 << 20


def parse(var: str, value: str) -> str:
    """A switch's value, checked: 'auto' (by size), '1' (always) or '0' (never)."""
    if value not in ("auto", "0", "1"):
        raise ValueError(f"{var} must be 'auto', '0' or '1', not {value!r}")
    return value


@functools.cache
def last_level_cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The largest cache the OS reports for CPU 0 (Linux's sysfs), 0 where it reports none."""
    sizes = [0]
    for path in glob.glob(f"{root}/index*/size"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
        digits = text.rstrip("KMGkmg")
        if digits.isdigit():
            sizes.append(int(digits) * unit)
    return max(sizes)


def pays(setting: str, out_bytes: int, cores: int, read_next: bool = False) -> bool:
    """Whether an output of out_bytes on a CPU device of `cores` is written by streaming stores
    under setting ('auto', '1' or '0', from parse). read_next: the output is likely read by the
    next kernel (it must then also outgrow the last-level cache)."""
    if setting != "auto":
        return setting == "1"
    if read_next and out_bytes < last_level_cache_bytes():
        return False
    return out_bytes >= max(_MIN_BYTES, cores * _MIN_BYTES_PER_CORE)
