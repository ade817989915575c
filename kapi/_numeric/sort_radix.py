"""The LSD radix sort under kapi.sort, kapi.argsort, kapi.topk and kapi.unique (sort.py):
the order-preserving keys, the passes of each scatter kind and which kind runs on which device,
as kernels built from sort_kernels.py's sources.

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
block per work-item and work-group (`_hist_serial`, with four counters per digit; the table's
scan; `_scatter_serial`): no barriers, which the CPU runs best, and at least four blocks per
core, which the driver's threads balance. (Its scatter kind is named "serial" for the order
within a block; the blocks run on every core.) Passes over digits in which no two keys
differ are skipped (the OR and AND of all keys tell which bits vary), so small integer ranges
cost fewer passes. From CPU_MSD_MIN keys the top varying digit goes first and each of its
buckets is sorted by the other digits (`_msd_sort`): by one worker per core, which takes
buckets in turn and moves each through scratch regions of its own that stay in its cache
(`_bucket_scratch`; CPU_SCRATCH), or by one work-item per bucket. Argsorts of keys of up
to 32 bits carry each key and its index as one uint64 word from the first pass to the last
(`_msd_packed`, `_lsd_packed`; CPU_PACK), so no index array is written before the passes;
from CPU_WIDE_MIN keys their first digit is 10 bits wide (`_msd_wide`; CPU_ARGSORT_WIDE), 12
from CPU_WIDE_BIG_MIN (CPU_ARGSORT_WIDE_BIG).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from .._memory.array import Array
from . import primitives as P
from . import streaming as _streaming
from .scan import _scan_rows
from .sort_kernels import (
    _DSCAN_SRC,
    _HIST_SERIAL_SRC,
    _HIST_SRC,
    _HIST_VARY_SRC,
    _HIST_WIDE_SRC,
    _HIST_WIDE_VARY_SRC,
    _KEY_BODY,
    _KEY_BODY_MAP,
    _KEYS_MAP_SRC,
    _OS_AGG,
    _OS_INCL,
    _OS_MAX_N,
    _OSCLEAR_SRC,
    _RANK_NEXT,
    _RANK_SCAN,
    _SCATTER_PACK_SRC,
    _SCATTER_PACK_WC_SRC,
    _SCATTER_SERIAL_SRC,
    _SCATTER_SRC,
    _SCATTER_WIDE_SRC,
    _SCATTER_WIDE_WC_SRC,
    _SPLIT_GROUP,
    _SPLIT_SUBGROUP,
    _WC_INDEX,
    _WC_MOVE,
    _WC_PACK,
    _dedent4,
    _hist_parts,
    _keys_bodies,
    _keys_in_src,
    _lean,
    _narrow,
    _narrowed,
    _onesweep_src,
    _persist,
    _persists,
    _rank_loads,
    _rank_local,
    _rank_match,
    _rank_src,
    _ranks_local,
)

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
# GPUs by default: "onesweep" when values travel with the keys (argsort, topk, 2-D sorts):
# H100, 2^27 uint32 (bench/RESULTS.md, issue 13, onesweep): argsort 10.9-11.1 ms against 17.3
# with ballot.
ONESWEEP_WITH_VALUES = True
# GPUs by default for keys alone too ("onesweep" rather than "ballot"): H200, 2^27 uint32
# (bench/RESULTS.md, gpusort, call 2) sort 4.61-4.67 ms against 5.00-5.01 (both lean, the
# onesweep pass capped at 64 registers); 4.88 against 5.01 with 2^27 - 1000 keys.
# KAPI_SORT_ONESWEEP_KEYS=0 (read at import): "ballot" for keys alone, as before.
ONESWEEP_KEYS_ONLY = os.environ.get("KAPI_SORT_ONESWEEP_KEYS", "1") != "0"
# The onesweep pass's own keys per work-item and register cap (None: RANK_ITEMS and
# RANK_MAX_REGISTERS); KAPI_SORT_KEYS_PER_ITEM and KAPI_SORT_MAXREG set both kinds'.
# H200, 2^27 uint32 (bench/RESULTS.md, gpusort): a cap of 64 (4 groups per SM, no spills)
# argsort 8.06-8.17 ms against 8.63-8.74 uncapped and 9.18 with 80; sort 4.96-5.25 against 5.91.
OS_ITEMS = None
OS_MAX_REGISTERS = 64
# The onesweep pass with values (argsort) has its own keys per work-item and register cap
# where the kernels declare their group size (SORT_FIXED_GROUP): 12 keys, uncapped (72
# registers: 3 groups of 256 per SM), H200 2^27 uint32 (bench/RESULTS.md, gpusort3, call 1):
# argsort 6.73 ms against 7.75-7.77 with 8 keys capped at 64 (the former defaults, which stay
# without SORT_FIXED_GROUP: 12 keys per work-item were never run with the computed warp
# masks, and 24 for keys alone lost the device with them). KAPI_SORT_ARGSORT_ITEMS (4, 8, 12
# or 16) and KAPI_SORT_ARGSORT_MAXREG (0: none, or 16..255) set them; KAPI_SORT_KEYS_PER_ITEM
# (half of it) and KAPI_SORT_MAXREG set them too where those are unset.
OS_ITEMS_VALUES = 12
OS_MAX_REGISTERS_VALUES = None
# The onesweep pass for keys alone with its ranks in local memory (sort_kernels.py,
# SORT_RANK_LOCAL): 48 registers without spilling, so 5 groups of 256 per SM (43 KiB of local
# memory each) where 64 allowed 4.
OS_MAX_REGISTERS_LOCAL = 48


# The onesweep kind with values (argsort): the values travel between passes as int32 (n <
# 2^31) in the two halves of the second int64 buffer, the last pass widening them into the
# first, and the first pass makes the indices itself rather than reading them (`_keys`
# leaves them unwritten): per key 24 bytes of memory traffic less per argsort of 4 passes,
# and 16 less for the indices `_keys` wrote and the first pass read. KAPI_SORT_V32=0 (read
# at import): int64 values in every pass, as before.
SORT_V32 = os.environ.get("KAPI_SORT_V32", "1") != "0"


def _values32(n: int) -> bool:
    """Whether the onesweep passes carry n values as int32."""
    return SORT_V32 and n < (1 << 31)


def _iota_first(dev, n: int, withv: bool) -> bool:
    """Whether the first pass over n keys makes their indices (so `_keys` need not)."""
    return withv and _pass_kind(dev, n, True) == "onesweep" and _values32(n)


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


# Kernels launched with one work-group size declare it (@kapi.kernel's required_group_size;
# KAPI_SORT_FIXED_GROUP, read at import): on NVIDIA GPUs a group of whole warps lets every
# sub-group operation (the ranking's sub-group barriers, shuffles and scans) name all 32
# lanes, where a mask computed for a possibly partial last warp made ptxas check each for
# divergence (MATCH, REDUX, VOTE and a branch per instruction on sm_90; the onesweep pass:
# 2762 -> 1529 SASS lines, tools/sort_ptx.py). The runtime refuses a launch of another size.
# H200, 2^27 uint32 (bench/RESULTS.md, gpusort3, call 1): sort 4.35-4.46 ms against
# 4.57-4.65 without (0 turns it off, to compare).
SORT_FIXED_GROUP = os.environ.get("KAPI_SORT_FIXED_GROUP", "1") != "0"


def _fixed(wg: int, options: dict | None = None) -> dict | None:
    """options plus the work-group size wg the kernel is always launched with, where
    SORT_FIXED_GROUP says so."""
    if not SORT_FIXED_GROUP:
        return options
    return {**(options or {}), "required_group_size": int(wg)}


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
        one = ONESWEEP_WITH_VALUES if withv else ONESWEEP_KEYS_ONLY
        return "onesweep" if one else "ballot"
    return "serial" if dev.device_type == "cpu" else "group"


def _pass_kind(dev, n: int, withv: bool = False) -> str:
    """_scatter_kind, but "ballot" for "onesweep" when n is too large for its 30-bit
    status words."""
    kind = _scatter_kind(dev, withv)
    return "ballot" if kind == "onesweep" and n >= _OS_MAX_N else kind


# 12, 20 and 24 were tried: on the H200 a sort of 2^27 uint32 with 24 keys per work-item
# (onesweep) lost the device (bench/RESULTS.md, gpusort), so they are refused.
_RANK_ITEMS_OK = ("2", "4", "8", "16")


def _rank_items(onesweep=False) -> int:
    """Keys per work-item of a "ballot" chunk (a onesweep tile with onesweep):
    KAPI_SORT_KEYS_PER_ITEM, else OS_ITEMS (onesweep) or RANK_ITEMS."""
    v = os.environ.get("KAPI_SORT_KEYS_PER_ITEM")
    if not v:
        return (OS_ITEMS if onesweep else None) or RANK_ITEMS
    if v.strip() not in _RANK_ITEMS_OK:
        raise ValueError(
            f"KAPI_SORT_KEYS_PER_ITEM must be one of {', '.join(_RANK_ITEMS_OK)}, not {v!r}"
        )
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


def _rank_max_registers(onesweep=False, withv=False) -> int | None:
    """The ballot scatter's (the onesweep pass's, with onesweep; with values, withv)
    max_registers: KAPI_SORT_ARGSORT_MAXREG (onesweep with values), else KAPI_SORT_MAXREG
    (0: none), else OS_MAX_REGISTERS_VALUES (onesweep with values, SORT_FIXED_GROUP), none
    (onesweep, keys alone, persistent), OS_MAX_REGISTERS_LOCAL (onesweep, keys alone, ranks
    in local memory), OS_MAX_REGISTERS (onesweep) or RANK_MAX_REGISTERS."""
    name = "KAPI_SORT_ARGSORT_MAXREG" if onesweep and withv else "KAPI_SORT_MAXREG"
    v = os.environ.get(name) or os.environ.get("KAPI_SORT_MAXREG")
    if not v:
        if onesweep and withv and SORT_FIXED_GROUP:
            return OS_MAX_REGISTERS_VALUES
        if onesweep and not withv and _persists(False):
            return None  # 80 registers with the local ranks: 3 groups of 256 per SM
        if onesweep and not withv and _ranks_local():
            return OS_MAX_REGISTERS_LOCAL
        return (OS_MAX_REGISTERS if onesweep else None) or RANK_MAX_REGISTERS
    try:
        n = int(v)
    except ValueError:
        n = -1
    if n != 0 and not 16 <= n <= 255:
        raise ValueError(f"{name} must be 0 (no cap) or 16..255, not {v!r}")
    return n or None


def _os_items_values() -> int:
    """Keys per work-item of the onesweep pass with values: KAPI_SORT_ARGSORT_ITEMS, else
    half of KAPI_SORT_KEYS_PER_ITEM where set, else OS_ITEMS_VALUES (SORT_FIXED_GROUP) or
    half the keys' own."""
    v = os.environ.get("KAPI_SORT_ARGSORT_ITEMS")
    if v:
        if v.strip() not in ("4", "8", "12", "16"):
            raise ValueError(f"KAPI_SORT_ARGSORT_ITEMS must be one of 4, 8, 12, 16, not {v!r}")
        return int(v)
    if SORT_FIXED_GROUP and not os.environ.get("KAPI_SORT_KEYS_PER_ITEM"):
        return OS_ITEMS_VALUES
    return max(1, _rank_items(True) // 2)


def _radix_passes(
    k: Array,
    v: Array | None,
    bits_vary,
    nbits: int,
    keep_input=False,
    hist=None,
    fresh=False,
    keys_out=True,
):
    """Sorts keys k (unsigned, 1-D) stably, with values v (int64) when given, by every byte
    in which bits_vary (an int, or a function giving it) has a bit set. Returns the sorted
    (k, v); the inputs are clobbered, except k with keep_input (the result is then a new
    array, never k itself). hist: the keys' digit counts (`_keys`), used by the "onesweep"
    kind (counted here when None). fresh: v is `_keys`' index array, left unwritten where
    _iota_first or _cpu_pack says so (the first pass then makes the indices). keys_out=False:
    the sorted keys are not wanted (argsort), and may be returned as None."""
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
    top_table = None  # the top byte's counts (CPU_FUSED_VARY), for the MSD pass
    wide_table = None  # the wide digit's counts (CPU_VARY_WIDE), for _msd_wide
    pack = fresh and _cpu_pack(k.device, n, withv, k.dtype.itemsize)  # v: unwritten
    wide = _argsort_wide(n)
    wide_ok = n >= CPU_WIDE_MIN and (8 * n) >> wide <= CPU_MSD_BUCKET_BYTES
    wide_first = (
        kind == "serial" and CPU_MSD and pack and wide and wide_ok
    ) and k.dtype.itemsize <= 4
    fuse = kind == "serial" and CPU_MSD and CPU_FUSED_VARY and n >= CPU_MSD_MIN and nbits >= 16
    if callable(bits_vary) and wide_first and CPU_VARY_WIDE:
        bits_vary, wide_table = _wide_vary(k, wide)
    elif callable(bits_vary) and fuse:  # (the byte the last such keys had varying on top)
        top = _BYTE_TOP.get(nbits, nbits - 8)
        top_table, bits_vary = _serial_hist_vary(k, k.dtype.type(top))
    elif callable(bits_vary):  # a wait for the device: after the host's setup above
        bits_vary = bits_vary()
    shifts = [sh for sh in range(0, nbits, 8) if (bits_vary >> sh) & (RADIX - 1)]
    if top_table is not None:
        _BYTE_TOP[nbits] = shifts[-1] if shifts else 0
        if not shifts or shifts[-1] != top:
            top_table = None  # (another byte varies on top: the MSD pass counts it)
    per = (8 if pack else k.dtype.itemsize + 8 * withv) * n // RADIX  # a bucket's bytes
    msd = kind == "serial" and CPU_MSD and len(shifts) >= 2 and n >= CPU_MSD_MIN
    if msd and wide_first:
        done = _msd_wide(k, v, k2, v2, bits_vary, keys_out, True, keep_input, wide, wide_table)
        if done is not None:
            return done
    if msd and per <= CPU_MSD_BUCKET_BYTES:
        done = _msd_sort(
            k, v, k2, v2, shifts, withv, keep_input, pack, keys_out, bits_vary, top_table
        )
        wide = CPU_WIDE and n >= CPU_WIDE_MIN and k.dtype.itemsize <= 4
        if done is None and wide and (pack or not withv):
            done = _msd_wide(k, v, k2, v2, bits_vary, keys_out, pack, keep_input)
        if done is not None:
            return done
    if pack and len(shifts) >= 2:  # the LSD passes, packed as well
        return _lsd_packed(k, v, k2, v2, shifts, keys_out)
    if pack:  # one pass or none: the indices first
        _fill_iota(v, None)
    iota = fresh and _iota_first(k.device, n, withv)
    vplan = _value_plan(v, v2, len(shifts)) if kind == "onesweep" and withv else None
    src = k
    for i, shift in enumerate(shifts):
        if vplan is not None:  # the onesweep kind's value buffers (int32 between passes)
            vin, vout = vplan[i]
            one_pass(k, vin, k2, vout, k.dtype.type(shift), withv, events, iota=iota and i == 0)
        else:
            one_pass(k, v, k2, v2, k.dtype.type(shift), withv, events)
        k, k2 = k2, k
        if k2 is src and keep_input:
            k2 = Array._allocate((n,), k.dtype, q, ut)
        if withv and vplan is None:
            v, v2 = v2, v
    if vplan:
        v = vplan[-1][1]
    elif iota:  # no pass ran: the indices are still to be written
        _fill_iota(v, events)
    for ev in events or ():
        ev.wait()
    if k is src and keep_input:  # no pass ran
        k2[...] = k
        k = k2
    return k, (v if withv else None)


def _value_plan(v: Array, v2: Array, passes: int) -> list[tuple[Array, Array]]:
    """(values in, values out) of each onesweep pass from v (int64) to the result: as int32
    (_values32) in the halves of v2 between passes, the last pass widening into v (v2 if
    there is one pass); else v and v2 in turn."""
    n = v.size
    if passes == 0:
        return []
    if not _values32(n) or passes == 1:
        plan, a, b = [], v, v2
        for _ in range(passes):
            plan.append((a, b))
            a, b = b, a
        return plan
    i32 = np.dtype(np.int32)
    halves = [
        Array._make(
            v2._owner, v2._ptr + h * 4 * n, (n,), (4,), i32, v2.sycl_queue, v2.usm_type, v2._host_ok
        )  # fmt: skip
        for h in (0, 1)
    ]
    plan = [(v, halves[0])]
    for i in range(1, passes - 1):
        plan.append((halves[(i - 1) % 2], halves[i % 2]))
    plan.append((halves[(passes - 2) % 2], v))
    return plan


_IOTA_SRC = """
def _iota(item, v):
    i = item.get_id(0)
    v[i] = i
"""


def _fill_iota(v: Array, events) -> None:
    """v[i] = i on v's device."""
    from .._kernel.ranges import Range
    from .replay import launch

    launch(_kernel(_IOTA_SRC, "_iota"), Range(v.size), v, events=events)


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
        _scan_rows(hist, offs, add, "add", True, 0, events)
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
    # the branchy loads here: clamped ones (the onesweep pass's) load the prefetched values
    # too and took more registers (ptxas sm_90, argsort: 136 against 102; tools/sort_ptx.py)
    load, pre0, prefetch = _rank_loads(False)
    for a, b in (
        ("PREFETCH0", pre0 if pre else ""),
        ("LOADKEYS", prefetch if pre else load),
        ("NEXTKEYS", _RANK_NEXT if pre else ""),
    ):
        src = src.replace(a + "\n", b.strip("\n") + "\n" if b else "")
    scat_k = _kernel(
        _unroll(src, items),
        "_rank_scatter",
        _fixed(wg, {"max_registers": maxreg} if maxreg else None),
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
        SHMASK=str(kdt.itemsize * 8 - 1),
        VPRIV=f"vals = K.PrivateArray({items}, np.int64)" if withv else "pass",
        VLOAD="vals[j] = v[ql]" if withv else "pass",
        VPLACE="vl[q] = vals[j]" if withv else "pass",
        VSTORE="v2[dst] = vl[q]" if withv else "pass",
    )


def _rank_locals(K, kdt, withv, items, wg, W, vdt=np.int64, rdt=np.int64):
    """The ranking's local memory (a chunk, or a onesweep tile, is wg * items keys; values
    of dtype vdt; run of dtype rdt)."""
    return [
        K.LocalAccessor(RADIX, rdt),  # run: where the chunk's digits go in the output
        K.LocalAccessor(RADIX * W, np.int32),  # wh: counts, then offsets, per sub-group
        K.LocalAccessor(wg * items, kdt),  # kl: the chunk sorted by digit
        K.LocalAccessor(wg * items if withv else 1, vdt),  # vl
        K.LocalAccessor(RADIX, np.int32),  # ds: where each digit starts in the chunk
        K.LocalAccessor(RADIX, np.int32),  # dc: how many keys of each digit the chunk has
        K.LocalAccessor(W, np.int32),  # wt: the sub-groups' digit totals
        K.LocalAccessor(RADIX * W if _rank_match() == "atomic" else 1, np.uint32),  # mk
    ]


def _onesweep_kernel(k: Array, withv: bool, items: int, v32=False, iota=False):
    sgs = tuple(k.device.sub_group_sizes or [1])
    return _onesweep_kernel_for(k.dtype, withv, items, sgs, v32, iota)


def _onesweep_kernel_for(
    kdt: np.dtype, withv: bool, items: int, sub_group_sizes: tuple, v32=False, iota=False
):
    """The "onesweep" pass kernel for keys of dtype kdt on a device with these sub-group
    sizes, its local memory and group size (tests build the NVIDIA form on any device).
    v32: the values travel as int32 in registers and local memory (whatever the arrays'
    dtypes); iota: the values are the keys' places (the first pass of an argsort), not read."""
    from kapi_lang import kernel_api as K

    sgs, wg, W, one_size = _rank_shape(sub_group_sizes)
    src = _onesweep_src()
    load = _rank_loads(_lean())[0]
    src = _narrow(src.replace("LOADKEYS\n", _dedent4(load).strip("\n") + "\n"))
    src = _persist(_rank_local(src), withv)
    maxreg = _rank_max_registers(True, withv)
    fields = _rank_fields(kdt, withv, items, sgs, wg, one_size)
    if withv and v32:
        fields["VPRIV"] = f"vals = K.PrivateArray({items}, np.int32)"
    if withv and iota:
        fields["VLOAD"] = "vals[j] = np.int32(ql)" if v32 else "vals[j] = ql"
    kern = _kernel(
        _unroll(src, items),
        "_onesweep",
        _fixed(wg, {"max_registers": maxreg} if maxreg else None),
        SCAN=_dedent4(_RANK_SCAN).strip("\n"),
        INCL=str(_OS_INCL),
        AGG=str(_OS_AGG),
        **fields,
    )
    vdt = np.int32 if v32 else np.int64
    lm = _rank_locals(K, kdt, withv, items, wg, W, vdt, np.uint32 if _narrowed() else np.int64)
    lm.append(K.LocalAccessor(2 if _persists(withv) else 1, np.int64))  # tl: tile numbers
    if _ranks_local():  # rs: the keys' ranks (SORT_RANK_LOCAL)
        lm.append(K.LocalAccessor(wg * items, np.uint16))
    return kern, lm, wg


def _keys_in_kernel(hist_positions: int, kdt: np.dtype):
    """`_keys_in`, counting every digit of hist_positions byte positions of each key into
    its extra arguments (hl: local counts; gh: the global table) when that is not 0."""
    if not hist_positions:
        return _kernel(
            _keys_in_src(),
            "_keys_in",
            _fixed(WG),
            **_keys_bodies(_KEY_BODY.strip("\n")),
            KEYBODY=_KEY_BODY.strip("\n"),
            HARGS="",
            HINIT="",
            HFLUSH="",
            HBODY="",
        )
    init, one_count, flush, _ = _hist_parts(hist_positions)
    count = "\n".join(one_count.format(p=p, sh=8 * p) for p in range(hist_positions))
    return _kernel(
        _keys_in_src(),
        "_keys_in",
        _fixed(WG),
        **_keys_bodies(_KEY_BODY.strip("\n")),
        KEYBODY=_KEY_BODY.strip("\n"),
        HARGS=", hl, gh",
        HINIT=init.strip("\n"),
        HFLUSH=flush.strip("\n"),
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
    items = _os_items_values() if withv else _rank_items(True)
    v32 = withv and _values32(n)
    kern, lm, wg = _onesweep_kernel(k, withv, items, v32)
    kern_iota = _onesweep_kernel(k, withv, items, v32, True)[0] if v32 else None
    T = -(-n // (wg * items))
    G = T  # groups launched: one per tile, or SORT_PERSIST per SM, each taking tiles in turn
    if _persists(withv):
        from .sort_kernels import SORT_PERSIST

        G = min(T, SORT_PERSIST * max(1, k.device.max_compute_units // 64))
    dstart = Array._allocate((npos * RADIX,), np.dtype(np.int64), q, ut)
    st = Array._allocate((2 * T * RADIX,), np.dtype(np.uint32), q, ut)
    # int32 tickets: a kernel with 64-bit atomics and sub-group shuffles fails kapi's SPIR-V
    # validation (spirv_tools.c checks such modules against the OpenCL capabilities only)
    tk = Array._allocate((npos,), np.dtype(np.int32), q, ut)
    dscan = _kernel(_DSCAN_SRC, "_dscan", _fixed(RADIX))
    launch(dscan, NdRange(RADIX, RADIX), hist, dstart, np.int64(npos), events=events)
    launch(_kernel(_OSCLEAR_SRC, "_osclear"), Range(T * RADIX), st, tk, np.int64(npos),
           events=events)  # fmt: skip
    mask = k.dtype.type(RADIX - 1)
    state = {"bank": 0}

    def one_pass(k, v, k2, v2, sh, withv, events, iota=False):
        b = state["bank"]
        state["bank"] = 1 - b
        args = (st, tk, dstart, np.int64(n), np.int64(T), np.int64(int(sh) // 8), np.int64(b))
        kk = kern_iota if iota else kern
        launch(kk, NdRange(G * wg, wg), k, v, k2, v2, *args, sh, mask, *lm, events=events)

    return one_pass


def _digit_hist(k: Array, npos: int) -> Array:
    """The digit counts of the keys k (unsigned, sorted as they are) at byte positions
    0..npos-1: an int64 table [position * 256 + digit], by `_keys_in` (writing nothing)."""
    from kapi_lang import kernel_api as K

    from .._kernel.launch import compiled_call_kernel as call_kernel
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
    hl = K.LocalAccessor(npos * RADIX * _hist_parts(npos)[3], np.uint32)
    call_kernel(_keys_in_kernel(npos, k.dtype), NdRange(_keys_groups(k) * WG, WG), k, one, v,
                vo, np.int64(n), z, z, z, sign, absm, inf, allb, z, z, hl, hist)  # fmt: skip
    return hist


def _serial_pass(k, v, k2, v2, sh, withv, events=None):
    """One pass on kapi's CPU device: T work-items each own a contiguous block and count,
    then scatter, it sequentially (a stable counting sort per block), so no barriers."""
    _serial_scatter(k, v, k2, v2, sh, withv, _serial_hist(k, sh))


def _serial_hist(k, sh):
    """The counting half of a CPU pass: (the scanned digit-major table offs, T, B)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    n = k.size
    T, B = P.cpu_blocks(k, n)
    q, ut = k.sycl_queue, k.usm_type
    hist = Array._allocate((1, RADIX * T), np.dtype(np.int64), q, ut)
    offs = Array._allocate((1, RADIX * T), np.dtype(np.int64), q, ut)
    mask = k.dtype.type(RADIX - 1)
    sizes = (np.int64(n), np.int64(B), np.int64(T))
    hist_k = _kernel(_HIST_SERIAL_SRC, "_hist_serial")
    # a work-group per block: the driver's threads balance them
    call_kernel(hist_k, NdRange(T, 1), k, hist.reshape(RADIX * T), *sizes, sh, mask)
    _, add = P.resolve_op("add", "sort")
    _scan_rows(hist, offs, add, "add", True, 0)
    return offs.reshape(RADIX * T), T, B


# On kapi's CPU device, from CPU_MSD_MIN keys, the bits in which the keys differ come from the
# MSD pass's count of the top byte (_HIST_VARY_SRC: each block also ORs and ANDs its keys),
# one read of the keys where kapi.reduce's OR and AND read them twice more and waited for each
# (KAPI_SORT_CPU_FUSED_VARY, read at import; before argsort4 off: no gain on the 2-core dev box,
# 2^24 uint32 argsort 300 against 302 ms; on the 16 Xeon cores, one process, sort 18.5 against
# 20.5 ms and argsort 29.9 against 32.0; with the argsort's wide digit, 30.0 against 27.9-29.0,
# its top byte's count unused: that digit counts itself, see CPU_VARY_WIDE). The byte counted
# is the one that varied on top in the last such keys of the same width (_BYTE_TOP: floats in
# [0, 1) have a constant top byte), counted again where these keys' differs.
# On by default since argsort4's call 2 (16 Xeon cores, 2^20 uint32: sort 2.23 against
# 2.44-2.72 ms, argsort 2.42 against 2.73-2.76; 2^24 sort no slower); 0 turns it off.
CPU_FUSED_VARY = os.environ.get("KAPI_SORT_CPU_FUSED_VARY", "1") != "0"
_BYTE_TOP: dict = {}  # key bits -> the top varying byte's shift of the last fused count's keys


def _serial_hist_vary(k, sh):
    """_serial_hist of the byte at sh with the bits in which the keys differ: (table, vary)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    n = k.size
    T, B = P.cpu_blocks(k, n)
    q, ut = k.sycl_queue, k.usm_type
    hist = Array._allocate((1, RADIX * T), np.dtype(np.int64), q, ut)
    offs = Array._allocate((1, RADIX * T), np.dtype(np.int64), q, ut)
    vo = Array._allocate((2 * T,), np.dtype(np.uint64), q, ut)
    allb = k.dtype.type(np.iinfo(k.dtype).max)
    sizes = (np.int64(n), np.int64(B), np.int64(T))
    kern = _kernel(_HIST_VARY_SRC, "_hist_vary")
    call_kernel(kern, NdRange(T, 1), k, hist.reshape(RADIX * T), vo, *sizes, sh,
                k.dtype.type(RADIX - 1), allb)  # fmt: skip
    _, add = P.resolve_op("add", "sort")
    _scan_rows(hist, offs, add, "add", True, 0)
    ones_zeros = vo.asnumpy().reshape(T, 2)
    ones = int(np.bitwise_or.reduce(ones_zeros[:, 0]))
    zeros = int(np.bitwise_or.reduce(ones_zeros[:, 1]))
    return (offs.reshape(RADIX * T), T, B), ones & zeros


def _serial_scatter(k, v, k2, v2, sh, withv, table):
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    offs, T, B = table
    sizes = (np.int64(k.size), np.int64(B), np.int64(T))
    scat_k = _kernel(
        _SCATTER_SERIAL_SRC, "_scatter_serial", VCOPY="v2[dst] = v[i]" if withv else "pass"
    )
    mask = k.dtype.type(RADIX - 1)
    call_kernel(scat_k, NdRange(T, 1), k, v, k2, v2, offs, *sizes, sh, mask)


# On kapi's CPU device, from CPU_MSD_MIN keys with two or more digit passes, the most
# significant varying digit goes first (one pass over all keys into 256 buckets), then each
# bucket is sorted by the other digits, least significant first, by one work-item in one kernel
# (_bucket_src): a bucket's passes run in its core's cache, so the keys cross memory about
# twice in all instead of three times per digit. Stable, as each pass is. Only where the
# buckets balance (none over 1/(2 x cores) of the keys: skewed keys, such as normal floats'
# few exponents, would leave cores idle) and fit a core's cache (CPU_MSD_BUCKET_BYTES on
# average); otherwise the LSD passes (the top digit's count, one read of the keys, is then
# spent). KAPI_SORT_CPU_MSD=0 turns it off (to compare).
CPU_MSD = os.environ.get("KAPI_SORT_CPU_MSD", "1") != "0"
CPU_MSD_MIN = 1 << 16
CPU_MSD_BUCKET_BYTES = 1 << 20


@functools.cache
def _bucket_src(passes: int, withv: bool) -> str:
    """The kernel sorting each MSD bucket (work-item d: keys offs[d * T] up to the next
    bucket's start) by `passes` digits (shifts S0, S1, ...), alternating between a and b
    (a first: the MSD pass's output), values va/vb along."""
    lines = [
        "def _bucket_lsd(item, a, b, va, vb, offs, n, T, MASK, "
        + ", ".join(f"S{p}" for p in range(passes))
        + "):",
        "    d = item.get_global_id(0)",
        "    lo = offs[d * T]",
        "    hi = offs[(d + 1) * T] if d < 255 else (n & 0x7FFFFFFFFFFFFFFF)",
        "    cnt = K.PrivateArray(256, np.int64)",
    ]
    for p in range(passes):
        src, dst = ("a", "b") if p % 2 == 0 else ("b", "a")
        lines += [
            "    for q in range(256):",
            "        cnt[q] = 0",
            "    i = lo",
            "    while i < hi:",
            f"        cnt[np.int64(({src}[i] >> S{p}) & MASK)] += 1",
            "        i += 1",
            "    s = lo",
            "    for q in range(256):",
            "        c = cnt[q]",
            "        cnt[q] = s",
            "        s += c",
            "    i = lo",
            "    while i < hi:",
            f"        kk = {src}[i]",
            f"        q = np.int64((kk >> S{p}) & MASK)",
            "        o = cnt[q]",
            "        cnt[q] = o + 1",
            f"        {dst}[o] = kk",
        ]
        if withv:
            lines.append(f"        v{dst}[o] = v{src}[i]")
        lines.append("        i += 1")
    return "\n".join(lines) + "\n"


# The CPU argsort of keys of at most 32 bits (n < 2^32; KAPI_SORT_CPU_PACK, read at import; on
# by default): the MSD pass writes each key and its index as one uint64 word (key high, index
# low: _SCATTER_PACK_SRC), so `_keys` writes no index array and the MSD pass reads none, and
# the buckets' passes (_bucket_pack_src) move one 8-byte word per element where the key and
# its int64 index were 12 bytes in two arrays (a bucket's two buffers of 2^16 elements: 1 MiB
# rather than 1.5). The last pass writes the index alone (and the key, where asked) into the
# result. 0: the keys and int64 indices in separate arrays, as before.
CPU_PACK = os.environ.get("KAPI_SORT_CPU_PACK", "1") != "0"


def _cpu_pack(dev, n: int, withv: bool, itemsize: int) -> bool:
    """Whether an argsort of n keys of itemsize bytes packs keys and indices on dev's serial
    kind (then `_keys` leaves the indices unwritten: the packed MSD pass, or `_fill_iota`
    where that does not run, makes them)."""
    return (
        CPU_PACK
        and withv
        and itemsize <= 4
        and n < (1 << 32)
        and _pass_kind(dev, n, True) == "serial"
    )


# The CPU sort's buckets (keys alone) by _bucket_pack_src's kernel (KAPI_SORT_CPU_BUCKET_COUNT_ONCE,
# read at import; on by default): one read of a bucket counts every digit position, and the
# digits' shifts are constants in the source (where _bucket_lsd reads the bucket once per
# digit to count it, and shifts by arguments, each shift checked against the key's width).
# 0: _bucket_lsd, as before.
CPU_BUCKET_COUNT_ONCE = os.environ.get("KAPI_SORT_CPU_BUCKET_COUNT_ONCE", "1") != "0"


# KAPI_SORT_CPU_WC=1 (read at import; off by default): the packed argsort's passes over all
# keys (the MSD pass; the LSD passes but a last one that writes keys too) gather each
# digit's words a cache line at a time in private buffers before writing them
# (_SCATTER_PACK_WC_SRC). On the 2-core EPYC dev box it lost (2^24 keys: uint32 argsort 238
# -> 262 ms, float32 643 -> 1083 ms); it is here to be measured on many cores
# (bench/argsort2.sh).
CPU_WC = os.environ.get("KAPI_SORT_CPU_WC", "0") == "1"


def _pack_first_kernel():
    """The packed argsort's first pass (keys to words), by CPU_WC."""
    if CPU_WC:
        return _kernel(_SCATTER_PACK_WC_SRC, "_scatter_pack", WCWORD=_WC_PACK)
    return _kernel(_SCATTER_PACK_SRC, "_scatter_pack")


# The packed argsort's buckets sort their keys' remaining bits by digits of up to
# CPU_BUCKET_BITS bits (KAPI_SORT_CPU_BUCKET_BITS, read at import; 8 by default: by bytes,
# three passes for the 24 bits below a uint32's top byte; 12: two passes of 12 bits, their
# 4,096 counters in a core's L1).
CPU_BUCKET_BITS = int(os.environ.get("KAPI_SORT_CPU_BUCKET_BITS", "8"))
if CPU_BUCKET_BITS not in range(8, 14):
    raise ValueError(f"KAPI_SORT_CPU_BUCKET_BITS must be 8 to 13, not {CPU_BUCKET_BITS}")


def _bucket_digits(rest: tuple, top: int, vary: int, bits: int = 0) -> tuple:
    """The buckets' digits for the packed argsort: rest (the varying byte shifts below the
    first digit, which starts at bit top) as they are with bits (0: CPU_BUCKET_BITS) 8, else
    the bits from the lowest varying one up to top split into as few digits of at most
    that many bits as they need, of equal width, as (shift, bits)."""
    bits = bits or CPU_BUCKET_BITS
    if bits == 8 or not rest:
        return tuple(rest)
    lo = (vary & -vary).bit_length() - 1
    span = top - lo
    parts = -(-span // bits)
    if parts >= len(rest):
        return tuple(rest)
    wd = -(-span // parts)
    return tuple((min(lo + p * wd, top - wd), wd) for p in range(parts))


@functools.cache
def _digit_of_word(digit: tuple, base: int) -> str:
    """The source of digit (shift, bits) of the packed word w (the key from bit base) as an
    int64: the buckets' kernels' counter index."""
    sh, wd = digit
    return f"np.int64((w >> np.uint64({base + sh})) & np.uint64({(1 << wd) - 1}))"


def _bucket_pack_src(shifts: tuple, keys_out: str | None, base: int = 32, nb: int = 256) -> str:
    """The kernel sorting each MSD bucket of packed words (key << 32 | index) by the key's
    digits at `shifts` (ascending, constants in the source), alternating between a and b (a
    first: the MSD pass's output); one read of the bucket counts every digit position. The
    last pass writes the index alone (the result's int64 memory seen as uint64) and, with
    keys_out (the key dtype's NumPy name), the key into kout. A shift may be (shift, bits)
    for a digit of other than 8 bits (_bucket_digits). base=0: the words are keys
    alone (a sort: CPU_BUCKET_COUNT_ONCE), which the last pass writes as they are. nb: the
    buckets (work-items), 2^CPU_WIDE for _msd_wide's."""
    m63 = "0x7FFFFFFFFFFFFFFF"
    digits = [(s, 8) if isinstance(s, int) else s for s in shifts]  # (shift, bits)
    at = [0]
    for _, wd in digits:
        at.append(at[-1] + (1 << wd))  # each digit's counters in cnt
    lines = [
        "def _bucket_pack(item, a, b, kout, offs, n, T):",
        "    d = item.get_global_id(0)",
        f"    lo = offs[d * T] & {m63}",
        f"    hi = (offs[(d + 1) * T] if d < {nb - 1} else n) & {m63}",
        f"    cnt = K.PrivateArray({at[-1]}, np.int64, fill_zeros=True)",
        "    i = lo",
        "    while i < hi:",
        "        w = a[i]",
    ]

    def digit(p):
        return _digit_of_word(digits[p], base)

    for p in range(len(digits)):
        lines.append(f"        cnt[{at[p]} + {digit(p)}] += 1")
    lines += ["        i += 1"]
    for p, (_, wd) in enumerate(digits):
        lines += [
            "    s = lo",
            f"    for q in range({1 << wd}):",
            f"        c = cnt[{at[p]} + q]",
            f"        cnt[{at[p]} + q] = s",
            "        s += c",
        ]
    for p in range(len(digits)):
        src, dst = ("a", "b") if p % 2 == 0 else ("b", "a")
        last = p == len(digits) - 1
        lines += [
            "    i = lo",
            "    while i < hi:",
            f"        w = {src}[i]",
            f"        q = {at[p]} + {digit(p)}",
            f"        o = cnt[q] & {m63}",
            "        cnt[q] = o + 1",
        ]
        if not last or not base:
            lines.append(f"        {dst}[o] = w")
        else:
            lines.append(f"        {dst}[o] = w & np.uint64(0xFFFFFFFF)")
            if keys_out:
                lines.append(f"        kout[o] = np.{keys_out}(w >> np.uint64(32))")
        lines.append("        i += 1")
    return "\n".join(lines) + "\n"


# The buckets' passes through a scratch region per worker (KAPI_SORT_CPU_SCRATCH, read at
# import): as many work-items as the device has compute units each take buckets by a ticket
# (an atomic counter over the buckets, largest first) and move each bucket's words between two
# regions of their own (X and Y, as large as the largest bucket), reused from bucket to bucket
# so that they stay in the core's L2: the bucket's words are read once from the MSD pass's
# output and written once into the result, where the buckets' kernel (_bucket_pack_src)
# ping-pongs them between two arrays of n words (each bucket's region in both coming from, and
# going back to, memory). 1: the last pass writes the result's places directly; 2: the last
# pass writes into the scratch too, then one sequential copy into the result (the default);
# 0: off. Only where a region of the largest bucket fits CPU_SCRATCH_BYTES (else the buckets'
# kernel). On the GPU machine's 16 Xeon cores (bench/RESULTS.md, argsort3, call 1), 2^24
# uint32: argsort 31.4 ms with 2, 41.0 with 1, 36.3 without; sort 21.7, 28.9 and 26.2 ms. The
# Xeon's cores are slow at L2 misses (one thread: 4 ns per key per pass of the buckets' kernel
# over words, where a Zen 4 core takes 1).
CPU_SCRATCH = int(os.environ.get("KAPI_SORT_CPU_SCRATCH", "2"))
if CPU_SCRATCH not in (0, 1, 2):
    raise ValueError(f"KAPI_SORT_CPU_SCRATCH must be 0, 1 or 2, not {CPU_SCRATCH}")
# The largest region the scratch takes: 8 MiB. With 4 MiB, uniform float32's largest buckets
# (half the keys lie in [0.5, 1)) outgrew it at 2^27 keys by the widest digit (14 bits: 2^19
# keys, 4 MiB and a line of words), and the argsort took 1,421 ms on the 16 Xeon cores against
# 241 ms with 8 MiB (bench/RESULTS.md, eighteenth session); 2^25 of them by a 12-bit digit
# 370 against 69 ms there, 378 against 274 on the 2-core dev box.
CPU_SCRATCH_BYTES = 8 << 20


@functools.cache
def _bucket_scratch_src(
    shifts: tuple, keys_out: str | None, base: int, nb: int, mode: int, nt: int = 0
) -> str:
    """_bucket_pack_src's passes by persistent work-items (CPU_SCRATCH): work-item g takes
    bucket order[t] for each ticket t it draws from tick[0] (until nb), counts its digits in
    one read, then moves its words from a (the MSD pass's output) through its scratch regions
    s[g * 2 * SB ...] (X) and s[g * 2 * SB + SB ...] (Y), the last pass writing the result
    (mode 1) or X/Y then copying them out in order (mode 2; nt: the result's elements a cache
    line, its whole lines then written by streaming stores; 0: none)."""
    m63 = "0x7FFFFFFFFFFFFFFF"
    digits = [(s_, 8) if isinstance(s_, int) else s_ for s_ in shifts]
    at = [0]
    for _, wd in digits:
        at.append(at[-1] + (1 << wd))
    P_ = len(digits)
    if P_ == 1:
        mode = 1  # (one pass: straight into the result)
    lines = [
        "def _bucket_scr(item, a, out, kout, s, tick, order, offs, n, T, SB):",
        "    g = item.get_global_id(0)",
        "    x0 = g * 2 * (SB & 0x7FFFFFFFFFFFFFFF)",
        "    y0 = x0 + (SB & 0x7FFFFFFFFFFFFFFF)",
        f"    cnt = K.PrivateArray({at[-1]}, np.int64)",
        "    t = np.int64(K.AtomicRef(tick, 0).fetch_add(np.int64(1)))",
        f"    while t < {nb}:",
        "        d = order[t]",
        f"        lo = offs[d * T] & {m63}",
        f"        hi = (offs[(d + 1) * T] if d < {nb - 1} else n) & {m63}",
        "        m = hi - lo",
        f"        for q in range({at[-1]}):",
        "            cnt[q] = 0",
        "        i = lo",
        "        while i < hi:",
        "            w = a[i]",
    ]

    def digit(p):
        return _digit_of_word(digits[p], base)

    for p in range(P_):
        lines.append(f"            cnt[{at[p]} + {digit(p)}] += 1")
    lines.append("            i += 1")
    # pass p reads from: a at lo (p == 0), else X (p odd) / Y (p even); writes X (p even) /
    # Y (p odd), or the result at lo (the last pass, mode 1)
    for p, (_, wd) in enumerate(digits):
        last = p == P_ - 1
        start = "lo" if (last and mode == 1) else ("x0" if p % 2 == 0 else "y0")
        lines += [
            f"        c0 = {start}",
            f"        for q in range({1 << wd}):",
            f"            c = cnt[{at[p]} + q]",
            f"            cnt[{at[p]} + q] = c0",
            "            c0 += c",
        ]
    for p in range(P_):
        last = p == P_ - 1
        if p == 0:
            src, sb = "a", "lo"
        else:
            src, sb = "s", ("x0" if p % 2 == 1 else "y0")
        dst = "out" if (last and mode == 1) else "s"
        lines += [
            f"        i = {sb}",
            f"        while i < {sb} + m:",
            f"            w = {src}[i]",
            f"            q = {at[p]} + {digit(p)}",
            f"            o = cnt[q] & {m63}",
            "            cnt[q] = o + 1",
        ]
        if last and mode == 1 and base:
            lines.append(f"            {dst}[o] = w & np.uint64(0xFFFFFFFF)")
            if keys_out:
                lines.append(f"            kout[o] = np.{keys_out}(w >> np.uint64(32))")
        else:
            lines.append(f"            {dst}[o] = w")
        lines.append("            i += 1")
    if mode == 2:
        fb = "x0" if (P_ - 1) % 2 == 0 else "y0"

        def copy(bound, store):
            out = [f"        while j < {bound}:", f"            y = s[{fb} + j]"]
            if base:
                out.append(store("y & np.uint64(0xFFFFFFFF)"))
                if keys_out:
                    out.append(f"            kout[lo + j] = np.{keys_out}(y >> np.uint64(32))")
            else:
                out.append(store("y"))
            return out + ["            j += 1"]

        lines.append("        j = 0")
        if nt:
            # the words before the first whole line of the bucket's places by plain stores, the
            # whole lines by streaming stores (vector stores, aligned), the rest plain
            lines += [
                f"        h = min(({nt} - (lo & {nt - 1})) & {nt - 1}, m)",
                f"        e = (h + (m - h) // {nt} * {nt}) & {m63}",
            ]
            lines += copy("h", lambda v: f"            out[lo + j] = {v}")
            lines += copy(
                "e", lambda v: f"            K.store_nontemporal(out, (lo + j) & {m63}, {v})"
            )
        lines += copy("m", lambda v: f"            out[lo + j] = {v}")
    lines.append("        t = np.int64(K.AtomicRef(tick, 0).fetch_add(np.int64(1)))")
    return "\n".join(lines) + "\n"


# The buckets' copy into the result (CPU_SCRATCH 2) by streaming stores (KAPI_SORT_CPU_STREAMING,
# read at import: "auto", results of streaming.pays' size; "1" always; "0" never). Argsort of
# 2^24 keys on the 16 Xeon cores (bench/sort_ab.py): 1.03-1.05x alone, 1.35x uint32 and 1.20x
# float32 with the write-combining pass above (1.27x and 1.17x without); on the 2-core dev
# box 0.98-1.02x.
CPU_STREAMING = _streaming.parse(
    "KAPI_SORT_CPU_STREAMING", os.environ.get("KAPI_SORT_CPU_STREAMING", "auto")
)


def _streams_result(out: Array, n: int, device) -> bool:
    """Whether the buckets' copy writes the n-element result out by streaming stores."""
    return _streaming.pays(CPU_STREAMING, n * out.dtype.itemsize, _msd_cores(device))


def _scratch_plan(starts, n: int):
    """The scratch regions' words (a multiple of 8) and the buckets' order, largest first, for
    _bucket_scratch, from the buckets' first places (starts, on the host) in n keys; None
    where CPU_SCRATCH is off or the largest bucket does not fit CPU_SCRATCH_BYTES."""
    if not CPU_SCRATCH:
        return None
    sizes = np.diff(np.append(starts, n))
    sb = -(-int(sizes.max()) // 8) * 8 + 8  # whole cache lines, one spare
    if sb * 8 > CPU_SCRATCH_BYTES:
        return None
    return sb, np.argsort(-sizes, kind="stable").astype(np.int64)


def _bucket_scratch(plan, a, out, kout, offs, n, T, src_args, nb) -> None:
    """The buckets' passes by _bucket_scratch_src (CPU_SCRATCH) from a (the MSD pass's output)
    into out (and kout): plan from _scratch_plan; src_args: (shifts, keys_out, base)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    sb, order_h = plan
    q, ut = a.sycl_queue, a.usm_type
    groups = max(1, min(nb, _msd_cores(a.device)))
    scr = Array._allocate((groups * 2 * sb,), a.dtype, q, ut)
    tick = Array._allocate((1,), np.dtype(np.int64), q, ut)
    tick[...] = 0
    order = Array._allocate((nb,), np.dtype(np.int64), q, ut)
    order[...] = order_h
    # (keys of 1 or 2 bytes alone have one pass left in their buckets, which always writes
    # the result: mode 1 whatever CPU_SCRATCH says)
    mode = CPU_SCRATCH
    nt = 64 // out.dtype.itemsize if _streams_result(out, n, a.device) else 0
    kern = _kernel(_bucket_scratch_src(*src_args, nb, mode, nt), "_bucket_scr")
    call_kernel(
        kern, NdRange(groups, 1), a, out, kout, scr, tick, order, offs, np.int64(n),
        np.int64(T), np.int64(sb),
    )  # fmt: skip


def _msd_cores(device) -> int:
    """The cores the buckets must balance over (a function: the tests fix it, so that their
    keys take the same scheme on a 2-core and a 32-core machine)."""
    return max(1, device.max_compute_units)


def _msd_sort(
    k, v, k2, v2, shifts, withv, keep_input, pack=False, keys_out=True, vary=0, table=None
):
    """The MSD-then-buckets scheme (CPU_MSD) over the varying byte shifts (ascending, two or
    more), with _radix_passes' buffers (v, v2: a placeholder without values): the sorted
    (k, v) as _radix_passes returns them, or None (nothing written) when the top digit's
    buckets do not balance. pack: keys and indices as one word (CPU_PACK; v unwritten), the
    keys returned only with keys_out (else None)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    n = k.size
    q, ut = k.sycl_queue, k.usm_type
    a, va = k2, v2
    top = k.dtype.type(shifts[-1])
    table = table or _serial_hist(k, top)
    offs, T, _ = table
    starts = offs.asnumpy()[::T]  # each bucket's first place (the device is the host's CPU)
    largest = int(np.diff(np.append(starts, n)).max())
    if largest > n // (2 * _msd_cores(k.device)):
        return None  # unbalanced: the LSD passes
    if pack:
        return _msd_packed(k, v, k2, v2, shifts, table, keys_out, vary, starts)
    _serial_scatter(k, v, a, va, top, withv, table)
    b = Array._allocate((n,), k.dtype, q, ut) if keep_input else k
    vb = v
    rest = shifts[:-1]
    if not withv and CPU_BUCKET_COUNT_ONCE:
        plan = _scratch_plan(starts, n)
        if plan is not None:
            _bucket_scratch(plan, a, b, a, offs, n, T, (tuple(rest), None, 0), RADIX)
            return b, None
        kern = _kernel(_bucket_pack_src(tuple(rest), None, 0), "_bucket_pack")
        call_kernel(kern, NdRange(RADIX, 1), a, b, a, offs, np.int64(n), np.int64(T))
        return b if len(rest) % 2 else a, None
    kern = _kernel(_bucket_src(len(rest), withv), "_bucket_lsd")
    call_kernel(
        kern, NdRange(RADIX, 1), a, b, va, vb, offs, np.int64(n), np.int64(T),
        k.dtype.type(RADIX - 1), *(k.dtype.type(s) for s in rest),
    )  # fmt: skip
    if len(rest) % 2:
        return b, (vb if withv else None)
    return a, (va if withv else None)


def _msd_packed(k, v, k2, v2, shifts, table, keys_out, vary, starts):
    """_msd_sort's packed form: the MSD pass writes words (key << 32 | index) into the one of
    v2 and v (both n int64, seen as uint64) that leaves the buckets' last pass writing v;
    v gets the indices, k2 the sorted keys with keys_out; starts: each bucket's first place
    (host)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    n = k.size
    offs, T, B = table
    u64 = np.dtype(np.uint64)
    out, scratch = _as_dtype(v, u64), _as_dtype(v2, u64)
    digits = _bucket_digits(tuple(shifts[:-1]), int(shifts[-1]), vary)
    plan = _scratch_plan(starts, n)
    a, b = (out, scratch) if len(digits) % 2 == 0 and plan is None else (scratch, out)
    sizes = (np.int64(n), np.int64(B), np.int64(T))
    top, mask = k.dtype.type(shifts[-1]), k.dtype.type(RADIX - 1)
    scat = _pack_first_kernel()
    call_kernel(scat, NdRange(T, 1), k, a, offs, *sizes, top, mask)
    kout = k2 if keys_out else Array._allocate((1,), k.dtype, k.sycl_queue, k.usm_type)
    kname = k.dtype.name if keys_out else None
    if plan is not None:
        _bucket_scratch(plan, a, b, kout, offs, n, T, (digits, kname, 32), RADIX)
        return (k2 if keys_out else None), v
    src = _bucket_pack_src(digits, kname)
    kern = _kernel(src, "_bucket_pack")
    call_kernel(kern, NdRange(RADIX, 1), a, b, kout, offs, np.int64(n), np.int64(T))
    return (k2 if keys_out else None), v


# Sorts and packed argsorts of keys of up to 32 bits whose top varying byte does not balance
# (floats: few exponents, most keys in a few of its buckets) take a wider first digit,
# CPU_WIDE bits ending at the top varying bit (KAPI_SORT_CPU_WIDE, read at import: 9 to 14;
# 0, the default: none, the LSD passes), where its 2^CPU_WIDE buckets balance: uniform [0, 1)
# float32 put half the keys in one exponent, which 12 bits split by 5 mantissa bits into 32
# buckets of 1/64. Off by default: 2^24 uniform float32 on the 2-core dev box, sort 216 ->
# 158 ms and argsort 1.4x faster with 12, but on the GPU machine's 16 Xeon cores (their 4,096
# streams each in the first pass) sort 37.7-44.4 ms against 35.6-38.8 without and argsort
# 54.2-58.7 against 53.1-54.7 (bench/RESULTS.md, argsort2).
# From CPU_WIDE_MIN keys only (1,024 per bucket on average): below it, with buckets of a few
# hundred keys, the 2-core dev box ran 2^20 float32 no faster than the LSD passes.
CPU_WIDE = int(os.environ.get("KAPI_SORT_CPU_WIDE", "0"))
CPU_WIDE_MIN = 1 << 22
if CPU_WIDE not in (0, 9, 10, 11, 12, 13, 14):
    raise ValueError(f"KAPI_SORT_CPU_WIDE must be 0 or 9..14, not {CPU_WIDE}")


def _msd_wide(k, v, k2, v2, vary: int, keys_out, pack=True, keep_input=False, wide=0, counted=None):
    """The packed MSD scheme (_msd_packed) by a first digit of CPU_WIDE bits ending at the top
    varying bit of the keys k (of at most 32 bits; vary: the bits in which they differ), then
    each of its 2^CPU_WIDE buckets by the bytes below it: _radix_passes' (k, v), or None
    (nothing written) when its buckets do not balance either. pack=False: a sort of the keys
    alone (k2 and k, or a new array with keep_input, its buffers; v unused). wide: the
    digit's bits (0: CPU_WIDE). counted: _wide_vary's table of this digit, or None (it is
    counted here)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    n = k.size
    q, ut = k.sycl_queue, k.usm_type
    wide = wide or CPU_WIDE
    low = vary.bit_length() - wide
    # the bytes below the wide digit in which keys differ (the one at `low`'s byte may hold
    # some of the wide digit's bits: constant within a bucket, so harmless)
    rest = tuple(
        sh for sh in range(0, max(low, 0), 8) if (vary >> sh) & ((1 << min(8, low - sh)) - 1)
    )
    if low < 8 or not rest:
        return None  # (few bits below the digit: the LSD passes are as good)
    nb = 1 << wide
    cores = _msd_cores(k.device)
    kt = k.dtype.type
    nbs = str(nb)
    if counted is not None and counted[0] == (low, wide):
        _, offs, T, B = counted
    else:
        T, B = _wide_blocks(k, n)
        hist = Array._allocate((1, nb * T), np.dtype(np.int64), q, ut)
        offs = Array._allocate((1, nb * T), np.dtype(np.int64), q, ut)
        hk = _kernel(_HIST_WIDE_SRC, "_hist_wide", NB=nbs)
        sizes = (np.int64(n), np.int64(B), np.int64(T))
        call_kernel(hk, NdRange(T, 1), k, hist.reshape(nb * T), *sizes, kt(low), kt(nb - 1))
        offs = _wide_scan(hist, offs)
    sizes = (np.int64(n), np.int64(B), np.int64(T))
    starts = np.array(_on_host(offs)[::T])
    if int(np.diff(np.append(starts, n)).max()) > n // (2 * cores):
        return None
    plan = _scratch_plan(starts, n)
    if not pack:  # keys alone: k2 first, then k (unless it must stay)
        a = k2
        b = Array._allocate((n,), k.dtype, q, ut) if keep_input else k
        sk = _kernel(_SCATTER_WIDE_SRC, "_scatter_wide", NB=nbs, WIDEWORD=_WC_MOVE)
        call_kernel(sk, NdRange(T, 1), k, a, offs, *sizes, kt(low), kt(nb - 1))
        if plan is not None:
            _bucket_scratch(plan, a, b, a, offs, n, T, (rest, None, 0), nb)
            return b, None
        kern = _kernel(_bucket_pack_src(rest, None, 0, nb), "_bucket_pack")
        call_kernel(kern, NdRange(nb, 1), a, b, a, offs, np.int64(n), np.int64(T))
        return (b if len(rest) % 2 else a), None
    u64 = np.dtype(np.uint64)
    out, scratch = _as_dtype(v, u64), _as_dtype(v2, u64)
    big = wide >= CPU_ARGSORT_WIDE_BIG and n >= CPU_WIDE_BIG_MIN  # (its buckets' digits)
    digits = _bucket_digits(rest, low, vary, CPU_BUCKET_BITS_BIG if big else 0)
    a, b = (out, scratch) if len(digits) % 2 == 0 and plan is None else (scratch, out)
    _scatter_wide_words(k, a, offs, sizes, kt(low), kt(nb - 1), T, nb)
    kout = k2 if keys_out else Array._allocate((1,), k.dtype, q, ut)
    kname = k.dtype.name if keys_out else None
    if plan is not None:
        _bucket_scratch(plan, a, b, kout, offs, n, T, (digits, kname, 32), nb)
        return (k2 if keys_out else None), v
    src = _bucket_pack_src(digits, kname, 32, nb)
    kern = _kernel(src, "_bucket_pack")
    call_kernel(kern, NdRange(nb, 1), a, b, kout, offs, np.int64(n), np.int64(T))
    return (k2 if keys_out else None), v


# The packed argsort's pass by the wide digit through write-combining buffers
# (_SCATTER_WIDE_WC_SRC; KAPI_SORT_CPU_WIDE_WC, read at import: "auto", on devices of at least
# CPU_WIDE_WC_CORES cores; "1" always; "0" never: each key stored to its place). Argsort of
# 2^24 keys, one process (bench/sort_ab.py, bench/RESULTS.md): on the GPU machine's 16 Xeon
# cores uint32 1.27x and uniform float32 1.17x (1.32x and 1.11x at 2^25), where the 4,096
# places a key may go to were each an open line read from memory before being written; on
# the 2-core EPYC dev box, whose two cores do not fill its memory's bandwidth, 0.96x and
# 0.69x (the buffers' extra work per key). The lines written plainly instead of by streaming
# stores: 0.92-1.05x on the 16 cores, so the buffers pay by the reads they save.
CPU_WIDE_WC = _streaming.parse(
    "KAPI_SORT_CPU_WIDE_WC", os.environ.get("KAPI_SORT_CPU_WIDE_WC", "auto")
)
CPU_WIDE_WC_CORES = 8


def _scatter_wide_words(k, w, offs, sizes, low, mask, T: int, nb: int) -> None:
    """The packed argsort's pass by the wide digit: each key of k, packed with its index, to
    its place in w (offs: each digit's first place per block; sizes: n, B, T)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    wc = CPU_WIDE_WC == "1" or (CPU_WIDE_WC == "auto" and _msd_cores(k.device) >= CPU_WIDE_WC_CORES)
    if not wc:
        sk = _kernel(_SCATTER_WIDE_SRC, "_scatter_wide", NB=str(nb), WIDEWORD=_WC_PACK)
        call_kernel(sk, NdRange(T, 1), k, w, offs, *sizes, low, mask)
        return
    # (the buffers: a line per digit per block, from the memory pool, so the pages are
    # touched once per process)
    buf = Array._allocate((T * nb * 8,), np.dtype(np.uint64), k.sycl_queue, k.usm_type)
    sk = _kernel(_SCATTER_WIDE_WC_SRC, "_scatter_wide_wc", NB=str(nb), WIDEWORD=_WC_PACK)
    call_kernel(sk, NdRange(T, 1), k, w, offs, buf, *sizes, low, mask)


# The packed argsort (CPU_PACK) by a first digit of CPU_ARGSORT_WIDE bits ending at the top
# varying bit even where the top byte's buckets balance (KAPI_SORT_CPU_ARGSORT_WIDE, read at
# import: 9 to 14; 0, the default: by the top byte): 2^CPU_ARGSORT_WIDE buckets of fewer keys
# (2^24 keys by 10 bits: 2^14 per bucket, 128 KiB of words, where a byte's buckets are 512 KiB)
# whose passes stay in a core's L2, for 2^CPU_ARGSORT_WIDE write streams in the first pass.
# From CPU_WIDE_MIN keys, up to buckets of CPU_MSD_BUCKET_BYTES on average (2^27 keys by 10
# bits). 10 by default: on the 16 Xeon cores (bench/RESULTS.md, argsort3, call 1), with the
# scratch (CPU_SCRATCH=2), 2^24 uint32 argsort 28.5 ms against 31.4 by the top byte, uniform
# [0, 1) float32 35.4 ms against 53.2 (its top byte's buckets do not balance: the LSD passes);
# call 2, against both off: uint32 27.9-29.0 ms against 35.4-36.8, float32 36.9-37.4 against
# 52.6-53.3. 9 bits tie on uint32 but leave those floats unbalanced on 16 cores.
CPU_ARGSORT_WIDE = int(os.environ.get("KAPI_SORT_CPU_ARGSORT_WIDE", "10"))
if CPU_ARGSORT_WIDE not in (0, 9, 10, 11, 12, 13, 14):
    raise ValueError(f"KAPI_SORT_CPU_ARGSORT_WIDE must be 0 or 9..14, not {CPU_ARGSORT_WIDE}")
# From CPU_WIDE_BIG_MIN keys that first digit is CPU_ARGSORT_WIDE_BIG bits wide instead
# (KAPI_SORT_CPU_ARGSORT_WIDE_BIG, read at import: 0, none, or 9..14; 12 by default), and the
# buckets go by digits of up to CPU_BUCKET_BITS_BIG bits where that digit is wider than 10:
# 2^24 keys by 12 bits are 4,096 buckets of 4,096 keys (32 KiB of words, a core's L1) sorted
# by two 10-bit digits. On the 16 Xeon cores (bench/RESULTS.md, argsort4, calls 1 and 2), 2^24
# uniform [0, 1) float32 argsort 25.2-25.8 / 29.7-32.2 ms against 29.8-34.0 / 36.9-40.3 by 10
# bits (its skewed buckets finer), uint32 a tie (21.4 / 28.8-28.9 against 22.6-23.9 / 27.7).
CPU_ARGSORT_WIDE_BIG = int(os.environ.get("KAPI_SORT_CPU_ARGSORT_WIDE_BIG", "12"))
if CPU_ARGSORT_WIDE_BIG not in (0, 9, 10, 11, 12, 13, 14):
    raise ValueError(
        f"KAPI_SORT_CPU_ARGSORT_WIDE_BIG must be 0 or 9..14, not {CPU_ARGSORT_WIDE_BIG}"
    )
CPU_WIDE_BIG_MIN = 1 << 24
CPU_BUCKET_BITS_BIG = 10
# From twice CPU_WIDE_BIG_MIN keys on, the digit widens by a bit each time the keys double (up
# to 14 bits), so that its buckets keep their size (CPU_WIDE_BIG_SCALE; False: the same digit
# at every size). 2^25 uniform [0, 1) float32 by 12 bits put 2^19 keys (4 MiB of words) in
# each of the 32 buckets of [0.5, 1); on the 16 Xeon cores that argsort took 55-56 ms by 13
# bits, against 276 ms by 12 with the scratch then at 4 MiB (the buckets' kernel without it)
# and 69 ms by 12 with it at 8 MiB (bench/RESULTS.md, eighteenth session).
CPU_WIDE_BIG_SCALE = True


def _argsort_wide(n: int) -> int:
    """The packed argsort's first digit's bits for n keys (0: none)."""
    if CPU_ARGSORT_WIDE and CPU_ARGSORT_WIDE_BIG and n >= CPU_WIDE_BIG_MIN:
        more = (n // CPU_WIDE_BIG_MIN).bit_length() - 1 if CPU_WIDE_BIG_SCALE else 0
        return min(14, CPU_ARGSORT_WIDE_BIG + more)
    return CPU_ARGSORT_WIDE


# Tried for the packed argsort's pass by the wide digit and dropped (bench/RESULTS.md,
# argsort4): sweeps over chunks writing a range of digits each (two sweeps 24.9 ms against
# 22.6 for 2^24 uint32 on the 16 Xeon cores, four 39.4), the chunk into 4 or 16 regions of
# its own first, then each region to its digits (22.6 and 23.4 ms: no gain), and loads one
# line ahead in each digit's run.


# The packed argsort by the wide first digit (CPU_ARGSORT_WIDE) finds the bits in which the
# keys differ in the same read of the keys that counts that digit (_HIST_WIDE_VARY_SRC), where
# kapi.reduce's OR and AND read them twice more (each waited for) before the count
# (KAPI_SORT_CPU_VARY_WIDE, read at import; 0: the reductions, as before). The digit ends at
# the top varying bit, which the count cannot know before it: it takes the top varying bit of
# the last such argsort's keys of the same width (the width's top bit at first) and, where the
# keys' own differs, is counted again at the right place (one read of the keys, as the
# reductions' two were).
CPU_VARY_WIDE = os.environ.get("KAPI_SORT_CPU_VARY_WIDE", "1") != "0"
_WIDE_TOP: dict = {}  # key bits -> the bit length of the last packed wide argsort's vary


def _on_host(x: Array) -> np.ndarray:
    """x's memory as NumPy sees it, with no copy where the host can address it (kapi's CPU
    device), after the queue's work."""
    return x._host_view() if x._host_ok else x.asnumpy()


def _wide_blocks(k: Array, n: int) -> tuple[int, int]:
    """(T, B): the wide digit's blocks over n keys (its count and scatter)."""
    cores = _msd_cores(k.device)
    return P.cpu_blocks(k, n, max(4096, n // max(64, 4 * cores)))


def _wide_vary(k: Array, wide: int):
    """(vary, counted) of the keys k from one read (CPU_VARY_WIDE): the bits in
    which they differ and, for _msd_wide, ((low, wide), offs, T, B), the scanned table of the
    wide-bit digit from bit low, where low is that digit's place for these keys (else None:
    it ended elsewhere than guessed)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    n = k.size
    q, ut = k.sycl_queue, k.usm_type
    nbits = 8 * k.dtype.itemsize
    top = _WIDE_TOP.get(nbits, nbits)
    low = top - wide
    nb = 1 << wide
    T, B = _wide_blocks(k, n)
    hist = Array._allocate((1, nb * T), np.dtype(np.int64), q, ut)
    vo = Array._allocate((2 * T,), np.dtype(np.uint64), q, ut)
    kt = k.dtype.type
    sizes = (np.int64(n), np.int64(B), np.int64(T))
    kern = _kernel(_HIST_WIDE_VARY_SRC, "_hist_wide_vary", NB=str(nb))
    call_kernel(kern, NdRange(T, 1), k, hist.reshape(nb * T), vo, *sizes, kt(low), kt(nb - 1),
                kt(np.iinfo(k.dtype).max))  # fmt: skip
    oz = _on_host(vo).reshape(T, 2)
    vary = int(np.bitwise_or.reduce(oz[:, 0])) & int(np.bitwise_or.reduce(oz[:, 1]))
    got = max(vary.bit_length(), wide)
    _WIDE_TOP[nbits] = got
    if got != top:
        return vary, None
    offs = Array._allocate((1, nb * T), np.dtype(np.int64), q, ut)
    return vary, ((low, wide), _wide_scan(hist, offs), T, B)


# The wide digit's table (1,024 digits x 64 blocks for 2^22-2^24 keys) scanned by the host,
# which reads its bucket starts anyway, where kapi's scan took three launches
# (KAPI_SORT_CPU_HOST_SCAN, read at import; 0: the scan's kernels, as before), up to
# CPU_HOST_SCAN_MAX entries: the 12-bit digit's 4,096 x 64 took the host 1.1 ms more than the
# 10-bit digit's on the 16 Xeon cores (argsort4, call 2), and kapi's scan 0.8 ms less in all.
CPU_HOST_SCAN = os.environ.get("KAPI_SORT_CPU_HOST_SCAN", "1") != "0"
CPU_HOST_SCAN_MAX = 1 << 17


def _wide_scan(hist: Array, offs: Array) -> Array:
    """The exclusive scan of hist (1, m) into offs (1, m), returned as offs (m,): by the host
    (CPU_HOST_SCAN, where the memory is the host's) or by kapi's scan."""
    m = hist.size
    if CPU_HOST_SCAN and m <= CPU_HOST_SCAN_MAX and hist._host_ok and offs._host_ok:
        h, o = hist._host_view().reshape(m), offs._host_view().reshape(m)
        o[0] = 0
        np.cumsum(h[:-1], out=o[1:])
    else:
        _, add = P.resolve_op("add", "sort")
        _scan_rows(hist, offs, add, "add", True, 0)
    return offs.reshape(m)


def _lsd_packed(k, v, k2, v2, shifts, keys_out):
    """The LSD passes of the packed argsort (CPU_PACK, two passes or more; v unwritten): the
    first writes words (key << 32 | index), the others move words, the last writing the
    indices into v (and the keys into k2, with keys_out); v and v2 (n int64 each, seen as
    uint64) alternate so that the last pass ends in v. Returns _radix_passes' (k, v)."""
    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange

    n = k.size
    q, ut = k.sycl_queue, k.usm_type
    u64 = np.dtype(np.uint64)
    out, scratch = _as_dtype(v, u64), _as_dtype(v2, u64)
    w, w2 = (out, scratch) if len(shifts) % 2 else (scratch, out)
    offs, T, B = _serial_hist(k, k.dtype.type(shifts[0]))
    sizes = (np.int64(n), np.int64(B), np.int64(T))
    scat = _pack_first_kernel()
    call_kernel(
        scat, NdRange(T, 1), k, w, offs, *sizes, k.dtype.type(shifts[0]), k.dtype.type(RADIX - 1)
    )
    none = Array._allocate((1,), u64, q, ut)
    kout = k2 if keys_out else Array._allocate((1,), k.dtype, q, ut)
    for i, sh in enumerate(shifts[1:], 1):
        wsh = np.uint64(32 + sh)
        table = _serial_hist(w, wsh)
        last = i == len(shifts) - 1
        if CPU_WC and not (last and keys_out):  # words out a cache line at a time
            offs, T, B = table
            kern = _kernel(
                _SCATTER_PACK_WC_SRC, "_scatter_pack", WCWORD=_WC_INDEX if last else _WC_MOVE
            )
            call_kernel(kern, NdRange(T, 1), w, w2, offs, *sizes, wsh, np.uint64(RADIX - 1))
        elif not last:
            _serial_scatter(w, none, w2, none, wsh, False, table)
        else:
            offs, T, B = table  # the indices (and keys) out of the words
            kern = _kernel(
                _SCATTER_SERIAL_SRC.replace("k2[dst] = kk", "k2[dst] = kk & np.uint64(0xFFFFFFFF)"),
                "_scatter_serial",
                VCOPY=f"v2[dst] = np.{k.dtype.name}(kk >> np.uint64(32))" if keys_out else "pass",
            )
            call_kernel(
                kern, NdRange(T, 1), w, none, w2, kout, offs, *sizes, wsh, np.uint64(RADIX - 1)
            )
        w, w2 = w2, w
    return (k2 if keys_out else None), v


# Argsort of unsigned keys, ascending (KAPI_SORT_ARGSORT_IN_PLACE, read at import; on by
# default): as sort's, the keys are x's own memory, which the passes leave alone
# (keep_input), so `_keys` only counts them (and writes the indices, unless the first pass
# makes them): 4 bytes per key less written. On kapi's CPU device only where its passes pack
# keys and indices (_cpu_pack: then `_keys` writes nothing at all); before that, its keys
# pass wrote the indices anyway, and the keys' copy came with them.
ARGSORT_IN_PLACE = os.environ.get("KAPI_SORT_ARGSORT_IN_PLACE", "1") != "0"


# The keys pass launched without waiting for it on GPUs (KAPI_SORT_KEYS_ASYNC, read at
# import): the host sets up the passes (their kernels, buffers, the digit scan and status
# words' launches) while the device makes the keys and counts their digits, and waits only
# where it needs the bits that vary (to choose the passes); before, the device sat idle
# through that setup (kapi.sort waits for its passes, so the host's work between its kernels
# is not hidden behind a queue of earlier calls). On by default (H200, 2^27 uint32, with the
# ranks in local memory: bench/RESULTS.md, gpusort4, call 2); 0 turns it off.
SORT_KEYS_ASYNC = os.environ.get("KAPI_SORT_KEYS_ASYNC", "1") != "0"


def _keys_in_place(x: Array, withv: bool, descending: bool) -> bool:
    """Whether the sort of x (1-D, contiguous) takes x's own memory as its keys."""
    if _mode(x.dtype) != 0 or descending:
        return False
    if not withv:
        return True
    if not ARGSORT_IN_PLACE:
        return False
    serial = _pass_kind(x.device, x.size, True) == "serial"
    return not serial or _cpu_pack(x.device, x.size, True, x.dtype.itemsize)


def _keys(x: Array, withv: bool, descending: bool, canon_zero: bool):
    """The order-preserving unsigned keys of x (1-D, contiguous) and, with withv, the
    indices 0..n-1; a function giving the bits in which the keys differ (it waits for the
    device: called once the passes are set up); with the "onesweep" kind, the keys' digit
    counts at every byte position (`_digit_hist`'s table), else None. Unsigned keys sorted
    ascending are x's own memory where _keys_in_place says so (no copy;
    _radix_passes(keep_input=True) leaves it alone)."""
    from kapi_lang import kernel_api as K

    from .._kernel.launch import compiled_call_kernel as call_kernel
    from .._kernel.ranges import NdRange, Range

    n = x.size
    dt = x.dtype
    udt = _uint_of(dt)
    q, ut = x.sycl_queue, x.usm_type
    write = not _keys_in_place(x, withv, descending)
    k = Array._allocate((n,), udt, q, ut) if write else _as_dtype(x, udt)
    v = Array._allocate((n if withv else 1,), np.dtype(np.int64), q, ut)
    vo = Array._allocate((2,), np.dtype(np.uint64), q, ut)
    kind = _pass_kind(x.device, n, withv)
    iota = _iota_first(x.device, n, withv)  # the first pass makes the indices
    serial = kind == "serial"
    pack = serial and _cpu_pack(x.device, n, withv, udt.itemsize)  # no indices written here
    if serial and not write:
        return k, (v if withv else None), lambda: _vary(k), None
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
            hargs = (K.LocalAccessor(npos * RADIX * _hist_parts(npos)[3], np.uint32), hist)
    sign, absm, inf, allb = _key_consts(dt)
    mode, flags = np.int32(_mode(dt)), (np.int32(canon_zero), np.int32(descending))
    consts = (sign, absm, inf, allb, np.int32(write), np.int32(withv and not iota and not pack))
    k_arg = k if write else Array._allocate((1,), udt, q, ut)
    x_u = _as_dtype(x, udt)
    args = (x_u, k_arg, v, vo, np.int64(n), mode, *flags, *consts, *hargs)
    events = []
    if serial or not SORT_KEYS_ASYNC:
        call_kernel(kern, launch, *args)
    else:
        from .replay import launch as launch_async

        launch_async(kern, launch, *args, events=events)
    if serial:
        return k, (v if withv else None), lambda: _vary(k), None

    def vary():
        for ev in events:  # (its Event keeps the arguments alive until then)
            ev.wait()
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
