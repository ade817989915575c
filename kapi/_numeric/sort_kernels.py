"""The radix sort's kernels as source templates: kapi kernel code in strings whose fields
sort_radix.py fills in per key dtype, scatter kind and device (the keys, the histograms and
scatters of each kind, the onesweep pass and its look-back, the CPU device's serial pass).
Also the choices that only change the sources: the digit matching (KAPI_SORT_MATCH) and the
look-back (KAPI_SORT_LOOKBACK, KAPI_SORT_LOOKBACK_ORDER)."""

from __future__ import annotations

import os

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

# The keys pass with U keys per turn of its loop (KAPI_SORT_KEYS_UNROLL, read at import; 1:
# one): a work-item's U loads (strided by the grid) are issued before any is used, so U are in
# flight where one was (with one, the pass waited out a load's latency per key: about 0.4 ms
# for 2^27 uint32 on the H100, three times the time to read them); then each key as before,
# and the last fewer than U keys one at a time.
SORT_KEYS_UNROLL = int(os.environ.get("KAPI_SORT_KEYS_UNROLL", "1"))
if SORT_KEYS_UNROLL not in (1, 2, 4, 8):
    raise ValueError(f"KAPI_SORT_KEYS_UNROLL must be 1, 2, 4 or 8, not {SORT_KEYS_UNROLL}")
_KEYS_LOOP = """    while i < n:
KEYBODY
        i += T
"""


def _keys_in_src() -> str:
    """`_keys_in`'s source, its loop unrolled SORT_KEYS_UNROLL times (KEYBODY left in it as
    KEYBODY, and as KEYBODYU with `b = xbU` for its loads)."""
    u = SORT_KEYS_UNROLL
    if u == 1:
        return _KEYS_IN_SRC
    head = [f"    while i + {u - 1} * T < n:", "        i0 = i"]
    head += [f"        xb{j} = x[i0 + {j} * T]" for j in range(u)]
    for j in range(u):
        head += [f"        i = i0 + {j} * T", f"KEYBODY{j}"]
    head += [f"        i = i0 + {u} * T"]
    return _KEYS_IN_SRC.replace(_KEYS_LOOP, "\n".join(head) + "\n" + _KEYS_LOOP)


def _keys_bodies(body: str) -> dict:
    """The template fields KEYBODY0.. of _keys_in_src's unrolled loop for the key body."""
    first = "        b = x[i]\n"
    if not body.startswith(first):
        raise AssertionError("the key body no longer starts by loading x[i]")
    return {
        f"KEYBODY{j}": f"        b = xb{j}\n" + body[len(first) :] for j in range(SORT_KEYS_UNROLL)
    }


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
    nlast = (n - 1) & np.int64(0x7FFFFFFFFFFFFFFF)  # the last key (lean loads clamp to it)
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


_PLACE = """                pk = rank[j]
                d = np.int64(pk >> 16)
                q = ds[d] + wh[wb + d] + (pk & 0xFFFF)
"""
_WRITE = """                d = np.int64((kk >> shift) & MASK)
                dst = run[d] + q
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


# Lean indices (SORT_LEAN): the places a key goes to in local memory and in the output are
# sums of loaded counts, which pyfront cannot know are >= 0, so each index paid Python's
# negative-index wraparound (a compare, an add and a select, 64-bit; 3 per key placed, 1 per
# key written). Masks that keep their values (digits < 256, places < 2^31 in a tile and
# < 2^63 in the output) make them known >= 0: one AND each.
_PLACE_LEAN = """                pk = rank[j]
                d = np.int64(pk >> 16) & 255
                q = (ds[d] + wh[wb + d] + (pk & 0xFFFF)) & 0x7FFFFFFF
"""
_HIGHEST = "            if (m >> ul) == np.uint32(1):"
# the digit's shift, masked to the key's width: LLVM then knows the shift is in range and
# shifts the key in 32 bits, without the select that Python's semantics of wider shifts need
_DIGIT = "            d = np.uint32((keys[j] >> shift) & MASK)"
_DIGIT_LEAN = "            d = np.uint32((keys[j] >> sm) & MASK)"
_SHIFT_LEAN = "    sm = shift & KDT(SHMASK)  # SHMASK: the key's bits - 1\n"
_HIGHEST_LEAN = "            if (m & atop) == lb:"
_BELOW = "    below = lb - np.uint32(1)\n"
_WRITE_LEAN = """                d = np.int64((kk >> sm) & MASK) & 255
                dst = (run[d] + q) & 0x7FFFFFFFFFFFFFFF
