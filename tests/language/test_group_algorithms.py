"""Sub-groups and group algorithms on every device, against NumPy-computed expectations.

The expectations follow docs/guide/kernel-language.md: sub-groups are runs of the device's
sub-group size (`device.sub_group_sizes[0]`) in the hardware order of the work-group
(dimension 0 fastest); the last one of a group may be partial. Work-group scans and
broadcast ids follow get_local_linear_id's order (the last dimension fastest). Group sizes
cover multiples of 32 and not, 1-D and 2-D.
"""

import numpy as np
import pytest
from kapi_testing import devices_or_skip, line_of
from nvptx_util import assemble_or_skip, kernel_ptx

import kapi
import pyfront
from kapi import kernel_api as K
from pyfront import KernelTypingError

DEVICES = devices_or_skip()
GroupOp = K.GroupOp

# (global shape, local shape)
SHAPES_1D = [((128,), (64,)), ((96,), (48,)), ((60,), (20,)), ((7,), (7,))]
SHAPES_2D = [((16, 12), (8, 6)), ((32, 8), (16, 4))]
SHAPES = SHAPES_1D + SHAPES_2D


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def shape_id(s):
    return "x".join(map(str, s[1])) + "of" + "x".join(map(str, s[0]))


class Layout:
    """Every work-item of a launch, flattened in C order of the global ids, with its group,
    its sub-group (hardware order, size S) and its work-group linear id (SYCL order)."""

    def __init__(self, gshape, lshape, sg_size):
        self.gshape, self.lshape = gshape, lshape
        ids = np.indices(gshape).reshape(len(gshape), -1).T  # (n, ndim), C order
        loc = ids % np.array(lshape)
        grp = ids // np.array(lshape)
        ngrp = np.array(gshape) // np.array(lshape)
        self.group = np.ravel_multi_index(grp.T, ngrp)
        self.wg_lin = np.ravel_multi_index(loc.T, lshape)  # get_local_linear_id
        hw = np.ravel_multi_index(loc.T[::-1], lshape[::-1])  # dimension 0 fastest
        n = int(np.prod(lshape))
        self.n = n
        self.sg_id = hw // sg_size
        self.lane = hw % sg_size
        self.sg_range = -(-n // sg_size)
        self.sg_size = np.minimum(sg_size, n - self.sg_id * sg_size)
        self.max = sg_size

    def members(self, i, scope):
        """Indices of work-item i's group (or sub-group), ordered by linear id in it."""
        same = self.group == self.group[i]
        if scope == "work_group":
            m = np.nonzero(same)[0]
            return m[np.argsort(self.wg_lin[m])]
        m = np.nonzero(same & (self.sg_id == self.sg_id[i]))[0]
        return m[np.argsort(self.lane[m])]

    def rank(self, i, scope):
        return self.wg_lin[i] if scope == "work_group" else self.lane[i]


def run(kern, nd_range, dev, *args):
    """call_kernel on dev with NumPy arrays copied there and back (results land in args)."""
    dargs = [kapi.asarray(a, device=dev) if isinstance(a, np.ndarray) else a for a in args]
    kapi.call_kernel(kern, nd_range, *dargs)
    for a, d in zip(args, dargs, strict=True):
        if isinstance(a, np.ndarray):
            a[...] = d.asnumpy()


def sg_size_of(dev):
    return dev.sub_group_sizes[0]


# ---- queries -----------------------------------------------------------------------------


@kapi.kernel
def queries(nd, out):
    sg = nd.get_sub_group()
    i = nd.get_global_linear_id()  # C order of the global ids
    out[i, 0] = sg.get_local_id()
    out[i, 1] = sg.get_local_range()
    out[i, 2] = sg.get_max_local_range()
    out[i, 3] = sg.get_group_id()
    out[i, 4] = sg.get_group_range()
    out[i, 5] = sg.get_local_linear_id() + 100 * sg.get_group_linear_id()
    out[i, 6] = sg.get_local_linear_range() + 100 * sg.get_group_linear_range()
    out[i, 7] = 1 if sg.leader else 0
    out[i, 8] = sg.dimensions


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_sub_group_queries(dev, shape):
    gshape, lshape = shape
    lay = Layout(gshape, lshape, sg_size_of(dev))
    n = int(np.prod(gshape))
    out = np.full((n, 9), -7, np.int64)
    run(queries, kapi.NdRange(gshape, lshape), dev, out)
    want = np.stack(
        [
            lay.lane,
            lay.sg_size,
            np.full(n, lay.max),
            lay.sg_id,
            np.full(n, lay.sg_range),
            lay.lane + 100 * lay.sg_id,
            lay.sg_size + 100 * lay.sg_range,
            lay.lane == 0,
            np.ones(n),
        ],
        axis=1,
    )
    np.testing.assert_array_equal(out, want)


def test_device_reports_sub_group_sizes(dev):
    sizes = dev.sub_group_sizes
    assert len(sizes) >= 1 and all(s >= 1 for s in sizes)
    if not dev.is_gpu:
        assert sizes == (1,)


# ---- shuffles ----------------------------------------------------------------------------


@kapi.kernel
def shuffles(nd, a, out, bad):
    sg = nd.get_sub_group()
    i = nd.get_global_linear_id()  # C order of the global ids
    x = a[i]
    lane = sg.get_local_id()
    size = sg.get_local_range()
    src = (lane + 3) % size
    out[i, 0] = K.select_from_group(sg, x, src)
    out[i, 1] = K.shuffle(sg, x, src)
    v = K.shift_group_left(sg, x, 1)
    out[i, 2] = v if lane + 1 < size else bad
    v = K.shuffle_down(sg, x, 2)
    out[i, 3] = v if lane + 2 < size else bad
    v = K.shift_group_right(sg, x)
    out[i, 4] = v if lane >= 1 else bad
    v = K.shuffle_up(sg, x, 3)
    out[i, 5] = v if lane >= 3 else bad
    v = K.permute_group_by_xor(sg, x, 1)
    out[i, 6] = v if lane ^ 1 < size else bad
    v = K.shuffle_xor(sg, x, 5)
    out[i, 7] = v if lane ^ 5 < size else bad
    out[i, 8] = K.group_broadcast(sg, x)
    out[i, 9] = K.group_broadcast(sg, x, size - 1)


DTYPES = [np.int32, np.float32, np.int64, np.float64, np.uint8, np.int16]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("shape", [SHAPES[1], SHAPES[2], SHAPES[4]], ids=shape_id)
def test_shuffles(dev, shape, dtype):
    gshape, lshape = shape
    lay = Layout(gshape, lshape, sg_size_of(dev))
    n = int(np.prod(gshape))
    rng = np.random.default_rng(1)
    a = rng.integers(1, 100, n).astype(dtype)
    bad = dtype(0)  # lanes whose source is outside the sub-group
    out = np.full((n, 10), 77, dtype)
    run(shuffles, kapi.NdRange(gshape, lshape), dev, a, out, bad)
    want = np.zeros_like(out)
    for i in range(n):
        m = lay.members(i, "sub_group")
        lane, size = lay.lane[i], len(m)

        def at(j, m=m, size=size):
            return a[m[j]] if 0 <= j < size else bad

        want[i] = [
            at((lane + 3) % size),
            at((lane + 3) % size),
            at(lane + 1),
            at(lane + 2),
            at(lane - 1),
            at(lane - 3),
            at(lane ^ 1),
            at(lane ^ 5),
            at(0),
            at(size - 1),
        ]
    np.testing.assert_array_equal(out, want)


@kapi.kernel
def bool_broadcast(nd, a, out):
    sg = nd.get_sub_group()
    g = nd.get_group()
    i = nd.get_global_id(0)
    p = a[i] > 50
    out[i, 0] = K.group_broadcast(sg, p, 0)
    out[i, 1] = K.group_broadcast(g, p, 5)


def test_broadcast_of_bools(dev):
    n, L = 96, 48
    lay = Layout((n,), (L,), sg_size_of(dev))
    a = np.random.default_rng(2).integers(0, 100, n).astype(np.int32)
    out = np.zeros((n, 2), np.bool_)
    run(bool_broadcast, kapi.NdRange((n,), (L,)), dev, a, out)
    p = a > 50
    want = [
        [p[lay.members(i, "sub_group")[0]], p[lay.members(i, "work_group")[5]]] for i in range(n)
    ]
    np.testing.assert_array_equal(out, np.array(want))


# ---- sub-group barrier -----------------------------------------------------------------


@kapi.kernel
def sg_exchange(nd, a, out, tmp, use_group_barrier):
    sg = nd.get_sub_group()
    lid = nd.get_local_id(0)
    i = nd.get_global_id(0)
    tmp[lid] = a[i]
    if use_group_barrier:
        K.group_barrier(sg)  # SYCL 2020's spelling
    else:
        K.sub_group_barrier(sg)
    lane = sg.get_local_id()
    partner = lane ^ 1
    if partner < sg.get_local_range():
        out[i] = tmp[lid - lane + partner]
    else:
        out[i] = tmp[lid]


@pytest.mark.parametrize("use_group_barrier", [False, True])
def test_sub_group_barrier_orders_local_memory(dev, use_group_barrier):
    n, L = 120, 40
    lay = Layout((n,), (L,), sg_size_of(dev))
    a = np.arange(n, dtype=np.float32) * 3
    out = np.zeros(n, np.float32)
    tmp = K.LocalAccessor(L, np.float32)
    run(sg_exchange, kapi.NdRange((n,), (L,)), dev, a, out, tmp, use_group_barrier)
    want = np.empty(n, np.float32)
    for i in range(n):
        m = lay.members(i, "sub_group")
        p = lay.lane[i] ^ 1
        want[i] = a[m[p]] if p < len(m) else a[i]
    np.testing.assert_array_equal(out, want)


# ---- reductions and scans --------------------------------------------------------------

NP_OPS = {
    GroupOp.ADD: np.add,
    GroupOp.MUL: np.multiply,
    GroupOp.MIN: np.minimum,
    GroupOp.MAX: np.maximum,
    GroupOp.AND: np.bitwise_and,
    GroupOp.OR: np.bitwise_or,
    GroupOp.XOR: np.bitwise_xor,
}


def identity(op, dtype):
    if op is GroupOp.ADD or op in (GroupOp.OR, GroupOp.XOR):
        return dtype(0)
    if op is GroupOp.MUL:
        return dtype(1)
    if np.issubdtype(dtype, np.floating):
        return dtype(np.inf if op is GroupOp.MIN else -np.inf)
    if op is GroupOp.AND:
        return np.array(-1).astype(dtype)  # all bits set
    info = np.iinfo(dtype)
    return dtype(info.max if op is GroupOp.MIN else info.min)


_ALGO_KERNELS = {}


def algorithms_kernel(op):
    if op not in _ALGO_KERNELS:

        @kapi.kernel
        def algorithms(nd, a, out):
            g = nd.get_group()
            sg = nd.get_sub_group()
            i = nd.get_global_linear_id()  # C order of the global ids
            x = a[i]
            out[i, 0] = K.reduce_over_group(g, x, op)
            out[i, 1] = K.inclusive_scan_over_group(g, x, op)
            out[i, 2] = K.exclusive_scan_over_group(g, x, op)
            out[i, 3] = K.reduce_over_group(sg, x, op)
            out[i, 4] = K.inclusive_scan_over_group(sg, x, op)
            out[i, 5] = K.exclusive_scan_over_group(sg, x, op)

        _ALGO_KERNELS[op] = algorithms
    return _ALGO_KERNELS[op]


def values_for(op, dtype, n, rng):
    if op is GroupOp.MUL:
        if np.issubdtype(dtype, np.floating):
            return (1 + rng.uniform(-0.01, 0.01, n)).astype(dtype)
        return rng.choice(np.array([1, 1, 1, 2, 3], dtype=dtype), n)  # wraps alike on both sides
    if op in (GroupOp.AND, GroupOp.OR, GroupOp.XOR):
        return rng.integers(0, 1 << 20, n).astype(dtype) | dtype(1 << 25)
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-10, 10, n).astype(dtype)
    lo = 0 if np.iinfo(dtype).min == 0 else -1000
    return rng.integers(lo, 1000, n).astype(dtype)


