"""kapi.scan, kapi.cumsum and kapi.cumprod: prefix scans with any binary operation, generated as
kapi kernels on the array's device from primitives.py's operations, kernels and row views (and
its plan cache: a scan's launches are recorded and replayed as a reduction's are).

scan (reduce-then-scan, three phases): each work-group owns a contiguous segment of a row;
phase 1 writes each segment's total, phase 2 scans the totals (recursively, the same
function), phase 3 scans each segment in chunks of one element per work-item (Hillis-Steele
in local memory, order preserving) starting from the scanned total of the segments before
it. The operation needs only to be associative. On GPUs a chunk is SCAN_ITEMS elements per
work-item (runs folded in order, one sub-group scan per chunk), the next chunk's loads are in
flight while a chunk is scanned, and phase 1 of the named operations (all commutative) is a
plain reduction of each segment (four strided accumulators per work-item, no barriers).
An exclusive scan writes each inclusive value one place to the right and the identity first.
On kapi's CPU device each work-item scans contiguous blocks sequentially instead (no
barriers): for the named operations, phase 1 folds blocks with several accumulators and
phase 3 scans each block a vector tile at a time (_vec_source; by default both phases in one
launch, each chunk scanned right after it is folded, its carry found by look-back:
_chain_source); a device function's scan keeps one block and one chain per work-item, in
order.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from .._memory.array import Array
from . import replay as _replay
from . import streaming as _streaming_rule
from .primitives import (
    _MAX_ROWS,
    _PER_ITEM,
    _PLANS,
    _SCAN_SERIAL_SUMS_SRC,
    WG,
    _as_uint8,
    _groups_for,
    _result_dtype,
    check_array,
    cpu_blocks,
    cpu_range,
    from_rows,
    kernel_of,
    named_identity,
    resolve_op,
    rows_view,
    wide_unroll,
)

# One chunk of L consecutive elements (one per work-item, `cnt` of them valid) scanned
# inclusively and in order: after it, t is this work-item's inclusive value within the chunk
# and tot the chunk's total. Items past cnt only ever read items before them, so the valid
# ones never see their garbage and no identity is needed.
# By work-groups: Hillis-Steele in local memory.
_CHUNK_GROUP = """
        K.group_barrier(g)
        slm[lid] = v
        t = v
        off = 1
        while off < L:
            K.group_barrier(g)
            t = slm[lid]
            if lid >= off:
                t = OP(slm[lid - off], t)
            K.group_barrier(g)
            slm[lid] = t
            off *= 2
        K.group_barrier(g)
        tot = slm[cnt - 1]
"""
# By sub-groups (GPUs): Hillis-Steele by shuffles within each sub-group, then the last valid
# item of each sub-group shares its value and every item folds those of the sub-groups before
# its own (sub-groups all have S items: S divides L). Two barriers per chunk.
_CHUNK_SUBGROUP = """
        sg = it.get_sub_group()
        lane = sg.get_local_linear_id()
        S = sg.get_local_linear_range()
        sgid = sg.get_group_linear_id()
        t = v
        off = 1
        while off < S:
            u = K.shift_group_right(sg, t, off)
            if lane >= off:
                t = OP(u, t)
            off *= 2
        K.group_barrier(g)
        if lid < cnt and (lane == S - 1 or lid == cnt - 1):
            slm[sgid] = t
        K.group_barrier(g)
        tot = slm[0]
        pre = tot
        w = 1
        while w <= (cnt - 1) // S:
            sw = slm[w]
            if w < sgid:
                pre = OP(pre, sw)
            tot = OP(tot, sw)
            w += 1
        if sgid > 0:
            t = OP(pre, t)
"""

_SCAN_SUMS_SRC = """
def _scan_sums(it, x, sums, n, seg, slm):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    carry = x[row, start]
    c = start
    while c < end:
        cnt = min(L, end - c)
        v = x[row, c + lid] if lid < cnt else x[row, c]
CHUNK
        if c == start:
            carry = tot
        else:
            carry = OP(carry, tot)
        c += L
    if lid == 0:
        sums[row, gid] = carry
"""

_SCAN_APPLY_SRC = """
def _scan_apply(it, x, out, pre, n, seg, slm, ident, EXCL):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    has = gid > 0
    carry = pre[row, gid - 1] if has else x[row, start]
    c = start
    while c < end:
        cnt = min(L, end - c)
        v = x[row, c + lid] if lid < cnt else x[row, c]
CHUNK
        if lid < cnt:
            r = OP(carry, t) if has else t
            if EXCL != 0:
                if c + lid + 1 < n:
                    out[row, c + lid + 1] = r
            else:
                out[row, c + lid] = r
        if has:
            carry = OP(carry, tot)
        else:
            carry = tot
            has = True
        c += L
    if EXCL != 0 and gid == 0 and lid == 0:
        out[row, 0] = ident