"""
# On by default; KAPI_SORT_LEAN=0 (read at import) gives the former code, to compare.
SORT_LEAN = os.environ.get("KAPI_SORT_LEAN", "1") != "0"


def _lean() -> bool:
    return SORT_LEAN


# The atomic match without a branch (KAPI_SORT_OR_ALL, read at import): every lane ORs into
# its digit's word, a lane past the chunk's end ORing 0 (its bit selected away), so the
# batch has no branch around the atomic (on sm_90 a branch, BSSY/BSYNC and a NOP per batch).
# On by default: with SORT_FIXED_GROUP the onesweep pass then fits 64 registers without
# spilling (4 bytes spilled for keys alone, 8-12 with values, with the branch).
SORT_OR_ALL = os.environ.get("KAPI_SORT_OR_ALL", "1") != "0"
_MATCH_OR_IF = """            if j * S < rem:
                K.AtomicRef(mk, wb + np.int64(d), memory_scope=WGSCOPE).fetch_or(lb)
"""
_MATCH_OR_ALL = """            lbj = lb if j * S < rem else np.uint32(0)
            K.AtomicRef(mk, wb + np.int64(d), memory_scope=WGSCOPE).fetch_or(lbj)
"""


def _rank_src() -> str:
    """`_rank_scatter`'s source with the digit matching that _rank_match chooses."""
    atomic = _rank_match() == "atomic"
    match = (_MATCH_ATOMIC if atomic else _MATCH_BALLOT).lstrip("\n")
    if atomic and SORT_OR_ALL:
        match = match.replace(_MATCH_OR_IF, _MATCH_OR_ALL)
    src = _RANK_SRC.replace("MATCH\n", match.replace("WGSCOPE", "K.MemoryScope.WORK_GROUP"))
    if _lean():
        src = src.replace(_PLACE, _PLACE_LEAN).replace(_WRITE, _WRITE_LEAN)
        # the digit's highest lane: its own bit is m's at and above it (a 32-bit AND; a lane
        # past the chunk has no bit in m), where m >> lane shifts 64 bits (pyfront widens
        # uint32 shifts, as Numba)
        src = src.replace(_HIGHEST, _HIGHEST_LEAN).replace(_DIGIT, _DIGIT_LEAN)
        src = src.replace(_BELOW, _BELOW + "    atop = np.uint32(~below)\n" + _SHIFT_LEAN)
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
# Lean (SORT_LEAN): every lane loads each batch, its place clamped to the last key (nlast),
# rather than a branch per batch: the branches' chain of per-batch predicates (LLVM keeps
# one live per later batch, about 14 PTX moves per load) goes, and a lane past the chunk
# ranks a key it leaves out as before.
def _chunk_loads(indent: str, c0: str, cw: str, rem: str, dest: str, vload: str, lean=False):
    """The loop loading a chunk's keys (from c0) into dest, and values by vload."""
    lines = [f"{cw} = {c0} + pw", "for j in range(UNROLL):"]
    if lean:
        lines += [f"    ql = min({cw} + j * S, nlast)", f"    {dest}[j] = k[ql]", f"    {vload}"]
    else:
        lines += [
            f"    if j * S < {rem}:",
            f"        ql = {cw} + j * S",
            f"        {dest}[j] = k[ql]",
            f"        {vload}",
        ]
    return "\n" + "".join(f"{indent}{ln}\n" for ln in lines)


def _rank_loads(lean: bool) -> tuple[str, str, str]:
    """(a chunk's loads, the first chunk's loads with the prefetch, the next chunk's
    prefetch) for _rank_scatter and _onesweep."""
    load = _chunk_loads(" " * 8, "c", "cw", "rem", "keys", "VLOAD", lean)
    pre0 = "\n    nk = K.PrivateArray(ITEMS, KDT)\n    VNPRIV\n    rem = min(C, end - c) - pw"
    pre0 += _chunk_loads(" " * 4, "c", "cw", "rem", "keys", "VLOAD", lean)
    pre = "\n        cn = c + C\n        remn = min(C, end - cn) - pw"
    pre += _chunk_loads(" " * 8, "cn", "cwn", "remn", "nk", "VNLOAD", lean)
    return load, pre0, pre


_RANK_LOAD, _RANK_PREFETCH0, _RANK_PREFETCH = _rank_loads(False)

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
    nlast = (n - 1) & np.int64(0x7FFFFFFFFFFFFFFF)  # the last key (lean loads clamp to it)
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
    head = _ONESWEEP_HEAD
    if _lean():
        head = head.replace(_BELOW, _BELOW + "    atop = np.uint32(~below)\n" + _SHIFT_LEAN)
    src, lookback = _early(head + rank, _lookback_src(*_os_lookback()).lstrip("\n"))
    return src + lookback + write