def expected(lay, a, op, dtype):
    n = a.size
    f = NP_OPS[op]
    want = np.zeros((n, 6), dtype)
    for i in range(n):
        for col, scope in ((0, "work_group"), (3, "sub_group")):
            vals = a[lay.members(i, scope)]
            r = lay.rank(i, scope)
            want[i, col] = f.reduce(vals, dtype=dtype)
            want[i, col + 1] = f.reduce(vals[: r + 1], dtype=dtype)
            want[i, col + 2] = f.reduce(vals[:r], dtype=dtype) if r else identity(op, dtype)
    return want


INT_OPS = list(GroupOp)
FLOAT_OPS = [GroupOp.ADD, GroupOp.MUL, GroupOp.MIN, GroupOp.MAX]
CASES = [(op, t) for op in INT_OPS for t in (np.int32, np.uint32, np.int64)] + [
    (op, t) for op in FLOAT_OPS for t in (np.float32, np.float64)
]


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize(
    "op,dtype", CASES, ids=[f"{op.name}-{np.dtype(t).name}" for op, t in CASES]
)
def test_reduce_and_scans(dev, shape, op, dtype):
    gshape, lshape = shape
    lay = Layout(gshape, lshape, sg_size_of(dev))
    n = int(np.prod(gshape))
    a = values_for(op, dtype, n, np.random.default_rng(int(op) + 7 * n))
    out = np.zeros((n, 6), dtype)
    run(algorithms_kernel(op), kapi.NdRange(gshape, lshape), dev, a, out)
    want = expected(lay, a, op, dtype)
    if np.issubdtype(dtype, np.floating):
        tol = 1e-4 if dtype == np.float32 else 1e-10
        np.testing.assert_allclose(out, want, rtol=tol, atol=tol * 100)
    else:
        np.testing.assert_array_equal(out, want)


