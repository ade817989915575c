"""Coarsening on NVIDIA GPUs: a kernel whose work-items never interact gets a second PTX entry
running several consecutive work-items per thread with 16-byte accesses, which the CUDA driver
launches when the pointers are 16-byte aligned
(compiler/src/finalise/nvptx/finalise_nvptx_coarsen.c).

The PTX checks run anywhere (the finaliser needs no GPU). The launch checks run on every
device: on the CPU they pin the reference results, on an NVIDIA GPU they take the coarsened
entry (sizes that leave a partial set, tiny launches) or fall back to the kernel's own
(unaligned views), and in-place updates must stay right either way."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip
from nvptx_util import finalise

import kapi
from kapi import kernel_api

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@kapi.kernel
def saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


@kapi.kernel
def triad_range(item, a, b, c, s):
    i = item.get_id(0)
    c[i] = a[i] + s * b[i] + item.get_range(0)


@kapi.kernel
def rows(item, a, b):
    i = item.get_id(0)
    j = item.get_id(1)
    b[j, i] = a[j, i] * 2 + j


@kapi.kernel
def with_local_id(nd_item, a):
    a[nd_item.get_global_id(0)] = nd_item.get_local_id(0)


@kapi.kernel
def with_atomic(item, a, count):
    i = item.get_id(0)
    a[i] = a[i] + 1
    kernel_api.AtomicRef(count, 0).fetch_add(1)


@kapi.kernel
def with_private(item, a):
    i = item.get_id(0)
    p = kernel_api.PrivateArray(4, np.float32)
    for k in range(4):
        p[k] = a[i] + k
    a[i] = p[(i % 4)]


@kapi.kernel
def with_barrier(nd_item, a):
    i = nd_item.get_global_id(0)
    a[i] = a[i] + 1
    kernel_api.group_barrier(nd_item.get_group())


def spirv_of(kern, signature):
    return kern.inspect_spirv(signature)


def table_of(kern, signature, coarsen=True):
    ptx, table = finalise(spirv_of(kern, signature), [kern.__name__], coarsen)
    return ptx, table[kern.__name__]


F32 = "array(f32,1,C,global)"


def test_saxpy_gets_a_float4_entry():
    ptx, (entry, factor, aligned) = table_of(saxpy, f"item(1), f32, {F32}, {F32}")
    assert entry == "saxpy__kapi_coarse" and factor == 4
    # Argument slots: a, then (data, extent, stride) per array; the data pointers are 1 and 4.
    assert aligned == (1 << 1) | (1 << 4)
    body = ptx[ptx.index(".entry saxpy__kapi_coarse") :]
    assert body.count("ld.global.v4.f32") == 2 and "st.global.v4.f32" in body


def test_float64_gets_two_per_thread():
    f64 = "array(f64,1,C,global)"
    ptx, (entry, factor, _) = table_of(triad_range, f"item(1), {f64}, {f64}, {f64}, f64")
    assert entry and factor == 2
    assert "ld.global.v2.f64" in ptx[ptx.index(f".entry {entry}") :]


def test_coarsening_can_be_turned_off():
    ptx, (entry, factor, _) = table_of(saxpy, f"item(1), f32, {F32}, {F32}", coarsen=False)
    assert entry is None and factor == 0 and "__kapi_coarse" not in ptx


@pytest.mark.parametrize(
    "kern, signature",
    [
        (with_local_id, "nditem(1), array(i64,1,C,global)"),
        (with_atomic, "item(1), array(i64,1,C,global), array(i64,1,C,global)"),
        (with_private, f"item(1), {F32}"),
        (with_barrier, f"nditem(1), {F32}"),
    ],
    ids=["local-id", "atomic", "private-array", "barrier"],
)
def test_kernels_whose_work_items_interact_keep_one_entry(kern, signature):
    ptx, (entry, factor, _) = table_of(kern, signature)
    assert entry is None and factor == 0 and "__kapi_coarse" not in ptx


@pytest.mark.parametrize("n", [1, 3, 4, 5, 1000, 4096, 1000003])
def test_saxpy_sizes(dev, n):
    hx = (np.arange(n) % 1000).astype(np.float32)
    x = kapi.asarray(hx, device=dev)
    y = kapi.asarray(np.ones(n + 1, np.float32), device=dev)
    kapi.call_kernel(saxpy, kernel_api.Range(n), np.float32(2), x, y[:n])
    got = y.asnumpy()
    np.testing.assert_array_equal(got[:n], 2 * hx + 1)
    assert got[n] == 1  # nothing written past the range


@pytest.mark.parametrize("xoff, yoff", [(1, 0), (0, 2), (3, 3), (4, 4)])
def test_saxpy_on_views_of_any_alignment(dev, xoff, yoff):
    n = 10001
    hx = (np.arange(n + 8) % 997).astype(np.float32)
    x = kapi.asarray(hx, device=dev)
    y = kapi.asarray(np.full(n + 8, 3, np.float32), device=dev)
    kapi.call_kernel(saxpy, kernel_api.Range(n), np.float32(0.5), x[xoff:], y[yoff : yoff + n])
    want = np.full(n + 8, 3, np.float32)
    want[yoff : yoff + n] = np.float32(0.5) * hx[xoff : xoff + n] + 3
    np.testing.assert_array_equal(y.asnumpy(), want)


def test_any_layout_is_versioned_on_unit_stride():
    """Layout A indexes through the strides: the vectoriser checks that they are 1."""
    a_f32 = "array(f32,1,A,global)"
    ptx, (entry, factor, _) = table_of(saxpy, f"item(1), f32, {a_f32}, {a_f32}")
    assert entry and factor == 4
    assert "ld.global.v4.f32" in ptx[ptx.index(f".entry {entry}") :]


@pytest.mark.parametrize("sx, sy", [(2, 1), (1, 3), (2, 2)])
def test_saxpy_on_strided_views(dev, sx, sy):
    n = 5003
    hx = (np.arange(n * sx) % 101).astype(np.float32)
    hy = (np.arange(n * sy) % 7).astype(np.float32)
    x, y = kapi.asarray(hx, device=dev), kapi.asarray(hy, device=dev)
    kapi.call_kernel(saxpy, kernel_api.Range(n), np.float32(2), x[::sx], y[::sy])
    want = hy.copy()
    want[::sy] = 2 * hx[::sx] + hy[::sy]
    np.testing.assert_array_equal(y.asnumpy(), want)


@pytest.mark.parametrize("shift", [0, 1, 4])
def test_saxpy_in_place(dev, shift):
    n = 4099
    h = (np.arange(n + shift) % 31).astype(np.float32)
    x = kapi.asarray(h, device=dev)
    kapi.call_kernel(saxpy, kernel_api.Range(n), np.float32(3), x[shift:], x[shift:])
    want = h.copy()
    want[shift:] = 4 * h[shift:]
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_global_size_reads_the_whole_range(dev):
    if not dev.has_aspect_fp64:
        pytest.skip("device without fp64")
    n = 1001
    a = np.arange(n, dtype=np.float64)
    b = np.full(n, 2.0)
    c = kapi.zeros(n, dtype=np.float64, device=dev)
    ka, kb = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    kapi.call_kernel(triad_range, kernel_api.Range(n), ka, kb, c, 0.5)
    np.testing.assert_array_equal(c.asnumpy(), a + 0.5 * b + n)


@pytest.mark.parametrize("n0, n1", [(1024, 3), (7, 5), (4099, 2)])
def test_two_dimensional_range(dev, n0, n1):
    a = np.arange(n0 * n1, dtype=np.int32).reshape(n1, n0)
    b = kapi.zeros((n1, n0), dtype=np.int32, device=dev)
    kapi.call_kernel(rows, kernel_api.Range(n0, n1), kapi.asarray(a, device=dev), b)
    np.testing.assert_array_equal(b.asnumpy(), a * 2 + np.arange(n1)[:, None])
