"""The differential fuzzer (tools/fuzz/kfuzz.py) in the test suite: a short seeded run on every
device against the reference interpreter (tools/fuzz/ksim.py), with the Numba oracle checking
the interpreter on some kernels, the minimised findings of earlier runs replayed as
regressions (tests/reliability/fuzz_regressions/*.json), and the fixes they led to pinned by name.
Issue 12, item 1. The long run: docs/reliability.md, "Differential fuzzer"."""

import glob
import json
import math
import os
import random
import sys

import numba
import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi

DEVICES = devices_or_skip()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "fuzz"))
import kfuzz  # noqa: E402
import ksim  # noqa: E402

# Kernels of the short run; each holds CASES cases. kapi's compile dominates (about a second
# per kernel on a 2-core machine); Numba's compile of the oracle, which checks the interpreter
# on every CHECK_EVERY-th kernel, costs about 8 s per kernel there.
KERNELS = int(os.environ.get("KAPI_FUZZ_KERNELS", "24"))
CASES = 8
CHECK_EVERY = 12
SEED = int(os.environ.get("KAPI_FUZZ_SEED", "2026"))


def test_short_run_finds_no_mismatch(tmp_path):
    s = kfuzz.fuzz(
        KERNELS, SEED, CASES, DEVICES, str(tmp_path), lambda m: None, check_every=CHECK_EVERY
    )
    found = [f"{f['kind']} {f['detail']}\n" + kernel_of(f["file"]) for f in s["findings"]]
    assert not found, "\n\n".join(found)
    differ = [kernel_of(d["file"]) for d in s["sim_disagreements"]]
    assert not differ, "ksim and Numba differ:\n" + "\n\n".join(differ)
    # every CHECK_EVERY-th kernel, less those with a signed overflow (Numba's code is undefined)
    assert s["numba_checked"] >= 1
    assert s["sim_unsupported"] == 0
    assert s["kernels"] + s["oracle_errors"] == KERNELS
    assert s["oracle_errors"] <= KERNELS // 4, s  # the generator writes what Numba accepts
    assert s["cases"] >= CASES * KERNELS * 3 // 4


# The many-kernels run: SMALL_KERNELS kernels of one case each (each its own random program,
# compiled as its own module), over min(cores, 8) processes; about 0.2 s of one core per kernel
# on the CPU device (1,000: about 100 s of both cores of a 2-core machine, the suite's longest
# test). The long run (docs/reliability.md) is the same with 10^5 kernels.
SMALL_KERNELS = int(os.environ.get("KAPI_FUZZ_SMALL_KERNELS", "1000"))