# ---- broadcast and votes ---------------------------------------------------------------


@kapi.kernel
def votes(nd, a, limit, who, out):
    g = nd.get_group()
    sg = nd.get_sub_group()
    i = nd.get_global_linear_id()  # C order of the global ids
    p = a[i] > limit
    out[i, 0] = K.any_of_group(g, p)
    out[i, 1] = K.all_of_group(g, p)
    out[i, 2] = K.none_of_group(g, p)
    out[i, 3] = K.any_of_group(sg, p)
    out[i, 4] = K.all_of_group(sg, a[i])
    out[i, 5] = K.none_of_group(sg, p)
    out[i, 6] = K.group_broadcast(g, a[i], who)
    out[i, 7] = K.group_broadcast(g, a[i])


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_votes_and_work_group_broadcast(dev, shape):
    gshape, lshape = shape
    lay = Layout(gshape, lshape, sg_size_of(dev))
    n = int(np.prod(gshape))
    rng = np.random.default_rng(n)
    a = rng.integers(0, 1000, n).astype(np.int32)
    a[lay.group == 0] = 5  # one group where no item passes, and none is zero
    limit = 990
    who = lay.n - 1
    out = np.zeros((n, 8), np.int32)
    run(votes, kapi.NdRange(gshape, lshape), dev, a, limit, who, out)
    want = np.zeros_like(out)
    for i in range(n):
        wg, sg = lay.members(i, "work_group"), lay.members(i, "sub_group")
        pw, ps = a[wg] > limit, a[sg] > limit
        want[i] = [pw.any(), pw.all(), not pw.any(), ps.any(), (a[sg] != 0).all(),
                   not ps.any(), a[wg[who]], a[wg[0]]]  # fmt: skip
    np.testing.assert_array_equal(out, want)


