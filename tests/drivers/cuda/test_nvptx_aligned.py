"""Aligned entries (compiler/src/finalise/nvptx/finalise_nvptx_align.c): a kernel whose
neighbouring accesses LLVM could merge if its array pointers were 16-byte aligned gets a
second entry, NAME__kapi_aligned, declaring them so, which the CUDA driver launches when every
such pointer is aligned (kapi's allocations are), and the kernel itself for views at other
offsets. The PTX checks run anywhere; the results on every device here, for views at aligned
and unaligned offsets."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip
from nvptx_util import assert_assembles, finalise

import kapi
from kapi import kernel_api

DEVICES = devices_or_skip()


@kapi.kernel
def four_each(item, src, dst):
    """Work-item i reads and writes elements 4i .. 4i+3: four float loads and stores that
    the aligned entry makes one ld.global.v4 and one st.global.v4."""
    i = item.get_id(0) * 4
    a = src[i]
    b = src[i + 1]
    c = src[i + 2]
    d = src[i + 3]
    dst[i] = d * np.float32(2.0)
    dst[i + 1] = c + np.float32(1.0)
    dst[i + 2] = b - a
    dst[i + 3] = a * b


@kapi.kernel
def one_each(item, src, dst):
    """One element per work-item: nothing to merge, so no aligned entry."""
    i = item.get_id(0)
    dst[i] = src[i] + np.float32(1.0)


F32 = ("array(f32,1,C,global)",) * 2


def _four_each_module(**kw):
    four_each.compile(F32, ("item", 1))
    (spirv,) = four_each.inspect_spirv().values()
    return finalise(spirv, ["four_each"], aligned=True, **kw)


def _entry(ptx: str, name: str) -> str:
    start = ptx.index(f".entry {name}(")
    end = ptx.find(".entry", start + 1)
    return ptx[start : end if end > 0 else len(ptx)]


def test_aligned_entry_has_vector_accesses():
    ptx, table = _four_each_module(coarsen=True)
    coarse, _, _, aligned, mask = table["four_each"]
    assert coarse is None  # four accesses per work-item: no coarsened entry, the aligned one
    assert aligned == "four_each__kapi_aligned"
    assert mask == 0b1001  # src and dst (each a pointer, its size and its stride)
    body, plain = _entry(ptx, aligned), _entry(ptx, "four_each")
    assert "ld.global.v4.f32" in body and "st.global.v4.f32" in body, body
    assert "v4" not in plain and plain.count("st.global.f32") == 4, plain
    assert_assembles(ptx, "aligned_four_each")


def test_no_aligned_entry_without_anything_to_merge():
    one_each.compile(F32, ("item", 1))
    (spirv,) = one_each.inspect_spirv().values()
    ptx, table = finalise(spirv, ["one_each"], coarsen=True, aligned=True)
    assert table["one_each"][3] is None and "__kapi_aligned" not in ptx


def test_switches_turn_aligned_entries_off(monkeypatch):
    ptx, table = _four_each_module(coarsen=False)  # the kernel as it is written
    assert table["four_each"][3] is None and "__kapi_aligned" not in ptx
    monkeypatch.setenv("KAPI_CUDA_ALIGNED", "0")
    ptx, table = _four_each_module(coarsen=True)
    assert table["four_each"][3] is None and "__kapi_aligned" not in ptx


def _want(x):
    a, b, c, d = x[0::4], x[1::4], x[2::4], x[3::4]
    out = np.empty_like(x)
    out[0::4], out[1::4], out[2::4], out[3::4] = d * 2, c + 1, b - a, a * b
    return out


@pytest.mark.parametrize("offset", [0, 1, 2, 4])
def test_views_at_any_offset(offset):
    """Views starting 4, 8 and 16 bytes in: the kernel itself serves the first two, the
    aligned entry the last and the whole arrays; every result is right."""
    n = 4 * 1000
    x = np.random.default_rng(offset).standard_normal(n + 8).astype(np.float32)
    for dev in DEVICES:
        src = kapi.asarray(x, device=dev)
        dst = kapi.zeros(n + 8, dtype=np.float32, device=dev)
        s, d = src[offset : offset + n], dst[4 - offset % 4 : 4 - offset % 4 + n]
        kapi.call_kernel(four_each, kernel_api.Range(n // 4), s, d)
        got = dst.asnumpy()[4 - offset % 4 : 4 - offset % 4 + n]
        np.testing.assert_array_equal(got, _want(x[offset : offset + n]), err_msg=str(dev))


def test_driver_launches_the_aligned_entry_only_for_aligned_pointers():
    """On the fake libcuda (kernels load but do not run; it records which entry each launch
    named): whole arrays and views 16 bytes in take four_each__kapi_aligned, views 4 or 8
    bytes in take the kernel itself, and KAPI_CUDA_ALIGNED=0 gives only the kernel."""
    from kapi_testing import fake_cuda_run

    code = (
        "from kapi import kernel_api\n"
        "@kapi.kernel\n"
        "def four_each(item, src, dst):\n"
        "    i = item.get_id(0) * 4\n"
        "    a = src[i]\n"
        "    b = src[i + 1]\n"
        "    c = src[i + 2]\n"
        "    d = src[i + 3]\n"
        "    dst[i] = d\n"
        "    dst[i + 1] = c\n"
        "    dst[i + 2] = b\n"
        "    dst[i + 3] = a\n"
        "x = kapi.zeros(4008, dtype=np.float32, device='cuda:gpu:0')\n"
        "y = kapi.zeros(4008, dtype=np.float32, device='cuda:gpu:0')\n"
        "names = {}\n"
        "for off in (0, 1, 2, 4):\n"
        "    kapi.call_kernel(four_each, kernel_api.Range(1000), x[off:off + 4000],\n"
        "                     y[4 - off % 4:4 - off % 4 + 4000])\n"
        "    kapi.Queue('cuda:gpu:0').wait()\n"
        "    buf = ctypes.create_string_buffer(160)\n"
        "    fake.fake_cuda_last_launch(buf, 160)\n"
        "    names[off] = buf.value.decode()\n"
        "print(json.dumps({'names': names, 'broken': stats()['broken']}))\n"
    )
    env = {"KAPI_FAKE_CUDA_KERNELS": "1", "KAPI_CACHE": "0"}
    out = fake_cuda_run(code, **env)
    aligned, plain = "four_each__kapi_aligned", "four_each"
    assert out == {"names": {"0": aligned, "1": plain, "2": plain, "4": aligned}, "broken": 0}
    out = fake_cuda_run(code, KAPI_CUDA_ALIGNED="0", **env)
    assert out["names"] == {"0": plain, "1": plain, "2": plain, "4": plain}