"""


# The GPU run compares shapes by these (bench/RESULTS.md): KAPI_SCAN_SUMS=scan runs phase 1
# of the named operations as the order-keeping _scan_sums_b (default "reduce": _scan_sums_r);
# KAPI_SCAN_GROUPS caps the work-groups (segments) per row of the GPUs' scan;
# KAPI_SCAN_ITEMS (a power of two, 1 to 32) is SCAN_ITEMS.
SCAN_ITEMS = int(os.environ.get("KAPI_SCAN_ITEMS", "8"))  # elements per work-item per chunk
if SCAN_ITEMS not in (1, 2, 4, 8, 16, 32):
    raise ValueError(f"KAPI_SCAN_ITEMS must be 1, 2, 4, 8, 16 or 32, not {SCAN_ITEMS}")
SCAN_SUMS = os.environ.get("KAPI_SCAN_SUMS", "reduce")
SCAN_GROUPS = int(os.environ.get("KAPI_SCAN_GROUPS", "4096"))


# The GPUs' scan ("subgroup"): a chunk is L * SCAN_ITEMS elements, loaded coalesced into
# local memory (stg, one pad slot per 32 so that a work-item's run of SCAN_ITEMS is read
# without bank conflicts); each work-item folds its own run of SCAN_ITEMS consecutive
# elements in order, the runs' totals go through CHUNK (one sub-group scan and two barriers
# per chunk rather than per L elements), and _scan_apply_b writes each run's scan back to
# local memory, then out coalesced. The next chunk's SCAN_ITEMS loads per work-item are
# issued before this chunk is scanned (PREFETCH, into registers p0, p1, ...; indices clamped
# to the segment, so no load is conditional and all are in flight together while the
# barriers and the sub-group scan of this chunk run): a work-group is never waiting on one
# load at a time.
def _prefetch(pad: str, first: str) -> str:
    """Lines loading the chunk at c (its elements e * L + lid, clamped to end - 1) into
    p0 .. p{SCAN_ITEMS-1}; `first`: the chunk's start expression."""
    return "\n".join(
        f"{pad}p{e} = x[row, min({first} + {e} * L + lid, end - 1)]" for e in range(SCAN_ITEMS)
    )


def _stage_runs() -> str:
    pad = " " * 8
    lines = [f"{pad}K.group_barrier(g)"]
    for e in range(SCAN_ITEMS):  # garbage past m is never read (stg holds a whole chunk)
        q = f"{e} * L + lid"
        lines.append(f"{pad}stg[{q} + ({q}) // 32] = p{e}")
    lines += [
        f"{pad}if c + L * SCAN_ITEMS < end:",
        _prefetch(pad + "    ", "c + L * SCAN_ITEMS"),
        f"{pad}K.group_barrier(g)",
        f"{pad}b0 = lid * SCAN_ITEMS",
        f"{pad}v = stg[b0 + b0 // 32] if b0 < m else stg[0]",
        f"{pad}e = 1",
        f"{pad}while e < SCAN_ITEMS:",
        f"{pad}    q = b0 + e",
        f"{pad}    if q < m:",
        f"{pad}        v = OP(v, stg[q + q // 32])",
        f"{pad}    e += 1",
        f"{pad}cnt = (m + SCAN_ITEMS - 1) // SCAN_ITEMS",
    ]
    return "\n".join(lines)


_SCAN_SUMS_B_SRC = """
def _scan_sums_b(it, x, sums, n, seg, slm, stg):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    carry = x[row, start]
    c = start
PREFETCH
    while c < end:
        m = min(L * SCAN_ITEMS, end - c)
STAGE
CHUNK
        if c == start:
            carry = tot
        else:
            carry = OP(carry, tot)
        c += L * SCAN_ITEMS
    if lid == 0:
        sums[row, gid] = carry
"""

# Phase 1 on GPUs for the named operations (all commutative): a segment's total needs no
# order, so it is folded as kapi.reduce folds a row: each work-item strides through the
# segment with four independent accumulators (four loads in flight, no barriers), then the
# group combines them in local memory. Reading is all this pass does, at reduction speed.
_SCAN_SUMS_R_SRC = """
def _scan_sums_r(it, x, sums, n, seg, slm, ident):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    j = start + lid
    a0 = ident
    a1 = ident
    a2 = ident
    a3 = ident
    while j + 3 * L < end:
        a0 = OP(a0, x[row, j])
        a1 = OP(a1, x[row, j + L])
        a2 = OP(a2, x[row, j + 2 * L])
        a3 = OP(a3, x[row, j + 3 * L])
        j += 4 * L
    while j < end:
        a0 = OP(a0, x[row, j])
        j += L
    slm[lid] = OP(OP(a0, a1), OP(a2, a3))
    s = L // 2
    while s > 0:
        K.group_barrier(g)
        if lid < s:
            slm[lid] = OP(slm[lid], slm[lid + s])
        s //= 2
    if lid == 0:
        sums[row, gid] = slm[0]
"""