@kapi.kernel
def collective_in_loop(nd, a, out):
    g = nd.get_group()
    i = nd.get_global_id(0)
    acc = 0.0
    for k in range(3):
        acc += K.reduce_over_group(g, a[i] * (k + 1), GroupOp.ADD)
    out[i] = acc


def test_collectives_repeat_in_loops(dev):
    n, L = 256, 128
    a = np.random.default_rng(3).uniform(0, 1, n).astype(np.float64)
    out = np.zeros(n)
    run(collective_in_loop, kapi.NdRange((n,), (L,)), dev, a, out)
    want = np.repeat(a.reshape(-1, L).sum(axis=1) * 6, L)
    np.testing.assert_allclose(out, want, rtol=1e-12)


@kapi.device_func
def group_mean(g, sg, x):
    total = K.reduce_over_group(g, x, GroupOp.ADD)
    return total / g.get_local_linear_range() + K.reduce_over_group(sg, 0.0, GroupOp.ADD)


@kapi.kernel
def mean_via_device_func(nd, a, out):
    i = nd.get_global_id(0)
    out[i] = group_mean(nd.get_group(), nd.get_sub_group(), a[i])


def test_groups_pass_to_device_functions(dev):
    n, L = 192, 96
    a = np.random.default_rng(4).uniform(0, 1, n)
    out = np.zeros(n)
    run(mean_via_device_func, kapi.NdRange((n,), (L,)), dev, a, out)
    np.testing.assert_allclose(out, np.repeat(a.reshape(-1, L).mean(axis=1), L), rtol=1e-12)