def test_many_one_case_kernels_find_no_mismatch(tmp_path):
    jobs = max(1, min(os.cpu_count() or 1, 8))
    filters = [d.filter_string for d in DEVICES]
    s = kfuzz.fuzz_parallel(
        SMALL_KERNELS,
        SEED + 1,
        1,
        filters,
        jobs,
        str(tmp_path),
        check_every=500,
        log=lambda m: None,
    )
    found = [f"{f['kind']} {f['detail']}\n" + kernel_of(f["file"]) for f in s["findings"]]
    assert not found, "\n\n".join(found)
    assert not s["sim_disagreements"], s["sim_disagreements"]
    assert s["done_below"] == SMALL_KERNELS, s  # every chunk came back: no worker died
    assert s["kernels"] + s["oracle_errors"] == SMALL_KERNELS, s
    assert s["numba_checked"] >= min(1, SMALL_KERNELS // 500)
    assert s["sim_unsupported"] == 0


def kernel_of(path):
    if not path:
        return "(not saved)"
    with open(path) as f:
        return json.load(f)["kernel"]


REGRESSIONS = sorted(glob.glob(os.path.join(HERE, "fuzz_regressions", "*.json")))


@pytest.mark.parametrize("path", REGRESSIONS, ids=[os.path.basename(p)[:-5] for p in REGRESSIONS])
@pytest.mark.parametrize("dev", DEVICES, ids=[d.filter_string for d in DEVICES])
def test_regression(path, dev):
    with open(path) as f:
        rec = json.load(f)
    if any(t in dev.filter_string for t in rec.get("xfail_on", ())):
        if not _passes(rec, dev):
            pytest.xfail(rec["xfail_reason"])
        pytest.fail(f"{os.path.basename(path)} passes on {dev.filter_string} now: drop 'xfail_on'")
    if rec.get("xfail"):
        if not _passes(rec, dev):
            pytest.xfail(rec["xfail"])
        if dev.is_cpu:  # where the findings were made; another device may not share the bug
            pytest.fail(f"{os.path.basename(path)} passes now: drop its 'xfail' entry")
        return
    got, want = kfuzz.replay(rec, dev)
    assert kfuzz.compare(got, want)


@pytest.mark.parametrize("path", REGRESSIONS, ids=[os.path.basename(p)[:-5] for p in REGRESSIONS])
def test_regression_ptx(path):
    """The CUDA path without a GPU: each regression kernel's SPIR-V finalises to PTX that
    ptxas accepts."""
    from nvptx_util import assert_assembles, ptx_of

    with open(path) as f:
        rec = json.load(f)
    if rec.get("xfail"):
        pytest.skip("known failure: " + rec["xfail"])
    kfuzz.replay(rec, DEVICES[0])
    k = kfuzz.LAST_KERNEL[0]
    (spirv,) = [k.inspect_spirv(sig) for sig in k.inspect_kir()]
    libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
    if "math." in rec["kernel"] and not os.path.exists(libdevice):
        pytest.skip(f"the kernel calls math functions and {libdevice} is not installed")
    ptx = ptx_of(spirv, libdevice if os.path.exists(libdevice) else None)
    assert ".entry" in ptx
    assert_assembles(ptx, "kfuzz")


def _passes(rec, dev):
    try:
        got, want = kfuzz.replay(rec, dev)
    except kapi.KapiError:
        return False
    return bool(kfuzz.compare(got, want))


def test_detects_a_mismatch_and_minimises_it(tmp_path, monkeypatch):
    """The machinery itself: a kapi result made wrong on purpose is found, pinned to its case,
    minimised and saved."""
    real = kfuzz.run_kapi

    def wrong(p, dev, k=None):
        out_i, out_f, acc = real(p, dev, k)
        if any(c.index == 1 for c in p.cases):
            out_i = out_i.copy()
            out_i[kfuzz.SLOTS] += 1  # work-item 0, case 1, slot 0
        return out_i, out_f, acc

    monkeypatch.setattr(kfuzz, "run_kapi", wrong)
    # The budget only bounds a minimiser that stalls: it stops as soon as nothing shrinks, so a
    # generous one keeps the test independent of how loaded the machine is.
    s = kfuzz.fuzz(1, 7, 2, DEVICES[:1], str(tmp_path), lambda m: None, minimise_s=300)
    assert [f["case"] for f in s["findings"]] == [1]
    (saved,) = glob.glob(str(tmp_path / "*.json"))
    with open(saved) as f:
        rec = json.load(f)
    assert rec["kind"] == "mismatch" and "def fuzz_kernel" in rec["kernel"]
    body = rec["kernel"].split("def fuzz_kernel")[1]
    assert len(body.splitlines()) <= 6  # minimised to the store the wrong slot shows


# --- fixes found by the fuzzer -----------------------------------------------------------


@kapi.kernel
def neg_invert(item, a, o1, o2):
    i = item.get_id(0)
    o1[i] = -a[i]
    o2[i] = ~a[i]


@numba.njit
def neg_invert_numba(a, o1, o2):
    for i in range(a.size):
        o1[i] = -a[i]
        o2[i] = ~a[i]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32])