_SCAN_APPLY_B_SRC = """
def _scan_apply_b(it, x, out, pres, n, seg, slm, ident, EXCL, stg):
    row = it.get_global_id(0)
    g = it.get_group()
    lid = it.get_local_id(1)
    L = it.get_local_range(1)
    gid = g.get_group_id(1)
    start = gid * seg
    end = min(n, start + seg)
    has = gid > 0
    carry = pres[row, gid - 1] if has else x[row, start]
    c = start
PREFETCH
    while c < end:
        m = min(L * SCAN_ITEMS, end - c)
STAGE
CHUNK
        # the runs before this work-item's: the previous lane's value, or for a sub-group's
        # first lane the sub-groups before it (pre, from the chunk scan); no local memory,
        # no barrier
        u = K.shift_group_right(sg, t, 1)
        ex = u if lane > 0 else pre
        b0 = lid * SCAN_ITEMS
        if b0 < m:
            p = carry
            if lid > 0:
                p = OP(carry, ex) if has else ex
            r = stg[b0 + b0 // 32]
            if has or lid > 0:
                r = OP(p, r)
            stg[b0 + b0 // 32] = r
            e = 1
            while e < SCAN_ITEMS:
                q = b0 + e
                if q < m:
                    r = OP(r, stg[q + q // 32])
                    stg[q + q // 32] = r
                e += 1
        K.group_barrier(g)
        e = 0
        while e < SCAN_ITEMS:
            q = e * L + lid
            if q < m:
                r = stg[q + q // 32]
                if EXCL != 0:
                    if c + q + 1 < n:
                        out[row, c + q + 1] = r
                else:
                    out[row, c + q] = r
            e += 1
        if has:
            carry = OP(carry, tot)
        else:
            carry = tot
            has = True
        c += L * SCAN_ITEMS
    if EXCL != 0 and gid == 0 and lid == 0:
        out[row, 0] = ident
"""


# kapi's CPU device runs barriers as one loop over the group per stretch between them, so a
# scan there is better sequential: each work-item owns a contiguous block of a row (phase 1:
# its total, by primitives.py's _scan_serial_sums; phase 3: its scan from the carried
# total), no barriers.
_SCAN_SERIAL_APPLY_SRC = """
def _scan_serial_apply(item, x, out, pre, n, B, ident, EXCL):
    row = item.get_id(0)
    t = item.get_id(1)
    i = t * B
    end = min(n, i + B)
    acc = OP(pre[row, t - 1], x[row, i]) if t > 0 else x[row, i]
    while True:
        if EXCL != 0:
            if i + 1 < n:
                out[row, i + 1] = acc
        else:
            out[row, i] = acc
        i += 1
        if i >= end:
            break
        acc = OP(acc, x[row, i])
    if EXCL != 0 and t == 0:
        out[row, 0] = ident
"""

# kapi's CPU device, the named operations (commutative, with an identity; KAPI_SCAN_CPU, read
# at import). Both schemes scan a block a tile of V elements (one vector) at a time: the
# tile's own scan by log2(V) steps of V independent operations each (Kogge-Stone, written out
# so that the SLP vectoriser makes each step one vector operation on a shuffled copy), then
# the carry from the tiles before folded into every element at once. Lanes without a partner
# take Z, the operation's exact identity (float add: -0.0, which leaves every value as it
# is), passed as an argument so that InstCombine cannot drop those lanes' operations and the
# steps stay uniform for the vectoriser. KAPI_SCAN_CPU_TILES tiles a step (2 by default) share
# one operation on the carry's chain; KAPI_SCAN_CPU_STREAMS blocks (2 by default) are folded
# and scanned side by side, so that a core has two read streams (and two write streams) in
# flight.
# - "chain" (the default, _scan_chain): one launch of a work-item per core, each taking
#   chunks of a row (KAPI_SCAN_CPU_CHUNK bytes at most, 256 KiB) by an atomic ticket: it folds
#   the chunk's blocks, publishes the chunk's total and finds the fold of the chunks before it
#   by looking back over their published totals (decoupled look-back), then scans the chunk
#   while it is still in its core's cache. x is read from memory once and written once.
#   Work-items wait for one another, which kapi's CPU device allows here: a work-group, once
#   started, runs to its end on one pool thread, a ticket goes only to a running one, and the
#   chunk it waits for has a smaller ticket (its holder waits only on smaller ones still).
# - "vec" (_scan_vec): two launches: every work-item folds its blocks, the blocks' totals are
#   scanned, then every work-item scans its blocks (x read twice from memory).
# Both write the tiles by streaming stores (store_nontemporal) when the output outgrows the
# caches (_streaming, KAPI_SCAN_CPU_STREAMING): no read of each output line before it is
# written, 8 bytes of traffic an element instead of 12. On the 16 Xeon cores that took the
# chain from 1.23-1.63 ms to 0.78-0.82 ms at 2^24 (0.65-0.73x the triad), where each core's
# rate of misses had been the limit.
# cumsum of 2^24 float32: on the dev box's 2 Zen 4 cores vec 5.3-5.5 ms, chain 3.9; on the GPU
# machine's 16 Xeon cores, in one process (bench/scan_ab.py, bench/RESULTS.md), vec 1.21 ms,
# chain 0.97 (1.23x), where each core's own rate of misses is the limit. Four blocks a chunk
# were 8% faster there and triple the kernel's build; folding the next chunk before the
# look-back, or in the same loop as the scan, gained nothing. Before both, four sub-blocks a
# work-item were scanned element by element in lockstep (one element per 3-4 cycles, four
# chains bound by the operation's latency: 1.86-2.56 ms there), and a tiled form (a block per
# core folded, then scanned from that core's L2 in a second launch) lost: 1.84-2.41 ms.
SCAN_CPU = os.environ.get("KAPI_SCAN_CPU", "chain")
if SCAN_CPU not in ("chain", "vec"):
    raise ValueError(f"KAPI_SCAN_CPU must be 'chain' or 'vec', not {SCAN_CPU!r}")
