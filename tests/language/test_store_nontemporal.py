"""kapi.kernel_api.store_nontemporal (kapi's own; numba-dpex 0.23 has none): array[index] =
value with a hint that the element is not read again soon. KIR's `astore_nt`, SPIR-V's
Nontemporal memory operand; the CPU driver makes streaming stores of it (64-byte aligned vector
stores where the address is aligned, a plain store elsewhere) and fences them before releasing
atomics; the CUDA driver stores plainly. Same values as item assignment on every device, in
plain CPython, typing errors with file:line, the host code's shape, and PTX that assembles."""

import re

import numpy as np
import pytest
from kapi_testing import devices_or_skip, host_ir_of, line_of
from nvptx_util import assemble_or_skip, kernel_ptx

import kapi
import pyfront
from kapi import kernel_api as K
from pyfront import KernelTypingError

DEVICES = devices_or_skip()

try:
    import ml_dtypes

    BF16 = ml_dtypes.bfloat16
except ImportError:  # pragma: no cover - depends on the environment
    BF16 = None


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@kapi.kernel
def _scale(item, x, y, z):
    i = item.get_id(0)
    n = x.shape[0]
    K.store_nontemporal(y, i, x[i] * 3)
    K.store_nontemporal(z, (i, 1), x[n - 1 - i])  # a tuple index
    K.store_nontemporal(array=z, index=(i, -1), value=x[i])  # keywords; -1 wraps as a[i, -1]


DTYPES = ["float32", "float64", "float16", "int8", "uint16", "int32", "int64", "complex64",
          "complex128", "bool"]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
def test_store_nontemporal_stores_what_item_assignment_stores(dev, dtype):
    """Every element type (complex: both parts; bool: as a byte), 1-D and 2-D, a tuple index, a
    negative index, keywords; sizes with whole vectors and a tail."""
    n = 4099
    rng = np.random.default_rng(7)
    h = (rng.standard_normal(n) * 40).astype(dtype) if dtype != "bool" else rng.random(n) < 0.5
    if dtype.startswith("complex"):
        h = h + 1j * rng.standard_normal(n).astype(dtype)
    x = kapi.asarray(h, device=dev)
    y = kapi.asarray(np.zeros(n, h.dtype), device=dev)
    z = kapi.asarray(np.zeros((n, 3), h.dtype), device=dev)
    kapi.call_kernel(_scale, kapi.Range(n), x, y, z)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y.asnumpy(), h * 3 if dtype != "bool" else h)
    got = z.asnumpy()
    np.testing.assert_array_equal(got[:, 1], h[::-1])
    np.testing.assert_array_equal(got[:, 0], np.zeros(n, h.dtype))
    np.testing.assert_array_equal(got[:, 2], h)


@kapi.kernel
def _bf16_copy(item, x, y):
    i = item.get_id(0)
    K.store_nontemporal(y, i, x[i] + np.float32(0.5))


@pytest.mark.skipif(BF16 is None, reason="ml_dtypes (bfloat16) is not installed")
def test_store_nontemporal_rounds_bfloat16_as_a_store_does(dev):
    h = np.random.default_rng(2).standard_normal(1000).astype(BF16)
    y = kapi.asarray(np.zeros(1000, BF16), device=dev)
    kapi.call_kernel(_bf16_copy, kapi.Range(1000), kapi.asarray(h, device=dev), y)
    want = (h.astype(np.float32) + np.float32(0.5)).astype(BF16)
    np.testing.assert_array_equal(y.asnumpy().view(np.uint16), want.view(np.uint16))


@kapi.kernel
def _publish(nd, data, flags, tickets, seen, B):
    """Chunk t (by ticket) written by streaming stores, then its flag released; each chunk
    after the first waits for its predecessor's flag (acquire) and sums its data: what a
    streaming store wrote must be visible through the release/acquire pair."""
    t = K.AtomicRef(tickets, 0).fetch_add(np.int32(1))
    base = np.int64(t) * B
    for k in range(B):
        K.store_nontemporal(data, base + k, np.int32(base + k))
    K.AtomicRef(flags, t, memory_order=K.MemoryOrder.RELEASE).store(np.int32(1))
    if t > 0:
        f = np.int32(0)
        while f == 0:
            f = K.AtomicRef(flags, t - 1, memory_order=K.MemoryOrder.ACQUIRE).load()
        s = np.int64(0)
        for k in range(B):
            s += data[base - B + k]
        seen[t - 1] = s


def test_streaming_stores_are_published_by_a_release(dev):
    """Work-items that wait only on smaller tickets (held by running work-items) cannot
    deadlock, on CPUs or GPUs."""
    P, B = 16, 4096
    chunk = np.arange(P * B, dtype=np.int64).reshape(P, B).sum(axis=1)
    for _ in range(3):
        data = kapi.asarray(np.full(P * B, -1, np.int32), device=dev)
        seen = kapi.asarray(np.zeros(P, np.int64), device=dev)
        flags = kapi.asarray(np.zeros(P, np.int32), device=dev)
        tickets = kapi.asarray(np.zeros(1, np.int32), device=dev)
        kapi.call_kernel(_publish, kapi.NdRange((P,), (1,)), data, flags, tickets, seen, B)
        np.testing.assert_array_equal(seen.asnumpy()[: P - 1], chunk[: P - 1])
        np.testing.assert_array_equal(data.asnumpy(), np.arange(P * B, dtype=np.int32))


