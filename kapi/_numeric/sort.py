"""kapi.sort, kapi.argsort, kapi.topk and kapi.unique: an LSD radix sort generated as kapi
kernels on the array's device.

Keys are the array's bits seen as unsigned integers of its width, made order-preserving
first (`_keys_in`): signed integers flip the sign bit; floats flip every bit of negatives and
the sign bit of positives, and every NaN becomes the largest key (NaNs last, as NumPy);
argsort also maps -0.0 to +0.0 so that equal values keep their order. A descending sort
complements the keys. Each pass sorts by 8 bits, stably:

1. `_hist`: each work-group counts the digits of its tile (local-memory atomics, four
   loads in flight per work-item) into a digit-major table hist[digit * G + group];
2. an exclusive scan of that table (kapi.scan's kernels) gives, for every (digit, group), the
   place of its first element in the output;
3. the scatter: each group walks its tile in chunks, ranks each chunk's elements stably by
   digit and writes each element at its digit's running offset plus its rank among the
   chunk's elements of that digit. On GPUs ("ballot", `_rank_scatter`) a chunk is
   WG * RANK_ITEMS keys held in registers; each sub-group ranks its keys with ballots
   (sub-group sums of one bit per lane), counts per sub-group and digit in local memory, and
   the chunk, placed in local memory sorted by digit, is written out in that order (runs of
   equal digits are written by consecutive work-items). Otherwise (`_scatter`) a chunk of
   WG * ITEMS is sorted by four stable 2-bit splits, each a work-group scan of counters
   packed 16 bits apiece into a uint64, by sub-group shuffles ("shuffle") or work-group
   collectives ("group").

GPUs sort keys with values (argsort, topk, 2-D sorts) by the "onesweep" kind instead
(Adinets & Merrill 2022, CUB's onesweep): `_keys_in` also counts the digits of every byte
position while it makes the keys (local counts, then global atomics into a [positions, 256]
table) and `_dscan` scans each row once: no `_hist` or scan per pass. Each pass is then one
kernel (`_onesweep`): work-groups take tiles by a ticket counter, rank their tile's keys by
ballots as above, publish each digit's tile count in a status word (flag and 30-bit count)
and look back over the earlier tiles' words (decoupled look-back) for the digit's place,
then write the tile sorted by digit. Keys and values are read and written once per pass.
Up to 2^30 elements (the counts' 30 bits); larger sorts use the "ballot" passes.

On kapi's CPU device a pass is instead a stable counting sort per contiguous block, one
block per work-item (`_hist_serial`, the table's scan, `_scatter_serial`): no barriers, which
the CPU runs best. Passes over digits in which no two keys differ are skipped (the OR and
AND of all keys tell which bits vary), so small integer ranges cost fewer passes. 2-D arrays
sort along the last axis by sorting everything by value, then stably by row.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from .._memory.array import Array
from . import primitives as P

WG = 256  # work-items per group: one per digit value
ITEMS = 4  # elements per work-item in a scatter chunk ("group": the split scans)
# Keys per work-item in a "ballot" chunk (half with argsort's values); KAPI_SORT_KEYS_PER_ITEM
# overrides it (to compare: 4, 8 or 16). 16 on the H100 (bench/RESULTS.md, issue 13): sort
# 9.7 ms against 11.3 with 8, argsort 18.8 against 26.8 (longer runs per digit per chunk).
RANK_ITEMS = 16
# The ballot scatter's register cap per work-item on GPUs that have one (@kapi.kernel's
# max_registers; None: the back end's choice); KAPI_SORT_MAXREG overrides it (0: none).
RANK_MAX_REGISTERS = None
# Whether the ballot scatter prefetches the next chunk's keys (KAPI_SORT_PREFETCH overrides).
RANK_PREFETCH = True
RADIX = 256
_MAX_GROUPS_PER_CU = 32
_MAX_GROUPS = 4096  # (a CUDA device reports its SMs' warp slots as compute units)
_MIN_CHUNKS = 4
# How a pass scatters: "ballot" (GPUs: chunk ranks by sub-group ballots), "onesweep" (GPUs:
# one kernel per pass, tiles by ticket, decoupled look-back), "shuffle" (chunk split scans by
# sub-group shuffles), "group" (by work-group collectives), "serial" (kapi's CPU device);
# None: KAPI_SORT_SCATTER if set, else by device. Tests force each.
SCATTER = None
KINDS = ("ballot", "onesweep", "shuffle", "group", "serial")
# GPUs by default: "onesweep" when values travel with the keys (argsort, topk, 2-D sorts),
# "ballot" for keys alone. H100, 2^27 uint32 (bench/RESULTS.md, issue 13, onesweep): argsort
# 10.9-11.1 ms against 17.3 with ballot, sort 8.4-8.7 against 7.5.
ONESWEEP_WITH_VALUES = True

# GPUs: the keys of x (into k, with WRITE; the indices into v, with WITHV) and which of their
# bits vary: the work-items stride over x, OR the keys they visit and their complements, and
# each group reduces both before one work-item ORs them into vo[0] and vo[1] (a bit varies
# where some key has it set and some clear: vo[0] & vo[1]). One pass over x, where separate OR
# and AND reductions of k read the keys twice more. kapi's CPU device runs the same body as a
# plain work-item loop (`_keys_map`, which its driver vectorises) and kapi.reduce's OR and AND.
_KEYS_IN_SRC = """
def _keys_in(it, x, k, v, vo, n, mode, canon0, desc, SIGN, ABSM, INF, ALL, WRITE, WITHVHARGS):
    g = it.get_group()
    i = it.get_global_id(0)
    T = it.get_global_range(0)
    ones = np.uint64(0)
    zeros = np.uint64(0)
HINIT
    while i < n:
KEYBODY
        i += T
HFLUSH
    ones = K.reduce_over_group(g, ones, K.GroupOp.OR)
    zeros = K.reduce_over_group(g, zeros, K.GroupOp.OR)
    if it.get_local_linear_id() == 0:
        K.AtomicRef(vo, 0).fetch_or(ones)
        K.AtomicRef(vo, 1).fetch_or(zeros)
"""

_KEYS_MAP_SRC = """
def _keys_map(it, x, k, v, vo, n, mode, canon0, desc, SIGN, ABSM, INF, ALL, WRITE, WITHV):
    i = it.get_id(0)
KEYBODY
"""

_KEY_BODY = """
        b = x[i]
        z = b ^ b
        if mode == 1:
            b = b ^ SIGN
        elif mode == 2:
            if (b & ABSM) > INF:
                b = ALL
            else:
                if canon0 != 0 and (b & ABSM) == z:
                    b = z
                if (b & SIGN) != z:
                    b = b ^ ALL
                else:
                    b = b | SIGN
        if desc != 0:
            b = b ^ ALL
        if WRITE != 0:
            k[i] = b
        if WITHV != 0:
            v[i] = i
        ones = ones | np.uint64(b)
        zeros = zeros | np.uint64(b ^ ALL)
HBODY
"""
_KEY_BODY_MAP = _KEY_BODY.split("        ones = ones")[0].replace("\n        ", "\n    ")

_KEYS_OUT_SRC = """
def _keys_out(item, k, x, mode, desc, SIGN, ALL):
    i = item.get_id(0)
    b = k[i]
    z = b ^ b
    if desc != 0:
        b = b ^ ALL
    if mode == 1:
        b = b ^ SIGN
    elif mode == 2:
        if (b & SIGN) != z:
            b = b ^ SIGN
        else:
            b = b ^ ALL
    x[i] = b
"""

_HIST_SRC = """
def _hist(it, k, hist, n, tile, G, shift, MASK, cnt):
    g = it.get_group()
    lid = it.get_local_id(0)
    L = it.get_local_range(0)
    gid = g.get_group_id(0)
    cnt[lid] = np.uint32(0)
    K.group_barrier(g)
    i = gid * tile + lid
    end = min(n, gid * tile + tile)
    one = np.uint32(1)
    d = K.PrivateArray(4, np.int32)
    while i < end:
        for j in range(UNROLL):
            q = i + j * L
            d[j] = np.int32(-1)
            if q < end:
                d[j] = np.int32((k[q] >> shift) & MASK)
        for j in range(UNROLL):
            if d[j] >= 0:
                K.AtomicRef(cnt, d[j], memory_scope=K.MemoryScope.WORK_GROUP).fetch_add(one)
        i += L * 4
    K.group_barrier(g)
    hist[lid * G + gid] = np.int64(cnt[lid])