# Four counters per digit, element i counting into copy i % 4: a run of equal digits is not
# one chain of increments through the same memory (each waiting for the last one's store).
_HIST_SERIAL_SRC = """
def _hist_serial(item, k, hist, n, B, T, shift, MASK):
    t = item.get_global_id(0)
    cnt = K.PrivateArray(1024, np.int64, fill_zeros=True)
    i = t * (B & 0x7FFFFFFFFFFFFFFF)
    end = min(n & 0x7FFFFFFFFFFFFFFF, i + (B & 0x7FFFFFFFFFFFFFFF))
    while i + 4 <= end:
        cnt[np.int64((k[i] >> shift) & MASK)] += 1
        cnt[256 + np.int64((k[i + 1] >> shift) & MASK)] += 1
        cnt[512 + np.int64((k[i + 2] >> shift) & MASK)] += 1
        cnt[768 + np.int64((k[i + 3] >> shift) & MASK)] += 1
        i += 4
    while i < end:
        cnt[np.int64((k[i] >> shift) & MASK)] += 1
        i += 1
    for d in range(256):
        hist[d * T + t] = cnt[d] + cnt[256 + d] + cnt[512 + d] + cnt[768 + d]
"""

# _HIST_SERIAL_SRC that also ORs its block's keys and their complements into vo[2t], vo[2t+1]
# (sort_radix.py, CPU_FUSED_VARY): the bits in which the keys differ come with the top byte's
# counts from one read of the keys, where two reductions read them twice more.
_HIST_VARY_SRC = (
    _HIST_SERIAL_SRC.replace(
        "def _hist_serial(item, k, hist, n, B, T, shift, MASK):",
        "def _hist_vary(item, k, hist, vo, n, B, T, shift, MASK, ALL):",
    )
    .replace(
        "    while i + 4 <= end:\n",
        "    ones = ALL ^ ALL\n    alls = ALL\n    while i + 4 <= end:\n",
    )
    .replace(
        "        cnt[np.int64((k[i] >> shift) & MASK)] += 1\n        cnt[256",
        "        a0 = k[i]\n        a1 = k[i + 1]\n        a2 = k[i + 2]\n        a3 = k[i + 3]\n"
        "        ones = ones | (a0 | a1) | (a2 | a3)\n"
        "        alls = alls & (a0 & a1) & (a2 & a3)\n"
        "        cnt[np.int64((k[i] >> shift) & MASK)] += 1\n        cnt[256",
    )
    .replace(
        "    while i < end:\n        cnt[np.int64((k[i] >> shift) & MASK)] += 1\n",
        "    while i < end:\n        ones = ones | k[i]\n"
        "        alls = alls & k[i]\n"
        "        cnt[np.int64((k[i] >> shift) & MASK)] += 1\n",
    )
    + "    vo[2 * t] = np.uint64(ones)\n    vo[2 * t + 1] = np.uint64(alls ^ ALL)\n"
)

_SCATTER_SERIAL_SRC = """
def _scatter_serial(item, k, v, k2, v2, offs, n, B, T, shift, MASK):
    t = item.get_global_id(0)
    off = K.PrivateArray(256, np.int64)
    for d in range(256):
        off[d] = offs[d * T + t]
    i = t * (B & 0x7FFFFFFFFFFFFFFF)
    end = min(n & 0x7FFFFFFFFFFFFFFF, i + (B & 0x7FFFFFFFFFFFFFFF))
    while i < end:
        kk = k[i]
        d = np.int64((kk >> shift) & MASK)
        dst = off[d]
        off[d] = dst + 1
        k2[dst] = kk
        VCOPY
        i += 1
"""


# The CPU argsort's MSD pass (sort_radix.py, CPU_PACK): as _scatter_serial, but each key goes
# out with its index as one 64-bit word, the key in the high half and the index i (< 2^32) in
# the low (no index array to read: the indices are made here), so that the buckets' passes
# move one word per element.
_SCATTER_PACK_SRC = _SCATTER_SERIAL_SRC.replace(
    "_scatter_serial(item, k, v, k2, v2, offs,", "_scatter_pack(item, k, w, offs,"
).replace(
    "        k2[dst] = kk\n        VCOPY\n",
    "        w[dst & 0x7FFFFFFFFFFFFFFF] = (np.uint64(kk) << np.uint64(32)) | np.uint64(i)\n",
)