@kapi.kernel
def scan_beside_local_accessor(nd, a, out, tmp):
    lid = nd.get_local_id(0)
    tmp[lid] = a[nd.get_global_id(0)] * 2
    K.group_barrier(nd.get_group())
    x = tmp[nd.get_local_range(0) - 1 - lid]
    out[nd.get_global_id(0)] = K.inclusive_scan_over_group(nd.get_group(), x, GroupOp.ADD)


def test_collectives_beside_a_local_accessor(dev):
    n, L = 160, 32
    a = np.arange(n, dtype=np.int64)
    out = np.zeros(n, np.int64)
    tmp = K.LocalAccessor(L, np.int64)
    run(scan_beside_local_accessor, kapi.NdRange((n,), (L,)), dev, a, out, tmp)
    want = np.concatenate([np.cumsum(2 * a[g : g + L][::-1]) for g in range(0, n, L)])
    np.testing.assert_array_equal(out, want)


# ---- plain CPython and errors ----------------------------------------------------------


def test_python_semantics_of_one_item_sub_groups():
    sg = K.SubGroup(3, 8)
    assert (sg.get_local_id(), sg.get_local_range(), sg.get_max_local_range()) == (0, 1, 1)
    assert (sg.get_group_id(), sg.get_group_range(), sg.leader) == (3, 8, True)
    assert K.shuffle_down(sg, 2.5, 1) == 2.5 and K.permute_group_by_xor(sg, 4, 1) == 4
    assert K.reduce_over_group(sg, 5, GroupOp.MUL) == 5
    assert K.exclusive_scan_over_group(sg, np.int32(5), GroupOp.MIN) == np.iinfo(np.int32).max
    assert K.exclusive_scan_over_group(sg, 2.0, GroupOp.MUL) == 1.0
    assert K.any_of_group(sg, 1) and not K.none_of_group(sg, True)
    with pytest.raises(NotImplementedError, match="KAPI_SIMULATOR=1"):
        K.reduce_over_group(K.SubGroup(0, 1, 0, 4), 1, GroupOp.ADD)


NDITEM = ("nditem", 1)
I32 = "array(i32,1,C,global)"
F32 = "array(f32,1,C,global)"