def test_neg_invert_of_narrow_ints_as_numba(dtype):
    """Numba negates and inverts before widening: -uint8(3) is 253 (as uint64), not 2**64-3;
    kapi widened first (found by the fuzzer: sqrt(-a_uint8[i]))."""
    info = np.iinfo(dtype)
    a = np.array([0, 1, 3, info.max, info.min, info.max // 2], dtype=dtype)
    for dev in DEVICES:
        got = [kapi.zeros(6, dtype=np.int64, device=dev) for _ in range(2)]
        kapi.call_kernel(neg_invert, kapi.Range(6), kapi.asarray(a, device=dev), *got)
        want = [np.zeros(6, np.int64), np.zeros(6, np.int64)]
        neg_invert_numba(a, *want)
        np.testing.assert_array_equal(got[0].asnumpy(), want[0])
        np.testing.assert_array_equal(got[1].asnumpy(), want[1])


def test_int16_negation_ptx_wraps_explicitly():
    """The CUDA driver's PTX compiler returned 32768 for -int16(-32768) from `neg.s16` then
    `cvt.s64.s16` (it widened the negation). The NVPTX finaliser now negates in 32 bits and
    re-sign-extends the low 16 bits itself (finalise_nvptx_workarounds.c); ptxas accepts it."""
    from nvptx_util import assert_assembles, ptx_of

    a = kapi.asarray(np.array([-32768, 5], np.int16), device=DEVICES[0])
    outs = [kapi.zeros(2, dtype=np.int64, device=DEVICES[0]) for _ in range(2)]
    kapi.call_kernel(neg_invert, kapi.Range(2), a, *outs)
    np.testing.assert_array_equal(outs[0].asnumpy(), [-32768, -5])
    sig = [s for s in neg_invert.inspect_kir() if "array(i16" in s][0]
    ptx = ptx_of(neg_invert.inspect_spirv(sig), None)
    assert "neg.s16" not in ptx
    assert "neg.s32 t, t; shl.b32 t, t, 16; shr.s32 t, t, 16;" in ptx
    assert_assembles(ptx, "neg16")


@kapi.kernel
def hypot_u64(item, a, b, o):
    i = item.get_id(0)
    o[i] = math.hypot(a[i], b[i] - a[i])


@numba.njit
def hypot_u64_numba(a, b, o):
    for i in range(a.size):
        o[i] = math.hypot(a[i], b[i] - a[i])


def test_hypot_of_uint64_converts_as_numba():
    """Numba's hypot of two uint64 converts them with sitofp: hypot(200, 10 - 200) of uint8s
    (the difference a wrapped uint64) is hypot(200, -190) = 275.86, not hypot(200, 1.8e19)
    (found by the fuzzer)."""
    a = np.array([200, 3, 2**63 + 5, 7], np.uint64)
    b = np.array([10, 7, 1, 7], np.uint64)
    want = np.zeros(4)
    hypot_u64_numba(a, b, want)
    assert abs(want[0] - math.hypot(200, -190)) < 1e-9
    for dev in DEVICES:
        o = kapi.zeros(4, dtype=np.float64, device=dev)
        kapi.call_kernel(
            hypot_u64, kapi.Range(4), kapi.asarray(a, device=dev), kapi.asarray(b, device=dev), o
        )
        np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-12)


def _case_mask(p, n, case):
    return (np.arange(n) % (kfuzz.SLOTS * p.ncases)) // kfuzz.SLOTS == case


def test_perturbed_hull_spans_ulp_differences_and_nothing_more():
    """A long-run finding: `(math.exp(u) ** (u & 3)) % ((~u) | 1)` (seed 1000 kernel 399, case
    1) came out differently on the CPU device (exp from libmvec) and in Numba (glibc's exp):
    an ulp of exp magnified. ksim reruns the kernel with every transcendental and float `**`
    result moved by up to 4 ulps; a device value inside the range those runs span is
    explained, one outside it is not, and exact values (no such operation upstream) get no
    slack at all."""
    p = kfuzz.random_program(kfuzz.kernel_rng(1000, 399), 8)
    assert "((math.exp(a_uint64[((~i) % 64)]) ** (a_uint64[((~i) % 64)] & 3)) % (" in (
        p.kernel_src()
    )
    outs, _, _ = kfuzz.run_sim(p)
    hull = kfuzz.perturbed_hull(p)
    (ilo, ihi), (flo, fhi, _), _ = hull
    mine = _case_mask(p, len(flo), 1)
    with np.errstate(invalid="ignore"):
        width = np.where(mine & np.isfinite(fhi - flo), fhi - flo, 0.0)
    j = int(np.argmax(width))
    assert width[j] >= 1.0  # the % turned an ulp of exp into whole units
    for value, inside in [(flo[j], True), (fhi[j], True), (fhi[j] + width[j] + 1.0, False)]:
        got = (outs[0], outs[1].copy(), outs[2])
        got[1][j] = value
        assert kfuzz.within_hull(p, got, hull, 1) == inside, (value, flo[j], fhi[j])
    exact = np.nonzero(mine & (ilo == ihi))[0]
    got = (outs[0].copy(), outs[1], outs[2])
    got[0][exact[0]] += 1
    assert not kfuzz.within_hull(p, got, hull, 1)
    assert kfuzz.within_hull(p, outs, hull, 1)


def test_ulp_differences_are_counted_and_real_errors_still_reported(tmp_path, monkeypatch):
    """The machinery end to end, with kapi's results replaced: a case whose values are what
    the devices' math libraries may give (ksim with exp moved by 2 ulps) is counted as
    ill-conditioned and not reported; the same values with a large error added are reported,
    minimised and saved."""
    p = kfuzz.random_program(kfuzz.kernel_rng(1000, 399), 8)
    ksim_step = [2]
    kfuzz.ksim.PERTURB[0] = lambda: ksim_step[0]
    try:
        shifted, _, _ = kfuzz.run_sim(p)
    finally:
        kfuzz.ksim.PERTURB[0] = None
    exact, _, _ = kfuzz.run_sim(p)
    differs = np.nonzero(~kfuzz.float_close(shifted[1], exact[1]))[0]
    assert differs.size  # 2 ulps of exp change this kernel's outputs
    real = kfuzz.run_kapi
    broken = [False]

    def libm_like(q, dev, k=None):
        out_i, out_f, acc = real(q, dev, k)
        out_f = out_f.copy()
        for j in differs:  # only where ksim's shifted run differs, and only for q's cases
            if any(c.index == (j % (kfuzz.SLOTS * q.ncases)) // kfuzz.SLOTS for c in q.cases):
                out_f[j] = shifted[1][j] + (1e9 if broken[0] else 0.0)
        return out_i, out_f, acc

    monkeypatch.setattr(kfuzz, "run_kapi", libm_like)
    # ksim stands in for Numba's oracle (8 s of compile per call here; they agree on this
    # kernel, and the short run checks that relation on others)
    monkeypatch.setattr(kfuzz, "run_oracle", lambda q: kfuzz.run_sim(q)[0])
    # a case outside the first hull is judged again on WIDE_RUNS reruns; 30 keep the errors
    # below out as well as 300 (1e9 off values near 1) in a tenth of the time
    monkeypatch.setattr(kfuzz, "WIDE_RUNS", 30)
    s = kfuzz.fuzz(1, 1000, 8, DEVICES[:1], str(tmp_path), lambda m: None, first=399)
    assert s["kernels"] == 1 and not s["findings"], s["findings"]
    assert s["ill_conditioned"] >= 1
    broken[0] = True
    s = kfuzz.fuzz(1, 1000, 8, DEVICES[:1], str(tmp_path), lambda m: None, minimise_s=5, first=399)
    assert s["findings"] and all(f["kind"] == "mismatch" for f in s["findings"]), s
    assert glob.glob(str(tmp_path / "*.json"))


@kapi.kernel
def abs_narrow(item, a, o):
    i = item.get_id(0)
    o[i] = abs(a[i])


def test_int16_abs_ptx_wraps_explicitly():
    """The long fuzz run on the H100 found abs(int16(-32768)) == 32768 on CUDA (Numba: -32768):
    the optimiser makes llvm.abs.i16, lowered to `abs.s16`, which the driver widens as it
    does neg.s16. The finaliser now selects over its explicit 16-bit negation."""
    from nvptx_util import assert_assembles, ptx_of

    a = kapi.asarray(np.array([-32768, -5, 7], np.int16), device=DEVICES[0])
    o = kapi.zeros(3, dtype=np.int64, device=DEVICES[0])
    kapi.call_kernel(abs_narrow, kapi.Range(3), a, o)
    np.testing.assert_array_equal(o.asnumpy(), [-32768, 5, 7])
    sig = [s for s in abs_narrow.inspect_kir() if "array(i16" in s][0]
    ptx = ptx_of(abs_narrow.inspect_spirv(sig), None)
    assert "abs.s16" not in ptx and "neg.s16" not in ptx
    assert "neg.s32 t, t; shl.b32 t, t, 16; shr.s32 t, t, 16;" in ptx
    assert_assembles(ptx, "abs16")


@kapi.kernel
def floordiv_mod(item, a, b, q, r):
    i = item.get_id(0)
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]


@numba.njit
def floordiv_mod_numba(a, b, q, r):
    for i in range(a.size):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


def test_int_min_floordiv_minus_one_as_numba():
    """Numba's int_divmod_signed gives 0 and 0 for INT64_MIN // -1 and % -1 (x86's idiv would
    trap); kapi wrapped to INT64_MIN (long fuzz run, seed 2000 kernel 1075). Other quotients by
    -1 and the floor rounding stay as they were."""
    lo = np.iinfo(np.int64).min
    a = np.array([lo, lo, lo + 1, 7, -7, 0, lo, 9], np.int64)
    b = np.array([-1, 1, -1, -1, -1, -1, 3, -4], np.int64)
    want = [np.zeros(8, np.int64) for _ in range(2)]
    floordiv_mod_numba(a, b, *want)
    assert want[0][0] == 0 and want[1][0] == 0
    for dev in DEVICES:
        got = [kapi.zeros(8, dtype=np.int64, device=dev) for _ in range(2)]
        args = [kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)]
        kapi.call_kernel(floordiv_mod, kapi.Range(8), *args, *got)
        np.testing.assert_array_equal(got[0].asnumpy(), want[0])
        np.testing.assert_array_equal(got[1].asnumpy(), want[1])