# _SCATTER_PACK_SRC with write-combining (sort_radix.py, CPU_WC): each digit's words gather in
# a private buffer of a cache line (8 words) and go out when the digit's next place starts a
# line, so the stores to the 256 digits' places come a whole line at a time rather than one
# word each, interleaved over 256 lines. WCWORD: the word of key kk at i (_WC_PACK: packed
# from a key; _WC_MOVE: a word as it is; _WC_INDEX: a word's index, the LSD passes' last).
_SCATTER_PACK_WC_SRC = """
def _scatter_pack(item, k, w, offs, n, B, T, shift, MASK):
    t = item.get_global_id(0)
    off = K.PrivateArray(256, np.int64)
    fill = K.PrivateArray(256, np.int64)
    buf = K.PrivateArray(2048, np.uint64)
    for d in range(256):
        off[d] = offs[d * T + t] & 0x7FFFFFFFFFFFFFFF
        fill[d] = 0
    i = t * (B & 0x7FFFFFFFFFFFFFFF)
    end = min(n & 0x7FFFFFFFFFFFFFFF, i + (B & 0x7FFFFFFFFFFFFFFF))
    while i < end:
        kk = k[i]
        d = np.int64((kk >> shift) & MASK)
        f = fill[d]
        buf[d * 8 + f] = WCWORD
        f += 1
        o = off[d]
        if ((o + f) & 7) == 0:
            if f == 8:
                b0 = d * 8
                w[o] = buf[b0]
                w[o + 1] = buf[b0 + 1]
                w[o + 2] = buf[b0 + 2]
                w[o + 3] = buf[b0 + 3]
                w[o + 4] = buf[b0 + 4]
                w[o + 5] = buf[b0 + 5]
                w[o + 6] = buf[b0 + 6]
                w[o + 7] = buf[b0 + 7]
            else:
                for j in range(f):
                    w[o + j] = buf[d * 8 + j]
            off[d] = o + f
            f = 0
        fill[d] = f & 7
        i += 1
    for d in range(256):
        o = off[d]
        for j in range(fill[d]):
            w[o + j] = buf[d * 8 + j]
"""
# The CPU argsort's wide first digit (sort_radix.py, CPU_WIDE): the top varying digit of WIDE
# bits (NB = 2^WIDE buckets) where a byte's 256 buckets do not balance. Its count (one counter
# per digit per block) and its scatter, as _HIST_SERIAL_SRC and _SCATTER_PACK_SRC (WIDEWORD:
# _WC_PACK, a packed word, or _WC_MOVE, the key alone for a sort).
_HIST_WIDE_SRC = """
def _hist_wide(item, k, hist, n, B, T, low, MASK):
    t = item.get_global_id(0)
    cnt = K.PrivateArray(NB, np.int32, fill_zeros=True)
    i = t * (B & 0x7FFFFFFFFFFFFFFF)
    end = min(n & 0x7FFFFFFFFFFFFFFF, i + (B & 0x7FFFFFFFFFFFFFFF))
    while i < end:
        cnt[np.int64((k[i] >> low) & MASK)] += np.int32(1)
        i += 1
    for d in range(NB):
        hist[d * T + t] = np.int64(cnt[d])
"""

# _HIST_WIDE_SRC that also ORs its block's keys and their complements into vo[2t], vo[2t+1]
# (sort_radix.py, CPU_VARY_WIDE): the bits in which the keys differ come with the wide digit's
# counts from one read of the keys, where two reductions read them twice more.
_HIST_WIDE_VARY_SRC = """
def _hist_wide_vary(item, k, hist, vo, n, B, T, low, MASK, ALL):
    t = item.get_global_id(0)
    cnt = K.PrivateArray(NB, np.int32, fill_zeros=True)
    ones = ALL ^ ALL
    alls = ALL
    i = t * (B & 0x7FFFFFFFFFFFFFFF)
    end = min(n & 0x7FFFFFFFFFFFFFFF, i + (B & 0x7FFFFFFFFFFFFFFF))
    while i < end:
        kk = k[i]
        ones = ones | kk
        alls = alls & kk
        cnt[np.int64((kk >> low) & MASK)] += np.int32(1)
        i += 1
    for d in range(NB):
        hist[d * T + t] = np.int64(cnt[d])
    vo[2 * t] = np.uint64(ones)
    vo[2 * t + 1] = np.uint64(alls ^ ALL)
"""

_SCATTER_WIDE_SRC = """
def _scatter_wide(item, k, w, offs, n, B, T, low, MASK):
    t = item.get_global_id(0)
    off = K.PrivateArray(NB, np.int64)
    for d in range(NB):
        off[d] = offs[d * T + t]
    i = t * (B & 0x7FFFFFFFFFFFFFFF)
    end = min(n & 0x7FFFFFFFFFFFFFFF, i + (B & 0x7FFFFFFFFFFFFFFF))
    while i < end:
        kk = k[i]
        d = np.int64((kk >> low) & MASK)
        dst = off[d]
        off[d] = dst + 1
        w[dst & 0x7FFFFFFFFFFFFFFF] = WIDEWORD
        i += 1
"""

