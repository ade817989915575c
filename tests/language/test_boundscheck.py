"""Bounds checking (issue 12 item 4): kernel(boundscheck=True) and KAPI_BOUNDSCHECK=1 make an
out-of-range array index raise IndexError from call_kernel at the kernel's file:line, naming
the array and the dimension, on every device; off by default, and then the KIR has no check.
"""

import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest
from kapi_testing import devices_or_skip, line_of
from nvptx_util import finalise

import kapi
from kapi import kernel_api as kapi_api

DEVICES = devices_or_skip()
HERE = __file__
SIG1 = "(item(1), array(f32,1,C,global), array(f32,1,C,global))"


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def shifted(item, a, b):
    i = item.get_id(0)
    b[i + 20] = a[i]


checked_shift = kapi.kernel(boundscheck=True)(shifted)


def _f32(n, dev, fill=None):
    h = np.arange(n, dtype=np.float32) if fill is None else np.full(n, fill, np.float32)
    return kapi.asarray(h, device=dev)


def test_reported_case_raises_index_error_and_next_launch_works(dev):
    """The issue's kernel: a store 20 past the end of 16-element arrays. A third array keeps
    its contents (the unchecked kernel overwrote it), and the next launch works."""
    a, b, c = _f32(16, dev), _f32(16, dev, 0), _f32(16, dev, 7)
    with pytest.raises(IndexError) as e:
        kapi.call_kernel(checked_shift, kapi.Range(16), a, b)
    msg = str(e.value)
    assert f"{HERE}:{line_of(shifted, 'b[i + 20]')}" in msg
    # the first failing work-item's index (i + 20) and the dimension's extent
    m = re.search(r"index (\d+) is out of bounds for array 'b' \(dimension 0, extent 16\)", msg)
    assert m and int(m[1]) == e.value.work_item[0] + 20, msg
    assert e.value.kernel_line == line_of(shifted, "b[i + 20]")
    np.testing.assert_array_equal(c.asnumpy(), np.full(16, 7, np.float32))
    big = _f32(36, dev, 0)
    kapi.call_kernel(checked_shift, kapi.Range(16), a, big)
    want = np.zeros(36, np.float32)
    want[20:] = np.arange(16)
    np.testing.assert_array_equal(big.asnumpy(), want)


@kapi.kernel(boundscheck=True)
def checked_copy(item, a, b):
    i = item.get_id(0)
    b[i] = a[i] * 2 + a[-1 - i]  # a negative index that wraps around stays legal


def test_in_range_kernel_unaffected(dev):
    a, b = _f32(16, dev), _f32(16, dev, 0)
    kapi.call_kernel(checked_copy, kapi.Range(16), a, b)
    h = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(b.asnumpy(), h * 2 + h[::-1])


def read_back(item, a, b, k):
    i = item.get_id(0)
    b[i] = a[i - k]  # wraps once: i - k in -16..-1 is legal, below -16 is not


def test_negative_index_past_wraparound_raises(dev):
    kern = kapi.kernel(boundscheck=True)(read_back)
    a, b = _f32(16, dev), _f32(16, dev, 0)
    kapi.call_kernel(kern, kapi.Range(16), a, b, np.int64(16))
    np.testing.assert_array_equal(b.asnumpy(), np.arange(16, dtype=np.float32))
    # the index as written (before the wraparound), which only work-item 0 takes past -16
    msg = r"index -17 is out of bounds for array 'a' \(dimension 0, extent 16\)"
    with pytest.raises(IndexError, match=msg):
        kapi.call_kernel(kern, kapi.Range(16), a, b, np.int64(17))


def two_d(item, a, out, di, dj):
    i, j = item.get_id(0), item.get_id(1)
    out[i, j] = a[i + di, j + dj]


def test_2d_names_the_dimension(dev):
    kern = kapi.kernel(boundscheck=True)(two_d)
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    a, out = kapi.asarray(h, device=dev), kapi.zeros((3, 4), dtype="f4", device=dev)
    kapi.call_kernel(kern, kapi.Range(3, 4), a, out, np.int64(0), np.int64(0))
    np.testing.assert_array_equal(out.asnumpy(), h)
    line = line_of(two_d, "a[i + di, j + dj]")
    msg = rf"index 4 is out of bounds for array 'a' \(dimension 1, extent 4\).*:{line}:"
    with pytest.raises(IndexError, match=msg):
        kapi.call_kernel(kern, kapi.Range(3, 4), a, out, np.int64(0), np.int64(1))
    with pytest.raises(
        IndexError, match=r"index 3 is out of bounds for array 'a' \(dimension 0, extent 3\)"
    ):
        kapi.call_kernel(kern, kapi.Range(3, 4), a, out, np.int64(1), np.int64(0))


@kapi.kernel(boundscheck=True)
def local_overrun(nditem, a, out, slm):
    li = nditem.get_local_id(0)
    slm[li + 1] = a[nditem.get_global_id(0)]
    kapi_api.group_barrier(nditem.get_group())
    out[nditem.get_global_id(0)] = slm[li]


