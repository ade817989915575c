"""pyfront: arrays (layouts, indexing, attributes) and math functions."""

import math
import re

import numpy as np
import pytest

import pyfront
from pyfront.kircheck import check


def kir(fn, args, index=("item", 1)):
    m = pyfront.compile_kernel(fn, args, index=index)
    check(m.text)
    return m.text


def find(text, pattern):
    stripped = (ln.split("#")[0].strip() for ln in text.splitlines())
    return [ln for ln in stripped if re.search(pattern, ln)]


@pytest.mark.parametrize("layout", ["C", "F", "A"])
def test_2d_and_3d_indexing_in_each_layout(layout):
    def k(item, a, b):
        i = item.get_id(0)
        a[i, 1] = b[i, 2, 0] + a[(i, 0)]

    t = kir(k, [f"array(f64,2,{layout},global)", f"array(f64,3,{layout},global)"])
    assert f"%a: array(f64,2,{layout},global), %b: array(f64,3,{layout},global)" in t
    assert find(t, r"= aload f64 %b %\d+ %\d+ %\d+$")
    assert find(t, r"^astore %a %\d+ %\d+ %\d+$")


def test_negative_and_signed_indices_wrap_unsigned_do_not():
    def k(item, a, s, u):
        a[-1] = a[s] + a[u]

    t = kir(k, ["array(f32,1,C,global)", "i32", "u32"])
    assert len(find(t, r"= wrapidx i64 %a 0 ")) == 2  # -1 and s
    assert find(t, r"= cast i64 %u$")
    assert find(t, r"= cast i64 %s$")


def test_shape_strides_size_ndim():
    def k(item, a, out):
        out[0] = a.shape[0] + a.shape[1]
        out[1] = a.strides[1]
        out[2] = a.size
        out[3] = a.ndim
        out[4] = len(a)

    t = kir(k, ["array(f32,2,A,global)", "array(i64,1,C,global)"])
    assert find(t, r"= dim i64 %a 0$") and find(t, r"= dim i64 %a 1$")
    assert find(t, r"= stride i64 %a 1$")
    assert find(t, r"= mul i64 ")  # size = d0 * d1
    assert find(t, r"= const i64 2$")  # ndim


def test_bool_and_int_arrays():
    def k(item, m, v):
        i = item.get_id(0)
        if m[i]:
            v[i] = 1

    t = kir(k, ["array(bool,1,C,global)", "array(i16,1,C,global)"])
    assert find(t, r"= aload bool %m ") and find(t, r"= const i16 1$")


def test_array_slicing_is_rejected():
    def k(item, a, b):
        b[0] = a[1:3][0]

    with pytest.raises(pyfront.UnsupportedConstructError) as ei:
        kir(k, ["array(f32,1,C,global)", "array(f32,1,C,global)"])
    assert "slic" in str(ei.value)


UNARY = [
    "sqrt",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "fabs",
    "erf",
    "erfc",
]


@pytest.mark.parametrize("name", UNARY)
def test_unary_math_f32(name):
    fn = getattr(math, name)

    def k(item, x):
        x[0] = fn(x[0])

    t = kir(k, ["array(f32,1,C,global)"])
    assert find(t, rf"= math f32 {name} %\d+$")


@pytest.mark.parametrize("name", ["atan2", "pow", "fmod", "hypot", "copysign"])
def test_binary_math_f64(name):
    fn = getattr(math, name)

    def k(item, x):
        x[0] = fn(x[0], x[1])

    t = kir(k, ["array(f64,1,C,global)"])
    assert find(t, rf"= math f64 {name} %\d+ %\d+$")


def test_math_on_ints_goes_through_float64():
    def k(item, n, out):
        out[0] = math.sqrt(n) + math.pow(2.0, n)

    t = kir(k, ["i32", "array(f32,1,C,global)"])
    assert find(t, r"= math f64 sqrt ") and find(t, r"= math f64 pow ")
    assert find(t, r"= cast f64 ")


def test_floor_ceil_trunc_return_ints_like_numba():
    def k(item, x, out):
        out[0] = math.floor(x) + math.ceil(x) + math.trunc(x)

    t = kir(k, ["f32", "array(i64,1,C,global)"])
    for n in ("floor", "ceil", "trunc"):
        assert find(t, rf"= math f32 {n} %x$")
    assert len(find(t, r"= cast i64 ")) == 3


def test_predicates_and_constants():
    def k(item, x, out, n):
        out[0] = math.isnan(x) or math.isinf(x) or not math.isfinite(x) or math.isnan(n)
        out[1] = math.pi + math.e + math.inf
        out[2] = math.nan

    t = kir(k, ["f64", "array(f64,1,C,global)", "i64"])
    for n in ("isnan", "isinf", "isfinite"):
        assert find(t, rf"= math bool {n} %x$")
    assert find(t, r"= const f64 0x1\.921fb54442d18p\+1$")  # pi
    assert find(t, r"= const f64 inf$") and find(t, r"= const f64 nan$")