# _SCATTER_WIDE_SRC through write-combining buffers (sort_radix.py, CPU_WIDE_WC): each
# digit's words gather in buf, a cache line (8 words) per digit in the work-item's part of a
# global scratch (NB lines, in its core's L2), and a line goes out when it is full: by
# streaming stores where the whole line is the work-item's (it starts at or after the digit's
# first place, so no other work-item writes into it), by plain stores where the line began
# before (the neighbouring block wrote its head). The 2^WIDE stores a key might go to were
# each a store into one of 2^WIDE open lines, every line read from memory before it was
# written and a TLB entry per digit; here a key's store stays in the core's cache and the
# output is written a line at a time, without being read. The words left in the buffers at
# the end go out by plain stores.
_SCATTER_WIDE_WC_SRC = """
def _scatter_wide_wc(item, k, w, offs, buf, n, B, T, low, MASK):
    t = item.get_global_id(0)
    off = K.PrivateArray(NB, np.int64)
    first = K.PrivateArray(NB, np.int64)
    for d in range(NB):
        o = offs[d * T + t] & 0x7FFFFFFFFFFFFFFF
        off[d] = o
        first[d] = o
    lines = t * (NB * 8)
    i = t * (B & 0x7FFFFFFFFFFFFFFF)
    end = min(n & 0x7FFFFFFFFFFFFFFF, i + (B & 0x7FFFFFFFFFFFFFFF))
    while i < end:
        kk = k[i]
        d = np.int64((kk >> low) & MASK)
        o = off[d]
        line = (lines + d * 8) & 0x7FFFFFFFFFFFFFFF
        buf[line + (o & 7)] = WIDEWORD
        off[d] = o + 1
        if (o & 7) == 7:
            s = (o - 7) & 0x7FFFFFFFFFFFFFFF
            if s >= first[d]:
                LINE_OUT
            else:
                for j in range(first[d] & 7, 8):
                    w[s + j] = buf[line + j]
        i += 1
    for d in range(NB):
        o = off[d]
        s = max(o & 0x7FFFFFFFFFFFFFF8, first[d])
        for q in range(s, o):
            w[q] = buf[lines + d * 8 + (q & 7)]
"""

# (the line's 8 words loaded, then stored: one vector load and store each, where a load and
# a store in turn stayed 8 of each, buf and w possibly the same memory)
_SCATTER_WIDE_WC_SRC = _SCATTER_WIDE_WC_SRC.replace(
    "LINE_OUT\n",
    "".join(f"{'' if j == 0 else ' ' * 16}b{j} = buf[line + {j}]\n" for j in range(8))
    + "".join(f"{' ' * 16}K.store_nontemporal(w, s + {j}, b{j})\n" for j in range(8)),
)
_WC_PACK = "(np.uint64(kk) << np.uint64(32)) | np.uint64(i)"
_WC_MOVE = "kk"
_WC_INDEX = "kk & np.uint64(0xFFFFFFFF)"

# Narrow indices in the onesweep pass (KAPI_SORT_NARROW, read at import): the pass runs only
# below _OS_MAX_N (2^30) keys, so every place it computes (a key's place in the input, in the
# tile and in the output) fits 30 bits. Numba's typing makes their sums 64-bit, and the 64-bit
# adds and shifts became two SASS instructions each. Cast to uint32 (the load's and the
# output's places; `run` is then uint32, places modulo 2^32, exact once the key's place in
# the tile is added) or to int32 and masked (the tile's place), all known >= 0 (no
# wraparound), LLVM adds in 32 bits and widens once at the address (mul.wide.u32). A mask on
# a 64-bit sum is not enough: LLVM keeps the sum 64-bit. The bounds each batch is checked
# against (rem, rl) are int32 too.
_NARROW = (
    ("        ql = min(cw + j * S, nlast)\n",
     "        ql = min(np.uint32(cw + j * S), np.uint32(nlast))\n"),
    ("        q = (ds[d] + wh[wb + d] + (pk & 0xFFFF)) & 0x7FFFFFFF\n",
     "        q = np.int32(ds[d] + wh[wb + d] + (pk & 0xFFFF)) & np.int32(0x3FFFFFFF)\n"),
    ("        dst = (run[d] + q) & 0x7FFFFFFFFFFFFFFF\n",
     "        dst = np.uint32(run[d] + np.uint32(q))\n"),
    ("    rem = cnt - pw  #", "    rem = np.int32(cnt - pw)  #"),
    ("    rl = cnt - lid  #", "    rl = np.int32(cnt - lid)  #"),
    ("        d = np.int64((kk >> sm) & MASK) & 255\n",
     "        d = np.uint32((kk >> sm) & MASK)\n"),
)  # fmt: skip
SORT_NARROW = os.environ.get("KAPI_SORT_NARROW", "1") != "0"


def _narrow(src: str) -> str:
    """The onesweep pass's source (loads placed in) with narrow indices when SORT_NARROW and
    the lean kernels are on."""
    if not _narrowed():
        return src
    for old, new in _NARROW:
        if old not in src:
            raise AssertionError(f"_narrow: the onesweep source lacks {old.strip()!r}")
        src = src.replace(old, new)
    return src


