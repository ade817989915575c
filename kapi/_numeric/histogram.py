"""Histogram counts without sorting: a value's bin is the last edge at or below it (the right
edge closes the last bin; values outside the edges, and NaN, are not counted).

- Equal bins (`bins` a number): the bin estimated from the value, as NumPy does, then moved by
  at most one to agree with the edges; given edges: a binary search over them, its steps
  unrolled (every work-item the same: selects, no loop).
- The CPU driver: a work-item per contiguous chunk of the data counts into rows of int32
  counts of its own (no atomics, no barriers), and the rows are summed by the column
  reduction.
- GPUs: each work-group counts a tile of the data into its own histogram in local memory (an
  atomic add a value), then adds the bins it reached to the result with atomics.

With weights, the same kernels add each value's weight instead of one, into sums of the
weights' kind (sums(): float64 rows on the CPU driver, the weights' own float type or int64 in
local memory on GPUs, as CuPy adds them).

This replaced an argsort of the whole array for every histogram (2^22 float32, 10 bins: 91 ms
against NumPy's 27 on the dev box)."""

from __future__ import annotations

import functools
import re

import numpy as np

from .._memory.array import Array
from .primitives import kernel_of

_WG = 256  # GPUs: work-items a group
_MAX_BINS = 8192  # GPUs: local counts (int32) a group holds, 32 KiB
_GROUPS_PER_UNIT = 4
_PER_ITEM = 64  # GPUs: elements a work-item counts before another group is worth it
_CPU_ITEMS_PER_UNIT = 4  # the CPU driver: chunks a compute unit
# The CPU driver: rows of counts a chunk, values a step (_CPU_STEP), for equal bins and for a
# search of given edges (the search's chains of loads overlap across a step's values). 2^24
# float32 on the 16 Xeon cores, 1 / 4 rows: 10 bins 11.8-13.2 / 12.9-13.7 ms, 100 given edges
# 44.8-46.6 / 26.7-27.8 (NumPy 87-117); 2^22 on the dev box: 9.2 / 11.5, 69.6 / 48.4
_CPU_ROWS_EQUAL = 1
_CPU_ROWS_SEARCH = 4
_CPU_MIN_CHUNK = 1 << 14  # the CPU driver: elements a chunk counts at least
_CPU_ROWS_BYTES = 64 << 20  # the CPU driver: its rows of counts or sums take at most this
COUNTS = True  # False: every histogram by the general path, sorting (bench/histogram.py)

# v, the value in the compared dtype, between edges[0] and edges[nb]: its bin k
_BIN_SEARCH_STEP = """\
t = (k + {s} < nb) & (edges[min(k + {s}, nb)] <= v)
k = k + {s} if t else k
"""
_BIN_EQUAL = """\
k = min(max(np.int64((np.float64(v) - lo) * scale), np.int64(0)), nb - 1)
k = k - 1 if v < edges[k] and k > 0 else k
k = k + 1 if k < nb - 1 and v >= edges[k + 1] else k
"""

_CPU_SRC = """
def _hist_rows(item, a, wts, edges, part, n, nb, chunk, lo, scale):
    w = item.get_id(1)
    i = w * chunk
    end = min(n, i + chunk)
    first = edges[0]
    last = edges[nb]
    one = np.int32(1)
    while i + ROWS <= end:
STEPS
        i += ROWS
    while i < end:
STEP0
        i += 1
"""
# one value of _CPU_SRC's loop: u, its row among the work-item's ROWS (ROWS values a step, each
# counted in a row of its own: consecutive values in one bin no longer wait for each other's
# count in memory)
_CPU_STEP = """v = E(a[i + {u}])
if v >= first and v <= last:
    k = np.int64(0)
BIN
    part[w * ROWS + {u}, k] += ADD(i + {u})
"""