def test_counting_up_loops_index_without_wraparound():
    def k(item, a, n):
        for j in range(n):
            a[j] = 0
        for j in range(n, -1, -1):
            a[j] = 1

    t = kir(k, ["array(f32,1,C,global)", "i64"])
    assert len(find(t, r"= wrapidx i64 %a 0 ")) == 1  # only the counting-down loop


def test_reassigned_variables_keep_a_known_sign_through_loops():
    # a tree reduction's stride: every value stored into it is >= 0, so `lid + stride`
    # indexes without wraparound, however many times the loop halves it
    def k(nditem, a):
        lid = nditem.get_local_id(0)
        stride = nditem.get_local_range(0) // 2
        while stride > 0:
            if lid < stride:
                a[lid] += a[lid + stride]
            stride //= 2
        d = 1
        while d < 64:
            a[lid * d % 7] = 0
            d *= 2

    t = kir(k, ["array(f32,1,C,global)"], index=("nditem", 1))
    assert not find(t, "wrapidx")


def test_a_difference_under_a_comparison_indexes_without_wraparound():
    # a scan's step: `lid - d` under `if lid >= d` (and `d - lid` on the else side) is >= 0
    def k(nditem, a, d):
        lid = nditem.get_local_id(0)
        if lid >= d:
            a[lid - d] = 1
        else:
            a[d - lid] = 2
        if d < lid:
            a[lid - d] = 3

    t = kir(k, ["array(f32,1,C,global)", "i64"], index=("nditem", 1))
    assert not find(t, "wrapidx")


def test_a_difference_wraps_where_the_comparison_may_not_hold():
    def k(nditem, a, d, e):
        lid = nditem.get_local_id(0)
        if lid >= d:
            a[d - lid] = 1  # the wrong way round
        if lid >= d:
            d = e
            a[lid - d] = 2  # d reassigned since
        if lid >= d or e > 0:
            a[lid - d] = 3  # reached from two edges
        c = lid >= e
        e = d
        if c:
            a[lid - e] = 4  # e reassigned between the comparison and the branch

    t = kir(k, ["array(f32,1,C,global)", "i64", "i64"], index=("nditem", 1))
    assert len(find(t, r"= wrapidx i64 %a 0 ")) == 4


def test_reassigned_variables_of_unknown_sign_still_wrap():
    # the loop's `a[j]` is emitted before the store of a difference into `j`: the function is
    # emitted again with `j` signed, so that index wraps too
    def k(item, a, n):
        j = item.get_id(0)
        for _ in range(3):
            a[j] = 1
            j = j - n
        m = 0
        while m < n:
            a[m] = 3
            m += item.get_id(0) - 1

    t = kir(k, ["array(f32,1,C,global)", "i64"])
    assert len(find(t, r"= wrapidx i64 %a 0 ")) == 2  # a[j] and a[m]


def test_numpy_ufuncs_on_scalars():
    import numpy as np

    def k(item, x, n):
        a = x[0]
        x[1] = np.sqrt(a) + np.arcsin(a) + np.floor(a) + np.arctan2(a, a)
        x[2] = np.minimum(a, x[1]) + np.power(a, 2) + np.abs(n) + np.negative(a)
        x[3] = np.isnan(a) or np.isfinite(n)

    t = kir(k, ["array(f32,1,C,global)", "i64"])
    for name in ("sqrt", "asin", "floor", "atan2"):
        assert find(t, rf"= math f32 {name} "), name
    assert find(t, r"= select f32 ") and find(t, r"= math bool isnan ")  # NaN-propagating min
    assert find(t, r"= pow f32 ") and find(t, r"= abs i64 %n$") and find(t, r"= neg f32 ")
    assert find(t, r"= const bool 1$")  # isfinite of an integer


def test_row_views_index_the_underlying_array():
    def k(item, train, out):
        j = item.get_id(0)
        row = train[j]
        s = 0.0
        for c in range(row.shape[0]):
            s += row[c] * row.strides[0]
        out[j] = s + train[j, 1]
        train[j][0] = s

    t = kir(k, ["array(f32,2,C,global)", "array(f64,1,C,global)"])
    assert find(t, r"= dim i64 %train 1$") and find(t, r"= stride i64 %train 1$")
    assert find(t, r"= aload f32 %train %0 %\d+$")
    assert find(t, r"^astore %train %\d+ %0 %\d+$")


def test_exact_casts_and_min_max_keep_a_known_sign():
    # a uint32 widened to int64, and min/max of values known >= 0, index without wraparound;
    # a uint64 cast to int64 (same width), a signed load and min with n - 1 still wrap
    def k(item, a, u, s, n):
        i = item.get_id(0)
        d = np.int64(u[i])  # uint32 -> int64: exact
        a[d] = 1
        a[min(i + 32, d)] = 2
        a[max(i, 3)] = 3
        a[np.int64(np.uint64(u[i]))] = 4  # uint64 -> int64 may be negative
        a[np.int64(s[i])] = 5  # an int32 load may be negative
        a[min(i, n - 1)] = 6  # n - 1 may be negative

    t = kir(k, ["array(f32,1,C,global)", "array(u32,1,C,global)", "array(i32,1,C,global)", "i64"])
    assert len(find(t, r"= wrapidx i64 %a 0 ")) == 3