def test_store_nontemporal_in_plain_python():
    """The pure-Python kernel_api (kernels run as Python): an item assignment."""
    a = np.zeros((3, 4), np.float32)
    K.store_nontemporal(a, (1, 2), 5)
    K.store_nontemporal(a, (-1, -1), 7.5)
    assert a[1, 2] == 5 and a[2, 3] == 7.5 and a.sum() == 12.5


def _typing_error(k, sig):
    with pytest.raises(KernelTypingError) as ei:
        pyfront.compile_kernel(k, sig, index=("item", 1))
    msg = str(ei.value)
    assert "store_nontemporal(array, index, value)" in msg, msg
    assert ei.value.lineno == line_of(k, "K.store_nontemporal"), msg
    return msg


def test_store_nontemporal_of_a_scalar_target_is_a_typing_error():
    def k(item, a, s):
        i = item.get_id(0)
        K.store_nontemporal(s, i, a[i])

    msg = _typing_error(k, ["array(f32,1,C,global)", "f32"])
    assert "array must be an array" in msg


def test_store_nontemporal_with_too_few_indices_is_a_typing_error():
    def k(item, a):
        i = item.get_id(0)
        K.store_nontemporal(a, i, 1.0)

    msg = _typing_error(k, ["array(f32,2,C,global)"])
    assert "a 2-D array needs a tuple of 2 indices" in msg


def test_store_nontemporal_of_an_array_value_is_a_typing_error():
    def k(item, a, b):
        i = item.get_id(0)
        K.store_nontemporal(a, i, b)

    msg = _typing_error(k, ["array(f32,1,C,global)", "array(f32,1,C,global)"])
    assert "cannot store" in msg


def test_kir_of_store_nontemporal():
    def k(item, a, b):
        i = item.get_id(0)
        K.store_nontemporal(a, i, a[i] + 1)
        b[i] = a[i]

    text = pyfront.compile_kernel(
        k, ["array(f32,1,C,global)", "array(f32,1,C,global)"], index=("item", 1)
    ).text
    assert len(re.findall(r"^\s*astore_nt %a ", text, re.M)) == 1, text
    assert len(re.findall(r"^\s*astore %b ", text, re.M)) == 1, text


# ---- the CPU driver's host code (no GPU needed) ------------------------------------------------

_HOST_CODE = """
import numpy as np, kapi
from kapi import kernel_api as K

@kapi.kernel
def published(item, x, y, flag):
    i = item.get_id(0)
    K.store_nontemporal(y, i, x[i] * 2.0)
    if i == 0:
        K.AtomicRef(flag, 0, memory_order=K.MemoryOrder.RELEASE).store(np.int32(1))

@kapi.kernel
def plain(item, x, y, flag):
    i = item.get_id(0)
    y[i] = x[i] * 2.0
    if i == 0:
        K.AtomicRef(flag, 0, memory_order=K.MemoryOrder.RELEASE).store(np.int32(1))

@kapi.kernel
def streamed(item, x, y):
    i = item.get_id(0)
    K.store_nontemporal(y, i, x[i] * 2.0)

x = kapi.asarray(np.ones(4096, np.float32), device="cpu")
for kern in (published, plain, streamed):
    y = kapi.empty(4096, dtype=np.float32, device="cpu")
    f = kapi.asarray(np.zeros(1, np.int32), device="cpu")
    try:
        kapi.call_kernel(kern, kapi.Range(4096), x, y, *((f,) if kern is not streamed else ()))
    except kapi.KapiError as e:  # built for a CPU this one is not: only the listing matters
        if "cannot run here" not in str(e):
            raise
        continue
    assert (y.asnumpy() == 2).all() and (kern is streamed or f.asnumpy()[0] == 1)
"""


def _functions(ir: str) -> dict[str, str]:
    """{name: body} of the host IR's function definitions."""
    return {
        m.group(1): m.group(0)
        for m in re.finditer(r"^define [^@]*@([\w.]+)\(.*?^}", ir, re.S | re.M)
    }


def test_host_code_streams_aligned_vectors_and_fences_before_a_release():
    """The CPU driver's code: the work-item loop is vectorised, its vector store a streaming
    store at the vector's alignment where the address has it, a plain store otherwise; an
    SFENCE before the release store of a kernel with streaming stores, none in the kernel
    without."""
    if not any(d.device_type == "cpu" for d in kapi.devices()):
        pytest.skip("needs kapi's CPU device")
    fns = _functions(host_ir_of(_HOST_CODE, KAPI_HOST_CPU="skylake-avx512"))
    stores = re.findall(
        r"store <(\d+) x float> [^\n]*align (\d+)(, !nontemporal)?", fns["streamed.kapi.run"]
    )
    assert any(nt for _, _, nt in stores), stores
    assert any(not nt for _, _, nt in stores), stores  # the unaligned case
    # every streaming vector store at its vector's alignment (at most 64 bytes)
    assert all(int(a) == min(64, 4 * int(n)) for n, a, nt in stores if nt), stores
    pub = fns["published.kapi.run"]
    assert "!nontemporal" in pub, pub
    assert re.search(r"call void @llvm\.x86\.sse\.sfence\(\)\s*\n\s*store atomic", pub), pub
    assert "store atomic" in fns["plain.kapi.run"] and "sfence" not in fns["plain.kapi.run"]


def test_ptx_of_store_nontemporal_assembles(tmp_path):
    """The CUDA driver's finaliser takes the Nontemporal operand (a plain st.global)."""
    ptx = kernel_ptx(
        _scale, "item(1), array(f32,1,C,global), array(f32,1,C,global), array(f32,2,C,global)"
    )
    assert re.search(r"\bst\.global\.f32\b", ptx), ptx
    assemble_or_skip(ptx, tmp_path)