@kapi.kernel
def maybe_unassigned(item, out, n):
    i = item.get_id(0)
    for _ in range(n & 3):
        if math.sqrt(3):
            v = 0 > n
    out[i] = math.hypot(v, v | 1)  # noqa: F821 (unassigned when n & 3 == 0)


@numba.njit
def maybe_unassigned_numba(n):
    for _ in range(n & 3):
        if math.sqrt(3):
            v = 0 > n
    return math.hypot(v, v | 1)  # noqa: F821


def test_variable_unassigned_on_a_path_reads_zero_as_numba():
    """A variable assigned only inside a loop that may not run: Numba reads zero on that path
    (its lowering of `null`), pyfront refused the `null` (seed 5000 kernel 3952). At O2 the
    loop then vectorised into a select of vectors on a scalar condition, which SPIR-V 1.2
    rejects (spirv_prepare.c splats the condition)."""
    for n in (4, 5, -7, 8, 1, -2, 3, 0):
        for dev in DEVICES:
            got = kapi.zeros(4, dtype=np.float64, device=dev)
            kapi.call_kernel(maybe_unassigned, kapi.Range(4), got, n)
            want = np.full(4, maybe_unassigned_numba(n))
            np.testing.assert_array_equal(got.asnumpy(), want, err_msg=f"n={n} on {dev}")


