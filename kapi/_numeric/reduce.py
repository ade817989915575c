"""Reductions of kapi arrays (sum, prod, min, max, mean, argmin, argmax, any, all) as
generated kernels on the array's device.

The reduced axes are moved last and the array seen as (rows, n) (a contiguous copy by an
elementwise kernel where the view cannot be); each row is reduced by `groups` work-groups of
_WG work-items: every work-item folds a part of the row privately, the group combines
with reduce_over_group, and one item writes the group's partial. On GPUs the parts are
strided (neighbouring work-items read neighbouring elements: coalesced) and folded by four
independent accumulators (four loads in flight), the groups of all rows together sized to fill
the device; a reduction over outer axes of a GPU array (rows across memory, `x.sum(axis=0)`)
instead runs the column kernel, a work-item per (row, part) reading the array in place, with
no transposed copy. On the CPU driver,
which runs a group's work-items one after another on one thread, each work-item folds one
contiguous chunk with several accumulators (a strided part would sweep the whole row once per
work-item, and one accumulator is a serial chain the vectoriser cannot widen), read as
two or four equal parts at once (_cpu_streams: more of a core's reads in flight); the last
group to finish folds the groups' partials (one launch). On GPUs a second launch (one group per
row) folds the partials. argmin/argmax fold values as min/max do and
find the index once per block (the CPU driver: the first block holding the work-item's
extreme is searched at the end) or per step (GPUs: the step's loads are kept), see
ARG_SCHEME; the group first finds the extreme value, then the smallest index holding it
(NumPy's first occurrence); NaN wins for min/max/argmin/argmax as in NumPy.
"""

from __future__ import annotations

import functools
import operator
import os
import re

import numpy as np

from .._memory.array import Array
from . import lazy as _lazy
from . import replay as _replay
from . import ufunc as _ufunc

_WG = 256  # work-items per group
_PER_ITEM = 16  # elements a work-item folds before another group is worth launching
# The CPU driver: work-items per group (each a contiguous chunk), and groups per compute unit.
# 16 and 16 (64 and 4 before: the same work-items, the same chunks) hand the driver's threads
# pieces a quarter the size, so a launch's last piece ends sooner: on the 16 Xeon cores every
# reduction of 2^24 float32 1.03-1.17x faster in three processes, both orders, and 2^27
# 1.03-1.11x (bench/reduce_tail.sh, bench/axis_reduce.sh); the pool's launcher had waited
# 46 us of a 265 us x.sum() for the workers after its own share.
_CPU_WG = 16
_CPU_PER_ITEM = 256  # elements a CPU work-item folds before another group is worth it
_CPU_GROUPS_PER_UNIT = 16  # groups per compute unit, to balance the driver's threads
# argmin/argmax: their groups per compute unit (each work-item's end, a fold of its lanes, a
# search of one block and a third group reduction, costs more than max's: fewer, longer chunks
# are a trade against balance; bench/argred.py's cpuagN variants compare them)
_CPU_ARG_GROUPS_PER_UNIT = 16
_UNROLL = 4  # independent accumulators of a work-item's loop (GPUs)
# The CPU driver's chunked loop: 128 bytes of accumulators (32 of 4 bytes, 16 of 8; at most
# _CPU_MAX_ACC), which the vectoriser widens into two independent vector chains (a compare
# and a select per element: one chain is latency-bound), and at least _CPU_FSUM_ACC for float
# sums and products (one chain of <4 x float> was latency-bound; _CPU_FSUM_BY_BYTES: the 128
# bytes' count where that is more, else _CPU_FSUM_ACC alone). On one core of the 2-core box,
# 2^20 float32 in cache (CPU time): max 174 -> 132 us, argmax 207 -> 151 us, sum 239 -> 177 us
# (bench/RESULTS.md, fourteenth session).
# KAPI_REDUCE_CPU=before: the settings before (64 bytes, at most 16, float sums 4, argmin and
# argmax by _block_arg_once); read at import, bench/argred.py switches them in one process.
CPU_SETTINGS = {
    "lanes": dict(
        _CPU_UNROLL_BYTES=128,
        _CPU_MAX_ACC=32,
        _CPU_FSUM_ACC=16,
        _CPU_FSUM_BY_BYTES=True,
        CPU_ARG="lanes",
        _ARG_BLOCK_UNROLLS=8,
        _CPU_HALVES=True,
    ),
    "before": dict(
        _CPU_UNROLL_BYTES=64,
        _CPU_MAX_ACC=16,
        _CPU_FSUM_ACC=4,
        _CPU_FSUM_BY_BYTES=False,
        CPU_ARG="block",
        _ARG_BLOCK_UNROLLS=16,
        _CPU_HALVES=False,
    ),
}
CPU_SCHEME = os.environ.get("KAPI_REDUCE_CPU", "lanes")
if CPU_SCHEME not in CPU_SETTINGS:
    raise ValueError(f"KAPI_REDUCE_CPU must be 'lanes' or 'before', not {CPU_SCHEME!r}")
_CPU_UNROLL_BYTES = CPU_SETTINGS[CPU_SCHEME]["_CPU_UNROLL_BYTES"]
_CPU_MAX_ACC = CPU_SETTINGS[CPU_SCHEME]["_CPU_MAX_ACC"]
_CPU_FSUM_ACC = CPU_SETTINGS[CPU_SCHEME]["_CPU_FSUM_ACC"]
_CPU_HALVES = CPU_SETTINGS[CPU_SCHEME]["_CPU_HALVES"]
_CPU_FSUM_BY_BYTES = CPU_SETTINGS[CPU_SCHEME]["_CPU_FSUM_BY_BYTES"]
# Chunked argmin/argmax: each block of _ARG_BLOCK_UNROLLS * accumulators elements is folded
# by value alone (vectorised, as min/max); "lanes" (CPU_ARG, the default): each accumulator
# lane keeps its extreme and the start of the block where it first reached it, with no fold
# across lanes per block (_block_arg_lanes); "block" (before): each block's accumulators are
# folded into one value, compared with the running extreme, which keeps the start of the first
# block holding it (_block_arg_once; on 16 cores argmax took 1.3x max's time). Either way one
# block is searched for the index at the end ("blocks" scheme); KAPI_REDUCE_ARG=pairs (the
# scheme before those) searches every block whose extreme beats the running one.
CPU_ARG = CPU_SETTINGS[CPU_SCHEME]["CPU_ARG"]
_ARG_BLOCK_UNROLLS = CPU_SETTINGS[CPU_SCHEME]["_ARG_BLOCK_UNROLLS"]
# The lanes scheme's search of the block holding the extreme: once per work-item (False,
# the default) or deferred (True): each work-item gives its block (or, from the row's tail, its
# index) and the group's first work-item searches the group's earliest one only (a search per
# group instead of per work-item; bench/argred.py's cpudefer variant)
_CPU_ARG_DEFER = False
# The CPU driver's first pass: each work-item reads its chunk as _CPU_STREAMS equal parts in
# the same loop iteration (u contiguous elements of each per step), so that a core has that
# many sequential read streams in flight instead of one (the L2 streamer follows each; one
# stream kept too few misses in flight: a reduction read 12-14 GB/s per core where the
# triad's three streams moved more). On the 16 Xeon cores, 2^24 float32 in one process
# (bench/reduce3.sh, bench/RESULTS.md): x.sum() 0.447 -> 0.330 ms, x.min() 0.364 -> 0.331,
# kapi.reduce("max") 0.386 -> 0.343 with 2; 4 no better there. KAPI_REDUCE_CPU_STREAMS
# (auto, 1, 2 or 4); read at import.
# "auto" (the default, _CPU_STREAMS = None): four streams once each of the four parts of a
# work-item's chunk spans at least _CPU_STREAM_PART_BYTES (a page: the L2 streamer follows a
# stream within a page), else two. Rows past the L3 gain most: 2^27 float32 on the 16 Xeon
# cores, x.sum() 5.36 -> 4.28 ms and x.max() 4.40 -> 4.16 ms in one process; 2^24 (every
# chunk 16 KiB) no slower; small rows keep two (four cost 10% more instructions in cache).
# _CPU_CHUNK_ROUND: a work-item's chunk is ceil(n / work-items) rounded up to a whole number
# of the loop's steps (before: n // work-items + 1, which starts every chunk off a page's
# start and leaves each a tail for the element loop).
_CPU_STREAMS_CHOICES = ("auto", "1", "2", "4")
_s = os.environ.get("KAPI_REDUCE_CPU_STREAMS", "auto")
if _s not in _CPU_STREAMS_CHOICES:
    raise ValueError(f"KAPI_REDUCE_CPU_STREAMS must be auto, 1, 2 or 4, not {_s!r}")