def compile_err(fn, args):
    with pytest.raises(KernelTypingError) as ei:
        pyfront.compile_kernel(fn, list(args), index=NDITEM)
    return ei.value


def test_kir_of_sub_group_and_group_calls():
    def k(nd, a):
        sg = nd.get_sub_group()
        g = nd.get_group()
        a[0] = K.shuffle_down(sg, a[1], 2) + K.reduce_over_group(g, a[2], GroupOp.MAX)
        a[3] = K.exclusive_scan_over_group(sg, a[4], GroupOp.XOR)
        a[5] = K.none_of_group(sg, a[6] > 0) + sg.get_max_local_range()
        K.group_barrier(sg)

    text = pyfront.compile_kernel(k, [I32], index=NDITEM).text
    for want in (
        "sg_shuffle_down i32",
        "group_reduce i32 max work_group",
        "group_exclusive_scan i32 xor sub_group",
        "group_any bool sub_group",
        "not bool",
        "sg_max_range i64",
        "sg_barrier",
    ):
        assert want in text, want


def test_bitwise_op_on_floats_is_an_error():
    def k(nd, a):
        a[0] = K.reduce_over_group(nd.get_group(), a[0], GroupOp.XOR)

    err = compile_err(k, [F32])
    assert "GroupOp.XOR needs an integer" in str(err)
    assert err.lineno == line_of(k, "reduce_over_group")


def test_op_must_be_a_group_op():
    def k(nd, a):
        a[0] = K.reduce_over_group(nd.get_group(), a[0], 3)

    assert "op must be a GroupOp" in str(compile_err(k, [I32]))


def test_shuffle_needs_a_sub_group():
    def k(nd, a):
        a[0] = K.shuffle_down(nd.get_group(), a[0], 1)

    assert "pass nd_item.get_sub_group()" in str(compile_err(k, [I32]))


def test_collective_needs_a_group():
    def k(nd, a):
        a[0] = K.reduce_over_group(nd, a[0], GroupOp.ADD)

    assert "nd_item.get_group() or nd_item.get_sub_group()" in str(compile_err(k, [I32]))


# ---- PTX (no GPU needed) ---------------------------------------------------------------


I64_2D = "array(i64,2,C,global)"


def test_ptx_shuffles_are_warp_shuffles(tmp_path):
    sig = f"nditem(1), {I32}, array(i32,2,C,global), i32"
    ptx = kernel_ptx(shuffles, sig)
    for mode in ("idx", "down", "up", "bfly"):
        assert f"shfl.sync.{mode}.b32" in ptx, mode
    assert "bar.sync" not in ptx  # sub-group operations never wait for the work-group
    assemble_or_skip(ptx, tmp_path)


def test_ptx_collectives_and_sub_group_barrier(tmp_path):
    sig = "nditem(2), array(f64,1,C,global), array(f64,2,C,global)"
    ptx = kernel_ptx(algorithms_kernel(GroupOp.MUL), sig)
    assert "shfl.sync.up.b32" in ptx and "shfl.sync.idx.b32" in ptx  # sub-group scans
    assert "bar.sync" in ptx and ".shared" in ptx  # work-group ones: scratch + barriers
    assemble_or_skip(ptx, tmp_path)
    ptx = kernel_ptx(algorithms_kernel(GroupOp.MIN), f"nditem(1), {I32}, array(i32,2,C,global)")
    assert "redux.sync.min.s32" in ptx  # 32-bit integer sub-group reductions (sm_80+)
    assemble_or_skip(ptx, tmp_path)
    sig = f"nditem(1), {I32}, i32, i64, array(i32,2,C,global)"
    ptx = kernel_ptx(votes, sig)
    assert "vote.sync.any.pred" in ptx and "vote.sync.all.pred" in ptx
    assemble_or_skip(ptx, tmp_path)
    ptx = kernel_ptx(sg_exchange, f"nditem(1), {F32}, {F32}, array(f32,1,C,local), bool")
    assert "bar.warp.sync" in ptx and "bar.sync" not in ptx
    assemble_or_skip(ptx, tmp_path)