def _narrowed() -> bool:
    """Whether the onesweep pass has narrow indices (its run table then uint32: output places
    modulo 2^32, exact once a key's place in the tile is added)."""
    return SORT_NARROW and _lean()


# The tile's digit counts before its ranking (KAPI_SORT_EARLY, read at import; CUB's "early
# counts"): after its loads each work-item adds its keys' digits into the tile's counts (dc,
# one local atomic per key, 0 added for a lane past the tile: no branch), and after one group
# barrier work-item d publishes digit d's count in the tile's status word at once (1) rather
# than after the ranking, so a later tile's look-back walks over this tile instead of
# spinning on it while it ranks; the look-back itself stays after the ranking. With 2 the
# look-back runs right after that publication too, before the ranking: the tile's inclusive
# prefix is out one ranking earlier (its own look-back no longer overlaps its ranking).
# 0 (the default until a GPU call shows either faster): the counts come from the ranking.
SORT_EARLY = os.environ.get("KAPI_SORT_EARLY", "0")
if SORT_EARLY not in ("0", "1", "2"):
    raise ValueError(f"KAPI_SORT_EARLY must be 0, 1 or 2, not {SORT_EARLY!r}")

_EARLY_ZERO = """    r = 0
    while r < R:
        dc[d0 + r] = np.int32(0)
        r += 1
"""
_EARLY_COUNT = """    for j in range(UNROLL):
        ej = np.int32(1) if j * S < rem else np.int32(0)
        ed = np.int64((keys[j] >> SHV) & MASK)
        K.AtomicRef(dc, ed, memory_scope=K.MemoryScope.WORK_GROUP).fetch_add(ej)
    K.group_barrier(g)
    r = 0
    while r < R:
        ef = np.int64(INCL) if tile == 0 else np.int64(AGG)
        K.AtomicRef(st, mine + d0 + r, ORDST).store(np.uint32(np.int64(dc[d0 + r]) | ef))
        r += 1
"""
_LB_PUBLISH = """        if tile == 0:
            K.AtomicRef(st, mine + d, ORDST).store(np.uint32(cd | INCL))
        else:
            K.AtomicRef(st, mine + d, ORDST).store(np.uint32(cd | AGG))
            j = tile - 1
"""
_LB_PUBLISHED = """        if tile != 0:
            j = tile - 1
"""
_TICKET_BARRIER = "    K.group_barrier(g)\n    tile = tl[0]"


def _early(src: str, lookback: str) -> tuple[str, str]:
    """(the onesweep source's head and ranking, its look-back) with SORT_EARLY's counts."""
    if SORT_EARLY == "0":
        return src, lookback
    for old in (_TICKET_BARRIER, "LOADKEYS\n"):
        if old not in src:
            raise AssertionError(f"_early: the onesweep source lacks {old.strip()!r}")
    ord_st = _OS_ORDERS[_os_lookback()[1]][1]
    publish = _LB_PUBLISH.replace("ORDST", ord_st)
    if publish not in lookback:
        raise AssertionError("_early: the look-back no longer publishes the tile's count")
    count = _EARLY_COUNT.replace("ORDST", ord_st).replace("SHV", "sm" if _lean() else "shift")
    lookback = lookback.replace(publish, _LB_PUBLISHED)
    src = src.replace(_TICKET_BARRIER, _EARLY_ZERO + _TICKET_BARRIER)
    if SORT_EARLY == "2":
        count += lookback.strip("\n") + "\n"
        lookback = ""
    return src.replace("LOADKEYS\n", "LOADKEYS\n" + count), lookback