_GPU_SRC = """
def _hist_groups(it, a, wts, edges, hist, n, nb, tile, lo, scale, cnt):
    g = it.get_group()
    lid = it.get_local_id(0)
    L = it.get_local_range(0)
    for b in range(lid, nb, L):
        cnt[b] = ACC(0)
    K.group_barrier(g)
    first = edges[0]
    last = edges[nb]
    one = np.int32(1)
    start = g.get_group_id(0) * tile
    for r in range(0, tile, L):
        i = start + r + lid
        if i < n and r + lid < tile:
            v = E(a[i])
            if v >= first and v <= last:
                k = np.int64(0)
BIN
                K.AtomicRef(cnt, k, address_space=K.AddressSpace.LOCAL).fetch_add(ADD(i))
    K.group_barrier(g)
    for b in range(lid, nb, L):
        c = cnt[b]
        if c != 0:
            K.AtomicRef(hist, b).fetch_add(SUM(c))
"""


def supported(a: Array, edges: Array, weights: Array | None = None) -> np.dtype | None:
    """The dtype values and edges are compared in, or None (the caller's general path):
    numbers of 32 or 64 bits; weights (if any; a's shape, which the caller checks)
    booleans, integers or float32 / float64; on GPUs at most _MAX_BINS bins of int32 counts
    (half as many of 8-byte sums)."""
    if not COUNTS or a.dtype.kind not in "biuf":
        return None
    if weights is not None:
        if weights.dtype.kind not in "biuf":
            return None
        if weights.dtype.kind == "f" and weights.dtype.itemsize < 4:
            return None
    local = 4 if weights is None else _gpu_sums(weights.dtype).itemsize
    if not _per_chunk(a) and edges.shape[0] - 1 > _MAX_BINS * 4 // local:
        return None
    common = np.result_type(a.dtype, edges.dtype)
    if common.kind not in "iuf" or common.itemsize < 4:
        return None
    return common


def _gpu_sums(wtype: np.dtype) -> np.dtype:
    """What GPUs add weights of wtype in: their own float type, else int64."""
    return wtype if wtype.kind == "f" else np.dtype(np.int64)


def _cpu_sums(wtype: np.dtype) -> np.dtype:
    """What the CPU driver's rows add weights of wtype in: float64 for floats, else int64."""
    return np.dtype(np.float64) if wtype.kind == "f" else np.dtype(np.int64)


def _result(acc: np.dtype | None) -> np.dtype:
    """The result's dtype: int64 counts (acc None), else the sums' own."""
    return np.dtype(np.int64) if acc is None else acc


def _per_chunk(a: Array) -> bool:
    """Whether a's device counts a chunk per work-item (the CPU driver) rather than a tile per
    work-group in local memory (GPUs)."""
    return a.device.device_type == "cpu"


def _bin_lines(nb: int, equal: bool, pad: str) -> str:
    if equal:
        body = _BIN_EQUAL
    else:
        body, s = "", 1 << ((nb - 1).bit_length() - 1) if nb > 1 else 0
        while s > 0:
            body += _BIN_SEARCH_STEP.format(s=s)
            s //= 2
    return "".join(pad + ln + "\n" for ln in body.splitlines())


def _cpu_steps(rows: int, nb: int, equal: bool, pad: int) -> str:
    """rows of _CPU_STEP (values i, i + 1, ... into rows of their own), indented by pad."""
    out = ""
    for u in range(rows):
        step = _CPU_STEP.format(u=u).replace("BIN\n", _bin_lines(nb, equal, "    "))
        out += "".join(" " * pad + ln + "\n" for ln in step.splitlines())
    return out


