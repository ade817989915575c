"""@kapi.kernel(required_group_size=...): the work-group size every launch of a kernel must
have (SYCL's reqd_work_group_size). It travels as KIR's kernel attribute `group_size X Y Z`,
the LLVM kernel's reqd_work_group_size (SPIR-V ExecutionMode LocalSize); the runtime refuses
a launch of another size, and the NVPTX finaliser, knowing every warp is whole when the size
is a multiple of 32, names all 32 lanes in each warp-synchronous instruction."""

import re

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi_lang import kernel_api as K

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def _sg_sum(it, a, out):
    i = it.get_global_id(0)
    sg = it.get_sub_group()
    s = K.reduce_over_group(sg, a[i], K.GroupOp.ADD)
    K.group_barrier(sg)
    g = it.get_group()
    out[i] = s + K.reduce_over_group(g, a[i], K.GroupOp.ADD) * 0


def _kernel(**options):
    return kapi.kernel(_sg_sum, **options)


def _want(h, dev, wg):
    """Each item's sub-group sum (sub-groups of the device's size within groups of wg)."""
    sgs = max(dev.sub_group_sizes or [1])
    out = np.empty_like(h)
    for g0 in range(0, h.size, wg):
        for s0 in range(g0, g0 + wg, sgs):
            out[s0 : min(s0 + sgs, g0 + wg)] = h[s0 : min(s0 + sgs, g0 + wg)].sum()
    return out


def test_required_size_runs_and_other_sizes_are_refused(dev):
    h = np.arange(512, dtype=np.int32) % 7
    a = kapi.asarray(h, device=dev)
    out = kapi.asarray(np.zeros(512, np.int32), device=dev)
    k = _kernel(required_group_size=64)
    kapi.call_kernel(k, kapi.NdRange(512, 64), a, out)
    np.testing.assert_array_equal(out.asnumpy(), _want(h, dev, 64))
    (ck,) = k.overloads.values()
    assert re.search(r"^kernel @_sg_sum\(.*\) -> void .* group_size 64 1 1 \{$", ck.kir, re.M)
    assert "LocalSize" in ck.disassemble()
    with pytest.raises(Exception, match=r"requires work-group size 64 x 1 x 1, got 32"):
        kapi.call_kernel(k, kapi.NdRange(512, 32), a, out)


def test_whole_warps_name_every_lane_in_ptx():
    """Groups of 64: every warp-synchronous instruction's member mask is -1 (no mask computed
    from the group size); groups of 48 (a partial warp) or no required size: computed."""
    from nvptx_util import ptx_of

    sig = ("array(i32,1,C,global)", "array(i32,1,C,global)")
    sync = re.compile(r"(bar\.warp\.sync|shfl\.sync\.\w+\.b32|redux\.sync\.\w+\.\w+)\s+([^;]*);")

    def masks(**options):
        ptx = ptx_of(_kernel(**options).compile(sig, ("nditem", 1)).spirv)
        ones = set(re.findall(r"mov\.[ub]32\s+(%r\d+),\s*-1;", ptx))  # masks in registers
        found = [m.group(2).split(",")[-1].strip() for m in sync.finditer(ptx)]
        assert found, ptx
        return {"-1" if f in ones else f for f in found}

    assert masks(required_group_size=64) == {"-1"}
    assert masks(required_group_size=(32, 2)) == {"-1"}
    assert masks(required_group_size=48) != {"-1"}
    assert masks() != {"-1"}


@pytest.mark.parametrize(
    ("value", "err", "match"),
    [
        (0, ValueError, r"required_group_size must be 1\.\.65536 in each dimension, not 0"),
        ((64, 70000), ValueError, r"required_group_size must be 1\.\.65536"),
        ("64", TypeError, r"required_group_size must be an int or a tuple of 1 to 3 ints"),
        (True, TypeError, r"required_group_size must be an int or a tuple"),
        ((1, 2, 3, 4), TypeError, r"required_group_size must be an int or a tuple"),
        ([64], TypeError, r"required_group_size must be an int or a tuple"),
    ],
)
def test_bad_values_are_clear_errors(value, err, match):
    with pytest.raises(err, match=match):
        _kernel(required_group_size=value)


def test_padded_to_three_dimensions():
    assert _kernel(required_group_size=np.int64(128)).required_group_size == (128, 1, 1)
    assert _kernel(required_group_size=(16, 4)).required_group_size == (16, 4, 1)