"""

# ITEMS is 4: the private arrays' literal shapes below say so.
_SCATTER_SRC = """
def _scatter(it, k, v, k2, v2, offs, n, tile, G, shift, MASK, run, first, sd, si, kl, vl, wt):
    g = it.get_group()
    lid = it.get_local_id(0)
    L = it.get_local_range(0)
    gid = g.get_group_id(0)
    C = L * 4
    run[lid] = offs[lid * G + gid]
    d = K.PrivateArray(4, np.int32)
    o = K.PrivateArray(4, np.int32)
    pe = K.PrivateArray(4, np.uint64)
    M16 = np.uint64(0xFFFF)
    c = gid * tile
    end = min(n, c + tile)
    while c < end:
        cnt = min(C, end - c)
        K.group_barrier(g)
        for e in range(4):
            p = lid * 4 + e
            if p < cnt:
                kk = k[c + p]
                kl[p] = kk
                VLOAD
                d[e] = np.int32((kk >> shift) & MASK)
            else:
                d[e] = np.int32(255)
            o[e] = np.int32(p)
        sh = 0
        while sh < 8:
            acc = np.uint64(0)
            for e in range(4):
                pe[e] = acc
                acc += np.uint64(1) << np.uint64(16 * ((d[e] >> sh) & 3))
SPLITSCAN
            for e in range(4):
                b2 = (d[e] >> sh) & 3
                pos = np.int64(((pre + pe[e]) >> np.uint64(16 * b2)) & M16)
                q = 0
                while q < b2:
                    pos += np.int64((tot >> np.uint64(16 * q)) & M16)
                    q += 1
                sd[pos] = d[e]
                si[pos] = o[e]
            K.group_barrier(g)
            for e in range(4):
                d[e] = sd[lid * 4 + e]
                o[e] = si[lid * 4 + e]
            sh += 2
        for e in range(4):
            p = lid * 4 + e
            if p == 0 or sd[p - 1] != d[e]:
                first[d[e]] = np.int32(p)
        K.group_barrier(g)
        for e in range(4):
            if o[e] < cnt:
                dst = run[d[e]] + (lid * 4 + e - first[d[e]])
                k2[dst] = kl[o[e]]
                VSTORE
        K.group_barrier(g)
        for e in range(4):
            p = lid * 4 + e
            if p == C - 1 or sd[p + 1] != d[e]:
                run[d[e]] += p - first[d[e]] + 1
        c += C
"""

# The work-group scan of the packed counters: "group" by the work-group collectives; "shuffle"
# (sub-groups of more than one work-item) by a scan per sub-group (shuffles) and one barrier
# to share the sub-groups' totals (wt).
_SPLIT_GROUP = """
            pre = K.exclusive_scan_over_group(g, acc, K.GroupOp.ADD)
            tot = K.reduce_over_group(g, acc, K.GroupOp.ADD)
            K.group_barrier(g)
"""
_SPLIT_SUBGROUP = """
            sg = it.get_sub_group()
            sgid = sg.get_group_linear_id()
            pre = K.exclusive_scan_over_group(sg, acc, K.GroupOp.ADD)
            if sg.get_local_linear_id() == sg.get_local_linear_range() - 1:
                wt[sgid] = pre + acc
            K.group_barrier(g)
            tot = np.uint64(0)
            w = 0
            while w < sg.get_group_linear_range():
                t = wt[w]
                if w < sgid:
                    pre += t
                tot += t
                w += 1
"""

# The "ballot" scatter (GPUs): each sub-group ranks its keys by digit with ballots (a
# sub-group sum of one bit per lane is a 32-bit mask: one redux.sync on NVIDIA GPUs), so a
# chunk of WG * ITEMS keys needs no per-bit splits. Sub-group w owns chunk positions
# [w * S * ITEMS, (w + 1) * S * ITEMS) in batches of S consecutive keys (coalesced loads,
# keys kept in registers, all of a work-item's loads issued before the first ballot: a
# sub-group barrier between batches keeps later loads from being moved up, so one load per
# batch waited out its memory latency ITEMS times per chunk); within a batch the lanes of
# equal digit (the AND of eight ballots, each kept or complemented by the lane's bit) rank by
# the popcount of the lanes below (kernel_api.popcount: one popc.b32 on NVIDIA GPUs, where a
# software count took about 20 64-bit instructions per batch), and the batch's highest such
# lane bumps the sub-group's
# count of that digit in local memory (wh). Every lane of the sub-group reaches every ballot
# and sub-group barrier: nothing before them branches per lane (a lane past the chunk's end
# loads nothing, ranks whatever key it holds and is left out of the masks, m starting as the
# batch's lanes inside the chunk), as warp-synchronous instructions require (a test checks
# the PTX). The masks are 32 bits: sub-groups of at most 32 work-items, all full
# (_scatter_kind). After one barrier, work-item d turns the counts of digit d into offsets
# over the sub-groups and the chunk's digits are scanned; each key is then placed in local
# memory sorted by digit (stably: sub-groups, batches and lanes are in index order), and
# written out in index order of that sorted chunk, so consecutive work-items write
# consecutive addresses within each digit's run.
# Registers (128 per work-item with 8 keys before; 69 now, 80 with the prefetch): the group
# and sub-group sizes are constants where the device has one sub-group size (S = 32 on
# NVIDIA GPUs), so a batch's keys are at constant offsets from one index that pyfront knows
# is >= 0 (no negative-index wraparound), where LLVM kept one 64-bit place per batch; and a
# key's rank and digit are packed into one int32 passed through a sub-group permute by 0
# (itself), which LLVM cannot see through, so it cannot sink the rank's popcount past the
# barriers and keep its inputs (mask, count, digit and address, 7 registers per key) alive.
_RANK_SRC = """
def _rank_scatter(it, k, v, k2, v2, offs, n, tile, G, shift, MASK, run, wh, kl, vl, ds, dc, wt,
                  mk):
    g = it.get_group()
    lid = it.get_local_id(0)
    L = WGSIZE
    gid = g.get_group_id(0)
    sg = it.get_sub_group()
    lane = sg.get_local_linear_id()
    S = SGSIZE
    w = sg.get_group_linear_id()
    W = NSUB
    C = L * ITEMS
    R = 256 // L
    d0 = lid * R
    r = 0
    while r < R:
        run[d0 + r] = offs[(d0 + r) * G + gid]
        r += 1
    keys = K.PrivateArray(ITEMS, KDT)
    rank = K.PrivateArray(ITEMS, np.int32)
    VPRIV
    ul = np.uint32(lane)
    lb = np.uint32(np.uint32(1) << ul)  # this lane's bit in a ballot
    below = lb - np.uint32(1)
    wb = w * 256
    pw = w * S * ITEMS + lane  # this lane's first place in a chunk; its batch j: + j * S
    c = gid * (tile & np.int64(0x7FFFFFFFFFFFFFFF))  # known >= 0: no index wraparound
    end = min(n, c + tile)
PREFETCH0
    while c < end:
        cnt = min(C, end - c)
        rem = cnt - pw  # batch j's key of this lane is in the chunk if j * S < rem
        rl = cnt - lid  # the same for the writes: j * L < rl
        i = lane
        while i < 256:
            wh[wb + i] = np.int32(0)
            MKZERO
            i += S
        K.group_barrier(sg)
LOADKEYS
        for j in range(UNROLL):
            d = np.uint32((keys[j] >> shift) & MASK)
MATCH
            base = wh[wb + np.int64(d)]
            pr = np.int32(K.popcount(np.uint32(m & below)))  # lanes below with this digit
            K.group_barrier(sg)
            if (m >> ul) == np.uint32(1):  # the digit's highest lane: pr + 1 of them
                wh[wb + np.int64(d)] = base + pr + np.int32(1)
                MKRESET
            K.group_barrier(sg)
            rk = np.int32((base + pr) | (np.int32(d) << 16))
            rank[j] = K.permute_group_by_xor(sg, rk, 0)  # (see above)
        K.group_barrier(g)
        tot = np.int32(0)
        r = 0
        while r < R:
            s = np.int32(0)
            x = 0
            while x < W:
                t = wh[x * 256 + d0 + r]
                wh[x * 256 + d0 + r] = s
                s += t
                x += 1
            ds[d0 + r] = tot
            dc[d0 + r] = s
            tot += s
            r += 1
