"""kapi.kernel_api.popcount (SYCL's sycl::popcount; kapi's own, numba-dpex 0.23 has none): the
number of set bits of an integer of any width and signedness, as the argument's type, on every
device, in plain CPython, in KIR and as one `popc` in NVIDIA PTX."""

import re

import numpy as np
import pytest
from kapi_testing import devices_or_skip, line_of
from nvptx_util import assemble_or_skip, kernel_ptx

import kapi
import pyfront
from kapi import kernel_api as K
from pyfront import KernelTypingError

DEVICES = devices_or_skip()
INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def _values(dt):
    """Edge values (0, 1, -1 or the maximum, the minimum, single high bits) and random ones
    covering every bit, negative ones included for signed types."""
    info = np.iinfo(dt)
    bits = np.dtype(dt).itemsize * 8
    u = np.dtype(f"u{bits // 8}")
    edges = [0, 1, 2, 3, 0xFF & info.max, info.max, info.min, info.max - 1, info.min + 1]
    if info.min < 0:
        edges += [-1, -2, -128 if bits > 8 else -127]
    singles = (np.ones(bits, u) << np.arange(bits, dtype=u)).view(dt)  # 1 << b, sign bit too
    rng = np.random.default_rng(bits)
    rand = rng.integers(0, 2**64, 300, dtype=np.uint64).astype(u).view(dt)
    edges = np.array([int(e) & ((1 << bits) - 1) for e in edges], u).view(dt)
    return np.concatenate([edges, singles, rand])


def _want(h):
    """Set bits of each value's two's complement in its own width."""
    u = np.dtype(f"u{h.dtype.itemsize}")
    return np.bitwise_count(h.view(u)).astype(h.dtype)


@kapi.kernel
def _pc(item, x, y):
    i = item.get_id(0)
    y[i] = K.popcount(x[i])


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda t: np.dtype(t).name)
def test_popcount_every_integer_dtype(dev, dt):
    h = _values(dt)
    x = kapi.asarray(h, device=dev)
    y = kapi.asarray(np.zeros_like(h), device=dev)
    kapi.call_kernel(_pc, kapi.Range(h.size), x, y)
    got = y.asnumpy()
    assert got.dtype == h.dtype  # the argument's type, as SYCL
    np.testing.assert_array_equal(got, _want(h))


@kapi.kernel
def _pc_mixed(nd, x, y):
    sg = nd.get_sub_group()
    i = nd.get_global_id(0)
    lane = np.uint32(sg.get_local_linear_id())
    v = x[i]
    # a ballot of the lanes whose value is odd, then the odd lanes below this one: the sort's
    # ranking step; and popcount of expressions (uint32 & uint32 is a uint64, as in Numba)
    bal = np.uint32(K.reduce_over_group(sg, np.uint32((v & 1) << lane), K.GroupOp.ADD))
    below = np.uint32((np.uint32(1) << lane) - np.uint32(1))
    y[i, 0] = np.int64(K.popcount(np.uint32(bal & below)))
    y[i, 1] = np.int64(K.popcount(v ^ np.uint32(0xFFFFFFFF)))
    y[i, 2] = np.int64(K.popcount(x=np.int16(v)))
    y[i, 3] = np.int64(K.popcount(7))  # a literal: an int64


def test_popcount_of_expressions_keywords_and_literals(dev):
    h = np.random.default_rng(5).integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32)
    x = kapi.asarray(h, device=dev)
    y = kapi.asarray(np.zeros((256, 4), np.int64), device=dev)
    kapi.call_kernel(_pc_mixed, kapi.NdRange((256,), (64,)), x, y)
    got = y.asnumpy()
    S = dev.sub_group_sizes[0] if dev.sub_group_sizes else 1
    odd = (h & 1).astype(np.int64)
    lane = np.arange(256) % 64 % S
    start = np.arange(256) - lane
    below = np.array([odd[start[i] : i].sum() for i in range(256)])
    np.testing.assert_array_equal(got[:, 0], below)
    np.testing.assert_array_equal(got[:, 1], 32 - np.bitwise_count(h))
    np.testing.assert_array_equal(got[:, 2], np.bitwise_count(h.astype(np.int16).view(np.uint16)))
    np.testing.assert_array_equal(got[:, 3], 3)


@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda t: np.dtype(t).name)
def test_popcount_in_plain_python(dt):
    """The pure-Python kernel_api.popcount (kernels run as Python) agrees, and keeps the type."""
    h = _values(dt)
    got = [K.popcount(v) for v in h]
    assert all(type(g) is np.dtype(dt).type for g in got)
    np.testing.assert_array_equal(np.array(got), _want(h))
    assert K.popcount(-1) == 64 and K.popcount(5) == 2  # Python ints are int64, as in kernels


def test_popcount_in_plain_python_rejects_non_integers():
    for bad in (1.5, np.float32(2.0), True, np.bool_(False), "3"):
        with pytest.raises(TypeError, match="popcount.*must be an integer"):
            K.popcount(bad)


NDITEM = ("nditem", 1)


@pytest.mark.parametrize("kty, dtype", [("f32", "float32"), ("f64", "float64"), ("bool", "bool")])
def test_popcount_of_a_non_integer_is_a_typing_error(kty, dtype):
    def k(item, a):
        i = item.get_id(0)
        a[i] = K.popcount(a[i])

    with pytest.raises(KernelTypingError) as ei:
        pyfront.compile_kernel(k, [f"array({kty},1,C,global)"], index=("item", 1))
    msg = str(ei.value)
    assert "popcount(x): x must be an integer" in msg and dtype in msg, msg
    assert ei.value.lineno == line_of(k, "K.popcount")


def test_kir_of_popcount():
    def k(item, a, b):
        i = item.get_id(0)
        a[i] = K.popcount(a[i])
        b[i] = K.popcount(b[i])

    text = pyfront.compile_kernel(
        k, ["array(i8,1,C,global)", "array(u64,1,C,global)"], index=("item", 1)
    ).text
    assert "popcount i8 " in text and "popcount u64 " in text


# ---- PTX (no GPU needed) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "kty, popc",
    [("u32", "popc.b32"), ("i32", "popc.b32"), ("u64", "popc.b64"), ("i64", "popc.b64"),
     ("u8", "popc.b32"), ("i16", "popc.b32")],
)  # fmt: skip
def test_ptx_popcount_is_one_popc(kty, popc, tmp_path):
    """One hardware popc per call (32-bit for widths up to 32, 64-bit for 64), no bit-twiddling
    loop or shift ladder, and ptxas assembles it for sm_90."""
    sig = f"item(1), array({kty},1,C,global), array({kty},1,C,global)"
    ptx = kernel_ptx(_pc, sig)
    assert len(re.findall(r"\bpopc\.b(32|64)\b", ptx)) == 1, ptx
    assert popc in ptx, ptx
    assert not re.search(r"\b(shr|and)\.b?\w*\s[^\n]*(1431655765|0x55555555)", ptx)
    assemble_or_skip(ptx, tmp_path)