def _sum_if_positive(nd, x, y):
    sg = nd.get_sub_group()
    i = nd.get_local_id(0)
    v = x[i]
    if v > 0:  # lanes of one warp part here: the reduction is undefined on sm_70+
        v = K.reduce_over_group(sg, v, GroupOp.ADD)
    y[i] = v


def _sum_lane_times(nd, x, y):
    sg = nd.get_sub_group()
    i = nd.get_local_id(0)
    v = x[i]
    j = 0
    while j < sg.get_local_id():  # a trip count per lane
        v = K.reduce_over_group(sg, v, GroupOp.ADD)
        j += 1
    y[i] = v


def _sum_converged(nd, x, y):
    sg = nd.get_sub_group()
    i = nd.get_local_id(0)
    v = x[i]
    if v > 0:
        v = np.int32(v + 1)
    v = K.reduce_over_group(sg, v, GroupOp.ADD)  # after the lanes meet again
    if x[0] > 3:  # every lane loads the same element: a uniform branch
        v = K.reduce_over_group(sg, v, GroupOp.ADD)
    K.group_barrier(nd.get_group())
    y[i] = v


def test_ptx_divergence_check_finds_warp_ops_under_lane_varying_branches():
    """tests/nvptx_util.divergent_warp_sync, which the sort's PTX tests rely on: it names
    sub-group reductions under a per-lane `if` or in a loop whose trip count differs between
    lanes, and passes those after the lanes meet again or under a branch all lanes take alike."""
    from nvptx_util import divergent_warp_sync

    sig = f"nditem(1), {I32}, {I32}"
    for fn in (_sum_if_positive, _sum_lane_times):
        ptx = kernel_ptx(kapi.kernel(fn), sig)
        found = divergent_warp_sync(ptx, fn.__name__)
        assert found and all("redux.sync" in f for f in found), (fn.__name__, found)
    ptx = kernel_ptx(kapi.kernel(_sum_converged), sig)
    assert ptx.count("redux.sync") == 2 and "bar.sync" in ptx
    assert divergent_warp_sync(ptx, "_sum_converged") == []


KIR_NAMES = {
    np.int32: "i32",
    np.uint32: "u32",
    np.int64: "i64",
    np.float32: "f32",
    np.float64: "f64",
}


@pytest.mark.parametrize(
    "op,dtype", CASES, ids=[f"{op.name}-{np.dtype(t).name}" for op, t in CASES]
)
def test_ptx_of_every_collective_assembles(op, dtype, tmp_path):
    t = KIR_NAMES[dtype]
    sig = f"nditem(2), array({t},1,C,global), array({t},2,C,global)"
    ptx = kernel_ptx(algorithms_kernel(op), sig)
    assert "shfl.sync" in ptx or "redux.sync" in ptx
    assemble_or_skip(ptx, tmp_path)


@kapi.kernel
def shuffle_then_count(nd, a, acc):
    sg = nd.get_sub_group()
    i = nd.get_global_linear_id()
    x = K.shuffle_xor(sg, a[i], 1)
    K.AtomicRef(acc, 0).fetch_add(x)


def test_shuffle_beside_a_64_bit_atomic(dev):
    """A kernel with an int64 atomic is validated in SPIR-V's universal environment against
    kapi's list of OpenCL capabilities, which lacked the sub-group shuffles': such a kernel
    was refused ("capability 5568 is not available in OpenCL"; found writing the one-sweep
    sort, which fell back to int32 tickets)."""
    a = np.arange(64, dtype=np.int64)
    acc = kapi.zeros(1, dtype=np.int64, device=dev)
    kapi.call_kernel(
        shuffle_then_count, kapi.NdRange((64,), (32,)), kapi.asarray(a, device=dev), acc
    )
    assert acc.asnumpy()[0] == a.sum()  # a permutation within each sub-group keeps the sum
