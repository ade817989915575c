"""kapi.random: a counter-based Philox-4x32-10 generator (Salmon et al., Random123) whose
numbers are made by kapi kernels on the device where they are wanted.

Each work-item encrypts its own 128-bit counter (the generator's position plus the
work-item's index) under the 64-bit key derived from the seed: no state lives on the device
and any element can be computed independently. Everything up to the final conversion is
32-bit integer arithmetic (done in uint64 registers and masked), so a seed gives the same
bits, and the same uniform numbers, on every device. Uniform floats take the top 24 (float32)
or 53 (float64, from two 32-bit words) bits: [0, 1) on a grid of 2**-24 or 2**-53. Normal
numbers use Box-Muller on pairs of uniforms, computed in the output's precision (float32
normals in float32 math, within a few ulps of the float64 computation rounded; their cos and
sin of the angle come from an exact integer reduction of the uniform's bits and polynomials),
so they agree across devices up to last-bit differences (the libraries' log; fused or separate
multiply-adds).

A call consumes whole counters (four 32-bit words each) and the next call starts after them,
so successive calls give independent numbers, as NumPy's Generator does.
"""

from __future__ import annotations

import functools
import operator
import os
import re

import numpy as np

from ._kernel.launch import compiled_call_kernel as call_kernel
from ._memory.array import Array
from ._numeric import primitives as P

__all__ = ["Generator", "default_rng", "philox4x32"]