def test_trig_of_an_argument_beyond_the_ulp_model_is_ill_conditioned():
    """sin(exp(i) ** 3) on the CPU device differed from Numba (seed 5000 kernel 15716): kapi's
    pow() and Numba's multiplications round differently, and at 3.5e19 a few ulps are more than
    a period. ksim marks trig of such arguments ill-conditioned; small ones keep no slack."""
    import ksim
    from numba import types

    for x, ill in ((3.5e19, True), (2.0**52, True), (3.0, False), (1e6, False)):
        for ty, cast in ((types.float64, np.float64), (types.float32, np.float32)):
            if ty is types.float32 and x > 3e38:
                continue
            ksim.ILL[0] = False
            sig = kfuzz.resolve_sig(math.sin, ty)
            ksim.math_call("sin", sig, [cast(x)], [ty])
            assert ksim.ILL[0] is (ill or (ty is types.float32 and x >= 2.0**22)), (x, ty)
    ksim.ILL[0] = False


@pytest.mark.parametrize("seed, n", [(6000, 23241), (6000, 18954), (7000, 237421)])
def test_hull_explains_any_library_within_the_ulp_model(seed, n):
    """The H100 host's runs found CUDA-only differences in kernels whose outputs magnify a
    transcendental's last bits chaotically: seed 6000 kernel 23241's `exp(a) % (|sin(b)| + 1)`,
    kernel 18954's branch on `hypot(lid, a) - a` deciding which work-items add to the
    accumulator, and seed 7000 kernel 237421's exp of a sum of `s % (|cos(x)| + 1)` terms (a
    1e18 s: an ulp of cos moves the remainder anywhere in [0, 2), and exp spreads that over
    orders of magnitude). libdevice is within the ulp model, but its values fell outside the
    range ten perturbed reruns sampled. Here a stand-in library, every transcendental moved by
    a random 0-4 ulps per call (as libdevice's rounding differs per input), must always be
    explained: an output the reruns spread gets a hull widened by its spread, an accumulator
    they moved is not judged, and a case outside the hull of ten reruns is judged again on
    300; test_perturbed_hull_spans_ulp_differences_and_nothing_more checks that unspread
    outputs still get no slack."""
    p = kfuzz.random_program(kfuzz.kernel_rng(seed, n), 1)
    m = kfuzz.ksim.MAX_ULPS
    ref = {}  # the hulls, computed once for the 40 libraries
    for lib in range(40):
        rng = random.Random(f"other-libm/{lib}")
        kfuzz.ksim.PERTURB[0] = lambda rng=rng: rng.randint(-m, m)
        try:
            got = kfuzz.run_sim(p)[0]
        finally:
            kfuzz.ksim.PERTURB[0] = None
        assert kfuzz.explained(p, got, [0], ref) == [0], lib
    if n == 237421:  # ten reruns alone explain few of these libraries
        assert ("hull", False, kfuzz.WIDE_RUNS) in ref