SCAN
        r = 0
        while r < R:
            ds[d0 + r] += pre
            r += 1
        r = 0
        while r < R:  # run[d] + q: where the sorted chunk's place q of digit d goes
            run[d0 + r] -= np.int64(ds[d0 + r])
            r += 1
        K.group_barrier(g)
        for j in range(UNROLL):
            if j * S < rem:
                pk = rank[j]
                d = np.int64(pk >> 16)
                q = ds[d] + wh[wb + d] + (pk & 0xFFFF)
                kl[q] = keys[j]
                VPLACE
        K.group_barrier(g)
        for j in range(UNROLL):
            if j * L < rl:
                q = lid + j * L
                kk = kl[q]
                d = np.int64((kk >> shift) & MASK)
                dst = run[d] + q
                k2[dst] = kk
                VSTORE
        K.group_barrier(g)
        r = 0
        while r < R:
            run[d0 + r] += np.int64(ds[d0 + r] + dc[d0 + r])
            r += 1
NEXTKEYS
        c += C
"""


# How a sub-group finds, for each lane's digit d, the mask m of its batch's lanes with digit d
# (KAPI_SORT_MATCH, RANK_MATCH): "ballot", eight ballots, one per bit of d, each kept or
# complemented by the lane's bit, ANDed together, starting from the lanes inside the chunk; or
# "atomic" (CUB's WARP_MATCH_ATOMIC_OR), each lane inside the chunk ORs its bit into the
# sub-group's word for d in local memory (mk: 256 per sub-group, zero between uses), a
# sub-group barrier, each lane reads its digit's word, and the digit's highest lane zeroes it
# once every lane has read it (after the next sub-group barrier): one shared-memory atomic and
# one load per key where the ballots take 8 redux.sync and about 40 other instructions.
_MATCH_BALLOT = """
            nb = min(max(rem + lane - j * S, 0), S)
            m = np.uint32((np.uint64(1) << np.uint64(nb)) - np.uint64(1))
            for b in range(8):
                set_ = np.uint32(np.uint32(0) - ((d >> np.uint32(b)) & np.uint32(1)))
                bal = np.uint32(K.reduce_over_group(sg, np.uint32(lb & set_), K.GroupOp.ADD))
                m = np.uint32(m & (bal ^ set_ ^ np.uint32(0xFFFFFFFF)))
"""
_MATCH_ATOMIC = """
            if j * S < rem:
                K.AtomicRef(mk, wb + np.int64(d), memory_scope=WGSCOPE).fetch_or(lb)
            K.group_barrier(sg)
            m = mk[wb + np.int64(d)]
"""
# "atomic" by default: H100, 2^27 uint32 (bench/RESULTS.md, issue 13, sixth session): sort
# (ballot kind) 6.81 ms against 7.72 with the ballots, argsort (onesweep) 11.50 against 11.77.
RANK_MATCH = "atomic"
MATCHES = ("ballot", "atomic")


def _rank_src() -> str:
    """`_rank_scatter`'s source with the digit matching that _rank_match chooses."""
    atomic = _rank_match() == "atomic"
    match = (_MATCH_ATOMIC if atomic else _MATCH_BALLOT).lstrip("\n")
    src = _RANK_SRC.replace("MATCH\n", match.replace("WGSCOPE", "K.MemoryScope.WORK_GROUP"))
    src = src.replace("MKZERO", "mk[wb + i] = np.uint32(0)" if atomic else "pass")
    return src.replace("MKRESET", "mk[wb + np.int64(d)] = np.uint32(0)" if atomic else "pass")


def _rank_match() -> str:
    """How the ranking matches digits: KAPI_SORT_MATCH (ballot or atomic), else RANK_MATCH."""
    v = os.environ.get("KAPI_SORT_MATCH") or RANK_MATCH
    if v not in MATCHES:
        raise ValueError(f"KAPI_SORT_MATCH must be ballot or atomic, not {v!r}")
    return v


# How _rank_scatter gets a chunk's keys: loaded at the chunk's start ("LOADKEYS"), or, with
# prefetching, the next chunk's loads issued at the start of this one into a second set of
# registers (nk) and moved into keys at its end, so their memory latency overlaps this
# chunk's ranking and writes rather than stalling the group (a group holds one chunk in
# flight otherwise: about 0.5 TB/s over the SMs' few resident groups).
def _chunk_loads(indent: str, c0: str, cw: str, rem: str, dest: str, vload: str) -> str:
    """The loop loading a chunk's keys (from c0) into dest, and values by vload."""
    lines = [
        f"{cw} = {c0} + pw",
        "for j in range(UNROLL):",
        f"    if j * S < {rem}:",
        f"        ql = {cw} + j * S",
        f"        {dest}[j] = k[ql]",
        f"        {vload}",
    ]
    return "\n" + "".join(f"{indent}{ln}\n" for ln in lines)


_RANK_LOAD = _chunk_loads(" " * 8, "c", "cw", "rem", "keys", "VLOAD")
_RANK_PREFETCH0 = (
    "\n    nk = K.PrivateArray(ITEMS, KDT)\n    VNPRIV\n    rem = min(C, end - c) - pw"
    + _chunk_loads(" " * 4, "c", "cw", "rem", "keys", "VLOAD")
)
_RANK_PREFETCH = "\n        cn = c + C\n        remn = min(C, end - cn) - pw" + _chunk_loads(
    " " * 8, "cn", "cwn", "remn", "nk", "VNLOAD"
)

_RANK_NEXT = """
        for j in range(UNROLL):
            keys[j] = nk[j]
            VNEXT
"""

# The exclusive scan over the work-group of each work-item's digit total (tot) for
# _rank_scatter: a sub-group scan, and one barrier to share the sub-groups' totals.
_RANK_SCAN = """
        pre = K.exclusive_scan_over_group(sg, tot, K.GroupOp.ADD)
        if lane == S - 1:
            wt[w] = pre + tot
        K.group_barrier(g)
        x = 0
        while x < w:
            pre += wt[x]
            x += 1
"""


# The "onesweep" kind (GPUs; Adinets & Merrill 2022, CUB's onesweep radix sort). `_keys_in`
# also counts every digit position of every key (the per-pass histograms, all from the one
# read of the keys it already makes): per-group counts in local memory (hl), added into the
# table gh[position * 256 + digit] with one global atomic per non-zero count; `_dscan` turns
# each position's row into where each digit starts in the output. Then one kernel per pass.
_HIST_INIT = """
    lid = it.get_local_id(0)
    L = it.get_local_range(0)
    one = np.uint32(1)
    q = lid
    while q < NPOS * 256:
        hl[q] = np.uint32(0)
        q += L
    K.group_barrier(g)
"""
_HIST_COUNT = (
    "        K.AtomicRef(hl, {p} * 256 + np.int64((b >> KDT({sh})) & KDT(255)), "
    "memory_scope=K.MemoryScope.WORK_GROUP).fetch_add(one)"
)
_HIST_FLUSH = """
    K.group_barrier(g)
    q = lid
    while q < NPOS * 256:
        c = hl[q]
        if c != np.uint32(0):
            K.AtomicRef(gh, q).fetch_add(np.int64(c))
        q += L
"""

_DSCAN_SRC = """
def _dscan(it, gh, dstart, NPOS):
    g = it.get_group()
    d = it.get_local_id(0)
    p = 0
    while p < NPOS:
        dstart[p * 256 + d] = K.exclusive_scan_over_group(g, gh[p * 256 + d], K.GroupOp.ADD)
        p += 1
"""

# Zeroes the first bank of status words and the tickets before a sort's first pass.
_OSCLEAR_SRC = """
def _osclear(item, st, tk, NTK):
    i = item.get_id(0)
    st[i] = np.uint32(0)
    if i < NTK:
        tk[i] = np.int32(0)
"""