_CPU_STREAMS = None if _s == "auto" else int(_s)
_CPU_STREAM_PART_BYTES = 4096
_CPU_CHUNK_ROUND = _CPU_STREAMS != 1
# argmin/argmax's streams (_block_arg_lanes): 1 (the default) or 2, each stream with lanes of
# its own. Not on: the vectoriser made the two streams' 64 float32 lanes one <64 x float>
# gather (20x slower on the dev box), and 4 x 32 lanes took LLVM 50 s to compile.
_CPU_ARG_STREAMS = 1
# The CPU driver's reductions in one launch: the last work-group to finish folds the groups'
# partials (an atomic count per row) instead of a second launch. 2^24 float32 on the 16 Xeon
# cores, one process (bench/argred.py): every op 6-16% faster than two launches (x.sum()
# 0.311 -> 0.276 ms); one kernel to compile per op and dtype instead of two. False: the second
# launch, as GPUs do (bench/argred.py's cputwo variant).
_CPU_ONE_LAUNCH = True
_MAX_GROUPS = 4096  # the CPU driver's cap (16 work-items each)
# Reductions of many rows on the CPU driver (bench/axis_reduce.py's variants switch these):
# _CPU_ROWS_SHARE: the rows together get as many work-items as one long row (_groups; False:
# each row as many as one long row, at least a group of _CPU_WG, as before);
# _CPU_SHORT_CAP: a work-item's chunk shorter than its accumulators gets as many as fit
# (_launch; False: the accumulators by dtype alone);
# _CPU_COLS: rows across memory read in place by the CPU column kernel (_reduce_cols_cpu;
# False: reduced from a transposed copy, as before).
_CPU_ROWS_SHARE = True
_CPU_SHORT_CAP = True
_CPU_COLS = True
# Rows a work-item each (_groups gives groups of one work-item, one group a row): a source
# without group collectives, up to _CPU_SOLO_ROWS rows a work-group, as long as each compute
# unit gets _CPU_GROUPS_PER_UNIT groups (False: a group of one work-item a row, its group
# reductions and their barriers, as before). A (1048576, 16) float32 array's max(axis=1) on
# the dev box: 24.3 -> 4.1 ms (its NaN flag's reduction kept each work-item's accumulator
# across a barrier, so the driver could not batch the groups of one work-item)
_CPU_SOLO = True
_CPU_SOLO_ROWS = 64
# The CPU column kernel (_reduce_cols_cpu): rows a work-group (lanes of the driver's vectors;
# 2048 x 2048 float32 on the dev box: 293 us with 256, 688 with 64, 2527 with 16), groups a
# compute unit to aim for, and the fewest elements a part folds when n is split for them
_CPU_COLS_WG = 256
_CPU_COLS_GROUPS_PER_UNIT = 4
_CPU_COLS_SPAN = 64
# The CPU column kernel's argmin/argmax: blocks of this many elements folded by value, the
# index found in the block holding the extreme (_cols_arg_blocks; 0: element by element), for
# parts of at least _CPU_COLS_ARG_MIN elements (the search's gathers cost a short part more
# than the blocks save. float32 argmax(axis=0) on the dev box, element by element / blocks:
# 16 x 1048576 9.8 / 21.2 ms, 128 x 131072 10.9 / 11.7, 256 x 65536 11.1 / 9.9, 4096 x 4096
# 17.7 / 8.6)
_CPU_COLS_ARG_BLOCK = 8
_CPU_COLS_ARG_MIN = 256
_GPU_GROUPS_PER_UNIT = 32  # GPUs: groups (of all rows) per compute unit
_GPU_MAX_GROUPS = 4096  # GPUs: the column kernel's work-items, in groups of _WG, at most
# GPUs: the row kernel's groups of all rows together, at most. About one wave of resident
# groups (the H200: 132 SMs x 8 groups of 256): with 4096 (four waves and a partial one)
# 2^27 float32 took 0.144 ms for max and 0.163 ms for argmax, with 1024 0.137 and 0.145 ms
# (CuPy 0.135 / 0.140 ms, bench/argred.py in one process; bench/RESULTS.md)
_GPU_ROW_GROUPS = 1024
_MAX_ROWS = 65535
_I64_MAX = np.iinfo(np.int64).max  # the index no element has, after the first pass
# The GPU run compares shapes by these (bench/RESULTS.md): KAPI_REDUCE_ARG_UNROLL=1 folds
# argmin/argmax with four (value, index) pairs per work-item (off by default: on the H100 it
# took 0.98 ms for 2^28 f32 against one pair's 0.57 ms); KAPI_REDUCE_COLS_UNROLL=0 the column
# kernel with one accumulator.
ARG_UNROLL = os.environ.get("KAPI_REDUCE_ARG_UNROLL", "0") == "1"
# The first pass of argmin/argmax: "blocks" (default) folds values as min/max do and keeps,
# beside the running extreme, where the first group of loads holding it starts (GPUs: the
# _UNROLL strided loads of one step, whose values it keeps; the CPU driver: the block, searched
# once at the end); "pairs" folds (value, index) pairs element by element (GPUs; the CPU
# driver searches every block that improves), as before. Read at import; bench/argred.py
# switches it in one process.
# "keys" (GPUs, float32 and int32 rows under 2^32 elements; else "blocks"): each element
# becomes one int64 key, its value's bits in sortable order above the complement of its index,
# folded by integer max alone (_keys_source).
ARG_SCHEME = os.environ.get("KAPI_REDUCE_ARG", "blocks")
if ARG_SCHEME not in ("blocks", "pairs", "keys"):
    raise ValueError(f"KAPI_REDUCE_ARG must be 'blocks', 'pairs' or 'keys', not {ARG_SCHEME!r}")
_COLS_SECOND_ROWS = 1024  # the column kernel's second pass: at least this many rows
_COLS_SECOND_PARTS = 256  # and at most this many partials per row
COLS_UNROLL = os.environ.get("KAPI_REDUCE_COLS_UNROLL", "1") != "0"
_KERNELS: dict[str, object] = {}
_PLANS = _replay.plans()  # call key -> its recorded launches (kapi/_numeric/replay.py)
_DUMMIES: dict[tuple, Array] = {}  # (queue, usm_type) -> the unused index array

# op -> (GroupOp name, fold expression over acc and v)
_OPS = {
    "sum": ("ADD", "{a} + {v}"),
    "prod": ("MUL", "{a} * {v}"),
    "min": ("MIN", "np.minimum({a}, {v})"),
    "max": ("MAX", "np.maximum({a}, {v})"),
    "any": ("MAX", "np.maximum({a}, {v})"),
    "all": ("MIN", "np.minimum({a}, {v})"),
    "argmin": ("MIN", None),
    "argmax": ("MAX", None),
}


def _acc_dtype(op: str, dt: np.dtype) -> np.dtype:
    """NumPy's result dtype of the reduction (before mean's division)."""
    if op in ("any", "all"):
        return np.dtype(np.bool_)
    if op in ("sum", "prod", "mean"):
        if dt == np.bool_ or (dt.kind == "i" and dt.itemsize < 8):
            return np.dtype(np.int64)
        if dt.kind == "u" and dt.itemsize < 8:
            return np.dtype(np.uint64)
        if op == "mean" and dt.kind in "iu":
            return np.dtype(np.float64)
    return dt


def _identity(op: str, dt: np.dtype):
    if op == "sum":
        return dt.type(0)
    if op == "prod":
        return dt.type(1)
    if op in ("any", "all"):
        return np.int32(op == "all")
    big = op in ("min", "argmin")
    if dt.kind == "f":
        return dt.type(np.inf if big else -np.inf)
    if dt == np.bool_:
        return np.bool_(big)
    info = np.iinfo(dt)
    return dt.type(info.max if big else info.min)


def _fold_step(
    op: str, is_float: bool, idx: str, pad: str, acc="acc", acci="acci", v="v"
) -> list[str]:
    """Kernel lines folding element v (index idx) into acc (and acci for arg-reductions)."""
    fold = _OPS[op][1]
    if fold is not None:
        return [f"{pad}{acc} = {fold.format(a=acc, v=v)}"]
    cmp = "<" if op == "argmin" else ">"
    nan_take = f" or ({v} != {v} and {acc} == {acc})" if is_float else ""
    nan_tie = f" or ({v} != {v} and {acc} != {acc})" if is_float else ""
    return [
        f"{pad}if {v} {cmp} {acc}{nan_take}:",
        f"{pad}    {acc} = {v}",
        f"{pad}    {acci} = {idx}",
        # ties (and NaN after NaN) keep the smallest index: partials come in group order
        f"{pad}elif ({v} == {acc}{nan_tie}) and {idx} < {acci}:",
        f"{pad}    {acci} = {idx}",
    ]


def _unrolled(op, is_float, first_pass, conv, *, arg, step, bound, row, pad) -> list[str]:
    """A strided fold with _UNROLL independent accumulators (for arg-reductions (value, index)
    pairs): all loads issued before the folds, several in flight, then the accumulators folded
    into (acc, acci) by the same step; for arg-reductions ties keep the smallest index, so the
    result is the first occurrence whatever pair saw it. `step` and `bound` name the stride
    and the end, `row` the row variable of the index array, `pad` the loop's indentation."""
    u = _UNROLL
    lines = []
    for k in range(1, u):
        lines.append(f"{pad}a{k} = ident")
        if arg:
            lines.append(f"{pad}ai{k} = big")
    lines.append(f"{pad}while j + {u - 1} * {step} < {bound}:")
    for k in range(u):
        lines.append(f"{pad}    v{k} = {conv('j' if k == 0 else f'j + {k} * {step}')}")
    for k in range(u):
        at = "j" if k == 0 else f"j + {k} * {step}"
        idx = at if first_pass else f"xi[{row}, {at}]"
        a, ai = ("acc", "acci") if k == 0 else (f"a{k}", f"ai{k}")
        lines += _fold_step(op, is_float, idx, pad + "    ", a, ai, f"v{k}")
    lines.append(f"{pad}    j += {u} * {step}")
    for k in range(1, u):
        lines += _fold_step(op, is_float, f"ai{k}", pad, "acc", "acci", f"a{k}")
    return lines