def _philox(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 of the counter (c0..c3) under the key (k0, k1): 32-bit words in
    uint64 values."""
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    ma = np.uint64(0xD2511F53)
    mb = np.uint64(0xCD9E8D57)
    wa = np.uint64(0x9E3779B9)
    wb = np.uint64(0xBB67AE85)
    for r in range(10):
        if r > 0:
            k0 = (k0 + wa) & m32
            k1 = (k1 + wb) & m32
        p0 = ma * c0
        p1 = mb * c2
        n0 = (p1 >> s32) ^ c1 ^ k0
        n2 = (p0 >> s32) ^ c3 ^ k1
        c1 = p1 & m32
        c3 = p0 & m32
        c0 = n0
        c2 = n2
    return c0, c1, c2, c3


_philox.__kapi_device_func__ = True
_philox.__kapi_device_options__ = {}


def _philox32(c0, c1, c2, c3, k0, k1):
    """_philox's numbers with the words held as uint32: each product is a 32 x 32 -> 64-bit
    multiply of zero-extended words (PTX mul.wide.u32, x86 pmuludq) and the xors and key
    additions are 32-bit, where _philox's uint64 words made GPUs multiply, xor and mask in
    64 bits (PTX mul.lo.s64, xor.b64, and.b64)."""
    ma = np.uint64(0xD2511F53)
    mb = np.uint64(0xCD9E8D57)
    wa = np.uint32(0x9E3779B9)
    wb = np.uint32(0xBB67AE85)
    s32 = np.uint64(32)
    a0 = np.uint32(c0)
    a1 = np.uint32(c1)
    a2 = np.uint32(c2)
    a3 = np.uint32(c3)
    b0 = np.uint32(k0)
    b1 = np.uint32(k1)
    for r in range(10):
        if r > 0:
            b0 = np.uint32(b0 + wa)
            b1 = np.uint32(b1 + wb)
        p0 = np.uint64(a0) * ma
        p1 = np.uint64(a2) * mb
        n0 = np.uint32(np.uint32(p1 >> s32) ^ a1 ^ b0)
        n2 = np.uint32(np.uint32(p0 >> s32) ^ a3 ^ b1)
        a1 = np.uint32(p1)
        a3 = np.uint32(p0)
        a0 = n0
        a2 = n2
    return a0, a1, a2, a3


_philox32.__kapi_device_func__ = True
_philox32.__kapi_device_options__ = {}

# PHILOX32: the generating kernels use _philox32 (the same numbers); KAPI_PHILOX32=1, read at
# import. Off by default: on NVIDIA GPUs the NVPTX finaliser gives _philox's rounds the same
# 32-bit instructions (H200, 2^27 float32 normals: 0.261 ms either way, 0.278 / 0.297 ms
# without the finaliser's narrowing), and on the CPU device _philox32 cost 4-6% more CPU time
# (2^22 float32 on the dev box).
PHILOX32 = os.environ.get("KAPI_PHILOX32", "0") == "1"


_RAW_SRC = """
def _philox_raw(item, ctr, key, out):
    i = item.get_id(0)
    r0, r1, r2, r3 = PHILOX(np.uint64(ctr[i, 0]), np.uint64(ctr[i, 1]), np.uint64(ctr[i, 2]),
                            np.uint64(ctr[i, 3]), np.uint64(key[i, 0]), np.uint64(key[i, 1]))
    out[i, 0] = np.uint32(r0)
    out[i, 1] = np.uint32(r1)
    out[i, 2] = np.uint32(r2)
    out[i, 3] = np.uint32(r3)
"""

# One counter per work-item: its four words become PER outputs at out[PER * i ...].
_GEN_HEAD = """
def _gen(item, out, n, base, k0, k1):
    i = item.get_id(0)
    c = base + np.uint64(i)
    r0, r1, r2, r3 = PHILOX(c & np.uint64(0xFFFFFFFF), c >> np.uint64(32), np.uint64(0),
                            np.uint64(0), k0, k1)
    j = i * PER
"""


_U24 = "np.float64(({w} >> np.uint64(8))) * 5.9604644775390625e-08"  # [0, 1), 2**-24 steps
_U53 = (
    "(np.float64({a} >> np.uint64(5)) * 67108864.0 + np.float64({b} >> np.uint64(6)))"
    " * 1.1102230246251565e-16"
)  # [0, 1), 2**-53 steps
_U53_OPEN = (
    "(np.float64({a} >> np.uint64(5)) * 67108864.0 + np.float64({b} >> np.uint64(6)) + 1.0)"
    " * 1.1102230246251565e-16"
)  # (0, 1]: log() of it is finite
_U24_OPEN = "(np.float64(({w} >> np.uint64(8))) + 1.0) * 5.9604644775390625e-08"
# the same values in float32 (24-bit integers times 2**-24: exact), converted from int32 (GPUs
# and x86 vectors convert 32-bit integers natively, 64-bit ones slowly or not at all)
_F24 = "np.float32(np.int32({w} >> np.uint64(8))) * np.float32(5.9604644775390625e-08)"
_F24_OPEN = (
    "np.float32(np.int32(({w} >> np.uint64(8)) + np.uint64(1)))"
    " * np.float32(5.9604644775390625e-08)"
)
# float32 normals: Box-Muller in float32 (log, sqrt, sin, cos of float32, as CuPy's float32
# normals), within a few float32 ulps of the float64 computation rounded (the argument
# 2 pi u rounded to float32 costs at most ~5e-7 absolute before the radius, <= 5.8, scales
# it); KAPI_NORMAL_F32=0 computes them in float64 and rounds, as float64 normals are made.
NORMAL_F32 = os.environ.get("KAPI_NORMAL_F32", "1") != "0"


# SINCOS: float32 normals take cos and sin of the angle 2 pi m / 2**24 (m the word's top 24
# bits) from the quadrant (m's top two bits, rounded to the nearest) and polynomials of the
# remainder in [-pi/4, pi/4], reduced exactly in integers: no libdevice sinf/cosf and their
# large-argument path (local memory) on GPUs, one reduction for both. Within ~1 float32 ulp of
# sin and cos of the exact angle (the float32 angle 6.2831855 * u cost up to ~5e-7 before);
# KAPI_NORMAL_SINCOS=0 calls math.cos and math.sin as before; KAPI_NORMAL_SINCOS=centred calls
# them on the angle moved into [-pi, pi) (2 pi (m - 2**23) / 2**24, exact; the outputs
# negated), where fastmath's approximate cos/sin (PTX cos/sin.approx: 2**-21.4 absolute) are
# at their most accurate.
_SINCOS_ENV = os.environ.get("KAPI_NORMAL_SINCOS", "1")
if _SINCOS_ENV not in ("0", "1", "centred"):
    raise ValueError(f"KAPI_NORMAL_SINCOS must be 0, 1 or centred, not {_SINCOS_ENV!r}")
SINCOS: bool | str = {"0": False, "1": True}.get(_SINCOS_ENV, _SINCOS_ENV)
# cos and sin of 2 pi m / 2**24 for the 24-bit integer m = w >> 8 (Cephes' sinf/cosf
# polynomials on [-pi/4, pi/4]); {p}: the pair, {w}: the word
_SINCOS = """
    m{p} = (np.int64({w} >> np.uint64(8)) + 2097152) & 16777215
    q{p} = m{p} >> 22
    x{p} = np.float32(np.int32((m{p} & 4194303) - 2097152)) * np.float32(3.7450702e-07)
    z{p} = x{p} * x{p}
    s{p} = x{p} + x{p} * z{p} * (np.float32(-1.6666654611e-1) + z{p} * (
        np.float32(8.3321608736e-3) + z{p} * np.float32(-1.9515295891e-4)))
    co{p} = np.float32(1.0) - np.float32(0.5) * z{p} + z{p} * z{p} * (
        np.float32(4.166664568298827e-2) + z{p} * (np.float32(-1.388731625493765e-3)
                                                  + z{p} * np.float32(2.443315711809948e-5)))
    sn{p} = s{p}
    cs{p} = co{p}
    if q{p} & 1:
        sn{p} = co{p}
        cs{p} = -s{p}
    if q{p} & 2:
        sn{p} = -sn{p}
        cs{p} = -cs{p}
"""


# FASTMATH: the normal kernels are compiled with fastmath={"afn"}: float32 log and sqrt may be
# approximate (on NVIDIA GPUs PTX lg2.approx and sqrt.approx, as cuRAND's Box-Muller; about
# 2**-22 absolute in log2, so a normal whose radius r is small is off by up to ~2e-7 / r; the
# CPU computes them accurately still). The radius's argument is clamped at 0 so an
# approximate log of a uniform just below 1 can never give a NaN. KAPI_RANDOM_FASTMATH=0
# compiles them accurately.
FASTMATH = os.environ.get("KAPI_RANDOM_FASTMATH", "1") != "0"
_FAST = {"fastmath": frozenset(("afn",))}


# STAGED: the work-group stages its outputs in local memory, then writes them out with
# consecutive work-items at consecutive addresses (GPUs: one counter's PER outputs side by
# side would make every store a strided one). Same numbers at the same places.
_GEN_HEAD_STAGED = """
def _gen(it, out, n, base, k0, k1, lm):
    g = it.get_group()
    lid = it.get_local_id(0)
    L = it.get_local_range(0)
    i = it.get_global_id(0)
    c = base + np.uint64(i)
    r0, r1, r2, r3 = PHILOX(c & np.uint64(0xFFFFFFFF), c >> np.uint64(32), np.uint64(0),
                            np.uint64(0), k0, k1)
    j = lid * PER
"""

_GEN_TAIL_STAGED = """
    K.group_barrier(g)
    o = g.get_group_id(0) * L * PER
    w = 0
    while w < PER:
        q = w * L + lid
        if o + q < n:
            out[o + q] = lm[q]
        w += 1
"""

# WRITE: how a staged work-group writes its outputs out. "strided": output w * L + lid of
# the group for w < PER, each store behind its own bound check; "full": a group whose
# outputs all lie below n (every group but the last) stores without the checks; "v4": such a
# group's work-items store 4 consecutive outputs each (4 * (w * L + lid) ..+3), which the
# NVPTX finaliser's aligned entry makes one 16-byte st.global.v4 (and ld.shared.v4): the
# outputs are fresh allocations, always 16-byte aligned. The same numbers at the same
# places. KAPI_RANDOM_WRITE, read at import; unset: "v4" on CUDA devices (H200, 2^27
# float32, bench/gpu_normals.sh: normals 0.261 -> 0.219 ms, uniforms 0.190 -> 0.147 ms
# against "strided"), "strided" elsewhere (no aligned entries: four scalar stores 16 bytes
# apart across the work-items would not coalesce).
WRITE = os.environ.get("KAPI_RANDOM_WRITE") or None
if WRITE not in (None, "strided", "full", "v4"):
    raise ValueError(f"KAPI_RANDOM_WRITE must be strided, full or v4, not {WRITE!r}")
# a group reaching past the end writes what it has, one checked store per output
_GEN_TAIL_PARTIAL = """\
    else:
        w = 0
        while w < PER:
            q = w * L + lid
            if o + q < n:
                out[o + q] = lm[q]
            w += 1
"""
_GEN_TAIL_FULL = """
    K.group_barrier(g)
    o = g.get_group_id(0) * L * PER
    if o + L * PER <= n:
        w = 0
        while w < PER:
            q = w * L + lid
            out[o + q] = lm[q]
            w += 1
"""
_GEN_TAIL_FULL += _GEN_TAIL_PARTIAL
_GEN_TAIL_V4 = """
    K.group_barrier(g)
    o = g.get_group_id(0) * L * PER
    if o + L * PER <= n:
        w = 0
        while w < PER // 4:
            q = (w * L + lid) * 4
            v0 = lm[q]  # the four loads first: LLVM 15 cannot tell local from global
            v1 = lm[q + 1]
            v2 = lm[q + 2]
            v3 = lm[q + 3]
            out[o + q] = v0
            out[o + q + 1] = v1
            out[o + q + 2] = v2
            out[o + q + 3] = v3
            w += 1
"""
_GEN_TAIL_V4 += _GEN_TAIL_PARTIAL
_TAILS = {"strided": _GEN_TAIL_STAGED, "full": _GEN_TAIL_FULL, "v4": _GEN_TAIL_V4}

STAGED = None  # True: _GEN_HEAD_STAGED's kernel; None: on every device but kapi's CPU
WG = 256
# CPW: counters per work-item (1, 2 or 4): work-item i encrypts counters CPW*i .. CPW*i+CPW-1,
# independent Philox chains the GPU can interleave, and stores their outputs side by side (the
# same numbers at the same places). KAPI_RANDOM_CPW, read at import. 4 by default: on the H200
# (bench/random_variants.py, 2^27 float32) uniforms 0.247 -> 0.208 ms and normals 0.321 ->
# 0.286 ms against 1 (2: 0.210 and 0.293 ms).
CPW = int(os.environ.get("KAPI_RANDOM_CPW", "4"))
if CPW not in (1, 2, 4):
    raise ValueError(f"KAPI_RANDOM_CPW must be 1, 2 or 4, not {CPW}")
_PHILOX_CALL = (
    "    r0, r1, r2, r3 = PHILOX(c & np.uint64(0xFFFFFFFF), c >> np.uint64(32), np.uint64(0),\n"
    "                            np.uint64(0), k0, k1)\n"
)


def _store(j: int, expr: str, staged: bool = False) -> str:
    if staged:
        return f"    lm[j + {j}] = {expr}\n"
    return f"    if j + {j} < n:\n        out[j + {j}] = {expr}\n"


@functools.cache
def _gen_source(
    kind: str,
    dtype: np.dtype,
    staged: bool = False,
    f32: bool = True,
    sincos: bool | str = True,
    fast: bool = False,
    cpw: int = 1,
    write: str = "strided",
) -> tuple[str, int]:
    """The generating kernel's source and how many outputs one counter gives (cpw counters
    per work-item)."""
    f32_math = f32 and dtype == np.float32  # float32 normals in float32 math
    f32 = dtype == np.float32
    cvt = "np.float32" if f32 else "np.float64"
    body = ""
    if kind == "random":
        per = 4 if f32 else 2
        if f32:
            for w in range(4):  # float32 math: the same values, exact (no float64 on GPUs)
                body += _store(w, staged=staged, expr=_F24.format(w=f"r{w}"))
        else:
            body += _store(0, _U53.format(a="r0", b="r1"), staged)
            body += _store(1, _U53.format(a="r2", b="r3"), staged)
    else:  # standard_normal: Box-Muller on pairs of uniforms
        if f32:
            per = 4
            pairs = [
                (_U24_OPEN.format(w="r0"), _U24.format(w="r1")),
                (_U24_OPEN.format(w="r2"), _U24.format(w="r3")),
            ]
        else:
            per = 2
            pairs = [(_U53_OPEN.format(a="r0", b="r1"), _U53.format(a="r2", b="r3"))]
        if f32_math:  # float32 math: the uniforms are exact in float32 too
            pairs = [
                (_F24_OPEN.format(w="r0"), _F24.format(w="r1")),
                (_F24_OPEN.format(w="r2"), _F24.format(w="r3")),
            ]
        two, two_pi = (
            ("np.float32(-2.0)", "np.float32(6.2831855)")
            if f32 and NORMAL_F32
            else ("-2.0", "6.283185307179586")
        )
        for p, (u1, u2) in enumerate(pairs):
            if fast:  # never below 0 (an approximate log of u just below 1)
                body += f"    rad{p} = math.sqrt(max({two} * math.log({u1}), {cvt}(0.0)))\n"
            else:
                body += f"    rad{p} = math.sqrt({two} * math.log({u1}))\n"
            if f32_math and sincos == "centred":  # 2 pi m / 2**24 - pi: cos, sin negated
                w = f"r{2 * p + 1}"
                body += (
                    f"    ang{p} = np.float32(np.int32({w} >> np.uint64(8)) - 8388608)"
                    " * np.float32(3.7450702e-07)\n"
                )
                body += _store(2 * p, f"-(rad{p} * math.cos(ang{p}))", staged)
                body += _store(2 * p + 1, f"-(rad{p} * math.sin(ang{p}))", staged)
                continue
            if f32_math and sincos:
                body += _SINCOS.format(p=p, w=f"r{2 * p + 1}")
                body += _store(2 * p, f"rad{p} * cs{p}", staged)
                body += _store(2 * p + 1, f"rad{p} * sn{p}", staged)
                continue
            body += f"    ang{p} = {two_pi} * {u2}\n"
            body += _store(2 * p, f"{cvt}(rad{p} * math.cos(ang{p}))", staged)
            body += _store(2 * p + 1, f"{cvt}(rad{p} * math.sin(ang{p}))", staged)
    head = _GEN_HEAD_STAGED if staged else _GEN_HEAD
    if cpw > 1:  # cpw counters, each with its outputs cpw * per apart ... side by side
        assert _PHILOX_CALL in head
        head = head.replace(_PHILOX_CALL, "").replace(
            "c = base + np.uint64(i)\n", f"c0 = base + np.uint64(i) * np.uint64({cpw})\n"
        )
        body = "".join(
            f"    c = c0 + np.uint64({k})\n"
            + _PHILOX_CALL
            + re.sub(r"j \+ (\d+)", lambda m, k=k: f"j + {int(m.group(1)) + k * per}", body)
            for k in range(cpw)
        )
    total = str(per * cpw)
    if staged:
        if write == "v4" and per * cpw % 4:  # 2 outputs per work-item: no 4 to store
            write = "full"
        return (head + body + _TAILS[write]).replace("PER", total), per
    return head.replace("PER", total) + body, per


def _kernel(src: str, entry: str, options=None):
    import math

    ph = _philox32 if PHILOX32 else _philox
    return P.kernel_of(src, entry, {"PHILOX": ph, "math": math}, key=PHILOX32, options=options)


def philox4x32(counters, keys, device=None):
    """The raw Philox-4x32-10 blocks: counters (n, 4) and keys (n, 2) of uint32 (NumPy or
    kapi arrays) give (n, 4) uint32, computed on `device` (default: the kapi arrays' device,
    else the default device). For checking against the Random123 known answers."""
    from ._kernel.launch import compiled_call_kernel as call_kernel
    from ._kernel.ranges import Range
    from ._memory import array as _array

    def put(x, shape):
        if isinstance(x, Array):
            x = x.asnumpy()
        x = np.ascontiguousarray(np.asarray(x, dtype=np.uint32).reshape(shape))
        return _array.asarray(x, device=device)

    if device is None and isinstance(counters, Array):
        device = counters.device
    c = put(counters, (-1, 4))
    k = put(keys, (-1, 2))
    if c.shape[0] != k.shape[0]:
        raise ValueError("philox4x32: as many keys as counters are needed")
    out = Array._allocate(c.shape, np.dtype(np.uint32), c.sycl_queue, c.usm_type)
    if c.shape[0]:
        call_kernel(_kernel(_RAW_SRC, "_philox_raw"), Range(c.shape[0]), c, k, out)
    return out


_PLANS: dict = {}  # (kind, dtype, size, device, usm_type, switches) -> launches


def _plan(kind: str, dtype, size, device, usm_type):
    """What a call of _fill launches, but for the counter: (queue, usm_type, shape, dtype,
    n, flat view's (shape, strides) or None, counters, (kernel, range, n, local memory))."""
    from ._kernel.ranges import Range
    from ._memory import array as _array

    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise TypeError(f"kapi.random: dtype must be float32 or float64, not {dt}")
    shape = _size_tuple(size)
    proto = _array.empty(shape, dtype=dt, device=device, usm_type=usm_type)
    q, ut, n = proto.sycl_queue, proto.usm_type, proto.size
    staged = STAGED if STAGED is not None else proto.device.device_type != "cpu"
    fast = FASTMATH and kind == "standard_normal"
    write = WRITE or ("v4" if proto.device.backend == "cuda" else "strided")
    src, per = _gen_source(kind, dt, staged, NORMAL_F32, SINCOS, fast, CPW, write)
    counters = -(-n // per)
    flat = None if len(shape) == 1 else ((n,), (dt.itemsize,))
    launch = None
    if counters:
        if staged:
            from kapi_lang import kernel_api as K

            from ._kernel.ranges import NdRange

            groups = -(-counters // (WG * CPW))
            rng = NdRange(groups * WG, WG)
            extra = (K.LocalAccessor(WG * per * CPW, dt),)
        else:
            rng, extra = Range(-(-counters // CPW)), ()
        launch = (_kernel(src, "_gen", _FAST if fast else None), rng, np.int64(n), extra)
    return q, ut, shape, dt, n, flat, counters, launch


def _size_tuple(size) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (tuple, list)):
        return tuple(operator.index(s) for s in size)
    return (operator.index(size),)


class Generator:
    """Philox-4x32-10 random numbers on kapi devices, reproducible from a seed.

    `Generator(seed)`: seed is an int (or a sequence of ints; anything
    np.random.SeedSequence takes; None draws fresh entropy). `device` (a Device or a filter
    string, default the default device) and `usm_type` are where the arrays are made unless
    a call names its own.
    """

    def __init__(self, seed=None, device=None, usm_type: str = "device"):
        ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        k = ss.generate_state(2, np.uint32)
        self._k0, self._k1 = np.uint64(k[0]), np.uint64(k[1])
        self._ctr = 0  # counters used so far
        self._device = device
        self._usm = usm_type
        self.seed_seq = ss

    def __repr__(self) -> str:
        return f"kapi.random.Generator(Philox4x32-10, counter={self._ctr})"

    def _fill(self, kind: str, size, dtype, device, usm_type) -> Array:
        dev = device if device is not None else self._device
        ut = usm_type or self._usm
        # no device named: the default one, which KAPI_DEFAULT_DEVICE may change
        where = dev if dev is not None else os.environ.get("KAPI_DEFAULT_DEVICE")
        switches = (STAGED, NORMAL_F32, SINCOS, FASTMATH, CPW, WG, PHILOX32, WRITE)
        key = (kind, dtype, size, dev is None, where, ut, switches)
        try:
            plan = _PLANS.get(key)
        except TypeError:  # an unhashable size or device: no plan
            key = plan = None
        if plan is None:
            plan = _plan(kind, dtype, size, dev, ut)
            if key is not None:
                if len(_PLANS) >= 256:
                    _PLANS.clear()
                _PLANS[key] = plan
        q, ut, shape, dt, n, flat, counters, launch = plan
        out = Array._allocate(shape, dt, q, ut)
        if counters:
            kernel, rng, nn, extra = launch
            view = out if flat is None else Array._make(
                out._owner, out._ptr, *flat, dt, q, ut, out._host_ok
            )  # fmt: skip
            call_kernel(kernel, rng, view, nn, np.uint64(self._ctr), self._k0, self._k1, *extra)
        self._ctr += counters
        return out

    def random(self, size=None, dtype=np.float64, out=None, *, device=None, usm_type=None):
        """Uniform floats in [0, 1) (NumPy's Generator.random); size None gives a 0-d
        array. out= fills an existing float32/float64 kapi array instead."""
        if out is not None:
            return self._into(out, "random")
        return self._fill("random", size, dtype, device, usm_type)

    def standard_normal(self, size=None, dtype=np.float64, out=None, *, device=None, usm_type=None):
        """Normal floats with mean 0 and standard deviation 1 (Box-Muller)."""
        if out is not None:
            return self._into(out, "standard_normal")
        return self._fill("standard_normal", size, dtype, device, usm_type)

    def uniform(
        self, low=0.0, high=1.0, size=None, dtype=np.float64, *, device=None, usm_type=None
    ):
        """Uniform floats in [low, high)."""
        r = self._fill("random", size, dtype, device, usm_type)
        return r * (high - low) + low if (low, high) != (0.0, 1.0) else r

    def normal(
        self, loc=0.0, scale=1.0, size=None, dtype=np.float64, *, device=None, usm_type=None
    ):
        """Normal floats with mean loc and standard deviation scale."""
        r = self._fill("standard_normal", size, dtype, device, usm_type)
        return r * scale + loc if (loc, scale) != (0.0, 1.0) else r

    def _into(self, out, kind: str) -> Array:
        if not isinstance(out, Array) or out.dtype not in (np.float32, np.float64):
            raise TypeError("kapi.random: out must be a float32 or float64 kapi array")
        r = self._fill(kind, out.shape, out.dtype, out.device, out.usm_type)
        out[...] = r
        return out


def default_rng(seed=None, device=None) -> Generator:
    """A Generator seeded with seed (NumPy's default_rng name)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed, device=device)


# -- dpnp.random's module-level functions (NumPy's legacy names), on one global Generator ----

_GLOBAL: list = []


def _global() -> Generator:
    if not _GLOBAL:
        _GLOBAL.append(Generator())
    return _GLOBAL[0]


def _where(device, sycl_queue):
    return sycl_queue if sycl_queue is not None else device


def seed(seed=None, *, device=None, sycl_queue=None):
    """Reseeds the generator behind kapi.random's module-level functions (dpnp.random.seed)."""
    _GLOBAL[:] = [Generator(seed)]


def random(size=None, *, device=None, usm_type="device", sycl_queue=None):
    """Uniform floats in [0, 1) (dpnp.random.random), made on the device."""
    return _global().random(size, _float(device, sycl_queue), device=_where(device, sycl_queue),
                            usm_type=usm_type)  # fmt: skip


random_sample = ranf = sample = random


def _float(device, sycl_queue):
    from ._memory.device import as_queue

    q = as_queue(_where(device, sycl_queue))
    return np.float64 if q.device.has_aspect_fp64 else np.float32


def rand(*args, device=None, usm_type="device", sycl_queue=None):
    """Uniform floats in [0, 1) of shape args (dpnp.random.rand)."""
    return random(args if args else None, device=device, usm_type=usm_type, sycl_queue=sycl_queue)


def randn(*args, device=None, usm_type="device", sycl_queue=None):
    """Standard normal floats of shape args (dpnp.random.randn)."""
    return standard_normal(args if args else None, device=device, usm_type=usm_type,
                           sycl_queue=sycl_queue)  # fmt: skip


def standard_normal(size=None, *, device=None, usm_type="device", sycl_queue=None):
    where = _where(device, sycl_queue)
    return _global().standard_normal(
        size, _float(device, sycl_queue), device=where, usm_type=usm_type
    )


def uniform(low=0.0, high=1.0, size=None, *, device=None, usm_type="device", sycl_queue=None):
    return _global().uniform(low, high, size, _float(device, sycl_queue),
                             device=_where(device, sycl_queue), usm_type=usm_type)  # fmt: skip


def normal(loc=0.0, scale=1.0, size=None, *, device=None, usm_type="device", sycl_queue=None):
    return _global().normal(loc, scale, size, _float(device, sycl_queue),
                            device=_where(device, sycl_queue), usm_type=usm_type)  # fmt: skip


def randint(low, high=None, size=None, dtype=int, *, device=None, usm_type="device",
            sycl_queue=None):  # fmt: skip
    """Integers in [low, high) (dpnp.random.randint): floor(low + u * (high - low)) of
    float64 uniforms, on the device."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"randint: low ({low}) must be below high ({high})")
    u = _global().random(size, np.float64, device=_where(device, sycl_queue), usm_type=usm_type)
    r = np.floor(u * float(high - low) + float(low))
    out = r.astype(np.dtype(dtype))
    # float rounding can reach high itself: keep it below
    return np.minimum(out, np.dtype(dtype).type(high - 1))


__all__ += ["seed", "random", "random_sample", "ranf", "sample", "rand", "randn",
            "standard_normal", "uniform", "normal", "randint"]  # fmt: skip