def test_local_accessor_checked(dev):
    a, out = _f32(16, dev), _f32(16, dev, 0)
    with pytest.raises(
        IndexError, match=r"index 8 is out of bounds for array 'slm' \(dimension 0, extent 8\)"
    ):
        slm = kapi_api.LocalAccessor((8,), np.float32)
        kapi.call_kernel(local_overrun, kapi.NdRange((16,), (8,)), a, out, slm)
    slm = kapi_api.LocalAccessor((9,), np.float32)  # room for li + 1: legal
    kapi.call_kernel(local_overrun, kapi.NdRange((16,), (8,)), a, out, slm)


@kapi.kernel(boundscheck=True)
def atomic_overrun(item, bins, k):
    kapi_api.AtomicRef(bins, index=item.get_id(0) + k).fetch_add(1)


def test_atomic_index_checked(dev):
    bins = kapi.zeros(8, dtype="i8", device=dev)
    kapi.call_kernel(atomic_overrun, kapi.Range(8), bins, np.int64(0))
    np.testing.assert_array_equal(bins.asnumpy(), np.ones(8, np.int64))
    with pytest.raises(
        IndexError, match=r"index 8 is out of bounds for array 'bins' \(dimension 0, extent 8\)"
    ):
        kapi.call_kernel(atomic_overrun, kapi.Range(8), bins, np.int64(1))


@kapi.device_func
def load_at(a, i):
    return a[i]


@kapi.kernel(boundscheck=True)
def via_device_func(item, a, b):
    i = item.get_id(0)
    b[i] = load_at(a, i + 1)


def test_device_function_checked(dev):
    a, b = _f32(16, dev), _f32(16, dev, 0)
    line = line_of(load_at, "return a[i]")
    msg = rf"index 16 is out of bounds for array 'a' \(dimension 0, extent 16\).*:{line}:"
    with pytest.raises(IndexError, match=msg):
        kapi.call_kernel(via_device_func, kapi.Range(16), a, b)


def test_off_by_default_kir_has_no_check(monkeypatch):
    monkeypatch.delenv("KAPI_BOUNDSCHECK", raising=False)
    plain = kapi.kernel(shifted)
    kir = plain.inspect_kir(SIG1)
    assert "raise" not in kir and "dim " not in kir and "bounds." not in kir
    assert "raise" in checked_shift.inspect_kir(SIG1)


def test_environment_variable_and_option_precedence(monkeypatch):
    monkeypatch.setenv("KAPI_BOUNDSCHECK", "1")
    assert "raise" in kapi.kernel(shifted).inspect_kir(SIG1)
    assert "raise" not in kapi.kernel(boundscheck=False)(shifted).inspect_kir(SIG1)
    monkeypatch.setenv("KAPI_BOUNDSCHECK", "0")
    assert "raise" not in kapi.kernel(shifted).inspect_kir(SIG1)
    assert "raise" in kapi.kernel(boundscheck=True)(shifted).inspect_kir(SIG1)
    monkeypatch.setenv("KAPI_BOUNDSCHECK", "yes")
    with pytest.raises(ValueError, match="KAPI_BOUNDSCHECK"):
        kapi.kernel(shifted)


def test_checked_kernel_ptx_assembles():
    """The CUDA path: the checks lower to PTX with the status buffer's compare-exchange, and
    the winner stores the index and the extent the message shows (bytes 32 and 40)."""
    ptx, _ = finalise(checked_shift.inspect_spirv(SIG1))
    assert "atom.global.cas.b32" in ptx
    for at in (32, 40):
        assert re.search(rf"st\.global\.u64\s+\[%rd\d+\+{at}\]", ptx), ptx
    if shutil.which("ptxas"):
        with tempfile.TemporaryDirectory() as d:
            with open(f"{d}/k.ptx", "w") as f:
                f.write(ptx)
            cmd = ["ptxas", "-arch=sm_90", f"{d}/k.ptx", "-o", f"{d}/k.cubin"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            assert r.returncode == 0, r.stderr


@kapi.kernel(boundscheck=True)
def private_overrun(item, out, k):
    p = kapi_api.PrivateArray(4, np.float32, fill_zeros=True)
    i = item.get_id(0)
    p[i + k] = 1.0
    out[i] = p[0]


def test_private_array_checked(dev):
    out = _f32(4, dev, 5)
    kapi.call_kernel(private_overrun, kapi.Range(4), out, np.int64(0))
    np.testing.assert_array_equal(out.asnumpy(), [1, 0, 0, 0])
    with pytest.raises(
        IndexError, match=r"index 4 is out of bounds for a private array \(dimension 0, extent 4\)"
    ):
        kapi.call_kernel(private_overrun, kapi.Range(4), out, np.int64(1))


@kapi.device_func
def row_item(r, j):
    return r[j + 2]


@kapi.kernel(boundscheck=True)
def row_view(item, m, out):
    i = item.get_id(0)
    out[i] = row_item(m[i], 1)


def test_row_view_reports_the_whole_arrays_dimension(dev):
    m = kapi.asarray(np.arange(12, dtype=np.float32).reshape(4, 3), device=dev)
    out = _f32(4, dev, 0)
    line = line_of(row_item, "return r[j + 2]")
    msg = rf"index 3 is out of bounds for array 'r' \(dimension 1, extent 3\).*:{line}:"
    with pytest.raises(IndexError, match=msg):
        kapi.call_kernel(row_view, kapi.Range(4), m, out)