SCAN_CHAIN_BYTES = int(os.environ.get("KAPI_SCAN_CPU_CHUNK", str(1 << 18)))
if SCAN_CHAIN_BYTES < 1:
    raise ValueError(
        f"KAPI_SCAN_CPU_CHUNK must be a positive number of bytes, not {SCAN_CHAIN_BYTES}"
    )
SCAN_VEC_TILES = int(os.environ.get("KAPI_SCAN_CPU_TILES", "2"))
if SCAN_VEC_TILES not in (1, 2, 4):
    raise ValueError(f"KAPI_SCAN_CPU_TILES must be 1, 2 or 4, not {SCAN_VEC_TILES}")
SCAN_VEC_STREAMS = int(os.environ.get("KAPI_SCAN_CPU_STREAMS", "2"))
if SCAN_VEC_STREAMS not in (1, 2, 4):
    raise ValueError(f"KAPI_SCAN_CPU_STREAMS must be 1, 2 or 4, not {SCAN_VEC_STREAMS}")
# streaming stores for the output: "auto" (by its size, kapi/_numeric/streaming.py), "1", "0"
SCAN_STREAMING = _streaming_rule.parse(
    "KAPI_SCAN_CPU_STREAMING", os.environ.get("KAPI_SCAN_CPU_STREAMING", "auto")
)


def _streaming(out_bytes: int, cores: int) -> bool:
    """Whether the scan writes its output tiles by streaming stores (store_nontemporal)."""
    return _streaming_rule.pays(SCAN_STREAMING, out_bytes, cores)