@kapi.kernel
def float_mod_of_big_ints(item, a, b, out):
    i = item.get_id(0)
    out[i] = a[i] % b[i]


@pytest.mark.parametrize("dev", DEVICES, ids=[d.filter_string for d in DEVICES])
def test_float_mod_of_a_big_int_is_exact(dev):
    """Kernel 237421's chaos is its cos's ulps, not `%`: an int64 near 1e18 modulo a float in
    [1, 2) (fmod and Python's sign fix-up, both exact) is Python's value to the bit on every
    device, so an ulp of the divisor is all that moves the remainder."""
    rng = np.random.default_rng(237421)
    a = np.concatenate([[1002342087492599288, -1002342087492599288, 2**62, -(2**63)],
                        rng.integers(-(2**63), 2**63 - 1, 60, dtype=np.int64)])  # fmt: skip
    b = np.concatenate([[1.5403023058681398, 1.0, 1.9999999999999998, 1.25],
                        1.0 + rng.random(60)])  # fmt: skip
    out = kapi.zeros(64, dtype=np.float64, device=dev)
    kapi.call_kernel(
        float_mod_of_big_ints, kapi.Range(64), kapi.asarray(a, device=dev),
        kapi.asarray(b, device=dev), out,
    )  # fmt: skip
    want = np.array([float(x) % y for x, y in zip(a.tolist(), b.tolist(), strict=True)])
    np.testing.assert_array_equal(out.asnumpy(), want)
    nudged = float(a[0]) % np.nextafter(b[0], 2.0)  # one ulp more: another remainder
    assert abs(nudged - want[0]) > 0.01


