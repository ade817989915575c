"""When kapi's generated CPU kernels write their outputs by streaming stores
(kernel_api.store_nontemporal). A streaming store does not read the output's cache line before
writing it (8 bytes of memory traffic a float32 element of a copy-like kernel instead of 12),
but leaves the output out of the caches: it pays for outputs larger than the cores' own
caches, written once. cumsum of float32 (bench/RESULTS.md): on 16 Xeon cores 1.13x at 16 MiB,
1.54x at 64 MiB, 1.32x at 256 MiB; on 2 Zen 4 cores 0.86-0.93x at 1-4 MiB, 1.05x at 8 MiB,
1.08-1.12x at 16-64 MiB. Hence: outputs of at least 8 MiB, and at least 1 MiB a core.

(Plain kernels that only write an output, kapi's elementwise ones among them, get streaming
stores from the CPU driver instead, KAPI_HOST_STREAMS and KAPI_CPU_STREAMING, whose rule adds
the last-level cache's size: an output the next kernel reads from L3 costs that reader when
left out of it.)"""

from __future__ import annotations

_MIN_BYTES = 8 << 20
_MIN_BYTES_PER_CORE = 1 << 20


def parse(var: str, value: str) -> str:
    """A switch's value, checked: 'auto' (by size), '1' (always) or '0' (never)."""
    if value not in ("auto", "0", "1"):
        raise ValueError(f"{var} must be 'auto', '0' or '1', not {value!r}")
    return value


def pays(setting: str, out_bytes: int, cores: int) -> bool:
    """Whether an output of out_bytes on a CPU device of `cores` is written by streaming stores
    under setting ('auto', '1' or '0', from parse)."""
    if setting != "auto":
        return setting == "1"
    return out_bytes >= max(_MIN_BYTES, cores * _MIN_BYTES_PER_CORE)