# `_onesweep`, one launch per pass: each work-group takes the next tile number from a ticket
# counter (tk[position]), so tiles are taken in the order groups start and every earlier tile
# belongs to a group already running: waiting for it cannot deadlock. The group loads its
# tile of WG * ITEMS keys into registers and ranks them by ballots (`_rank_scatter`'s code),
# which gives its count of each digit (dc). Then for each digit d (work-item d of 256) it
# publishes the count in its status word st[bank, tile, d] (flag in bits 30-31: 0 not ready,
# 1 this tile's count, 2 the inclusive prefix over tiles 0..tile; count or prefix in bits
# 0-29, so n < 2^30), and looks back over tiles tile-1, tile-2, ..., adding counts until it
# meets an inclusive prefix (decoupled look-back), then publishes its own inclusive prefix.
# The digit's place in the output is dstart[position, d] + that exclusive prefix. The tile
# is then written out sorted by digit through local memory, as `_rank_scatter` writes a
# chunk. Status words alternate between two banks: each group zeroes its row of the other
# bank for the next pass (every tile is taken by exactly one group). The look-back's loads
# are atomic, so they are read again on each turn of the wait (not hoisted out of it).
_ONESWEEP_HEAD = """
def _onesweep(it, k, v, k2, v2, st, tk, dstart, n, T, dp, bank, shift, MASK,
              run, wh, kl, vl, ds, dc, wt, mk, tl):
    g = it.get_group()
    lid = it.get_local_id(0)
    L = WGSIZE
    sg = it.get_sub_group()
    lane = sg.get_local_linear_id()
    S = SGSIZE
    w = sg.get_group_linear_id()
    W = NSUB
    C = L * ITEMS
    R = 256 // L
    d0 = lid * R
    if lid == 0:
        tl[0] = np.int64(K.AtomicRef(tk, dp).fetch_add(np.int32(1)))
    K.group_barrier(g)
    tile = tl[0] & np.int64(0x7FFFFFFFFFFFFFFF)  # known >= 0: no index wraparound
    rows = T * 256
    mine = bank * rows + tile * 256
    other = (1 - bank) * rows + tile * 256
    r = 0
    while r < R:
        st[other + d0 + r] = np.uint32(0)
        r += 1
    keys = K.PrivateArray(ITEMS, KDT)
    rank = K.PrivateArray(ITEMS, np.int32)
    VPRIV
    ul = np.uint32(lane)
    lb = np.uint32(np.uint32(1) << ul)  # this lane's bit in a ballot
    below = lb - np.uint32(1)
    wb = w * 256
    pw = w * S * ITEMS + lane  # this lane's first place in the tile; its batch j: + j * S
    c = tile * C
    cnt = min(C, n - c)
"""

# The look-back of work-item d for digit d: LBW status words read at once (tiles j, j-1, ...,
# j-LBW+1: their loads in flight together), then added in tile order up to the first
# inclusive prefix; a word not ready yet restarts the window at its tile (spinning there).
_ONESWEEP_LOOKBACK = """
    r = 0
    while r < R:
        d = d0 + r
        cd = np.int64(dc[d])
        excl = np.int64(0)
        if tile == 0:
            K.AtomicRef(st, mine + d, ORDST).store(np.uint32(cd | INCL))
        else:
            K.AtomicRef(st, mine + d, ORDST).store(np.uint32(cd | AGG))
            j = tile - 1
            while j >= 0:
LBLOADS
                go = 1
                nj = j - LBW
LBSCAN
            K.AtomicRef(st, mine + d, ORDST).store(np.uint32((excl + cd) | INCL))
        run[d] = dstart[dp * 256 + d] + excl
        r += 1
"""
_LB_LOAD = """                s{i} = np.uint32(INCL)
                if j - {i} >= 0:
                    s{i} = K.AtomicRef(st, bank * rows + (j - {i}) * 256 + d, ORDLD).load()"""
_LB_SCAN = """                if go == 1:
                    f = np.int64(s{i} >> np.uint32(30))
                    if f == 0:
                        go = 0
                        nj = j - {i}
                    else:
                        excl += np.int64(s{i} & np.uint32(0x3FFFFFFF))
                        if f == 2:
                            go = 0
                            nj = -1"""
# KAPI_SORT_LOOKBACK: status words per look-back step (1, 2, 4, 8 or 16; H100: 2 and 4 about
# equal, 8 slower, 16 much slower);
# KAPI_SORT_LOOKBACK_ORDER: "relaxed" (ld.relaxed.gpu: the flag and count are one word, so
# nothing else needs ordering) or "acquire" (acquire loads, release stores).
OS_LOOKBACK = 2
OS_ORDER = "relaxed"
_OS_ORDERS = {
    "relaxed": ("K.MemoryOrder.RELAXED", "K.MemoryOrder.RELAXED"),
    "acquire": ("K.MemoryOrder.ACQUIRE", "K.MemoryOrder.RELEASE"),
}


def _os_lookback() -> tuple[int, str]:
    w = os.environ.get("KAPI_SORT_LOOKBACK") or str(OS_LOOKBACK)
    if w not in ("1", "2", "4", "8", "16"):
        raise ValueError(f"KAPI_SORT_LOOKBACK must be 1, 2, 4, 8 or 16, not {w!r}")
    o = os.environ.get("KAPI_SORT_LOOKBACK_ORDER") or OS_ORDER
    if o not in _OS_ORDERS:
        raise ValueError(f"KAPI_SORT_LOOKBACK_ORDER must be relaxed or acquire, not {o!r}")
    return int(w), o


def _lookback_src(width: int, order: str) -> str:
    ld, st = _OS_ORDERS[order]
    loads = "\n".join(_LB_LOAD.format(i=i) for i in range(width))
    scan = "\n".join(_LB_SCAN.format(i=i) for i in range(width))
    src = _ONESWEEP_LOOKBACK.replace("LBLOADS", loads).replace(
        "LBSCAN", scan + "\n" + " " * 16 + "j = nj"
    )
    return src.replace("LBW", str(width)).replace("ORDLD", ld).replace("ORDST", st)


_OS_AGG = 1 << 30
_OS_INCL = 2 << 30
_OS_MAX_N = 1 << 30  # counts and prefixes in 30 bits


def _dedent4(text: str) -> str:
    return "\n".join(ln[4:] if ln.startswith("    ") else ln for ln in text.split("\n"))


def _onesweep_src() -> str:
    """`_onesweep`'s source: its head, `_rank_scatter`'s ranking of one chunk (here the tile),
    the look-back, and `_rank_scatter`'s write of the chunk sorted by digit (out of its chunk
    loop: one indent less)."""
    m1 = "        rem = cnt - pw"
    m2 = "        r = 0\n        while r < R:  # run[d] + q"
    m3 = (
        "        K.group_barrier(g)\n        r = 0\n        while r < R:\n            run[d0 + r] +"
    )
    src = _rank_src()
    a, b, c = src.index(m1), src.index(m2), src.index(m3)
    rank, write = _dedent4(src[a:b]), _dedent4(src[b:c])
    return _ONESWEEP_HEAD + rank + _lookback_src(*_os_lookback()).lstrip("\n") + write


_HIST_SERIAL_SRC = """
def _hist_serial(item, k, hist, n, B, T, shift, MASK):
    t = item.get_id(0)
    cnt = K.PrivateArray(256, np.int64, fill_zeros=True)
    i = t * B
    end = min(n, i + B)
    while i < end:
        cnt[np.int64((k[i] >> shift) & MASK)] += 1
        i += 1
    for d in range(256):
        hist[d * T + t] = cnt[d]
"""

_SCATTER_SERIAL_SRC = """
def _scatter_serial(item, k, v, k2, v2, offs, n, B, T, shift, MASK):
    t = item.get_id(0)
    off = K.PrivateArray(256, np.int64)
    for d in range(256):
        off[d] = offs[d * T + t]
    i = t * B
    end = min(n, i + B)
    while i < end:
        kk = k[i]
        d = np.int64((kk >> shift) & MASK)
        dst = off[d]
        off[d] = dst + 1
        k2[dst] = kk
        VCOPY
        i += 1
"""

_ROWKEY_SRC = """
def _rowkey(item, v, rk, m):
    i = item.get_id(0)
    rk[i] = v[i] // m
"""

_GATHER_SRC = """
def _gather(item, x, v, out, m, ROWS):
    i = item.get_id(0)
    j = v[i]
    if ROWS != 0:
        out[i] = j % m
    else:
        out[i] = x[j]
"""