def test_cuda_contraction_moves_float_products_by_an_ulp():
    """Seed 7000 kernel 8493 on the H100: `(-5 - a * c) % (abs(math.sqrt(a & 3)) + 1.0)` with
    a a uint64 near 1e19 and c = -5.0 gave 0.0427 where Python gives 0.616. CUDA fuses the
    multiply and the subtraction into one fma (kapi's NVPTX finaliser allows contraction, as
    nvcc and numba-cuda do), one rounding where Python has two, and `%` of so large a value
    magnifies the difference: the H100's values are exactly the fused ones. ksim's model for
    CUDA (CONTRACT) moves each float product by up to an ulp, which brackets the unrounded
    product; without it products stay put."""
    from fractions import Fraction

    from numba.core import types
    from numba.core.typing import signature

    ksim = kfuzz.ksim
    sig = signature(types.float64, types.float64, types.float64)
    h100 = {13249165344346336530: 0.042710000736663645, 3322470248653700334: 0.533144146121658}
    for a, seen in h100.items():
        y = math.sqrt(a & 3) + 1.0
        fused = float(Fraction(-5) - Fraction(float(a)) * Fraction(-5.0))
        assert math.fmod(fused, y) % y == seen
        exact = Fraction(float(a)) * Fraction(-5.0)
        moved = []
        for step in (-1, 1):
            ksim.PERTURB[0] = lambda step=step: step
            try:
                ksim.CONTRACT[0] = False
                assert ksim.binop("*", sig, float(a), types.float64, -5.0, types.float64) == (
                    float(a) * -5.0
                )
                ksim.CONTRACT[0] = True
                moved.append(ksim.binop("*", sig, float(a), types.float64, -5.0, types.float64))
            finally:
                ksim.PERTURB[0] = None
                ksim.CONTRACT[0] = False
        assert Fraction(moved[0]) <= exact <= Fraction(moved[1])
        assert moved[0] < float(a) * -5.0 < moved[1]


def test_a_kernel_numba_rejects_too_is_not_a_finding():
    """Seed 7000 kernel 121467 on the H100: `if c * c:` with c = -2**40. Numba's dead-branch
    pruning folds the product with Python's integers and leaves 2**80 behind as a literal that
    cannot be typed: Numba raises "Int value is too large" and so does kapi, which shares its
    front end (a KernelTypingError naming the line). ksim had seen a signed overflow there,
    so Numba was not asked, and kapi's error was reported. A kapi error now counts only when
    Numba compiles the oracle."""
    p = kfuzz.random_program(kfuzz.kernel_rng(7000, 121467), 1)
    assert not kfuzz.numba_compiles(p)
    k = kfuzz.make_kernel(p)
    try:
        want = r"fuzz-kernel-\d+>:\d+: .*too large"
        with pytest.raises(numba.core.errors.TypingError, match=want):
            kfuzz.run_kapi(p, DEVICES[0], k)
    finally:
        kfuzz.forget_kernel(k)
    summary, logged = kfuzz.new_summary(), []
    args = (7000, DEVICES[:1], None, logged.append, 0, 10**9, summary)
    assert not kfuzz.one_kernel(p, 121467, *args)
    assert summary["oracle_errors"] == 1 and not summary["findings"], (summary, logged)
    # a kernel Numba compiles is still judged
    q = kfuzz.random_program(kfuzz.kernel_rng(7000, 121466), 1)
    assert kfuzz.numba_compiles(q)
    assert kfuzz.one_kernel(q, 121466, *args) and summary["oracle_errors"] == 1


def test_a_compare_of_transcendentals_ulps_apart_is_ill_conditioned():
    """Seed 5000 kernel 147317 on the CPU device: `atan2(a, -219) <= atan2(s, 1.0)` with a
    and s near 2e18, both results within an ulp of pi/2: glibc rounds the left one up, the
    CPU device's atan2 down, and the compare flips. The perturbed reruns move each call by
    up to 4 ulps at random and happened never to reverse the two (1 chance in 30). A float
    compare a few ulps apart whose operands call a transcendental is ill-conditioned now."""
    p = kfuzz.random_program(kfuzz.kernel_rng(5000, 147317), 1)
    assert "math.atan2" in p.kernel_src()
    _, _, ill = kfuzz.run_sim(p)
    assert ill == [0]
    sig = numba.core.typing.signature(numba.types.boolean, numba.types.float64, numba.types.float64)
    f64 = numba.types.float64
    ulp = math.ulp(math.pi / 2)
    for near, far, want in ((True, 8 * ulp, True), (True, 9 * ulp, False), (False, 0.0, False)):
        ksim.ILL[0] = False
        try:
            ksim.binop("<=", sig, math.pi / 2 + far, f64, math.pi / 2, f64, near)
            assert ksim.ILL[0] is want, (near, far)
        finally:
            ksim.ILL[0] = False