# The ranks in local memory (KAPI_SORT_RANK_LOCAL, read at import; onesweep with the narrow
# indices): each key's rank among its sub-group's keys of its digit (< 2^16) is stored in a
# uint16 slot of its own (rs, 2 bytes per key of the tile) as soon as it is found, rather than
# kept in a register per key until the tile is placed. The digit is taken from the key again
# there, the key passed through a sub-group permute by 0 (itself) first: LLVM would otherwise
# keep each key's digit from the ranking alive until then (16 registers) instead of shifting
# again. ptxas sm_90, 16 keys: 56 registers uncapped (72 before), 48 without spilling, so 5
# groups of 256 share an SM at a cap of 48 (sort_radix.OS_MAX_REGISTERS_LOCAL; local memory
# 43 KiB per group) where 4 did; argsort's tiles of 12 keys (uncapped) 56 registers where they
# took 72, 4 groups per SM where 3 fit. On by default: H200, 2^27 uint32 (bench/RESULTS.md,
# gpusort4, call 2, with SORT_KEYS_ASYNC): sort 4.20-4.27 ms against 4.47, argsort 6.34-6.37
# against 6.94 (call 1, its first version: 4.82 / 7.09 against 4.99 / 7.44). 0 turns it off.
SORT_RANK_LOCAL = os.environ.get("KAPI_SORT_RANK_LOCAL", "1") != "0"
_RANK_KEEP = """        rk = np.int32((base + pr) | (np.int32(d) << 16))
        rank[j] = K.permute_group_by_xor(sg, rk, 0)  # (see above)
"""
_RANK_STORE = "        rs[pw + j * S] = np.uint16(base + pr)\n"
_RANK_PLACE = """        if j * S < rem:
            pk = rank[j]
            d = np.int64(pk >> 16) & 255
            q = np.int32(ds[d] + wh[wb + d] + (pk & 0xFFFF)) & np.int32(0x3FFFFFFF)
            kl[q] = keys[j]
"""
# (the permute before the place's branch: every lane of the sub-group must reach it)
_RANK_PLACE_LOCAL = """        kj = K.permute_group_by_xor(sg, keys[j], 0)
        if j * S < rem:
            d = np.int64((kj >> sm) & MASK) & 255
            q = np.int32(ds[d] + wh[wb + d] + np.int32(rs[pw + j * S])) & np.int32(0x3FFFFFFF)
            kl[q] = kj
"""
_RANK_PRIV = "    rank = K.PrivateArray(ITEMS, np.int32)\n"


def _rank_local(src: str) -> str:
    """The onesweep pass's source (loads placed in, narrowed) with its ranks in local memory
    (an extra local argument rs) where SORT_RANK_LOCAL and the narrow indices are on."""
    if not _ranks_local():
        return src
    for old, new in (
        (_RANK_KEEP, _RANK_STORE),
        (_RANK_PLACE, _RANK_PLACE_LOCAL),
        (_RANK_PRIV, ""),
        ("mk, tl):", "mk, tl, rs):"),
    ):
        if old not in src:
            raise AssertionError(f"_rank_local: the onesweep source lacks {old.strip()!r}")
        src = src.replace(old, new)
    return src


def _ranks_local() -> bool:
    """Whether the onesweep pass keeps its ranks in local memory (SORT_RANK_LOCAL)."""
    return SORT_RANK_LOCAL and _narrowed()


# Persistent onesweep groups (KAPI_SORT_PERSIST=N, read at import; 0: off; onesweep for keys
# alone, narrow indices, not with SORT_EARLY): N groups per SM (a CUDA device's compute units
# / 64; one per compute unit elsewhere) each take tile after tile by ticket until none is
# left, and take the next tile's ticket at the start of this one and load its keys into a
# second set of registers (nk) once this one is ranked: the loads' latency overlaps this
# tile's look-back and writes instead of stalling the group after its ticket (a group of the
# one-tile-per-group pass waits out the ticket's round trip, then its loads', before it can
# rank). Tickets keep the order tiles start in, so every tile a look-back waits on belongs to
# a running group (which has finished its earlier tiles): no deadlock. Off by default until a
# GPU call shows it faster.
_persist_env = os.environ.get("KAPI_SORT_PERSIST", "0") or "0"
if _persist_env.strip() not in {str(i) for i in range(17)}:
    raise ValueError(f"KAPI_SORT_PERSIST must be 0 (off) to 16, not {_persist_env!r}")
SORT_PERSIST = int(_persist_env)

_PERSIST_DECLS = ("    keys = K.PrivateArray(ITEMS, KDT)\n", _RANK_PRIV, "    VPRIV\n")
_PERSIST_LOADS = """    cw = c + pw
    for j in range(UNROLL):
        ql = min(np.uint32(cw + j * S), np.uint32(nlast))
        keys[j] = k[ql]
        VLOAD
"""
_PERSIST_TAIL = "    tot = np.int32(0)\n"
_PERSIST_FIXED = tuple(
    f"    {x} = " for x in ("ul", "lb", "below", "atop", "sm", "wb", "pw", "nlast")
)


def _persists(withv: bool) -> bool:
    """Whether the onesweep pass (with values: withv) is persistent (SORT_PERSIST)."""
    return bool(SORT_PERSIST) and not withv and _narrowed()