def _has_subgroups(dev) -> bool:
    return max(dev.sub_group_sizes or [1]) > 1


def _uint_of(dt: np.dtype) -> np.dtype:
    return np.dtype(f"u{dt.itemsize}")


def _as_dtype(x: Array, dt: np.dtype) -> Array:
    """x's memory seen as dtype dt of the same item size (no copy)."""
    return Array._make(
        x._owner, x._ptr, x.shape, x.strides, dt, x.sycl_queue, x.usm_type, x._host_ok
    )


@functools.cache
def _unroll(src: str, n: int) -> str:
    """src with each `for j in range(UNROLL):` loop written out n times (j = 0, 1, ...), so
    that the private arrays it indexes by j are registers rather than stack memory."""
    out, lines, i = [], src.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        if line.strip() != "for j in range(UNROLL):":
            out.append(line)
            i += 1
            continue
        ind = line[: len(line) - len(line.lstrip())]
        body, i = [], i + 1
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(ind + " ")):
            body.append(lines[i][4:])
            i += 1
        for j in range(n):
            out.append(f"{ind}j = {j}")
            out.extend(body)
    return "\n".join(out)


def _kernel(src, entry, options=None, **subst):
    for a, b in subst.items():
        src = src.replace(a, b)
    return P.kernel_of(src, entry, {}, options=options)


def _mode(dt: np.dtype) -> int:
    return {"u": 0, "b": 0, "i": 1, "f": 2}[dt.kind]


def _key_consts(dt: np.dtype):
    u = _uint_of(dt).type
    bits = dt.itemsize * 8
    sign = u(1 << (bits - 1))
    absm = u((1 << (bits - 1)) - 1)
    inf = u(np.array(np.inf, dt).view(_uint_of(dt))) if dt.kind == "f" else u(0)
    return sign, absm, inf, u((1 << bits) - 1)