def _cpu_unroll(op: str, acc_dt: np.dtype) -> int:
    """Accumulators of the chunked (CPU driver) loop for op in this accumulator dtype."""
    by_bytes = max(_UNROLL, min(_CPU_MAX_ACC, _CPU_UNROLL_BYTES // acc_dt.itemsize))
    if op in ("sum", "prod") and acc_dt.kind == "f":
        # at least _CPU_FSUM_ACC (a shorter chain of float adds was latency-bound), else as
        # the others: float32 sums 32, two lines of each stream a step (16, one line: 1.02-1.07x
        # slower on the 16 Xeon cores, 2^24 and 2^27 in one process)
        return max(_CPU_FSUM_ACC, by_bytes) if _CPU_FSUM_BY_BYTES else _CPU_FSUM_ACC
    return by_bytes


def _block_fold(fold: str, conv, u: int, blk: int) -> list[str]:
    """The body lines that fold the block at j into u accumulators b0..b{u-1} by value."""
    lines = [f"        b{k} = {conv(f'j + {k}')}" for k in range(u)]
    lines += [f"        q = j + {u}", f"        while q < j + {blk}:"]
    lines += [f"            b{k} = {fold.format(a=f'b{k}', v=conv(f'q + {k}'))}" for k in range(u)]
    lines.append(f"            q += {u}")
    return lines


def _block_fold_streams(fold: str, conv, u: int, streams: int, blk: int) -> list[str]:
    """The body lines that fold the block of blk elements at j + s * h of each stream s into
    its own u accumulators b{s * u}..b{s * u + u - 1}, one stream's block after the other's
    (streams sequential reads advancing together, _CPU_STREAMS): each stream's block its own
    loop, so that the vectoriser makes each stream's lanes contiguous vectors (in one loop it
    made the streams' lanes one vector, loaded by a gather)."""
    lines = []
    for s in range(streams):
        off = "" if s == 0 else f" + {s} * h"
        lines += [f"        b{s * u + k} = {conv(f'j{off} + {k}')}" for k in range(u)]
        lines += [f"        q = j + {u}", f"        while q < j + {blk}:"]
        for k in range(u):
            b = f"b{s * u + k}"
            lines.append(f"            {b} = {fold.format(a=b, v=conv(f'q{off} + {k}'))}")
        lines.append(f"            q += {u}")
    return lines


def _block_arg(op: str, is_float: bool, conv, u: int) -> list[str]:
    """The chunked arg-reduction's block loop (see _ARG_BLOCK_UNROLLS): u accumulators fold a
    block by value (min/max, NaN winning), then a block whose extreme beats acc (ties keep the
    earlier index; a NaN beats any number, and after a NaN nothing does) is searched for the
    first element equal to it (or NaN). The first block is searched whatever its extreme (it
    may equal the identity: an all -inf chunk's argmax is its first element)."""
    blk = u * _ARG_BLOCK_UNROLLS
    fold = _OPS["min" if op == "argmin" else "max"][1]
    cmp = "<" if op == "argmin" else ">"
    lines = [f"    while j + {blk} <= end:", *_block_fold(fold, conv, u, blk)]
    names = [f"b{k}" for k in range(u)]
    while len(names) > 1:
        names = [
            "(" + fold.format(a=names[k], v=names[k + 1]) + ")" for k in range(0, len(names), 2)
        ]
    lines.append(f"        bm = {names[0]}")
    # (bounded by the block: an expression's scalar code may round otherwise than its vector
    # code, and then no element equals bm; the block's last is taken)
    if is_float:
        lines += [
            f"        if bm {cmp} acc or acci == big or (bm != bm and acc == acc):",
            "            q = j",
            f"            while q < j + {blk - 1} and {conv('q')} != bm and not (bm != bm and "
            f"{conv('q')} != {conv('q')}):",
        ]
    else:
        lines += [
            f"        if bm {cmp} acc or acci == big:",
            "            q = j",
            f"            while q < j + {blk - 1} and {conv('q')} != bm:",
        ]
    lines += [
        "                q += 1",
        "            acc = bm",
        "            acci = q",
        f"        j += {blk}",
    ]
    return lines


def _better(op: str, is_float: bool, v: str, acc: str, first: str) -> str:
    """The condition under which v replaces the running extreme acc of an arg-reduction
    (strictly better: ties keep the earlier one; a NaN beats any number, and after a NaN
    nothing does), or first (the running extreme is still the identity)."""
    cmp = "<" if op == "argmin" else ">"
    nan = f" or ({v} != {v} and {acc} == {acc})" if is_float else ""
    return f"{v} {cmp} {acc} or {first}{nan}"


def _equal(is_float: bool, v: str, acc: str) -> str:
    """v is acc (for a NaN acc: v is a NaN too)."""
    return f"{v} == {acc}" + (f" or ({acc} != {acc} and {v} != {v})" if is_float else "")


def _tree(fold: str, names: list[str]) -> str:
    """The fold of names, combined pairwise (a tree: independent operations)."""
    while len(names) > 1:
        pairs = [
            "(" + fold.format(a=names[k], v=names[k + 1]) + ")" for k in range(0, len(names) - 1, 2)
        ]
        names = pairs + names[len(names) - len(names) % 2 :]
    return names[0]


def _block_arg_once(op: str, is_float: bool, conv, u: int) -> list[str]:
    """The chunked arg-reduction's block loop, "blocks" scheme: u accumulators fold a block
    by value (min/max, NaN winning, vectorised as min/max are); when the block's extreme beats
    acc or is a NaN (rare on shuffled data), or the block is the chunk's first, it becomes acc
    and the block's start accb: no search per improving block. A NaN ends the loops (the first
    NaN wins, nothing beats it). At the end the one block at accb is searched for the first
    element equal to acc, u elements at a time. The chunk is a whole number of blocks, so the
    element loop after it is empty but for the row's last chunk."""
    blk = u * _ARG_BLOCK_UNROLLS
    fold = _OPS["min" if op == "argmin" else "max"][1]
    keep = ">=" if op == "argmin" else "<="  # b keeps acc (false for a NaN b or acc)
    # accb starts as j (a value known non-negative, so that the search's loads need no
    # wrap-around); found says whether a block has set it
    lines = ["    accb = j", "    found = 0", f"    while j + {blk} <= end:"]
    lines += _block_fold(fold, conv, u, blk)
    lines += [
        f"        bm = {_tree(fold, [f'b{k}' for k in range(u)])}",
        f"        if found == 0 or not (bm {keep} acc):",
        "            acc = bm",
        "            accb = j",
        "            found = 1",
    ]
    if is_float:
        # the loop and the element loop after it end (j += blk passes end)
        lines += ["            if acc != acc:", "                end = j"]
    lines += [f"        j += {blk}", "    if found != 0:"]
    lines += _block_search(op, is_float, conv, u, blk)
    return lines


def _block_arg_lanes(
    op: str, is_float: bool, conv, u: int, defer: bool = False, streams: int = 1
) -> list[str]:
    """The chunked arg-reduction's block loop, "lanes" scheme (the CPU driver's default): u
    accumulators b0.. fold a block by value (min/max, NaN winning), then each lane k keeps,
    without a branch or a fold across lanes, its running extreme r_k and the start s_k of the
    first block where lane k reached it (strictly better only; a NaN beats any number, and
    after a NaN nothing does): per block u compares and selects, which the vectoriser widens
    as it widens the block's fold. At the end the extreme is the fold of the r_k, the block
    holding its first occurrence the smallest s_k of the lanes holding it (a lane that never
    improved holds the identity from the chunk's first block on), and that one block is
    searched for the first element equal to it (or the first NaN).
    streams > 1 (_CPU_STREAMS): the chunk's whole blocks are read as that many equal parts at
    j, j + h, ..., each with u lanes of its own, a block of each in the same iteration; a
    lane's s_k is the start of its own part's block (the blocks are disjoint, so the smallest
    start of the lanes holding the extreme is still the block of its first occurrence), and
    the elements after the parts go to the element loop."""
    blk = u * _ARG_BLOCK_UNROLLS
    fold = _OPS["min" if op == "argmin" else "max"][1]
    cmp = "<" if op == "argmin" else ">"
    keep = ">=" if op == "argmin" else "<="  # b keeps r (false for a NaN b or r)
    lanes = u * streams
    lines = ["    j0 = j"]
    lines += [f"    r{k} = ident" for k in range(lanes)]
    lines += [f"    s{k} = j" for k in range(lanes)]
    if streams == 1:
        lines.append(f"    while j + {blk} <= end:")
        lines += _block_fold(fold, conv, u, blk)
    else:
        lines += [
            # each part's length: whole blocks (h & MAX: a value known non-negative)
            f"    h = (max(end - j, 0) // {streams * blk} * {blk}) & 0x7FFFFFFFFFFFFFFF",
            "    e = j + h",
            "    while j < e:",
        ]
        lines += _block_fold_streams(fold, conv, u, streams, blk)
    for k in range(lanes):
        better = f"not (b{k} {keep} r{k}) and r{k} == r{k}" if is_float else f"b{k} {cmp} r{k}"
        start = "j" if k < u else f"j + {k // u} * h"
        lines += [
            f"        t{k} = {better}",
            f"        r{k} = b{k} if t{k} else r{k}",
            f"        s{k} = {start} if t{k} else s{k}",
        ]
    lines.append(f"        j += {blk}")
    if streams > 1:
        lines.append(f"    j += {streams - 1} * h")
    lines.append("    if j > j0:")
    lines.append(f"        acc = {_tree(fold, [f'r{k}' for k in range(lanes)])}")
    starts = [f"(s{k} if {_equal(is_float, f'r{k}', 'acc')} else end)" for k in range(lanes)]
    # (& MAX: a value pyfront knows is non-negative, so that the search's loads need no
    # wrap-around and stay contiguous vectors)
    lines.append(f"        accb = {_tree('min({a}, {v})', starts)} & 0x7FFFFFFFFFFFFFFF")
    if defer:  # the block, encoded (even); the group's first work-item searches it (_source)
        lines.append("        acci = accb * 2")
    else:
        lines += _block_search(op, is_float, conv, u, blk)
    return lines


def _arg_tail(op: str, is_float: bool, conv, u: int) -> list[str]:
    """The elements after the lanes scheme's whole blocks (a short row's all): folded by value
    into u accumulators, as min/max fold, and only if their extreme beats the blocks' (or
    there were no blocks), searched for its first index. Element by element, with a branch
    each, a (1048576, 16) float32 array's argmax(axis=1) took 22.8 ms on the dev box."""
    fold = _OPS["min" if op == "argmin" else "max"][1]
    lines = ["    if j < end:", "        t = j"]
    lines += [f"        c{k} = ident" for k in range(u)]
    lines.append(f"        while t + {u} <= end:")
    lines += [f"            c{k} = {fold.format(a=f'c{k}', v=conv(f't + {k}'))}" for k in range(u)]
    lines += [f"            t += {u}", f"        m = {_tree(fold, [f'c{k}' for k in range(u)])}"]
    lines += ["        while t < end:", f"            m = {fold.format(a='m', v=conv('t'))}"]
    lines += [
        "            t += 1",
        f"        if {_better(op, is_float, 'm', 'acc', 'acci == big')}:",
    ]
    lines += ["            acc = m", "            accb = j"]
    lines += ["    " + ln for ln in _block_search(op, is_float, conv, u, 0, "end")]
    return lines


def _block_search(op: str, is_float: bool, conv, u: int, blk: int, qe: str = "") -> list[str]:
    """Lines (inside an `if`, 8 spaces deep) setting acci to the first index of the block at
    accb (blk elements; qe: the block ends there instead) whose element is acc (for a NaN
    acc: the first NaN)."""
    lines = ["        q = accb"]

    def search(pad, hit):
        # u elements at a time (bitwise |, no branches: one vector compare); in the u that
        # hold it, its place as the smallest of (k if element k is it else u), a vector select
        # and minimum (one by one, the loop's exit branch was mispredicted once a row: a
        # (1048576, 16) float32 array's argmax(axis=1) took 16.6 ms on the dev box); the
        # elements after the last whole u one by one
        any_hit = " | ".join(f"({hit(conv(f'q + {k}'))})" for k in range(u))
        at = _tree(
            "min({a}, {v})", [f"({k} if {hit(conv(f'q + {k}'))} else {u})" for k in range(u)]
        )
        return [
            f"{pad}while q + {u} <= qe and not ({any_hit}):",
            f"{pad}    q += {u}",
            f"{pad}if q + {u} <= qe:",
            f"{pad}    q += {at}",
            f"{pad}else:",
            f"{pad}    while q < qe and not ({hit(conv('q'))}):",
            f"{pad}        q += 1",
        ]

    lines.append(f"        qe = {qe or f'accb + {blk}'}")
    if is_float:
        lines.append("        if acc == acc:")
        lines += search("            ", lambda v: f"{v} == acc")
        lines.append("        else:")  # the first NaN
        lines += search("            ", lambda v: f"{v} != {v}")
    else:
        lines += search("        ", lambda v: f"{v} == acc")
    # not found: the elements are an expression whose vector code rounds otherwise than its
    # scalar code (a vectorised pow): the block's first extreme element by element instead
    lines += [
        "        if q == qe:",
        "            q = accb",
        f"            bv = {conv('accb')}",
        "            r = accb + 1",
        "            while r < qe:",
        f"                v = {conv('r')}",
        f"                if {_better(op, is_float, 'v', 'bv', 'False')}:",
        "                    bv = v",
        "                    q = r",
        "                r += 1",
        "        acci = q",
    ]
    return lines


def _strided_arg_blocks(op: str, is_float: bool, conv, u: int) -> list[str]:
    """The strided (GPU) arg-reduction's loop, "blocks" scheme: each step loads u elements
    (u loads in flight) and folds them by value as min/max do; a step whose extreme beats acc
    (or the first step) sets acc, accj (its first index) and keeps the u values in c0, c1, ...
    At the end the first kept value equal to acc gives the index: no branch per element and
    no index carried per element."""
    fold = _OPS["min" if op == "argmin" else "max"][1]
    lines = ["    accj = -1"] + [f"    c{k} = ident" for k in range(u)]
    lines.append(f"    while j + {u - 1} * step < end:")
    lines += [f"        v{k} = {conv('j' if k == 0 else f'j + {k} * step')}" for k in range(u)]
    lines.append(f"        m = {_tree(fold, [f'v{k}' for k in range(u)])}")
    lines += [
        f"        if {_better(op, is_float, 'm', 'acc', 'accj < 0')}:",
        "            acc = m",
        "            accj = j",
    ]
    lines += [f"            c{k} = v{k}" for k in range(u)]
    lines += [f"        j += {u} * step", "    if accj >= 0:"]
    # m is one of the step's values (a NaN if any is): the last kept value is acc when no
    # earlier one is; the earliest that is wins
    lines.append(f"        acci = accj + {u - 1} * step")
    for k in range(u - 2, -1, -1):
        at = "accj" if k == 0 else f"accj + {k} * step"
        lines += [f"        if {_equal(is_float, f'c{k}', 'acc')}:", f"            acci = {at}"]
    return lines


def _source(
    op: str,
    is_float: bool,
    first_pass: bool,
    chunked: bool = False,
    fused=None,
    unroll=_UNROLL,
    scheme: str = "pairs",
    one: bool = False,
    streams: int = 2,
    solo: bool = False,
) -> str:
    """The kernel reducing x (rows, n) into partials (rows, groups); chunked: each work-item
    folds a contiguous chunk (the CPU driver), else a strided part (GPUs). fused: (expression
    over leaves l0, l1, ..., which of them are arrays): the elements are that expression of
    the extra parameters e0, e1, ... (arrays seen as (rows, n), or scalars) instead of x.
    unroll: the accumulators of the loop (the chunked scheme's arg-reductions' blocks too).
    scheme: the first pass of arg-reductions, "blocks" or "pairs" (see ARG_SCHEME).
    one: the last group to finish folds the partials into res[row, 0] (resi) itself (the
    count of finished groups in cnt[row], an atomic; put back to 0 for the next launch),
    instead of a second launch (_CPU_ONE_LAUNCH). streams: the value folds' read streams
    on the CPU driver's first pass (_cpu_streams). solo: every group's one row is a
    work-item's alone (_CPU_SOLO): its fold is the row's, written without group collectives."""
    gop, fold = _OPS[op]
    arg = fold is None
    params = ", cnt, res, resi" if one else ""
    if fused is None:

        def load(j):
            return f"x[row, {j}]"
    else:
        expr, is_array = fused
        params += "".join(f", e{k}" for k in range(len(is_array)))

        def load(j):
            def leaf(m):
                k = int(m.group(1))
                return f"e{k}[row, {j}]" if is_array[k] else f"e{k}"

            return "(" + re.sub(r"\bl(\d+)\b", leaf, expr) + ")"

    blk = unroll * _ARG_BLOCK_UNROLLS
    # the CPU lanes scheme's search once per group (_CPU_ARG_DEFER; `big` is then 2 * n + 2)
    lanes = arg and chunked and first_pass and scheme == "blocks" and CPU_ARG == "lanes"
    defer = lanes and _CPU_ARG_DEFER and not solo  # (solo: no group to search once)
    # several read streams per work-item (the value folds' from _cpu_streams, argmin's and
    # argmax's _CPU_ARG_STREAMS): the CPU driver's first pass, for the value folds and the
    # lanes scheme (not the deferred search); one elsewhere
    if not (chunked and first_pass and (not arg or (lanes and not defer))):
        streams = 1
    elif arg:
        streams = _CPU_ARG_STREAMS
    # the chunk: a whole number of the loop's steps (of blocks for the blocks scheme)
    step_len = blk if arg and first_pass and scheme == "blocks" else unroll
    rounded = (arg and first_pass and scheme == "blocks") or _CPU_CHUNK_ROUND
    lines = [
        f"def _reduce(it, x, xi, out, outi, n, ident, big{params}):",
        "    row = it.get_global_id(0)",
        "    g = it.get_group()",
        "    lid = it.get_local_id(1)",
        "    L = it.get_local_range(1)",
    ]
    if chunked:
        lines += [
            "    T = g.get_group_range(1) * L",
            # n & MAX: n (never negative) as a value pyfront knows is non-negative, so that
            # the indices below need no wrap-around and the loads stay contiguous vectors
            "    chunk = (n & 0x7FFFFFFFFFFFFFFF) // T + 1"
            if not rounded
            # a whole number of blocks (_block_arg_once) or steps: no element loop after them
            # (T - 1 & MAX: T - 1 as a value known non-negative, as n above)
            else f"    chunk = (((n & 0x7FFFFFFFFFFFFFFF) + (T - 1 & 0x7FFFFFFFFFFFFFFF)) // T"
            f" + {step_len - 1}) // {step_len} * {step_len}",
            "    j = (g.get_group_id(1) * L + lid) * chunk",
            "    end = min(n, j + chunk)",
            "    step = 1",
        ]
    else:
        lines += [
            "    j = g.get_group_id(1) * L + lid",
            "    step = g.get_group_range(1) * L",
            "    end = n",
        ]
    lines.append("    acc = ident")
    if arg:
        lines.append("    acci = big")

    def conv(j):
        if op in ("any", "all"):
            return f"np.int32({load(j)} != 0)"
        return f"ACC({load(j)})"  # fold in the accumulator's type (int8 sums in int64)

    if not arg:
        # independent accumulators: several loads in flight per work-item (a GPU stalls on
        # each load of a single chain) and vectors the CPU driver's vectoriser can widen
        u = unroll
        lines += [f"    a{k} = ident" for k in range(1, u)]
        if streams > 1:
            # streams equal parts read in one loop, u contiguous elements of each per step
            # folded into the same u accumulators (a vector load per part; accumulators split
            # among the parts made the vectoriser gather across them); each part's length a
            # whole number of steps (h & MAX: a value known non-negative); the < streams * u
            # elements after the parts go to the loops below
            lines += [
                f"    h = (max(end - j, 0) // {streams * u} * {u}) & 0x7FFFFFFFFFFFFFFF",
                "    e = j + h",
                "    while j < e:",
            ]
            for s_ in range(streams):
                for k in range(u):
                    a = "acc" if k == 0 else f"a{k}"
                    at = f"j + {k}" if s_ == 0 else f"j + {s_} * h + {k}"
                    lines.append(f"        {a} = {fold.format(a=a, v=conv(at))}")
            lines += [f"        j += {u}", f"    j += {streams - 1} * h"]
        if chunked:
            lines.append(f"    while j + {u} <= end:")
        else:
            lines.append(f"    while j + {u - 1} * step < end:")
        for k in range(u):
            a = "acc" if k == 0 else f"a{k}"
            at = f"j + {k}" if chunked else ("j" if k == 0 else f"j + {k} * step")
            lines.append(f"        {a} = {fold.format(a=a, v=conv(at))}")
        lines.append(f"        j += {u}" if chunked else f"        j += {u} * step")
        names = ["acc"] + [f"a{k}" for k in range(1, u)]
        while len(names) > 1:  # combine the accumulators pairwise
            if chunked and _CPU_HALVES:
                # the upper half into the lower: the vector's halves, which the vectoriser
                # keeps as one vector in the loop (neighbours paired, a float sum's 16
                # accumulators became 8 vectors of 2 with a scalar load per element)
                h = len(names) // 2
                names = ["(" + fold.format(a=names[k], v=names[k + h]) + ")" for k in range(h)]
                continue
            names = [
                "(" + fold.format(a=names[k], v=names[k + 1]) + ")" for k in range(0, len(names), 2)
            ]
        lines.append(f"    acc = {names[0]}")
    elif chunked and first_pass and scheme == "blocks" and CPU_ARG == "lanes":
        lines += _block_arg_lanes(op, is_float, conv, unroll, defer, streams)
    elif chunked and first_pass and scheme == "blocks":
        lines += _block_arg_once(op, is_float, conv, unroll)
    elif chunked and first_pass:
        lines += _block_arg(op, is_float, conv, unroll)
    elif first_pass and scheme == "blocks":
        lines += _strided_arg_blocks(op, is_float, conv, _UNROLL)
    elif not chunked and ARG_UNROLL:
        lines += _unrolled(
            op,
            is_float,
            first_pass,
            conv,
            arg=True,
            step="step",
            bound="end",
            row="row",
            pad="    ",
        )
    if lanes and not defer:
        lines += _arg_tail(op, is_float, conv, unroll)
    else:
        lines += ["    while j < end:", f"        v = {conv('j')}"]
        # (defer: an index found element by element is encoded odd, a block even)
        idx = ("2 * j + 1" if defer else "j") if first_pass else "xi[row, j]"
        lines += _fold_step(op, is_float, idx, "        ")
        lines.append("        j += step")
    if solo:
        lines.append("    out[row, 0] = acc")
        if arg:
            lines.append("    outi[row, 0] = acci")
        return "\n".join(lines) + "\n"
    red = f"K.reduce_over_group(g, acc, K.GroupOp.{gop})"
    if is_float and op in ("min", "max", "argmin", "argmax"):
        lines += [
            "    nan = K.reduce_over_group(g, np.int32(acc != acc), K.GroupOp.MAX)",
            f"    m = {red}",
            "    if nan != 0:",
            "        m = acc - acc + np.nan",  # NaN of acc's type
        ]
        same = "(acc == m or (nan != 0 and acc != acc))"
    else:
        lines.append(f"    m = {red}")
        same = "acc == m"
    if arg:
        lines.append(f"    i = K.reduce_over_group(g, acci if {same} else big, K.GroupOp.MIN)")
    lines += ["    if lid == 0:", "        out[row, g.get_group_id(1)] = m"]
    if arg and defer:
        # the smallest code of the work-items holding m: an index (odd) or the block holding
        # the group's first m (even), searched here once instead of once per work-item
        lines += [
            "        if i >= big:",
            "            i = big // 2 - 1",  # nothing found: n
            "        elif i % 2 == 1:",
            "            i = i // 2",
            "        else:",
            "            acc = m",
            "            accb = (i // 2) & 0x7FFFFFFFFFFFFFFF",
        ]
        lines += ["    " + ln for ln in _block_search(op, is_float, conv, unroll, blk)]
        lines.append("            i = acci")
    if arg:
        lines.append("        outi[row, g.get_group_id(1)] = i")
    if one:
        # (acq_rel: this group's partial is written before its count; the last group reads
        # the others' after it); partials in group order, ties keep the smallest index
        lines += [
            "        G = g.get_group_range(1)",
            "        c = K.AtomicRef(cnt, row, memory_order=K.MemoryOrder.ACQ_REL)",
            "        if c.fetch_add(np.int32(1)) == G - 1:",
            "            acc = out[row, 0]",
        ]
        if arg:
            lines.append("            acci = outi[row, 0]")
        lines += ["            k = 1", "            while k < G:"]
        lines.append("                v = out[row, k]")
        lines += _fold_step(op, is_float, "outi[row, k]", "                ")
        lines += ["                k += 1", "            res[row, 0] = acc"]
        if arg:
            lines.append("            resi[row, 0] = acci")
        lines.append("            cnt[row] = 0")
    return "\n".join(lines) + "\n"


_KEY_DTYPES = (np.dtype(np.float32), np.dtype(np.int32))


def _keys_source(op: str, is_float: bool) -> str:
    """The GPU arg-reduction of "keys" scheme: x (rows, n) of int32 (float32 data: its bits)
    into partial keys (rows, groups), each the int64 maximum of its part's keys. An element's
    key is o * 2^32 + (2^32 - 1 - index), o its value in an order integer max agrees with:
    float32 bits with the low 31 flipped when negative (-0.0 made 0.0, NaN above +inf), the
    complement for argmin (NaN still above all). The largest key is the first occurrence of
    the extreme (or the first NaN); _UNROLL independent maxima keep loads in flight."""
    u = _UNROLL
    lines = [
        "def _reduce_keys(it, x, out, n, lo):",
        "    row = it.get_global_id(0)",
        "    g = it.get_group()",
        "    lid = it.get_local_id(1)",
        "    L = it.get_local_range(1)",
        "    j = g.get_group_id(1) * L + lid",
        "    step = g.get_group_range(1) * L",
    ]
    lines += [f"    a{k} = lo" for k in range(u)]

    def key(pad, k, at):
        out = [f"{pad}b{k} = np.int64(x[row, {at}])"]
        if is_float:
            out += [
                f"{pad}o{k} = (b{k} ^ ((b{k} >> 31) & 0x7FFFFFFF)) + np.int64(b{k} == -2147483648)"
            ]
        else:
            out += [f"{pad}o{k} = b{k}"]
        if op == "argmin":
            out += [f"{pad}o{k} = ~o{k}"]
        if is_float:
            # NaN (any sign, any payload): 2^31 - 1, without a branch (a branch on the loaded
            # value would wait for each load before issuing the next)
            out += [
                f"{pad}w{k} = -np.int64((b{k} & 0x7FFFFFFF) > 0x7F800000)",
                f"{pad}o{k} = (o{k} & ~w{k}) | (2147483647 & w{k})",
            ]
        out += [f"{pad}a{k} = max(a{k}, (o{k} << 32) | (4294967295 - ({at})))"]
        return out

    lines.append(f"    while j + {u - 1} * step < n:")
    for k in range(u):
        lines += key("        ", k, "j" if k == 0 else f"j + {k} * step")
    lines += [f"        j += {u} * step", "    while j < n:"]
    lines += key("        ", 0, "j")
    lines.append("        j += step")
    lines.append(f"    acc = {_tree('max({a}, {v})', [f'a{k}' for k in range(u)])}")
    lines += [
        "    m = K.reduce_over_group(g, acc, K.GroupOp.MAX)",
        "    if lid == 0:",
        "        out[row, g.get_group_id(1)] = m",
    ]
    return "\n".join(lines) + "\n"


def _arg_keys(op: str, x2: Array, groups: int, events) -> Array:
    """argmin/argmax of x2 (rows, n) by the "keys" scheme: the indices (rows, 1)."""
    from .._kernel.ranges import NdRange

    call_kernel = _call(events)
    rows, n = x2.shape
    q, ut = x2.sycl_queue, x2.usm_type
    bits = x2
    if x2.dtype == np.float32:  # the same memory read as int32
        bits = Array._make(
            x2._owner, x2._ptr, x2.shape, x2.strides, np.dtype(np.int32), q, ut, x2._host_ok
        )
    keys = Array._allocate((rows, groups), np.dtype(np.int64), q, ut)
    src = _keys_source(op, x2.dtype.kind == "f")
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        with _lazy.internal():
            call_kernel(
                _kernel(src, "_reduce_keys"),
                NdRange((r1 - r0, groups * _WG), (1, _WG)),
                bits[r0:r1],
                keys[r0:r1],
                np.int64(n),
                np.int64(np.iinfo(np.int64).min),
            )
    if groups > 1:
        keys, _ = _launch("max", keys, None, 1, np.dtype(np.int64))
    low = np.int64(0xFFFFFFFF)
    return _lazy.realize(low - (keys & low))


def _cols_source(op: str, is_float: bool, first_pass: bool) -> str:
    """The GPU kernel for rows that lie across memory (a reduction over a non-innermost axis,
    `x.sum(axis=0)` of a C array): x (rows, n) with neighbouring rows neighbouring in memory;
    work-item (p, r) folds part p of row r (elements p, p + parts, ...) into out[p, r]. A
    work-group spans neighbouring rows, and for few rows neighbouring parts too, so a warp
    reads neighbouring elements and no transposed copy is made. The row kernel then
    folds out's transpose, a group per row (arg-reductions compare the carried indices, so
    the interleaved parts still give NumPy's first occurrence)."""
    fold = _OPS[op][1]
    arg = fold is None
    lines = [
        "def _reduce_cols(it, x, xi, out, outi, n, ident, big):",
        "    r = it.get_global_id(1)",
        "    p = it.get_global_id(0)",
        "    parts = it.get_global_range(0)",
        "    if r < x.shape[0]:",
        "        j = p",
        "        acc = ident",
    ]
    if arg:
        lines.append("        acci = big")

    def conv(at):
        load = f"x[r, {at}]"
        return f"np.int32({load} != 0)" if op in ("any", "all") else f"ACC({load})"

    if COLS_UNROLL:  # independent accumulators: _UNROLL loads in flight per work-item
        lines += _unrolled(
            op,
            is_float,
            first_pass,
            conv,
            arg=arg,
            step="parts",
            bound="n",
            row="r",
            pad="        ",
        )
    lines += ["        while j < n:", f"            v = {conv('j')}"]
    lines += _fold_step(op, is_float, "j" if first_pass else "xi[r, j]", "            ")
    lines += ["            j += parts", "        out[p, r] = acc"]
    if arg:
        lines.append("        outi[p, r] = acci")
    return "\n".join(lines) + "\n"


def _cols_view(x: Array, axes):
    """x as a (rows, n) strided view whose rows are neighbours in memory (the kept axes merge
    into one stride smaller than the reduced axes' one), for the GPU column kernel; None if
    it is not such an array."""
    if type(x) is _lazy._Pending or x.size == 0:
        return None
    keep = [d for d in range(x.ndim) if d not in axes]
    if not keep:
        return None
    isz = x.itemsize
    st = [s // isz if s % isz == 0 else None for s in x.strides]
    if None in st:
        return None
    rs = _merged_stride([x.shape[d] for d in keep], [st[d] for d in keep])
    cs = _merged_stride([x.shape[d] for d in axes], [st[d] for d in axes])
    if rs is None or cs is None or not (0 < abs(rs) < abs(cs)):
        return None
    rows = n = 1
    for d in keep:
        rows *= x.shape[d]
    for d in axes:
        n *= x.shape[d]
    return _ufunc._strided_view(x, (rows, n), (rs, cs))


def _col_partials(op: str, x2: Array, parts: int, acc_dt: np.dtype):
    """A column kernel's partials (parts, rows) of x2 (rows, n), and their indices for the
    arg-reductions (else the unused index array)."""
    rows = x2.shape[0]
    q, ut = x2.sycl_queue, x2.usm_type
    val_dt = np.dtype(np.int32) if op in ("any", "all") else acc_dt
    out = Array._allocate((parts, rows), val_dt, q, ut)
    arg = op.startswith("arg")
    return out, (
        Array._allocate((parts, rows), np.dtype(np.int64), q, ut) if arg else _dummy(q, ut)
    )


def _second_op(op: str) -> str:
    """The op that folds op's partials (any/all's are int32 counts)."""
    return {"any": "max", "all": "min"}.get(op, op)


def _launch_cols(op, x2: Array, xi, parts: int, acc_dt: np.dtype, events=None):
    """One pass of the column kernel: x2 (rows, n) into partials (parts, rows)."""
    from .._kernel.ranges import NdRange

    call_kernel = _call(events)
    rows, n = x2.shape
    out, outi = _col_partials(op, x2, parts, acc_dt)
    src = _cols_source(op, acc_dt.kind == "f", xi is None)
    src = src.replace("ACC(", f"np.{acc_dt.type.__name__}(")
    wg = min(_WG, 1 << (rows - 1).bit_length())  # rows per group, then parts per group
    wp = min(_WG // wg, parts)
    assert parts % wp == 0, (parts, wp)
    with _lazy.internal():
        call_kernel(
            _kernel(src, "_reduce_cols"),
            NdRange((parts, -(-rows // wg) * wg), (wp, wg)),
            x2,
            xi if xi is not None else outi,
            out,
            outi,
            np.int64(n),
            _identity(op, acc_dt),
            np.int64(n if xi is None else _I64_MAX),
        )
    return out, outi


def _reduce_cols(op: str, x2: Array, acc_dt: np.dtype):
    """x2 (rows, n), rows neighbouring in memory, reduced along n on a GPU: (values, indices)
    holding rows results, as _launch gives them."""
    rows, n = x2.shape
    units = max(1, x2.device.max_compute_units)
    # enough work-items to fill the device, each folding at least _PER_ITEM elements
    # (CUDA's compute units are warp slots, 64 per SM: all parts together are capped as the
    # row kernel's groups are, else 2^14 rows of 2^14 got 1024 parts, the partials were 64 MB
    # and the second pass read them across memory)
    items = min(units * _GPU_GROUPS_PER_UNIT, _GPU_MAX_GROUPS) * _WG
    parts = max(1, min(-(-items // rows), n // _PER_ITEM))
    wp = _WG // min(_WG, 1 << (rows - 1).bit_length())  # parts per work-group
    parts = min(-(-parts // wp) * wp, _MAX_ROWS // wp * wp)
    events = [] if parts > 1 else None
    vals, idxs = _launch_cols(op, x2, None, parts, acc_dt, events)
    if parts > 1:
        second = _second_op(op)
        xi = idxs.T if op.startswith("arg") else None
        dt = acc_dt if second == op else vals.dtype
        if rows >= _COLS_SECOND_ROWS and parts <= _COLS_SECOND_PARTS:
            # many rows, few parts: the partials (parts, rows) folded by the column kernel
            # again (a work-item per row reads its parts down a column: coalesced)
            vals, idxs2 = _launch_cols(second, vals.T, xi, 1, dt)
            vals = vals.reshape(rows, 1)
            idxs2 = idxs2.reshape(rows, 1) if xi is not None else idxs2
        else:
            # the partials (parts, rows) seen as (rows, parts): one group per row folds them
            vals, idxs2 = _launch(second, vals.T, xi, 1, dt)
        _done(events)
        if xi is not None:
            idxs = idxs2
    return vals, idxs


def _cols_source_cpu(op: str, is_float: bool, first_pass: bool, block: int = 0) -> str:
    """The CPU driver's kernel for rows that lie across memory (`x.sum(axis=0)` of a C array):
    x (rows, n) with neighbouring rows neighbouring in memory; work-item r of work-group
    (_, p) folds the elements [p * span, (p + 1) * span) of row r into out[p, r] in one plain
    loop. The driver runs a group's work-items (dimension 0, the fastest-varying) as a
    vector's lanes, so each step loads neighbouring elements (a vector load), and part p
    reads one contiguous block of memory. No transposed copy is made. What keeps the loop
    vectorised: its bounds come from the group id (known uniform over the group; with
    it.get_id(1) the loads became gathers, 30x slower), no guard on r (the rows come in whole
    groups, _launch_cols_cpu), and one accumulator (unrolled, as the GPU column kernel is,
    the loads became gathers too). block: argmin/argmax's first pass in blocks of that many
    elements (_cols_arg_blocks; 0: element by element)."""
    lines = [
        "def _reduce_cols_cpu(it, x, xi, out, outi, n, ident, big, span):",
        "    r = it.get_global_id(0)",
        "    p = it.get_group().get_group_id(1)",
        "    j = p * span",
        "    end = min(n, j + span)",
        "    acc = ident",
    ]
    arg = _OPS[op][1] is None
    if arg:
        lines.append("    acci = big")
    if arg and first_pass and block:
        lines += _cols_arg_blocks(op, is_float, block)
    conv = "np.int32(x[r, j] != 0)" if op in ("any", "all") else "ACC(x[r, j])"
    lines += ["    while j < end:", f"        v = {conv}"]
    lines += _fold_step(op, is_float, "j" if first_pass else "xi[r, j]", "        ")
    lines += ["        j += 1", "    out[p, r] = acc"]
    if arg:
        lines.append("    outi[p, r] = acci")
    return "\n".join(lines) + "\n"


def _cols_arg_blocks(op: str, is_float: bool, b: int) -> list[str]:
    """The CPU column kernel's argmin/argmax over whole blocks of b elements: each block folded
    by value as min/max fold, and the running extreme and the start of the block that first
    reached it kept by one compare and two selects a block (strictly better only; a NaN beats
    any number, and after a NaN nothing does; a part that never improves on the identity keeps
    its first block). Then the first element of that block equal to the extreme (for a NaN:
    the first NaN), as the smallest of b selects, no branch."""
    fold = _OPS["min" if op == "argmin" else "max"][1]
    keep = ">=" if op == "argmin" else "<="  # c keeps acc (false for a NaN c or acc)
    better = "not (c {k} acc) and acc == acc" if is_float else "c {cmp} acc"
    better = better.format(k=keep, cmp="<" if op == "argmin" else ">")
    loads = [f"ACC(x[r, j + {k}])" for k in range(b)]
    lines = ["    accb = j", f"    while j + {b} <= end:"]
    lines += [f"        c = {_tree(fold, loads)}", f"        t = {better}"]
    lines += [
        "        acc = c if t else acc",
        "        accb = j if t else accb",
        f"        j += {b}",
    ]
    hit = "{v} == acc" + (" or (acc != acc and {v} != {v})" if is_float else "")
    lines.append("    if j > accb:")  # (no block: acci stays big)
    for k in range(b):
        lines.append(f"        v = ACC(x[r, accb + {k}])")
        lines.append(f"        acci = min(acci, accb + {k} if {hit.format(v='v')} else big)")
    return lines


def _launch_cols_cpu(op, x2: Array, xi, parts: int, acc_dt: np.dtype, events=None):
    """One pass of the CPU column kernel: x2 (rows, n) into partials (parts, rows). The rows
    in groups of _CPU_COLS_WG (fewer if there are fewer), and those left over (fewer than a
    group) as one more launch of a group each."""
    from .._kernel.ranges import NdRange

    call_kernel = _call(events)
    rows, n = x2.shape
    arg = op.startswith("arg")
    out, outi = _col_partials(op, x2, parts, acc_dt)
    span = -(-n // parts)
    block = _CPU_COLS_ARG_BLOCK if span >= _CPU_COLS_ARG_MIN else 0
    src = _cols_source_cpu(op, acc_dt.kind == "f", xi is None, block)
    k = _kernel(src.replace("ACC(", f"np.{acc_dt.type.__name__}("), "_reduce_cols_cpu")
    wg = min(_CPU_COLS_WG, 1 << (rows.bit_length() - 1))
    whole = rows // wg * wg
    for r0, r1, w in ((0, whole, wg), (whole, rows, rows - whole)):
        if r1 == r0:
            continue
        with _lazy.internal():
            call_kernel(
                k,
                NdRange((r1 - r0, parts), (w, 1)),
                x2[r0:r1],
                xi[r0:r1] if xi is not None else outi,
                out[:, r0:r1],
                outi[:, r0:r1] if arg else outi,
                np.int64(n),
                _identity(op, acc_dt),
                np.int64(n if xi is None else _I64_MAX),
                np.int64(span),
            )
    return out, outi


def _reduce_cols_cpu(op: str, x2: Array, acc_dt: np.dtype):
    """x2 (rows, n), rows neighbouring in memory, reduced along n on the CPU driver: (values,
    indices) as _reduce_cols gives them. Few rows split n into parts (a contiguous block of
    memory each) so that every core has some groups; the partials (parts, rows) are then
    folded by the same kernel, one part."""
    rows, n = x2.shape
    units = max(1, x2.device.max_compute_units)
    groups = -(-rows // _CPU_COLS_WG)
    parts = max(1, min(-(-units * _CPU_COLS_GROUPS_PER_UNIT // groups), n // _CPU_COLS_SPAN))
    events = [] if parts > 1 else None
    vals, idxs = _launch_cols_cpu(op, x2, None, parts, acc_dt, events)
    if parts > 1:
        second = _second_op(op)
        xi = idxs.T if op.startswith("arg") else None
        dt = acc_dt if second == op else vals.dtype
        vals, idxs2 = _launch_cols_cpu(second, vals.T, xi, 1, dt)
        _done(events)
        if xi is not None:
            idxs = idxs2
    return vals.reshape(rows, 1), idxs.reshape(rows, 1) if op.startswith("arg") else idxs


def _kernel(src: str, name: str = "_reduce"):
    k = _KERNELS.get(src)
    if k is None:
        from kapi_lang import kernel_api as K

        from .._kernel.dispatcher import kernel

        g = {"np": np, "K": K}
        exec(compile(src, "<kapi reduction>", "exec"), g)  # noqa: S102 - our own source
        k = _KERNELS[src] = kernel(g[name])
    return k


@functools.lru_cache(maxsize=1024)
def _src_for(
    op,
    dt,
    first_pass,
    chunked=False,
    fused=None,
    scheme="pairs",
    one=False,
    streams=2,
    cap=0,
    solo=False,
):
    """cap: at most this many accumulators on the CPU driver (0: no cap)."""
    u = _cpu_unroll(op, np.dtype(np.int32) if op in ("any", "all") else dt) if chunked else _UNROLL
    if chunked and cap:
        u = max(_UNROLL, min(u, cap))
    src = _source(op, dt.kind == "f", first_pass, chunked, fused, u, scheme, one, streams, solo)
    return src.replace("ACC(", f"np.{dt.type.__name__}(")


def _normalise_axis(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(out)


def _as_rows(x: Array, axes) -> tuple[Array, tuple[int, ...]]:
    """x with the reduced axes last, as a C-contiguous (rows, n) array; the kept shape."""
    keep = [d for d in range(x.ndim) if d not in axes]
    perm = keep + list(axes)
    kept = tuple(x.shape[d] for d in keep)
    n = 1
    for d in axes:
        n *= x.shape[d]
    rows = 1
    for d in kept:
        rows *= d
    t = x._permuted(perm)
    if t.layout != "C":
        c = Array._allocate(t.shape, t.dtype, t.sycl_queue, t.usm_type)
        _ufunc.launch("l0", [t], c, "reduction", fresh=True)
        t = c
    return t.reshape(rows, n), kept


def _merged_stride(shape, strides):
    """The one stride (elements) that walks these dimensions in C order, or None."""
    dims = [(n, st) for n, st in zip(shape, strides, strict=True) if n != 1]
    if not dims:
        return 0
    for (_, st), (n1, st1) in zip(dims, dims[1:], strict=False):
        if st != st1 * n1:
            return None
    return dims[-1][1]


def _fused_rows(x: Array, axes):
    """For a pending (lazy) x: (expression, its leaves as (rows, n) views or scalars) so that
    the reduction computes x's elements as it reads them (one pass, no temporary); None when
    a leaf cannot be seen as (rows, n) (x is then evaluated first)."""
    if type(x) is not _lazy._Pending or x.size == 0:
        return None
    g = _lazy.Gen()
    expr = g.expr(x._expr)
    keep = [d for d in range(x.ndim) if d not in axes]
    perm = keep + list(axes)
    shape = [x.shape[d] for d in perm]
    rows = n = 1
    for d in keep:
        rows *= x.shape[d]
    for d in axes:
        n *= x.shape[d]
    views = []
    for leaf in g.leaves:
        if not isinstance(leaf, Array):
            views.append(leaf)
            continue
        st = _ufunc._broadcast_strides(leaf, x.shape)
        pst = [st[d] for d in perm]
        rs = _merged_stride(shape[: len(keep)], pst[: len(keep)])
        cs = _merged_stride(shape[len(keep) :], pst[len(keep) :])
        if rs is None or cs is None:
            return None
        views.append(_ufunc._strided_view(leaf, (rows, n), (rs, cs)))
    if not any(isinstance(v, Array) for v in views):
        return None
    return expr, views


def _chunked(x: Array) -> bool:
    """Whether x's device runs a group's work-items one after another (the CPU driver)."""
    return x.device.device_type == "cpu"


def _groups(x: Array, n: int, rows: int = 1, op: str = "") -> tuple[int, int]:
    """(work-groups per row, work-items per group): enough to fill the device, none with too
    little to fold."""
    units = max(1, x.device.max_compute_units)
    if _chunked(x):
        per_unit = _CPU_ARG_GROUPS_PER_UNIT if op.startswith("arg") else _CPU_GROUPS_PER_UNIT
        # the work-items of all rows together as many as one long row's, each folding at
        # least _CPU_PER_ITEM elements: many short rows get a work-item each (a group of
        # _CPU_WG per row gave a row of 16 elements 64 work-items and a group reduction)
        items = per_unit * units * _CPU_WG
        if not _CPU_ROWS_SHARE:  # before: every row as one long row
            cap = min(_MAX_GROUPS, items // _CPU_WG)
            return max(1, min(cap, -(-n // (_CPU_WG * _CPU_PER_ITEM)))), _CPU_WG
        t = max(1, min(-(-items // rows), -(-n // _CPU_PER_ITEM)))
        if t < _CPU_WG:
            return 1, 1 << (t.bit_length() - 1)
        return min(_MAX_GROUPS, t // _CPU_WG), _CPU_WG
    # the groups of all rows together fill the device (about one wave of resident groups,
    # _GPU_ROW_GROUPS), and each work-item folds at least _PER_ITEM elements: 2^27 elements
    # on the H200 give 512 elements per work-item
    # (CUDA reports its SMs' warp slots as compute units, 64 per SM: the total is capped as
    # kapi/_numeric/sort_radix.py caps it, which also keeps every grid dimension under CUDA's 65535)
    cap = max(1, min(_GPU_ROW_GROUPS, _GPU_GROUPS_PER_UNIT * units) // max(1, rows))
    return max(1, min(cap, -(-n // (_WG * _PER_ITEM)))), _WG


def _cpu_streams(n: int, items: int, itemsize: int) -> int:
    """The read streams of the CPU driver's first pass over rows of n elements of itemsize
    bytes shared by `items` work-items (KAPI_REDUCE_CPU_STREAMS, or auto: four once each
    quarter of a chunk spans _CPU_STREAM_PART_BYTES, else two)."""
    if _CPU_STREAMS is not None:
        return _CPU_STREAMS
    chunk = -(-n // max(1, items)) * itemsize
    return 4 if chunk >= 4 * _CPU_STREAM_PART_BYTES else 2


def _call(events):
    """call_kernel, or (events: a list, when a later launch on the same in-order queue waits)
    call_kernel_async, whose Event goes into events and keeps the arguments alive until the
    pass is done: the later launch's wait covers both, one host round trip instead of two.
    _done(events) then lets the arguments go at once (else the queue's list of pending events
    would hold them, and their pool blocks, until it is next pruned). Both through
    _replay.launch, which records them while a plan is traced."""
    if events is None:
        return _replay.launch
    return lambda k, rng, *args: _replay.launch(k, rng, *args, events=events)


def _dummy(q, ut: str) -> Array:
    """The (1, 1) int64 array passed for the index parameters a pass does not use (no kernel
    reads or writes it): one per queue and USM kind, which a plan passes as it is."""
    d = _DUMMIES.get((q, ut))
    if d is None:
        d = Array._allocate((1, 1), np.dtype(np.int64), q, ut)
        d = _DUMMIES[(q, ut)] = _replay.constant(d)
    return d


def _counts(q, ut: str) -> Array:
    """The (_MAX_ROWS,) int32 counts of finished groups for one-launch reductions (zero
    between launches: each launch's last group puts its rows' back): one per queue and USM
    kind, which a plan passes as it is."""
    key = (q, ut, "counts")
    d = _DUMMIES.get(key)
    if d is None:
        # made outside the trace of the call that first needs it (a host copy is what a
        # plan cannot repeat: that call's key would keep the general path)
        t = getattr(_replay._TLS, "trace", None)
        _replay._TLS.trace = None
        try:
            d = Array._allocate((_MAX_ROWS,), np.dtype(np.int32), q, ut)
            d._assign(np.zeros(_MAX_ROWS, np.int32))
        finally:
            _replay._TLS.trace = t
        d = _DUMMIES[key] = _replay.constant(d)
    return d


def _done(events) -> None:
    """After a synchronous launch that followed them: the (complete) events release their
    arguments."""
    for ev in events or ():
        ev.wait()


def _launch(
    op, x2: Array, xi, groups: int, acc_dt: np.dtype, fused=None, events=None, one=None, wg=None
):
    """One pass: x2 (rows, n) into partials (rows, groups), wg work-items a group (by default
    _CPU_WG on the CPU driver, _WG on GPUs). fused: (expression, leaves as
    (rows, n) views or scalars), read instead of x2's elements (x2 is then one of the views).
    one: (cnt, res, resi): the last group folds the partials into res (resi) too (_source)."""
    call_kernel = _call(events)
    from .._kernel.ranges import NdRange

    rows, n = x2.shape
    q, ut = x2.sycl_queue, x2.usm_type
    val_dt = np.dtype(np.int32) if op in ("any", "all") else acc_dt
    out = Array._allocate((rows, groups), val_dt, q, ut)
    arg = op.startswith("arg")
    outi = Array._allocate((rows, groups), np.dtype(np.int64), q, ut) if arg else _dummy(q, ut)
    cpu = _chunked(x2)
    wg = wg or (_CPU_WG if cpu else _WG)
    leaves = ()
    shape = None
    if fused is not None:
        expr, leaves = fused
        shape = (expr, tuple(isinstance(v, Array) for v in leaves))
    # ("keys" reaches here for what it does not take: "blocks" then)
    scheme = "pairs" if not arg or ARG_SCHEME == "pairs" else "blocks"
    streams = _cpu_streams(n, groups * wg, x2.dtype.itemsize) if cpu and xi is None else 2
    # a work-item's chunk shorter than its accumulators: as many as fit (a row of 16 float32
    # with 32 went element by element); longer ones no cap, one source for them all
    chunk = max(1, -(-n // (groups * wg)))
    short = cpu and _CPU_SHORT_CAP and chunk < max(_CPU_MAX_ACC, _CPU_FSUM_ACC)
    cap = 1 << (chunk.bit_length() - 1) if short else 0
    solo = cpu and _CPU_SOLO and groups == 1 and wg == 1 and one is None and xi is None
    src = _src_for(op, acc_dt, xi is None, cpu, shape, scheme, one is not None, streams, cap, solo)
    for r0, r1, rg in _row_blocks(rows, solo, x2.device.max_compute_units if solo else 1):
        with _lazy.internal():  # reads its inputs only: lazy expressions over them may wait
            call_kernel(
                _kernel(src),
                NdRange((r1 - r0, groups * wg), (rg, wg)),
                x2[r0:r1],
                xi[r0:r1] if xi is not None else outi,  # unused on the first pass
                out[r0:r1],
                outi[r0:r1] if arg else outi,
                np.int64(n),
                _identity(op, acc_dt),
                np.int64(_first_big(n, arg, cpu and not solo, scheme) if xi is None else _I64_MAX),
                *((one[0], one[1][r0:r1], one[2][r0:r1] if arg else one[2]) if one else ()),
                *(v[r0:r1] if isinstance(v, Array) else v for v in leaves),
            )
    return out, outi


def _row_blocks(rows: int, solo: bool, units: int):
    """The launches of a pass over rows: (first row, end, rows a group). Rows in chunks: a
    grid dimension other than CUDA's x holds at most 65535 groups. solo (the CPU driver, a
    row a work-item): groups of a power of two rows, at most _CPU_SOLO_ROWS, at least
    _CPU_GROUPS_PER_UNIT groups a compute unit when there are rows enough, then the rows
    left over in one group."""
    if not solo:
        return [(r0, min(rows, r0 + _MAX_ROWS), 1) for r0 in range(0, rows, _MAX_ROWS)]
    fit = max(1, rows // (max(1, units) * _CPU_GROUPS_PER_UNIT))
    rg = min(_CPU_SOLO_ROWS, 1 << (fit.bit_length() - 1))
    bulk = rows - rows % rg
    out = [(0, bulk, rg)] if bulk else []
    return out + ([(bulk, rows, rows - bulk)] if rows > bulk else [])


def _first_big(n: int, arg: bool, cpu: bool, scheme: str) -> int:
    """The first pass's `big` (the index no element has): n, or 2 * n + 2 where the CPU lanes
    scheme encodes its indices (2 * index + 1) and blocks (2 * start) for a deferred search."""
    if arg and cpu and scheme == "blocks" and CPU_ARG == "lanes" and _CPU_ARG_DEFER:
        return 2 * n + 2
    return n


def reduce(op: str, x: Array, axis=None, keepdims: bool = False, out=None):
    """x.<op>(axis, keepdims) as kernels; reducing every axis gives a 0-d array.

    The host path runs once per (op, shape, strides, dtype, axis, keepdims, queue, USM kind):
    later calls replay its recorded launches (kapi/_numeric/replay.py) without waiting for them."""
    if (
        type(x) is Array
        and x._shape
        and x.size
        and type(keepdims) is bool
        and (
            axis is None
            or type(axis) is int
            or (type(axis) is tuple and all(type(a) is int for a in axis))
        )
    ):
        key = (op, x._shape, x._strides, x._dtype, axis, keepdims, x._queue, x._usm_type)
        res = _replay.call(key, _PLANS, x, _reduce, op, x, axis, keepdims)
    else:
        res = _reduce(op, x, axis, keepdims)
    if out is not None:
        _ufunc.check_out(out, res.shape, res.dtype, op, "unsafe")
        _ufunc.launch("l0", [res], out, op)
        return out
    return res  # a 0-d array without axes, as the array API says (NumPy: a scalar)


def _reduce(op: str, x: Array, axis=None, keepdims: bool = False) -> Array:
    """reduce's general path (without out=)."""
    if not isinstance(x, Array):
        raise TypeError(f"kapi {op} takes a kapi array, not {type(x).__name__}")
    dt = x.dtype
    if dt.kind == "c" or dt == np.float16 or dt.itemsize == 2 and dt.kind == "V":
        raise TypeError(f"kapi {op} does not support dtype {dt} yet")
    axes = _normalise_axis(axis, x.ndim)
    if op.startswith("arg") and axis is not None and len(axes) != 1:
        raise TypeError(f"{op}: axis must be None or an integer")
    n = 1
    for d in axes:
        n *= x.shape[d]
    if n == 0 and op in ("min", "max", "argmin", "argmax"):
        raise ValueError(
            f"zero-size array to reduction operation {op} which has no identity"
            if not op.startswith("arg")
            else f"attempt to get {op} of an empty sequence"
        )
    if dt == np.bool_ and op in ("min", "max"):
        op = "all" if op == "min" else "any"  # bool results, the same values
    acc_dt = _acc_dtype("sum" if op == "mean" else op, dt)
    if dt == np.bool_ and op.startswith("arg"):
        acc_dt = np.dtype(np.int32)  # group collectives take numbers
    if op == "mean" and dt.kind in "iub":
        acc_dt = np.dtype(np.float64)
    fused = cols = None
    if x.ndim > 1 and (_CPU_COLS or not _chunked(x)):
        cols = _cols_view(x, axes)  # rows across memory: the column kernel, no copy
    if cols is not None:
        x2 = cols
        kept = tuple(x.shape[d] for d in range(x.ndim) if d not in axes)
        rows = x2.shape[0]
    elif x.size == 0:
        kept = tuple(x.shape[d] for d in range(x.ndim) if d not in axes)
        rows = 1
        for d in kept:
            rows *= d
    else:
        fused = _fused_rows(x, axes)  # a lazy x: its expression read inside the reduction
        if fused is not None:
            x2 = next(v for v in fused[1] if isinstance(v, Array))
            kept = tuple(x.shape[d] for d in range(x.ndim) if d not in axes)
        else:
            x2, kept = _as_rows(x, axes)
        rows = x2.shape[0]
    base_op = "sum" if op == "mean" else op
    groups, wg = _groups(x, n, rows, op)
    if rows * n == 0:
        res = Array._allocate((rows, 1), acc_dt, x.sycl_queue, x.usm_type)
        res.fill(_identity(base_op, acc_dt) if base_op in ("sum", "prod", "any", "all") else 0)
        vals, idxs = res, None
    elif cols is not None:
        vals, idxs = (_reduce_cols_cpu if _chunked(x) else _reduce_cols)(base_op, x2, acc_dt)
    elif (
        ARG_SCHEME == "keys"
        and base_op.startswith("arg")
        and fused is None
        and not _chunked(x)
        and dt in _KEY_DTYPES
        and n < 2**32
    ):
        events = [] if groups > 1 else None
        vals, idxs = None, _arg_keys(base_op, x2, groups, events)
        _done(events)
    elif _CPU_ONE_LAUNCH and groups > 1 and _chunked(x) and not _CPU_ARG_DEFER:
        # one launch: the last group to finish folds the partials (_source's `one`)
        q, ut = x2.sycl_queue, x2.usm_type
        val_dt = np.dtype(np.int32) if base_op in ("any", "all") else acc_dt
        vals = Array._allocate((rows, 1), val_dt, q, ut)
        arg = base_op.startswith("arg")
        idxs = Array._allocate((rows, 1), np.dtype(np.int64), q, ut) if arg else _dummy(q, ut)
        one = (_counts(q, ut), vals, idxs)
        _launch(base_op, x2, None, groups, acc_dt, fused, None, one, wg)
    else:
        events = [] if groups > 1 else None
        vals, idxs = _launch(base_op, x2, None, groups, acc_dt, fused, events, wg=wg)
        if groups > 1:
            second = _second_op(base_op)
            xi = idxs if base_op.startswith("arg") else None
            vals, idxs2 = _launch_second(second, vals, xi, acc_dt if second == base_op else None)
            _done(events)
            if xi is not None:
                idxs = idxs2
    if op.startswith("arg"):
        res = idxs  # without an axis: the index into the flattened (C order) array, as NumPy
    elif op in ("any", "all"):
        res = Array._allocate(vals.shape, np.dtype(np.bool_), vals.sycl_queue, vals.usm_type)
        _ufunc.launch("l0 != 0", [vals], res, op, fresh=True)
    else:
        res = vals
    if op == "mean":
        res = _ufunc.apply(np.true_divide, (res, n)) if n else _nan_mean(res)
        if dt.kind == "f" and res.dtype != dt:
            res = res.astype(dt)
        res = _lazy.realize(res)  # at once: a plan records launches, not pending arrays
    shape = kept
    if keepdims:
        full = list(x.shape)
        for d in axes:
            full[d] = 1
        shape = tuple(full)
    return res.reshape(shape)


def _nan_mean(res: Array) -> Array:
    out = Array._allocate(res.shape, np.dtype(np.float64), res.sycl_queue, res.usm_type)
    out.fill(np.nan)
    return out


def _launch_second(op, vals: Array, xi, acc_dt):
    dt = acc_dt if acc_dt is not None else vals.dtype
    v, i = _launch(op, vals, xi, 1, dt)
    return v, i


def _method(op: str):
    def m(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        if dtype is not None and op in ("sum", "prod", "mean"):
            # NumPy accumulates in dtype: the input converted first (lazily, so in one kernel)
            dt = np.dtype(dtype)
            if dt != self.dtype:
                self = self.astype(dt)
        elif dtype is not None and not op.startswith("arg"):
            raise TypeError(f"kapi arrays' {op} takes no dtype=")
        if kwargs:
            raise TypeError(f"kapi arrays' {op} does not take " + ", ".join(kwargs))
        return reduce(op, self, axis=axis, keepdims=keepdims, out=out)

    m.__name__ = op
    m.__doc__ = f"{op} over axis (None: all), on the array's device; NumPy's result dtype."
    return m


def install(cls) -> None:
    for op in ("sum", "prod", "min", "max", "mean", "argmin", "argmax", "any", "all"):
        setattr(cls, op, _method(op))


install(Array)
