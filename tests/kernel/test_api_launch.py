"""End to end: @kapi.kernel compiled by pyfront and the compiler, launched by call_kernel on
every device. Kernels are written exactly as for numba-dpex (only the imports differ)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi import kernel_api as kapi_api

DEVICES = devices_or_skip()

ids = [d.filter_string for d in DEVICES]
NUM_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
NUM_DTYPES += [np.float32, np.float64]


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


def skip_fp64(dev, dtype):
    if np.dtype(dtype) == np.float64 and not dev.has_aspect_fp64:
        pytest.skip("device without fp64")


@kapi.kernel
def vadd(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]


@kapi.kernel
def fill_scalar(item, a, x):
    a[item.get_id(0)] = x


@kapi.kernel
def scale2d(item, a, b, s):
    i = item.get_id(0)
    j = item.get_id(1)
    b[i, j] = a[i, j] * s


@pytest.mark.parametrize("dtype", NUM_DTYPES, ids=lambda d: np.dtype(d).name)
def test_vector_add_every_dtype(dev, dtype):
    skip_fp64(dev, dtype)
    n = 1000
    ha = (np.arange(n) % 50).astype(dtype)
    hb = (np.arange(n) % 7).astype(dtype)
    a, b = kapi.asarray(ha, device=dev), kapi.asarray(hb, device=dev)
    c = kapi.empty_like(a)
    kapi.call_kernel(vadd, kapi.Range(n), a, b, c)
    np.testing.assert_array_equal(c.asnumpy(), ha + hb)


def test_dispatch_cache_compiles_once(dev):
    @kapi.kernel
    def k(item, a, b, c):
        i = item.get_id(0)
        c[i] = a[i] - b[i]

    a = kapi.ones(16, dtype="f4", device=dev)
    for _ in range(3):
        kapi.call_kernel(k, kapi.Range(16), a, a, a)
    assert len(k.overloads) == 1 and k._launcher.cache_size == 1
    kapi.call_kernel(k, kapi.Range(8), a[::2], a[::2], a[::2])  # layout A: a new specialisation
    assert len(k.overloads) == 2
    (sig,) = [s for s in k.inspect_kir() if ",A," in s]
    assert "kernel @" in k.inspect_kir(sig) and k.inspect_llvm(sig)
    assert k.inspect_spirv(sig)[:4] == b"\x03\x02\x23\x07"
    assert "OpEntryPoint" in k.inspect_asm(sig)


@pytest.mark.parametrize("dtype", NUM_DTYPES + [np.bool_], ids=lambda d: np.dtype(d).name)
def test_scalar_arguments_every_dtype(dev, dtype):
    skip_fp64(dev, dtype)
    a = kapi.zeros(8, dtype=dtype, device=dev)
    x = np.dtype(dtype).type(1 if dtype == np.bool_ else 5)
    kapi.call_kernel(fill_scalar, kapi.Range(8), a, x)
    np.testing.assert_array_equal(a.asnumpy(), np.full(8, x, dtype))


def test_python_scalars(dev):
    a = kapi.zeros(4, dtype="i8", device=dev)
    kapi.call_kernel(fill_scalar, kapi.Range(4), a, 7)
    np.testing.assert_array_equal(a.asnumpy(), 7)
    f = kapi.zeros(4, dtype="f4", device=dev)
    kapi.call_kernel(fill_scalar, kapi.Range(4), f, 2.5)
    np.testing.assert_array_equal(f.asnumpy(), 2.5)


@pytest.mark.parametrize("layout", ["C", "F", "strided", "reversed"])
def test_2d_layouts(dev, layout):
    h = np.arange(6 * 10, dtype=np.float32).reshape(6, 10)
    if layout == "F":
        h = np.asfortranarray(h)
    a = kapi.asarray(h, device=dev)
    if layout == "strided":
        a, h = a[::2, 1::3], h[::2, 1::3]
    elif layout == "reversed":
        a, h = a[::-1, ::-2], h[::-1, ::-2]
    b = kapi.zeros(h.shape, dtype="f4", order="F" if layout == "F" else "C", device=dev)
    kapi.call_kernel(scale2d, kapi.Range(*h.shape), a, b, np.float32(3))
    np.testing.assert_array_equal(b.asnumpy(), h * 3)


def test_numpy_arrays_on_the_cpu_device():
    if not kapi.devices("cpu"):
        pytest.skip("no CPU device")
    ha = np.arange(32, dtype=np.float32)
    hc = np.zeros(32, np.float32)
    kapi.call_kernel(vadd, kapi.Range(32), ha, ha, hc)
    np.testing.assert_array_equal(hc, 2 * ha)


def test_undecorated_function_runs_compiled(dev):
    def twice(item, a):
        i = item.get_id(0)
        a[i] = a[i] * 2

    a = kapi.arange(8, dtype="i4", device=dev)
    kapi_api.call_kernel(twice, kapi.Range(8), a)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(8) * 2)


@kapi.kernel
def group_sum(nditem, a, out, slm):
    lid = nditem.get_local_id(0)
    gsz = nditem.get_local_range(0)
    slm[lid] = a[nditem.get_global_id(0)]
    stride = gsz // 2
    while stride > 0:  # barriers inside a loop
        kapi_api.group_barrier(nditem.get_group())
        if lid < stride:
            slm[lid] += slm[lid + stride]
        stride //= 2
    if lid == 0:
        out[nditem.get_group().get_group_id(0)] = slm[0]


def test_local_memory_and_barriers_in_loops(dev):
    n, wg = 1024, 64
    h = np.arange(n, dtype=np.float32) % 13
    a = kapi.asarray(h, device=dev)
    out = kapi.zeros(n // wg, dtype="f4", device=dev)
    slm = kapi_api.LocalAccessor((wg,), np.float32)
    kapi.call_kernel(group_sum, kapi.NdRange((n,), (wg,)), a, out, slm)
    np.testing.assert_allclose(out.asnumpy(), h.reshape(-1, wg).sum(axis=1))


@kapi.kernel
def tiled_transpose(nditem, a, out, tile):
    # a 2-D LocalAccessor tile: its shape is part of the specialisation (static local shape)
    i, j = nditem.get_global_id(0), nditem.get_global_id(1)
    li, lj = nditem.get_local_id(0), nditem.get_local_id(1)
    tile[li, lj] = a[i, j]
    kapi_api.group_barrier(nditem.get_group())
    out[i, j] = tile[li, lj] * 2 + tile.shape[1]


def test_local_accessor_shapes_specialise_with_constant_extents(dev):
    h = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    for tile in ((4, 8), (8, 16)):
        out = kapi.zeros(h.shape, dtype="f4", device=dev)
        slm = kapi_api.LocalAccessor(tile, np.float32)
        a = kapi.asarray(h, device=dev)
        kapi.call_kernel(tiled_transpose, kapi.NdRange(h.shape, tile), a, out, slm)
        np.testing.assert_array_equal(out.asnumpy(), h * 2 + tile[1])
    sigs = {at[2]: ck for (_, at), ck in tiled_transpose.overloads.items()}
    assert sorted(sigs) == ["array(f32,2,C,local,4,8)", "array(f32,2,C,local,8,16)"]
    # the ABI keeps the extent arguments, but no index math or `dim` reads them
    llvm = sigs["array(f32,2,C,local,8,16)"].llvm_ir
    assert "%tile.dim1" in llvm
    assert ", %tile.dim" not in llvm and "mul nsw i64 %tile.dim" not in llvm


def test_local_accessor_declared_signatures(dev):
    # a declared array(T,N,C,local) accepts every shape (one compile); a declared static shape
    # is that specialisation
    def body(nditem, a, tile):
        i = nditem.get_local_id(0)
        tile[i, 0] = a[nditem.get_global_id(0)]
        a[nditem.get_global_id(0)] = tile[i, 0] + tile.shape[1]

    glob = "array(f32,1,C,global)"
    dyn = kapi.kernel(f"void(nditem(1), {glob}, array(f32,2,C,local))")(body)
    fixed = kapi.kernel(f"void(nditem(1), {glob}, array(f32,2,C,local,8,3))")(body)
    for k, tiles in ((dyn, ((8, 3), (8, 5))), (fixed, ((8, 3),))):
        for tile in tiles:
            a = kapi.zeros(16, dtype="f4", device=dev)
            slm = kapi_api.LocalAccessor(tile, np.float32)
            kapi.call_kernel(k, kapi.NdRange((16,), (8,)), a, slm)
            np.testing.assert_array_equal(a.asnumpy(), np.full(16, tile[1], np.float32))
        assert len(k.overloads) == 1
    with pytest.raises(kapi.InvalidKernelSpecializationError, match="local,8,3"):
        slm = kapi_api.LocalAccessor((8, 4), np.float32)
        a = kapi.zeros(16, dtype="f4", device=dev)
        kapi.call_kernel(fixed, kapi.NdRange((16,), (8,)), a, slm)


@kapi.kernel
def histogram(item, data, bins):
    v = data[item.get_id(0)]
    ref = kapi_api.AtomicRef(bins, v)
    ref.fetch_add(np.int32(1))


def test_int32_atomic_histogram(dev):
    h = (np.arange(5000) * 7 % 16).astype(np.int32)
    bins = kapi.zeros(16, dtype="i4", device=dev)
    kapi.call_kernel(histogram, kapi.Range(h.size), kapi.asarray(h, device=dev), bins)
    np.testing.assert_array_equal(bins.asnumpy(), np.bincount(h, minlength=16))


@kapi.kernel
def float_contention(item, acc, x):
    kapi_api.AtomicRef(acc, 0).fetch_add(x[item.get_id(0)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_float_atomics_under_contention(dev, dtype):
    skip_fp64(dev, dtype)
    n = 1 << 14
    x = kapi.ones(n, dtype=dtype, device=dev)
    acc = kapi.zeros(1, dtype=dtype, device=dev)
    kapi.call_kernel(float_contention, kapi.Range(n), acc, x)
    assert acc.asnumpy()[0] == n  # exact: every partial sum is an integer below 2**24


def test_async_launch_and_dependencies(dev):
    n = 256
    a = kapi.ones(n, dtype="f4", device=dev)
    b = kapi.empty(n, dtype="f4", device=dev)
    c = kapi.empty(n, dtype="f4", device=dev)
    h1, k1 = kapi.call_kernel_async(vadd, kapi.Range(n), (), a, a, b)
    h2, k2 = kapi.call_kernel_async(vadd, kapi.Range(n), (k1,), b, a, c)
    k2.wait()
    h1.wait()
    assert k1.is_complete and k2.is_complete
    np.testing.assert_array_equal(c.asnumpy(), 3)
    with pytest.raises(TypeError):
        kapi.call_kernel_async(vadd, kapi.Range(n), k1, a, a, b)


def test_async_keeps_arguments_alive(dev):
    n = 1 << 16
    _, ev = kapi.call_kernel_async(
        vadd,
        kapi.Range(n),
        (),
        kapi.ones(n, device=dev),
        kapi.ones(n, device=dev),
        out := kapi.empty(n, device=dev),
    )
    del _
    ev.wait()
    np.testing.assert_array_equal(out.asnumpy(), 2)


# -- errors users hit ---------------------------------------------------------------------


def test_wrong_argument_count(dev):
    a = kapi.zeros(4, device=dev)
    with pytest.raises(kapi.InvalidKernelSpecializationError, match="3 argument"):
        kapi.call_kernel(vadd, kapi.Range(4), a, a)


def test_unsupported_argument_types(dev):
    a = kapi.zeros(4, device=dev)
    with pytest.raises(kapi.UnsupportedKernelArgumentError, match="str"):
        kapi.call_kernel(fill_scalar, kapi.Range(4), a, "x")
    with pytest.raises(kapi.UnsupportedDtypeError):
        kapi.call_kernel(fill_scalar, kapi.Range(4), a, np.longdouble(1))


def test_local_accessor_with_range(dev):
    a = kapi.zeros(64, dtype="f4", device=dev)
    slm = kapi_api.LocalAccessor((64,), np.float32)
    with pytest.raises(kapi.UnsupportedKernelArgumentError, match="argument 'slm'.*NdRange"):
        kapi.call_kernel(group_sum, kapi.Range(64), a, a, slm)


def test_bad_index_space(dev):
    a = kapi.zeros(4, device=dev)
    with pytest.raises(kapi.InvalidRangeError):
        kapi.call_kernel(fill_scalar, "4", a, 1)
    with pytest.raises(kapi.InvalidRangeError):
        kapi.call_kernel(fill_scalar, (0,), a, 1)


def test_kernel_called_like_a_function():
    with pytest.raises(kapi.KernelCallError, match=r"kapi.call_kernel\(vadd"):
        vadd(1, 2, 3)


def test_arrays_on_two_devices():
    if len(DEVICES) < 2:
        pytest.skip("needs two devices")
    a = kapi.zeros(4, device=DEVICES[0])
    b = kapi.zeros(4, device=DEVICES[1])
    with pytest.raises(kapi.ExecutionQueueInferenceError, match="'a' and 'b'"):
        kapi.call_kernel(vadd, kapi.Range(4), a, b, a)


def test_numpy_array_off_cpu_is_refused():
    gpus = kapi.devices("gpu")
    if not gpus:
        pytest.skip("needs a GPU")
    a = kapi.zeros(4, dtype="f8", device=gpus[0])
    with pytest.raises(kapi.UnsupportedKernelArgumentError, match="kapi.asarray"):
        kapi.call_kernel(vadd, kapi.Range(4), a, np.zeros(4), a)


def test_kernel_error_points_at_user_line(tmp_path):
    src = textwrap.dedent(
        """
        import kapi

        @kapi.kernel
        def bad(item, a):
            i = item.get_id(0)
            a[i] = undefined_name + 1

        kapi.call_kernel(bad, kapi.Range(4), kapi.zeros(4))
        """
    )
    f = tmp_path / "userkernel.py"
    f.write_text(src)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    r = subprocess.run(
        [sys.executable, str(f)], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode != 0
    assert f"{f}:7" in r.stderr
    assert "pyfront/" not in r.stderr and "kapi/" not in r.stderr  # no internal traceback


def test_dump_env(tmp_path):
    src = "import kapi\n@kapi.kernel\ndef k(item, a):\n    a[item.get_id(0)] = 1\n"
    src += "kapi.call_kernel(k, kapi.Range(2), kapi.zeros(2))\n"
    f = tmp_path / "dump.py"
    f.write_text(src)
    env = dict(os.environ, PYTHONPATH=os.getcwd(), KAPI_DUMP="kir,llvm,spirv")
    r = subprocess.run(
        [sys.executable, str(f)], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "---- KIR k(item(1)" in r.stderr and "---- LLVM IR" in r.stderr
    assert "OpEntryPoint" in r.stderr


def test_launches_from_several_threads(dev):
    import threading

    n = 512
    errors = []

    def work(k):
        try:
            a = kapi.full(n, k, dtype="i4", device=dev)
            c = kapi.empty(n, dtype="i4", device=dev)
            for _ in range(20):
                kapi.call_kernel(vadd, kapi.Range(n), a, a, c)
            np.testing.assert_array_equal(c.asnumpy(), 2 * k)
        except Exception as e:  # collected and re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_compiler_errors_map_to_kernel_compile_error():
    from kapi._kernel import dispatcher as _kernel

    with pytest.raises(kapi.KernelCompileError, match="expected 'kernel'") as info:
        _kernel._compile_kir("kir 1\nnonsense\n", 2)
    assert info.value.status == "KC_ERR_KIR"


def test_runtime_errors_name_device_and_limit(dev):
    big = dev.max_work_group_size * 2
    with pytest.raises(kapi.DeviceError, match="work-group size"):
        kapi.call_kernel(
            group_sum,
            kapi.NdRange(big, big),
            kapi.zeros(big, dtype="f4", device=dev),
            kapi.zeros(1, dtype="f4", device=dev),
            kapi_api.LocalAccessor((big,), np.float32),
        )