def _vec_lanes(dt: np.dtype) -> int:
    """A tile's elements: one 64-byte vector of them, 4 to 16."""
    return max(4, min(16, 64 // max(1, dt.itemsize)))


def _lane_identity(key: str, dt: np.dtype):
    """Z of the vec scheme: key's identity exact for every value (float add's is -0.0)."""
    if key == "add" and dt.kind == "f":
        return dt.type(-0.0)
    return named_identity(key, dt)


def _vec_step(v: int, excl: bool, u: int, blocks, pad: str, nt: bool) -> list[str]:
    """One step of the vec scheme over each block k of `blocks` (its place i{k}, carry c{k}):
    u tiles of v elements scanned (Kogge-Stone), the tiles' totals folded among themselves,
    each tile written with its carry (by streaming stores with nt), the carry advanced by one
    operation."""
    lines = []
    for b in blocks:
        tiles = []
        for j in range(u):
            lines += [f"{pad}t{b}_{j}_{k} = x[row, i{b} + {j * v + k}]" for k in range(v)]
            names = [f"t{b}_{j}_{k}" for k in range(v)]
            d, level = 1, 0
            while d < v:
                level += 1
                new = [f"s{b}_{j}_{level}_{k}" for k in range(v)]
                for k in range(v):
                    left = names[k - d] if k >= d else "Z"
                    lines.append(f"{pad}{new[k]} = OP({left}, {names[k]})")
                names, d = new, d * 2
            tiles.append(names)
        # the carry into each tile: c folded with the totals of the tiles before it
        carry = [f"c{b}"]
        for j in range(1, u):
            q = tiles[0][-1] if j == 1 else f"OP(q{b}_{j - 1}, {tiles[j - 1][-1]})"
            lines.append(f"{pad}q{b}_{j} = {q}")
            lines.append(f"{pad}c{b}_{j} = OP(c{b}, q{b}_{j})")
            carry.append(f"c{b}_{j}")
        for j in range(u):
            names = tiles[j]
            for k in range(v):
                at = names[k - 1] if excl and k else ("Z" if excl else names[k])
                place, value = f"row, i{b} + {j * v + k}", f"OP({carry[j]}, {at})"
                if nt:
                    lines.append(f"{pad}K.store_nontemporal(out, ({place}), {value})")
                else:
                    lines.append(f"{pad}out[{place}] = {value}")
        total = tiles[0][-1] if u == 1 else f"OP(q{b}_{u - 1}, {tiles[u - 1][-1]})"
        lines += [f"{pad}c{b} = OP(c{b}, {total})", f"{pad}i{b} += {u * v}"]
    return lines


@functools.cache  # (the sources depend on these settings alone, not on the shape)
def _vec_source(v: int, excl: bool, u: int, streams: int = 1, nt: bool = False) -> str:
    """The vec scheme's kernel for tiles of v elements (a power of two), u tiles a step,
    inclusive or exclusive (out[i] the fold of the elements before i; the first, pre's
    identity). Each work-item scans `streams` consecutive blocks (_vec_blocks). Blocks past
    the row's end are empty."""
    m = "0x7FFFFFFFFFFFFFFF"
    lines = [
        "def _scan_vec(item, x, out, pre, n, B, TB, Z):",
        "    row = item.get_global_id(0)",
        f"    w = item.get_global_id(1) * {streams}",
        f"    nn = n & {m}",
        f"    BB = B & {m}",
    ]
    for b in range(streams):
        lines += [
            f"    i{b} = min(nn, (w + {b}) * BB)",
            f"    e{b} = min(nn, i{b} + BB)",
            f"    c{b} = pre[row, min(w + {b}, TB - 1)]",
        ]
    return "\n".join(lines + _vec_blocks(v, excl, u, streams, "    ", nt)) + "\n"


def _vec_blocks(v: int, excl: bool, u: int, streams: int, pad: str, nt: bool) -> list[str]:
    """Scans blocks 0..streams-1 (block b from i{b} to e{b}, its carry in c{b}): a step of
    each in turn while all have one (several read and write streams a core: more misses in
    flight), then what each has left on its own, tiles first, then element by element."""
    lines = []
    step = u * v
    inner = pad + "    "
    if streams > 1:  # the last block is the shortest: the others have a step where it has
        lines.append(f"{pad}while i{streams - 1} + {step} <= e{streams - 1}:")
        lines += _vec_step(v, excl, u, range(streams), inner, nt)
    for b in range(streams):
        lines.append(f"{pad}while i{b} + {step} <= e{b}:")
        lines += _vec_step(v, excl, u, [b], inner, nt)
        lines.append(f"{pad}while i{b} < e{b}:")
        if excl:
            lines += [f"{inner}out[row, i{b}] = c{b}", f"{inner}c{b} = OP(c{b}, x[row, i{b}])"]
        else:
            lines += [f"{inner}c{b} = OP(c{b}, x[row, i{b}])", f"{inner}out[row, i{b}] = c{b}"]
        lines.append(f"{inner}i{b} += 1")
    return lines


@functools.cache
def _fold_blocks_source(u: int, streams: int) -> str:
    """The vec scheme's first pass when a work-item scans several blocks: it folds the same
    `streams` blocks (_fold_blocks) and writes each block's total (blocks past the row's end
    have none)."""
    m = "0x7FFFFFFFFFFFFFFF"
    lines = [
        "def _fold_blocks(item, x, sums, n, B, TB, Z):",
        "    row = item.get_global_id(0)",
        f"    w = item.get_global_id(1) * {streams}",
        f"    nn = n & {m}",
        f"    BB = B & {m}",
    ]
    for b in range(streams):
        lines += [f"    i{b} = min(nn, (w + {b}) * BB)", f"    e{b} = min(nn, i{b} + BB)"]
    lines += _fold_blocks(u, streams, "    ")
    for b in range(streams):
        lines += [f"    if w + {b} < TB:", f"        sums[row, w + {b}] = acc{b}"]
    return "\n".join(lines) + "\n"


def _fold_blocks(u: int, streams: int, pad: str) -> list[str]:
    """Folds blocks 0..streams-1 (block b from i{b} to e{b}, leaving i{b} alone) into acc{b},
    u accumulators each (from Z, the exact identity), a step of each in turn while all have
    one."""
    inner = pad + "    "
    lines = []
    for b in range(streams):
        lines.append(f"{pad}j{b} = i{b}")
        lines += [f"{pad}a{b}_{k} = Z" for k in range(u)]

    def step(blocks):
        out = []
        for b in blocks:
            out += [f"{inner}a{b}_{k} = OP(a{b}_{k}, x[row, j{b} + {k}])" for k in range(u)]
            out.append(f"{inner}j{b} += {u}")
        return out

    lines.append(f"{pad}while j{streams - 1} + {u} <= e{streams - 1}:")
    lines += step(range(streams))
    for b in range(streams):
        lines.append(f"{pad}while j{b} + {u} <= e{b}:")
        lines += step([b])
        names = [f"a{b}_{k}" for k in range(u)]
        while len(names) > 1:  # the upper half into the lower, as the vector's halves
            h = len(names) // 2
            names = [f"OP({names[k]}, {names[k + h]})" for k in range(h)]
        lines += [
            f"{pad}acc{b} = {names[0]}",
            f"{pad}while j{b} < e{b}:",
            f"{inner}acc{b} = OP(acc{b}, x[row, j{b}])",
            f"{inner}j{b} += 1",
        ]
    return lines


@functools.cache
def _chain_source(v: int, excl: bool, u: int, streams: int, nt: bool = False) -> str:
    """The chain scheme's kernel (one launch): each work-item takes chunks by ticket (st[TOT],
    int32), folds its chunk's `streams` blocks (v accumulators each: one vector), publishes
    its total and finds its carry (_chain_carry), then scans its blocks (_vec_blocks, u tiles
    of v a step) from that carry, while the chunk is still in its core's cache."""
    m = "0x7FFFFFFFFFFFFFFF"
    p = " " * 8
    ticket = "np.int64(K.AtomicRef(st, TOT).fetch_add(np.int32(1)))"
    lines = [
        "def _scan_chain(item, x, out, st, agg, inc, n, C, TC, TOT, Z, pre0):",
        f"    nn = n & {m}",
        f"    CC = C & {m}",
        f"    BB = CC // {streams}",
        f"    t = {ticket}",
        "    while t < TOT:",
        f"{p}row = t // TC",
        f"{p}ch = t - row * TC",
    ]
    for b in range(streams):  # (masked: the vectoriser needs places it knows are >= 0)
        lines += [f"{p}i{b} = min(nn, (ch * CC + {b} * BB) & {m})", f"{p}e{b} = min(nn, i{b} + BB)"]
    lines += _fold_blocks(v, streams, p)
    lines += _chain_carry(streams, p)
    lines += _vec_blocks(v, excl, u, streams, p, nt)
    lines.append(f"{p}t = {ticket}")
    return "\n".join(lines) + "\n"


def _chain_carry(streams: int, p: str) -> list[str]:
    """Chunk t (place ch in its row), its blocks' totals in acc{b}: publishes its total
    (agg[t], then st[t] = 1; a row's first chunk as its inclusive value: inc[t], st[t] = 2)
    and sets its blocks' carries c{b}. A row's first chunk starts from pre0 (the scan's
    identity); any other looks back over the chunks before it in its row for the fold of all
    before it (adding totals until a chunk with an inclusive value, waiting while a chunk has
    published nothing) and publishes its own inclusive value (inc[t], st[t] = 2)."""
    rel = "memory_order=K.MemoryOrder.RELEASE"
    acq = "memory_order=K.MemoryOrder.ACQUIRE"
    tot = "acc0"
    for b in range(1, streams):
        tot = f"OP({tot}, acc{b})"
    lines = [
        f"{p}if ch == 0:",
        f"{p}    inc[t] = {tot}",
        f"{p}    K.AtomicRef(st, t, {rel}).store(np.int32(2))",
        f"{p}else:",
        f"{p}    agg[t] = {tot}",
        f"{p}    K.AtomicRef(st, t, {rel}).store(np.int32(1))",
        f"{p}c0 = pre0",
        f"{p}if ch != 0:",
        f"{p}    P = Z",
        f"{p}    j = t - 1",
        f"{p}    f = np.int32(1)",
        f"{p}    while f == 1:",
        f"{p}        f = K.AtomicRef(st, j, {acq}).load()",
        f"{p}        while f == 0:",
        f"{p}            f = K.AtomicRef(st, j, {acq}).load()",
        f"{p}        if f == 2:",
        f"{p}            P = OP(inc[j], P)",
        f"{p}        else:",
        f"{p}            P = OP(agg[j], P)",
        f"{p}            j -= 1",
        f"{p}    inc[t] = OP(P, {tot})",
        f"{p}    K.AtomicRef(st, t, {rel}).store(np.int32(2))",
        f"{p}    c0 = P",
    ]
    for b in range(1, streams):
        lines.append(f"{p}c{b} = OP(c{b - 1}, acc{b - 1})")
    return lines


_CLEAR_SRC = """
def _scan_clear(item, st):
    st[item.get_id(0)] = np.int32(0)
"""


def _scan_chain(x2: Array, out: Array, fn, key, excl: bool, ident) -> None:
    from .._kernel.ranges import NdRange, Range
    from .replay import launch as call_kernel  # recorded while a plan is traced

    rows, n = x2.shape
    dt = x2.dtype
    v = _vec_lanes(dt)
    S = SCAN_VEC_STREAMS
    step = S * SCAN_VEC_TILES * v  # a chunk is whole steps of every block
    cores = max(1, x2.device.max_compute_units)
    C = min(SCAN_CHAIN_BYTES // dt.itemsize, -(-n // (4 * cores)))
    C = max(step, -(-C // step) * step)
    TC = -(-n // C)
    tot = rows * TC
    if tot >= (1 << 31) - cores:  # (int32 tickets)
        _scan_vec(x2, out, fn, key, excl, ident)
        return
    q, ut = x2.sycl_queue, x2.usm_type
    st = Array._allocate((tot + 1,), np.dtype(np.int32), q, ut)
    agg = Array._allocate((tot,), dt, q, ut)
    inc = Array._allocate((tot,), dt, q, ut)
    env = {"OP": fn}
    nt = _streaming(out.size * dt.itemsize, cores)
    src = _chain_source(v, excl, SCAN_VEC_TILES, S, nt)
    kc = kernel_of(src, "_scan_chain", env, key)
    call_kernel(kernel_of(_CLEAR_SRC, "_scan_clear", {}), Range(tot + 1), st)
    z = _lane_identity(key, dt)
    call_kernel(
        kc, NdRange(min(cores, tot), 1), x2, out, st, agg, inc, np.int64(n), np.int64(C),
        np.int64(TC), np.int64(tot), z, dt.type(ident),
    )  # fmt: skip


def _scan_vec(x2: Array, out: Array, fn, key, excl: bool, ident) -> None:
    from .replay import launch as call_kernel  # recorded while a plan is traced

    rows, n = x2.shape
    dt = x2.dtype
    v = _vec_lanes(dt)
    _, B = cpu_blocks(x2, n, 4096)
    B = -(-B // v) * v  # whole tiles: each block starts where a tile would
    T = -(-n // B)
    q, ut = x2.sycl_queue, x2.usm_type
    env = {"OP": fn}
    sums = Array._allocate((rows, T), dt, q, ut)
    pre = Array._allocate((rows, T), dt, q, ut)
    S = SCAN_VEC_STREAMS
    z = _lane_identity(key, dt)
    kf = kernel_of(_fold_blocks_source(wide_unroll(key, dt), S), "_fold_blocks", env, key)
    fold_args = (np.int64(n), np.int64(B), np.int64(T), z)
    nt = _streaming(out.size * dt.itemsize, max(1, x2.device.max_compute_units))
    kv = kernel_of(_vec_source(v, excl, SCAN_VEC_TILES, S, nt), "_scan_vec", env, key)
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        call_kernel(kf, cpu_range(r1 - r0, -(-T // S)), x2[r0:r1], sums[r0:r1], *fold_args)
    _scan_rows(sums, pre, fn, key, True, ident)
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        call_kernel(
            kv, cpu_range(r1 - r0, -(-T // S)), x2[r0:r1], out[r0:r1], pre[r0:r1], np.int64(n),
            np.int64(B), np.int64(T), z,
        )  # fmt: skip


_CPU_SCANS = {"chain": _scan_chain, "vec": _scan_vec}
SCAN = None  # "subgroup" (GPUs), "group" or "serial" (kapi's CPU device); None: by device


def _scan_serial(x2: Array, out: Array, fn, key, excl: bool, ident) -> None:
    rows, n = x2.shape
    if isinstance(key, str) and named_identity(key, x2.dtype) is not None and n >= 4096:
        _CPU_SCANS[SCAN_CPU](x2, out, fn, key, excl, ident)
        return
    _scan_serial_inorder(x2, out, fn, key, excl, ident)


def _scan_serial_inorder(x2: Array, out: Array, fn, key, excl: bool, ident) -> None:
    from .._kernel.ranges import Range
    from .replay import launch as call_kernel  # recorded while a plan is traced

    rows, n = x2.shape
    T = min(256, max(1, n // 4096))
    B = -(-n // T)
    T = -(-n // B)  # every block has at least one element
    q, ut = x2.sycl_queue, x2.usm_type
    env = {"OP": fn}
    pre = Array._allocate((rows, T), x2.dtype, q, ut)
    if T > 1:
        sums = Array._allocate((rows, T), x2.dtype, q, ut)
        ks = kernel_of(_SCAN_SERIAL_SUMS_SRC, "_scan_serial_sums", env, key)
        for r0 in range(0, rows, _MAX_ROWS):
            r1 = min(rows, r0 + _MAX_ROWS)
            call_kernel(ks, Range(r1 - r0, T), x2[r0:r1], sums[r0:r1], np.int64(n), np.int64(B))
        _scan_rows(sums, pre, fn, key, False, ident)
    ka = kernel_of(_SCAN_SERIAL_APPLY_SRC, "_scan_serial_apply", env, key)
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        call_kernel(
            ka, Range(r1 - r0, T), x2[r0:r1], out[r0:r1], pre[r0:r1], np.int64(n), np.int64(B),
            x2.dtype.type(ident), np.int32(excl),
        )  # fmt: skip


def _scan_kind(dev) -> str:
    sizes = dev.sub_group_sizes or [1]
    if max(sizes) > 1 and all(WG % s == 0 for s in sizes):
        return "subgroup"
    return "serial" if dev.device_type == "cpu" else "group"


def _scan_rows(x2: Array, out: Array, fn, key, excl: bool, ident, events=None) -> None:
    """Scans each row of x2 (rows, n) into out (rows, n), inclusively or exclusively. With
    events (a list; not on kapi's CPU device's serial scan), the launches do not wait: their
    Events go into the list (the caller waits, after later launches on the same in-order
    queue)."""
    kind = SCAN or _scan_kind(x2.device)
    if kind == "serial":
        _scan_serial(x2, out, fn, key, excl, ident)
        return
    from kapi_lang import kernel_api as K

    from .._kernel.ranges import NdRange
    from .replay import launch  # recorded while a plan is traced

    def call_kernel(kern, nd, *args):
        launch(kern, nd, *args, events=events)

    rows, n = x2.shape
    runs = kind == "subgroup"
    per = WG * SCAN_ITEMS if runs else WG  # elements per chunk
    groups = _groups_for(x2, n)
    if runs:  # GPUs: as many segments as a reduction's groups (more loads in flight)
        cap = min(SCAN_GROUPS, 32 * max(1, x2.device.max_compute_units))
        groups = max(1, min(cap, -(-n // (WG * _PER_ITEM))))
    seg = -(-n // groups)
    seg = -(-seg // per) * per  # whole chunks
    groups = -(-n // seg)  # every group has at least one element
    slm = K.LocalAccessor(WG, x2.dtype)
    q, ut = x2.sycl_queue, x2.usm_type
    env = {"OP": fn}
    chunk = (_CHUNK_SUBGROUP if runs else _CHUNK_GROUP).strip("\n")
    extra = ()
    sums_extra = ()
    if runs:
        stage, pf = _stage_runs(), _prefetch(" " * 4, "c")
        sums_src = _SCAN_SUMS_B_SRC.replace("STAGE", stage).replace("CHUNK", chunk)
        apply_src = _SCAN_APPLY_B_SRC.replace("STAGE", stage).replace("CHUNK", chunk)
        sums_src = sums_src.replace("PREFETCH", pf).replace("SCAN_ITEMS", str(SCAN_ITEMS))
        apply_src = apply_src.replace("PREFETCH", pf).replace("SCAN_ITEMS", str(SCAN_ITEMS))
        names = ("_scan_sums_b", "_scan_apply_b")
        stg = K.LocalAccessor(per + per // 32, x2.dtype)
        sums_extra = (stg,)
        ident_r = named_identity(key, x2.dtype) if isinstance(key, str) else None
        if SCAN_SUMS == "reduce" and ident_r is not None:  # a named (commutative) operation
            sums_src, names = _SCAN_SUMS_R_SRC, ("_scan_sums_r", names[1])
            sums_extra = (x2.dtype.type(ident_r),)
    else:
        sums_src = _SCAN_SUMS_SRC.replace("CHUNK", chunk)
        apply_src = _SCAN_APPLY_SRC.replace("CHUNK", chunk)
        names = ("_scan_sums", "_scan_apply")
    if groups > 1:
        sums = Array._allocate((rows, groups), x2.dtype, q, ut)
        pre = Array._allocate((rows, groups), x2.dtype, q, ut)
        ks = kernel_of(sums_src, names[0], env, key)
    else:
        pre = Array._allocate((rows, 1), x2.dtype, q, ut)  # not read: group 0 has no carry
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        nd = NdRange((r1 - r0, groups * WG), (1, WG))
        if groups > 1:
            call_kernel(
                ks, nd, x2[r0:r1], sums[r0:r1], np.int64(n), np.int64(seg), slm, *sums_extra
            )
    if groups > 1:
        _scan_rows(sums, pre, fn, key, False, ident, events)
    ka = kernel_of(apply_src, names[1], env, key)
    if runs:
        extra = (stg,)
    for r0 in range(0, rows, _MAX_ROWS):
        r1 = min(rows, r0 + _MAX_ROWS)
        nd = NdRange((r1 - r0, groups * WG), (1, WG))
        call_kernel(
            ka,
            nd,
            x2[r0:r1],
            out[r0:r1],
            pre[r0:r1],
            np.int64(n),
            np.int64(seg),
            slm,
            x2.dtype.type(ident),
            np.int32(excl),
            *extra,
        )


def scan(a, op="add", axis=None, inclusive=True, identity=None, dtype=None):
    """Prefix scan of a with the binary operation op along axis (None: the flattened
    array, as np.cumsum), on a's device.

    Inclusive: out[i] = a[0] op ... op a[i]; exclusive: out[0] = identity,
    out[i] = a[0] op ... op a[i-1] (the named operations know their identity; a device
    function needs identity= for an exclusive scan). op needs to be associative (the order of
    operands is kept). dtype as for kapi.reduce (cumsum's dtype for "add"/"mul").
    """
    if (
        type(a) is Array
        and a._shape
        and a.size
        and identity is None
        and (axis is None or type(axis) is int)
        and (dtype is None or isinstance(dtype, (np.dtype, type)))
        and type(inclusive) is bool
    ):
        # the host path once per key; later calls replay its launches (kapi/_numeric/replay.py)
        key = ("scan", op, a._shape, a._strides, a._dtype, axis, inclusive, dtype, a._queue)
        key += (a._usm_type, SCAN, SCAN_SUMS, SCAN_GROUPS, SCAN_ITEMS)
        return _replay.call(key, _PLANS, a, _scan, a, op, axis, inclusive, None, dtype)
    return _scan(a, op, axis, inclusive, identity, dtype)


def _scan(a, op, axis, inclusive, identity, dtype):
    name, fn = resolve_op(op, "kapi.scan")
    check_array(a, "kapi.scan")
    dt = _result_dtype(name, a.dtype, dtype)
    if identity is None:
        identity = named_identity(name, dt)
    if not inclusive and identity is None:
        raise ValueError("kapi.scan: an exclusive scan with this op needs identity=...")
    x = _as_uint8(a if a.dtype == dt else a.astype(dt))
    if a.ndim == 0 and axis is None:
        x = x.reshape(1)
    x2, moved, ax = rows_view(x, axis)
    out = Array._allocate(x2.shape, x2.dtype, a.sycl_queue, a.usm_type)
    if out.size:
        key = op if name is None else name
        _scan_rows(x2, out, fn, key, not inclusive, identity if identity is not None else 0)
    r = from_rows(out, moved, ax, max(1, x.ndim) if axis is not None else 1)
    return r.astype(dt) if dt == np.bool_ else r


def cumsum(a, axis=None, dtype=None, out=None):
    """np.cumsum on a's device: axis=None scans the flattened array; small integers and
    bools sum in int64 (uint64 for unsigned), as NumPy."""
    r = scan(a, "add", axis=axis, dtype=dtype)
    return _into(r, out, "cumsum")


def cumprod(a, axis=None, dtype=None, out=None):
    """np.cumprod on a's device (NumPy's axis and dtype rules)."""
    r = scan(a, "mul", axis=axis, dtype=dtype)
    return _into(r, out, "cumprod")


def _into(r: Array, out, what: str) -> Array:
    if out is None:
        return r
    if not isinstance(out, Array) or out.shape != r.shape:
        raise ValueError(f"{what}: out must be a kapi array of shape {r.shape}")
    out[...] = r if out.dtype == r.dtype else r.astype(out.dtype)
    return out