@functools.lru_cache(maxsize=256)
def _source(
    cpu: bool, rows: int, nb: int, equal: bool, common: np.dtype, acc: np.dtype | None
) -> str:
    """The kernel's source (built once per shape of call, not per call): counts (acc None) or
    sums of the weights in acc."""
    if cpu:
        src = _CPU_SRC.replace("STEPS\n", _cpu_steps(rows, nb, equal, 8))
        src = src.replace("STEP0\n", _cpu_steps(1, nb, equal, 8))
        src = src.replace("ROWS", str(rows))
    else:
        src = _GPU_SRC.replace("BIN\n", _bin_lines(nb, equal, " " * 16))
    src = re.sub(r"ADD\(([^)]*)\)", "one" if acc is None else r"ACC(wts[\1])", src)
    local = np.dtype(np.int32) if acc is None else acc
    src = src.replace("ACC(", f"np.{local.type.__name__}(")
    src = src.replace("SUM(", f"np.{_result(acc).type.__name__}(")
    return src.replace("E(", f"np.{common.type.__name__}(")


def counts(a: Array, edges: Array, common: np.dtype, equal: tuple[float, float] | None) -> Array:
    """int64 counts of the 1-d array a in the bins between the 1-d edges (non-decreasing),
    both on one queue, compared in `common` (supported()). equal: (first edge, bins / (last
    edge - first edge)) when the edges are NumPy's equal bins, for the estimate."""
    return _run(a, None, edges, common, equal)


def sums(
    a: Array, weights: Array, edges: Array, common: np.dtype, equal: tuple[float, float] | None
) -> Array:
    """As counts(), each value adding its weight (weights: a's shape, on its queue): float64
    sums of float weights on the CPU driver, their own float type on GPUs; int64 otherwise."""
    return _run(a, weights.reshape((-1,)), edges, common, equal)


def _run(a, weights, edges, common, equal) -> Array:
    from .._kernel.ranges import NdRange, Range
    from . import array_api as xp
    from .replay import launch as call_kernel

    q = a.sycl_queue
    nb = edges.shape[0] - 1
    if edges.dtype != common:
        edges = xp.astype(edges, common)
    n = a.shape[0]
    lo, scale = equal if equal is not None else (0.0, 0.0)
    cpu = _per_chunk(a)
    units = max(1, a.device.max_compute_units)
    rows = _CPU_ROWS_EQUAL if equal is not None else _CPU_ROWS_SEARCH
    acc = None
    if weights is not None:
        acc = (_cpu_sums if cpu else _gpu_sums)(weights.dtype)
    wts = a if weights is None else weights  # counts never read it
    src = _source(cpu, rows, nb, equal is not None, common, acc)
    tag = ("histogram", common.str, "" if acc is None else acc.str)
    k = kernel_of(src, "_hist_rows" if cpu else "_hist_groups", {}, tag)
    if cpu:
        part_type = np.dtype(np.int32) if acc is None else acc
        items = max(1, min(units * _CPU_ITEMS_PER_UNIT, -(-n // _CPU_MIN_CHUNK)))
        items = max(1, min(items, _CPU_ROWS_BYTES // (rows * nb * part_type.itemsize)))
        items = max(items, -(-n // (1 << 30)))  # a row's int32 counts cannot overflow
        chunk = max(1, -(-n // items))
        part = xp.zeros((items * rows, nb), dtype=part_type, device=q)
        if n:
            call_kernel(
                k, Range(1, items), a, wts, edges, part, np.int64(n), np.int64(nb),
                np.int64(chunk), np.float64(lo), np.float64(scale),
            )  # fmt: skip
        return xp.sum(part, axis=0, dtype=_result(acc))
    from kapi_lang import kernel_api as K

    hist = xp.zeros(nb, dtype=_result(acc), device=q)
    if n == 0:
        return hist
    groups = max(1, min(-(-n // (_WG * _PER_ITEM)), units * _GROUPS_PER_UNIT))
    groups = max(groups, -(-n // (1 << 30)))  # a group's int32 counts cannot overflow
    tile = -(-n // groups)
    call_kernel(
        k, NdRange((groups * _WG,), (_WG,)), a, wts, edges, hist, np.int64(n), np.int64(nb),
        np.int64(tile), np.float64(lo), np.float64(scale),
        K.LocalAccessor(nb, np.dtype(np.int32) if acc is None else acc),
    )  # fmt: skip
    return hist