def _persist(src: str, withv: bool) -> str:
    """The onesweep pass's source (loads placed in, narrowed) made persistent where
    _persists(withv): its body a loop over tiles, the next tile's ticket taken at each
    tile's start (tl[1]) and its keys loaded (into nk) after this tile's ranking."""
    if not _persists(withv):
        return src
    if SORT_EARLY != "0":
        raise ValueError("KAPI_SORT_PERSIST does not combine with KAPI_SORT_EARLY")
    start = src.index("    mine = bank * rows")
    head, body = src[:start], src[start:]
    decls = ""
    for d in _PERSIST_DECLS:
        if d in body:
            decls += d
            body = body.replace(d, "", 1)
    lines = body.split("\n")
    fixed = [ln for ln in lines if ln.startswith(_PERSIST_FIXED)]  # per group, not per tile
    decls += "".join(ln + "\n" for ln in fixed)
    body = "\n".join(ln for ln in lines if not ln.startswith(_PERSIST_FIXED))
    body = body.replace("\nSCAN\n", "\n" + _dedent4(_RANK_SCAN).strip("\n") + "\n")
    for old in (_PERSIST_LOADS, _PERSIST_TAIL):
        if old not in body:
            raise AssertionError(f"_persist: the onesweep source lacks {old.strip()!r}")
    body = body.replace(_PERSIST_LOADS, "")
    nxt = _PERSIST_LOADS.replace("cw = c + pw", "cw = nt * C + pw").replace("keys[j]", "nk[j]")
    nxt = "    nt = tl[1] & np.int64(0x7FFFFFFFFFFFFFFF)\n" + nxt.replace("VLOAD", "pass")
    body = body.replace(_PERSIST_TAIL, nxt + _PERSIST_TAIL, 1)
    ticket = "    if lid == 0:\n"
    ticket += "        tl[1] = np.int64(K.AtomicRef(tk, dp).fetch_add(np.int32(1)))\n"
    tail = "    K.group_barrier(g)\n    for j in range(UNROLL):\n        keys[j] = nk[j]\n"
    tail += "    tile = nt\n"
    loop = "\n".join(
        ("    " + ln) if ln.strip() else ln for ln in (ticket + body + tail).split("\n")
    )
    first = "    c = tile * C\n" + _PERSIST_LOADS + "    nk = K.PrivateArray(ITEMS, KDT)\n"
    return head + decls + first + "    while tile < T:\n" + loop


# Copies of the keys pass's digit counts per work-group (KAPI_SORT_HIST_COPIES, read at
# import: 1, 2, 4, 8 or 16): work-item i counts into copy i % COPIES, the copies interleaved
# (count (position, digit) of copy c at ((position * 256 + digit) * COPIES + c), so lanes of a
# warp whose copies differ fall in different banks of local memory. The pass's four local
# atomics per key (one per byte position) kept the L1/shared pipe at 92% and the pass at 396
# us for 2^27 keys on the H200 (ncu, base clocks: 8% of the sort; its reads alone would take
# about 130), random digits meeting in a bank several times per warp; 8 copies cut that to
# about 2 and take 32 KiB per group. 1 (the default until a GPU call shows more faster): one
# copy, as before.
SORT_HIST_COPIES = os.environ.get("KAPI_SORT_HIST_COPIES", "1")
if SORT_HIST_COPIES not in ("1", "2", "4", "8", "16"):
    raise ValueError(f"KAPI_SORT_HIST_COPIES must be 1, 2, 4, 8 or 16, not {SORT_HIST_COPIES!r}")
SORT_HIST_COPIES = int(SORT_HIST_COPIES)

_HIST_INIT_COPIES = """
    lid = it.get_local_id(0)
    L = it.get_local_range(0)
    one = np.uint32(1)
    hc = lid & (COPIES - 1)  # this work-item's copy
    q = lid
    while q < NPOS * 256 * COPIES:
        hl[q] = np.uint32(0)
        q += L
    K.group_barrier(g)
"""
_HIST_COUNT_COPIES = (
    "        K.AtomicRef(hl, ({p} * 256 + np.int64((b >> KDT({sh})) & KDT(255))) * COPIES + hc, "
    "memory_scope=K.MemoryScope.WORK_GROUP).fetch_add(one)"
)
_HIST_FLUSH_COPIES = """
    K.group_barrier(g)
    q = lid
    while q < NPOS * 256:
        c = np.uint32(0)
        for e in range(COPIES):
            c += hl[q * COPIES + e]
        if c != np.uint32(0):
            K.AtomicRef(gh, q).fetch_add(np.int64(c))
        q += L
"""


def _hist_parts(npos: int) -> tuple[str, str, str, int]:
    """(init, count per position, flush, copies) of the keys pass's digit counts of npos byte
    positions: SORT_HIST_COPIES copies, fewer where they would pass 32 KiB (8-byte keys)."""
    copies = min(SORT_HIST_COPIES, max(1, 32 // max(1, npos)))
    if copies == 1:
        return _HIST_INIT, _HIST_COUNT, _HIST_FLUSH, 1
    c = str(copies)
    return (
        _HIST_INIT_COPIES.replace("COPIES", c),
        _HIST_COUNT_COPIES.replace("COPIES", c),
        _HIST_FLUSH_COPIES.replace("COPIES", c),
        copies,
    )