def _tile_for(x: Array, n: int, chunk: int) -> tuple[int, int]:
    """(elements per work-group, groups): at most _MAX_GROUPS groups (enough to fill a GPU;
    more only grow the table of 256 counts per group that each pass scans) and at least
    _MIN_CHUNKS chunks of `chunk` elements per group (so that table stays small beside the
    keys)."""
    cap = min(_MAX_GROUPS, _MAX_GROUPS_PER_CU * max(1, x.device.max_compute_units))
    tile = -(-n // cap)
    tile = max(_MIN_CHUNKS * chunk, -(-tile // chunk) * chunk)
    return tile, -(-n // tile)


def _ballots_fit(dev) -> bool:
    """Whether the "ballot" scatter can run on dev: its masks are 32 bits and its work-groups
    must be whole sub-groups (a batch's positions assume every sub-group has S lanes)."""
    wg = _rank_wg(dev)
    return all(s <= 32 and wg % s == 0 for s in dev.sub_group_sizes or [1])


def _scatter_kind(dev, withv: bool = False) -> str:
    """How a pass scatters on dev: SCATTER, else KAPI_SORT_SCATTER, else by device (and on
    GPUs by whether values travel with the keys: ONESWEEP_WITH_VALUES)."""
    kind = SCATTER or os.environ.get("KAPI_SORT_SCATTER") or None
    if kind is not None:
        if kind not in KINDS:
            raise ValueError(f"KAPI_SORT_SCATTER must be one of {', '.join(KINDS)}, not {kind!r}")
        if kind in ("ballot", "onesweep") and not _ballots_fit(dev):
            raise ValueError(
                f"the {kind} scatter needs sub-groups of at most 32 work-items dividing "
                f"{_rank_wg(dev)}; {dev.name} has {tuple(dev.sub_group_sizes)}"
            )
        return kind
    if _has_subgroups(dev):
        if not _ballots_fit(dev):
            return "shuffle"
        return "onesweep" if withv and ONESWEEP_WITH_VALUES else "ballot"
    return "serial" if dev.device_type == "cpu" else "group"


def _pass_kind(dev, n: int, withv: bool = False) -> str:
    """_scatter_kind, but "ballot" for "onesweep" when n is too large for its 30-bit
    status words."""
    kind = _scatter_kind(dev, withv)
    return "ballot" if kind == "onesweep" and n >= _OS_MAX_N else kind


def _rank_items() -> int:
    """Keys per work-item of a "ballot" chunk: KAPI_SORT_KEYS_PER_ITEM, else RANK_ITEMS."""
    v = os.environ.get("KAPI_SORT_KEYS_PER_ITEM")
    if not v:
        return RANK_ITEMS
    if v.strip() not in ("2", "4", "8", "16"):
        raise ValueError(f"KAPI_SORT_KEYS_PER_ITEM must be 2, 4, 8 or 16, not {v!r}")
    return int(v)


def _rank_prefetch() -> bool:
    """Whether the ballot scatter loads the next chunk's keys while it ranks and writes
    this one: KAPI_SORT_PREFETCH (0 or 1), else RANK_PREFETCH."""
    v = os.environ.get("KAPI_SORT_PREFETCH")
    if not v:
        return RANK_PREFETCH
    if v not in ("0", "1"):
        raise ValueError(f"KAPI_SORT_PREFETCH must be 0 or 1, not {v!r}")
    return v == "1"


def _rank_max_registers() -> int | None:
    """The ballot scatter's max_registers: KAPI_SORT_MAXREG (0: none), else
    RANK_MAX_REGISTERS."""
    v = os.environ.get("KAPI_SORT_MAXREG")
    if not v:
        return RANK_MAX_REGISTERS
    try:
        n = int(v)
    except ValueError:
        n = -1
    if n != 0 and not 16 <= n <= 255:
        raise ValueError(f"KAPI_SORT_MAXREG must be 0 (no cap) or 16..255, not {v!r}")
    return n or None


def _radix_passes(k: Array, v: Array | None, bits_vary, nbits: int, keep_input=False, hist=None):
    """Sorts keys k (unsigned, 1-D) stably, with values v (int64) when given, by every byte
    in which bits_vary (an int, or a function giving it) has a bit set. Returns the sorted
    (k, v); the inputs are clobbered, except k with keep_input (the result is then a new
    array, never k itself). hist: the keys' digit counts (`_keys`), used by the "onesweep"
    kind (counted here when None)."""
    n = k.size
    q, ut = k.sycl_queue, k.usm_type
    withv = v is not None
    kind = _pass_kind(k.device, n, withv)
    # GPUs: the passes' launches do not wait (call_kernel does), so the device runs them back
    # to back; their Events keep the arguments alive, and the last wait covers all (one queue,
    # in order). About 20 launches per sort each waited out a host round trip before.
    events = [] if kind != "serial" else None
    if kind == "serial":
        one_pass = _serial_pass
    elif kind == "onesweep":
        one_pass = _onesweep_setup(k, withv, hist, events)
    else:
        one_pass = _parallel_pass(k, withv, kind)
    k2 = Array._allocate((n,), k.dtype, q, ut)
    v = v if withv else Array._allocate((1,), np.dtype(np.int64), q, ut)
    v2 = Array._allocate((n,), np.dtype(np.int64), q, ut) if withv else v
    if callable(bits_vary):  # a wait for the device: after the host's setup above
        bits_vary = bits_vary()
    src = k
    for shift in range(0, nbits, 8):
        if not (bits_vary >> shift) & (RADIX - 1):
            continue
        one_pass(k, v, k2, v2, k.dtype.type(shift), withv, events)
        k, k2 = k2, k
        if k2 is src and keep_input:
            k2 = Array._allocate((n,), k.dtype, q, ut)
        if withv:
            v, v2 = v2, v
    for ev in events or ():
        ev.wait()
    if k is src and keep_input:  # no pass ran
        k2[...] = k
        k = k2
    return k, (v if withv else None)


def _parallel_pass(k: Array, withv: bool, kind: str):
    """One pass by work-groups: histograms, their scan, the chunked stable scatter."""
    from kapi_lang import kernel_api as K

    from .._kernel.ranges import NdRange
    from .replay import launch

    n = k.size
    q, ut = k.sycl_queue, k.usm_type
    ri = _rank_items()
    items = (max(1, ri // 2) if withv else ri) if kind == "ballot" else ITEMS
    wg = _rank_wg(k.device) if kind == "ballot" else WG
    tile, G = _tile_for(k, n, wg * items)
    nd = NdRange(G * WG, WG)
    nd_s = NdRange(G * wg, wg)
    hist_k = _kernel(_unroll(_HIST_SRC, 4), "_hist")  # 4 loads in flight per work-item
    hist = Array._allocate((1, RADIX * G), np.dtype(np.int64), q, ut)
    offs = Array._allocate((1, RADIX * G), np.dtype(np.int64), q, ut)
    sizes = (np.int64(n), np.int64(tile), np.int64(G))
    _, add = P.resolve_op("add", "sort")
    mask = k.dtype.type(RADIX - 1)
    cnt = K.LocalAccessor(RADIX, np.uint32)
    if kind == "ballot":
        scat_k, lm, _ = _rank_kernel(k, withv, items)
    else:
        split = _SPLIT_SUBGROUP if kind == "shuffle" else _SPLIT_GROUP
        scat_k = _kernel(
            _SCATTER_SRC,
            "_scatter",
            SPLITSCAN=split.strip("\n"),
            VLOAD="vl[p] = v[c + p]" if withv else "pass",
            VSTORE="v2[dst] = vl[o[e]]" if withv else "pass",
        )
        lm = [
            K.LocalAccessor(RADIX, np.int64),  # run
            K.LocalAccessor(RADIX, np.int32),  # first
            K.LocalAccessor(WG * ITEMS, np.int32),  # sd
            K.LocalAccessor(WG * ITEMS, np.int32),  # si
            K.LocalAccessor(WG * ITEMS, k.dtype),  # kl
            K.LocalAccessor(WG * ITEMS if withv else 1, np.int64),  # vl
            K.LocalAccessor(WG, np.uint64),  # wt
        ]

    hist1, offs1 = hist.reshape(RADIX * G), offs.reshape(RADIX * G)

    def one_pass(k, v, k2, v2, sh, withv, events):
        launch(hist_k, nd, k, hist1, *sizes, sh, mask, cnt, events=events)
        P._scan_rows(hist, offs, add, "add", True, 0, events)
        launch(scat_k, nd_s, k, v, k2, v2, offs1, *sizes, sh, mask, *lm, events=events)

    return one_pass


def _rank_wg(dev) -> int:
    """Work-items per group of the "ballot" scatter: 256, or fewer with sub-groups of
    under 8 work-items (kapi's CPU device) so that the counts per sub-group (wh), and the
    "atomic" match's words (mk), fit in 32 KiB of local memory."""
    return _rank_wg_of(dev.sub_group_sizes or [1])


def _rank_wg_of(sub_group_sizes) -> int:
    # the "atomic" match adds as many match words (mk) as counts: half as many sub-groups
    subs = 16 if _rank_match() == "atomic" else 32
    return min(WG, subs * max(sub_group_sizes))


def _rank_kernel(k: Array, withv: bool, items: int):
    """The "ballot" scatter kernel for keys like k, its local memory and group size."""
    return _rank_kernel_for(k.dtype, withv, items, tuple(k.device.sub_group_sizes or [1]))


def _rank_kernel_for(kdt: np.dtype, withv: bool, items: int, sub_group_sizes: tuple):
    """The "ballot" scatter kernel for keys of dtype kdt on a device with these sub-group
    sizes, its local memory and group size (tests build the NVIDIA form on any device)."""
    from kapi_lang import kernel_api as K

    sgs, wg, W, one_size = _rank_shape(sub_group_sizes)
    maxreg = _rank_max_registers()
    pre = _rank_prefetch()
    src = _rank_src()
    for a, b in (
        ("PREFETCH0", _RANK_PREFETCH0 if pre else ""),
        ("LOADKEYS", _RANK_PREFETCH if pre else _RANK_LOAD),
        ("NEXTKEYS", _RANK_NEXT if pre else ""),
    ):
        src = src.replace(a + "\n", b.strip("\n") + "\n" if b else "")
    scat_k = _kernel(
        _unroll(src, items),
        "_rank_scatter",
        {"max_registers": maxreg} if maxreg else None,
        SCAN=_RANK_SCAN.strip("\n"),
        VNPRIV=f"nv = K.PrivateArray({items}, np.int64)" if withv else "pass",
        VNLOAD="nv[j] = v[ql]" if withv else "pass",
        VNEXT="vals[j] = nv[j]" if withv else "pass",
        **_rank_fields(kdt, withv, items, sgs, wg, one_size),
    )
    return scat_k, _rank_locals(K, kdt, withv, items, wg, W), wg


def _rank_shape(sub_group_sizes):
    """(sub-group size, group size, sub-groups per group, whether the device has one size)."""
    sgs = max(sub_group_sizes)
    wg = _rank_wg_of(sub_group_sizes)
    return sgs, wg, -(-wg // sgs), len(set(sub_group_sizes)) == 1


def _rank_fields(kdt, withv, items, sgs, wg, one_size):
    """The template fields the ballot ranking's code has in both the ballot scatter and the
    onesweep pass."""
    return dict(
        ITEMS=str(items),
        # one sub-group size (NVIDIA: 32): a constant, so each batch's place in the chunk is
        # a constant offset from one address rather than a 64-bit register per batch
        SGSIZE=str(sgs) if one_size else "sg.get_local_linear_range()",
        WGSIZE=str(wg),
        NSUB=str(wg // sgs) if one_size else "sg.get_group_linear_range()",
        KDT=f"np.{kdt.name}",
        VPRIV=f"vals = K.PrivateArray({items}, np.int64)" if withv else "pass",
        VLOAD="vals[j] = v[ql]" if withv else "pass",
        VPLACE="vl[q] = vals[j]" if withv else "pass",
        VSTORE="v2[dst] = vl[q]" if withv else "pass",
    )


def _rank_locals(K, kdt, withv, items, wg, W):
    """The ranking's local memory (a chunk, or a onesweep tile, is wg * items keys)."""
    return [
        K.LocalAccessor(RADIX, np.int64),  # run: where the chunk's digits go in the output
        K.LocalAccessor(RADIX * W, np.int32),  # wh: counts, then offsets, per sub-group
        K.LocalAccessor(wg * items, kdt),  # kl: the chunk sorted by digit
        K.LocalAccessor(wg * items if withv else 1, np.int64),  # vl
        K.LocalAccessor(RADIX, np.int32),  # ds: where each digit starts in the chunk
        K.LocalAccessor(RADIX, np.int32),  # dc: how many keys of each digit the chunk has
        K.LocalAccessor(W, np.int32),  # wt: the sub-groups' digit totals
        K.LocalAccessor(RADIX * W if _rank_match() == "atomic" else 1, np.uint32),  # mk
    ]


def _onesweep_kernel(k: Array, withv: bool, items: int):
    return _onesweep_kernel_for(k.dtype, withv, items, tuple(k.device.sub_group_sizes or [1]))


def _onesweep_kernel_for(kdt: np.dtype, withv: bool, items: int, sub_group_sizes: tuple):
    """The "onesweep" pass kernel for keys of dtype kdt on a device with these sub-group
    sizes, its local memory and group size (tests build the NVIDIA form on any device)."""
    from kapi_lang import kernel_api as K

    sgs, wg, W, one_size = _rank_shape(sub_group_sizes)
    src = _onesweep_src()
    src = src.replace("LOADKEYS\n", _dedent4(_RANK_LOAD).strip("\n") + "\n")
    maxreg = _rank_max_registers()
    kern = _kernel(
        _unroll(src, items),
        "_onesweep",
        {"max_registers": maxreg} if maxreg else None,
        SCAN=_dedent4(_RANK_SCAN).strip("\n"),
        INCL=str(_OS_INCL),
        AGG=str(_OS_AGG),
        **_rank_fields(kdt, withv, items, sgs, wg, one_size),
    )
    lm = _rank_locals(K, kdt, withv, items, wg, W)
    lm.append(K.LocalAccessor(1, np.int64))  # tl: the tile number
    return kern, lm, wg


def _keys_in_kernel(hist_positions: int, kdt: np.dtype):
    """`_keys_in`, counting every digit of hist_positions byte positions of each key into
    its extra arguments (hl: local counts; gh: the global table) when that is not 0."""
    if not hist_positions:
        return _kernel(
            _KEYS_IN_SRC,
            "_keys_in",
            KEYBODY=_KEY_BODY.strip("\n"),
            HARGS="",
            HINIT="",
            HFLUSH="",
            HBODY="",
        )
    count = "\n".join(_HIST_COUNT.format(p=p, sh=8 * p) for p in range(hist_positions))
    return _kernel(
        _KEYS_IN_SRC,
        "_keys_in",
        KEYBODY=_KEY_BODY.strip("\n"),
        HARGS=", hl, gh",
        HINIT=_HIST_INIT.strip("\n"),
        HFLUSH=_HIST_FLUSH.strip("\n"),
        HBODY=count,
        NPOS=str(hist_positions),
        KDT=f"np.{kdt.name}",
    )


def _onesweep_setup(k: Array, withv: bool, hist: Array | None, events: list):
    """The one-pass-per-digit function of the "onesweep" kind for keys k: the digit
    histograms (hist, from `_keys`; else counted here by `_keys_in` over k), their scan, the
    status words and tickets, cleared."""
    from .._kernel.ranges import NdRange, Range
    from .replay import launch

    n = k.size
    q, ut = k.sycl_queue, k.usm_type
    npos = k.dtype.itemsize
    if hist is None:
        hist = _digit_hist(k, npos)
    ri = _rank_items()
    items = max(1, ri // 2) if withv else ri
    kern, lm, wg = _onesweep_kernel(k, withv, items)
    T = -(-n // (wg * items))
    dstart = Array._allocate((npos * RADIX,), np.dtype(np.int64), q, ut)
    st = Array._allocate((2 * T * RADIX,), np.dtype(np.uint32), q, ut)
    # int32 tickets: a kernel with 64-bit atomics and sub-group shuffles fails kapi's SPIR-V
    # validation (spirv_tools.c checks such modules against the OpenCL capabilities only)
    tk = Array._allocate((npos,), np.dtype(np.int32), q, ut)
    launch(_kernel(_DSCAN_SRC, "_dscan"), NdRange(RADIX, RADIX), hist, dstart, np.int64(npos),
           events=events)  # fmt: skip
    launch(_kernel(_OSCLEAR_SRC, "_osclear"), Range(T * RADIX), st, tk, np.int64(npos),
           events=events)  # fmt: skip
    mask = k.dtype.type(RADIX - 1)
    state = {"bank": 0}

    def one_pass(k, v, k2, v2, sh, withv, events):
        b = state["bank"]
        state["bank"] = 1 - b
        args = (st, tk, dstart, np.int64(n), np.int64(T), np.int64(int(sh) // 8), np.int64(b))
        launch(kern, NdRange(T * wg, wg), k, v, k2, v2, *args, sh, mask, *lm, events=events)

    return one_pass


def _digit_hist(k: Array, npos: int) -> Array:
    """The digit counts of the keys k (unsigned, sorted as they are) at byte positions
    0..npos-1: an int64 table [position * 256 + digit], by `_keys_in` (writing nothing)."""
    from kapi_lang import kernel_api as K

    from .._kernel.launch import call_kernel
    from .._kernel.ranges import NdRange

    n = k.size
    q, ut = k.sycl_queue, k.usm_type
    hist = Array._allocate((npos * RADIX,), np.dtype(np.int64), q, ut)
    hist.fill(0)
    vo = Array._allocate((2,), np.dtype(np.uint64), q, ut)
    vo.fill(0)
    one = Array._allocate((1,), k.dtype, q, ut)
    v = Array._allocate((1,), np.dtype(np.int64), q, ut)
    sign, absm, inf, allb = _key_consts(k.dtype)
    z = np.int32(0)
    hl = K.LocalAccessor(npos * RADIX, np.uint32)
    call_kernel(_keys_in_kernel(npos, k.dtype), NdRange(_keys_groups(k) * WG, WG), k, one, v,
                vo, np.int64(n), z, z, z, sign, absm, inf, allb, z, z, hl, hist)  # fmt: skip
    return hist


def _serial_pass(k, v, k2, v2, sh, withv, events=None):
    """One pass on kapi's CPU device: T work-items each own a contiguous block and count,
    then scatter, it sequentially (a stable counting sort per block), so no barriers."""
    from .._kernel.launch import call_kernel
    from .._kernel.ranges import Range

    n = k.size
    T = min(256, max(1, n // 4096))
    B = -(-n // T)
    q, ut = k.sycl_queue, k.usm_type
    hist = Array._allocate((1, RADIX * T), np.dtype(np.int64), q, ut)
    offs = Array._allocate((1, RADIX * T), np.dtype(np.int64), q, ut)
    mask = k.dtype.type(RADIX - 1)
    sizes = (np.int64(n), np.int64(B), np.int64(T))
    hist_k = _kernel(_HIST_SERIAL_SRC, "_hist_serial")
    call_kernel(hist_k, Range(T), k, hist.reshape(RADIX * T), *sizes, sh, mask)
    _, add = P.resolve_op("add", "sort")
    P._scan_rows(hist, offs, add, "add", True, 0)
    scat_k = _kernel(
        _SCATTER_SERIAL_SRC, "_scatter_serial", VCOPY="v2[dst] = v[i]" if withv else "pass"
    )
    call_kernel(scat_k, Range(T), k, v, k2, v2, offs.reshape(RADIX * T), *sizes, sh, mask)


def _keys(x: Array, withv: bool, descending: bool, canon_zero: bool):
    """The order-preserving unsigned keys of x (1-D, contiguous) and, with withv, the
    indices 0..n-1; a function giving the bits in which the keys differ (it waits for the
    device: called once the passes are set up); with the "onesweep" kind, the keys' digit
    counts at every byte position (`_digit_hist`'s table), else None. Unsigned keys sorted
    ascending without indices are x's own memory (no copy; _radix_passes(keep_input=True)
    leaves it alone)."""
    from kapi_lang import kernel_api as K

    from .._kernel.launch import call_kernel
    from .._kernel.ranges import NdRange, Range

    n = x.size
    dt = x.dtype
    udt = _uint_of(dt)
    q, ut = x.sycl_queue, x.usm_type
    write = withv or _mode(dt) != 0 or descending
    k = Array._allocate((n,), udt, q, ut) if write else _as_dtype(x, udt)
    v = Array._allocate((n if withv else 1,), np.dtype(np.int64), q, ut)
    vo = Array._allocate((2,), np.dtype(np.uint64), q, ut)
    kind = _pass_kind(x.device, n, withv)
    serial = kind == "serial"
    if serial and not write:
        return k, None, lambda: _vary(k), None
    npos = udt.itemsize if kind == "onesweep" else 0
    hist, hargs = None, ()
    if serial:
        launch = Range(n)
        kern = _kernel(_KEYS_MAP_SRC, "_keys_map", KEYBODY=_KEY_BODY_MAP.strip("\n"))
    else:
        launch = NdRange(_keys_groups(x) * WG, WG)
        kern = _keys_in_kernel(npos, udt)
        vo.fill(0)
        if npos:
            hist = Array._allocate((npos * RADIX,), np.dtype(np.int64), q, ut)
            hist.fill(0)
            hargs = (K.LocalAccessor(npos * RADIX, np.uint32), hist)
    sign, absm, inf, allb = _key_consts(dt)
    mode, flags = np.int32(_mode(dt)), (np.int32(canon_zero), np.int32(descending))
    consts = (sign, absm, inf, allb, np.int32(write), np.int32(withv))
    k_arg = k if write else Array._allocate((1,), udt, q, ut)
    x_u = _as_dtype(x, udt)
    call_kernel(kern, launch, x_u, k_arg, v, vo, np.int64(n), mode, *flags, *consts, *hargs)
    if serial:
        return k, (v if withv else None), lambda: _vary(k), None

    def vary():
        ones, zeros = (int(b) for b in vo.asnumpy())
        return ones & zeros

    return k, (v if withv else None), vary, hist


def _keys_groups(x: Array) -> int:
    """Work-groups of `_keys_in` over x: enough to fill the device, 16 keys or more each."""
    cap = min(_MAX_GROUPS, _MAX_GROUPS_PER_CU * max(1, x.device.max_compute_units))
    return max(1, min(cap, -(-x.size // (WG * 16))))


def _vary(k: Array) -> int:
    """The bits in which the keys k differ, by kapi.reduce (kapi's CPU device)."""
    return int(P.reduce("or", k).asnumpy()) ^ int(P.reduce("and", k).asnumpy())


def _sorted_flat(x: Array, want_values: bool, want_indices: bool, descending=False):
    """(sorted values or None, sorting indices or None) of the 1-D contiguous array x."""
    from .._kernel.launch import call_kernel
    from .._kernel.ranges import Range

    dt = x.dtype
    if dt == np.bool_:
        x = _as_dtype(x, np.dtype(np.uint8))
    k, v, vary, hist = _keys(x, want_indices, descending, want_indices and dt.kind == "f")
    in_place = not want_indices and _mode(dt) == 0 and not descending  # k is x's memory
    k, v = _radix_passes(k, v, vary, dt.itemsize * 8, keep_input=in_place, hist=hist)
    vals = None
    if want_values and in_place:
        vals = k if k.dtype == dt else _as_dtype(k, dt)  # the keys are the values
    elif want_values:
        vals = Array._allocate((x.size,), dt, x.sycl_queue, x.usm_type)
        sign, _, _, allb = _key_consts(x.dtype)
        call_kernel(
            _kernel(_KEYS_OUT_SRC, "_keys_out"),
            Range(x.size),
            k,
            _as_dtype(vals, _uint_of(dt)),
            np.int32(_mode(x.dtype)),
            np.int32(descending),
            sign,
            allb,
        )
    return vals, v


def _check(a, what: str) -> Array:
    P.check_array(a, what, float16=True)  # keys are bits: float16 sorts as the other floats
    return a


def _sort_rows(x2: Array, want_values: bool, descending: bool) -> Array:
    """Sorts (or argsorts) each row of x2 (rows, m): every element by value, then stably by
    row; returns the (rows, m) values or indices within rows."""
    from .._kernel.launch import call_kernel
    from .._kernel.ranges import Range

    rows, m = x2.shape
    flat = x2.reshape(x2.size)
    dt = flat.dtype
    if dt == np.bool_:
        flat = _as_dtype(flat, np.dtype(np.uint8))
    k, v, vary, hist = _keys(flat, True, descending, dt.kind == "f")
    k, v = _radix_passes(k, v, vary, dt.itemsize * 8, hist=hist)
    rk = Array._allocate((flat.size,), np.dtype(np.uint64), flat.sycl_queue, flat.usm_type)
    call_kernel(_kernel(_ROWKEY_SRC, "_rowkey"), Range(flat.size), v, rk, np.int64(m))
    rk, v = _radix_passes(rk, v, (1 << (rows - 1).bit_length()) - 1, 64)
    out = Array._allocate(
        (flat.size,), dt if want_values else np.dtype(np.int64), flat.sycl_queue, flat.usm_type
    )
    src = x2.reshape(x2.size)
    call_kernel(
        _kernel(_GATHER_SRC, "_gather"),
        Range(flat.size),
        src,
        v,
        out,
        np.int64(m),
        np.int32(not want_values),
    )
    return out.reshape(rows, m)


def _sort_impl(a, axis, want_values: bool, what: str, descending=False) -> Array:
    _check(a, what)
    if axis is None:
        x = P.contiguous(a).reshape(a.size)
        axis = 0
    else:
        x = a
    if x.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    x2, moved, ax = P.rows_view(x, axis)
    rows, m = x2.shape
    if x2.size == 0:
        out = Array._allocate(
            x2.shape, a.dtype if want_values else np.dtype(np.int64), a.sycl_queue, a.usm_type
        )
    elif rows == 1:
        vals, idx = _sorted_flat(x2.reshape(m), want_values, not want_values, descending)
        out = (vals if want_values else idx).reshape(1, m)
    else:
        out = _sort_rows(x2, want_values, descending)
    return P.from_rows(out, moved, ax, x.ndim)


def sort(a, axis=-1, kind=None, order=None, *, descending=False, stable=True):
    """np.sort on a's device: a sorted copy along axis (-1: the last; None: flattened).

    A stable LSD radix sort for bool, int8..int64, uint8..uint64, float32 and float64;
    NaNs sort last (first with descending=True), as NumPy. kind is accepted and ignored
    (the sort is always stable); order= (structured dtypes) is not supported.
    """
    if order is not None:
        raise ValueError("kapi.sort: order= (structured arrays) is not supported")
    return _sort_impl(a, axis, True, "kapi.sort", descending)


def argsort(a, axis=-1, kind=None, order=None, *, descending=False, stable=True):
    """np.argsort on a's device (int64 indices along axis), stable: equal elements keep
    their order (as np.argsort(kind="stable")); NaNs last, -0.0 equal to 0.0."""
    if order is not None:
        raise ValueError("kapi.argsort: order= (structured arrays) is not supported")
    return _sort_impl(a, axis, False, "kapi.argsort", descending)


def topk(a, k: int):
    """The k largest elements of the 1-D array a and their indices: (values, indices), both
    in descending order of value; equal values in order of index; NaN counts as largest."""
    import operator

    _check(a, "kapi.topk")
    if a.ndim != 1:
        raise ValueError(f"kapi.topk takes a 1-D array, not {a.ndim}-D")
    k = operator.index(k)
    if not 0 <= k <= a.size:
        raise ValueError(f"kapi.topk: k={k} is out of range for an array of size {a.size}")
    x = P.contiguous(a)
    if a.size == 0 or k == 0:
        q, ut = a.sycl_queue, a.usm_type
        return (
            Array._allocate((0,), a.dtype, q, ut),
            Array._allocate((0,), np.dtype(np.int64), q, ut),
        )
    vals, idx = _sorted_flat(x, True, True, descending=True)
    return vals[:k].copy(), idx[:k].copy()


_UNIQUE_FLAGS_SRC = """
def _uflags(item, s, f, ISF):
    i = item.get_id(0)
    if i == 0:
        f[i] = np.int64(1)
    else:
        a = s[i - 1]
        b = s[i]
        same = a == b
        if ISF != 0 and a != a and b != b:
            same = True
        f[i] = np.int64(0) if same else np.int64(1)
"""

_UNIQUE_SCATTER_SRC = """
def _uscatter(item, s, f, pos, out, starts, n):
    i = item.get_id(0)
    if f[i] != 0:
        j = pos[i]
        out[j] = s[i]
        starts[j] = i
"""

_COUNTS_SRC = """
def _ucounts(item, starts, cnt, n, u):
    j = item.get_id(0)
    nxt = starts[j + 1] if j + 1 < u else n
    cnt[j] = nxt - starts[j]
"""


def unique(a, return_counts: bool = False):
    """np.unique on a's device: the sorted unique values of the flattened a (NaNs collapsed
    into one, as NumPy 2's equal_nan=True); with return_counts, also how often each occurs
    (int64)."""
    from .._kernel.launch import call_kernel
    from .._kernel.ranges import Range

    _check(a, "kapi.unique")
    q, ut = a.sycl_queue, a.usm_type
    n = a.size
    if n == 0:
        e = Array._allocate((0,), a.dtype, q, ut)
        return (e, Array._allocate((0,), np.dtype(np.int64), q, ut)) if return_counts else e
    s, _ = _sorted_flat(P.contiguous(a).reshape(n), True, False)
    f = Array._allocate((n,), np.dtype(np.int64), q, ut)
    call_kernel(
        _kernel(_UNIQUE_FLAGS_SRC, "_uflags"), Range(n), s, f, np.int32(a.dtype.kind == "f")
    )
    pos = P.scan(f, "add", inclusive=False)
    u = int(pos[n - 1]) + int(f[n - 1])
    out = Array._allocate((u,), a.dtype, q, ut)
    starts = Array._allocate((u,), np.dtype(np.int64), q, ut)
    call_kernel(
        _kernel(_UNIQUE_SCATTER_SRC, "_uscatter"), Range(n), s, f, pos, out, starts, np.int64(n)
    )
    if not return_counts:
        return out
    cnt = Array._allocate((u,), np.dtype(np.int64), q, ut)
    call_kernel(_kernel(_COUNTS_SRC, "_ucounts"), Range(u), starts, cnt, np.int64(n), np.int64(u))
    return out, cnt
