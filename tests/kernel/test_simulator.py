"""The kernel simulator (KAPI_SIMULATOR=1, kapi.simulate): every sample gives the compiled
kernels' results, and barriers, group collectives, atomics, local and private memory, print,
assert, pdb, call_kernel_async and dpjit's prange loops work in plain Python.

PYTEST_DONT_REWRITE: the kernels here that assert also compile (pytest's rewritten asserts
cannot).
"""

import json
import os
import pathlib
import pickle
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import kapi
from kapi import kernel_api as K
from tests.kapi_testing import devices_or_skip, line_of, needs_cpu_device

devices_or_skip()

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Every sample with sizes small enough for Python work-items (each main() takes them).
SAMPLE_SIZES = {
    "array_ops": {"n": 4096},
    "array_sum": {"n": 4096},
    "black_scholes": {"n": 256},
    "guvectorize": {"batch": 8, "m": 4, "n": 3},
    "histogram": {"n": 512},
    "lazy_expressions": {"n": 1024},
    "matmul_tiled": {"n": 32},
    "pairwise_distance": {"n1": 24, "n2": 40},
    "random_pi": {"n": 4096},
    "reduction": {"n": 1024},
    "scan": {"n": 512},
    "sort": {"n": 4096},
    "subgroup_reduction": {"n": 1024},
    "vector_add": {"n": 1000},
    "where_astype": {"h": 64, "w": 64},
}

# Runs every sample's main() in one process, recording each array argument after every
# kapi.call_kernel; pickles {sample: (exit status or error, [[arrays] per launch])}.
_RECORDER = r"""
import importlib.util, json, pickle, sys, traceback
import numpy as np
import kapi

root, sizes, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
launch = kapi.call_kernel
log = []

def recording(kernel, space, *args):
    launch(kernel, space, *args)
    log.append([a.asnumpy() if isinstance(a, kapi.Array) else np.array(a)
                for a in args if isinstance(a, (kapi.Array, np.ndarray))])

kapi.call_kernel = recording
results = {"simulated": launch is kapi.simulate and kapi.kernel_api.call_kernel is launch}
for name, kwargs in sizes.items():
    log = []
    try:
        spec = importlib.util.spec_from_file_location(name, f"{root}/samples/{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        status = mod.main(**kwargs)
    except BaseException:
        status = traceback.format_exc()
    results[name] = (status, log)
with open(out, "wb") as f:
    pickle.dump(results, f)
"""


def _record(tmp_path, simulate: bool):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("KAPI_SIMULATOR", None)
    if simulate:
        env["KAPI_SIMULATOR"] = "1"
    out = tmp_path / ("simulated.pkl" if simulate else "compiled.pkl")
    r = subprocess.run(
        [sys.executable, "-c", _RECORDER, str(ROOT), json.dumps(SAMPLE_SIZES), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out, "rb") as f:
        return pickle.load(f)


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("samples")
    return _record(tmp, False), _record(tmp, True)


def test_every_sample_is_covered():
    assert sorted(SAMPLE_SIZES) == sorted(p.stem for p in (ROOT / "samples").glob("*.py"))


def test_kapi_simulator_binds_call_kernel(sample_runs):
    compiled, simulated = sample_runs
    assert simulated["simulated"] is True and compiled["simulated"] is False


@pytest.mark.parametrize("name", sorted(SAMPLE_SIZES))
def test_sample_gives_the_compiled_results(sample_runs, name):
    compiled, simulated = sample_runs
    (c_status, c_log), (s_status, s_log) = compiled[name], simulated[name]
    assert c_status == 0, c_status
    assert s_status == 0, s_status
    assert len(s_log) == len(c_log)
    # samples that launch kernels of their own: the others use only the array library
    assert bool(c_log) == ("call_kernel" in (ROOT / "samples" / f"{name}.py").read_text())
    for launch, (c_arrays, s_arrays) in enumerate(zip(c_log, s_log, strict=True)):
        for c, s in zip(c_arrays, s_arrays, strict=True):
            assert c.dtype == s.dtype and c.shape == s.shape
            if c.dtype.kind == "f":
                rtol = 1e-5 if c.dtype.itemsize == 4 else 1e-12
                np.testing.assert_allclose(s, c, rtol=rtol, atol=rtol, err_msg=f"launch {launch}")
            else:
                np.testing.assert_array_equal(s, c, err_msg=f"launch {launch}")


# ---- barriers, local memory, collectives ------------------------------------------------


@kapi.kernel
def reverse_in_groups(nd, a, out, slm):
    lid = nd.get_local_id(0)
    slm[lid] = a[nd.get_global_id(0)]
    K.group_barrier(nd.get_group())
    out[nd.get_global_id(0)] = slm[nd.get_local_range(0) - 1 - lid]


@kapi.kernel
def tree_sum(nd, a, sums, slm):
    lid = nd.get_local_id(0)
    slm[lid] = a[nd.get_global_id(0)]
    stride = nd.get_local_range(0) // 2
    while stride > 0:
        K.group_barrier(nd.get_group())
        if lid < stride:
            slm[lid] += slm[lid + stride]
        stride //= 2
    if lid == 0:
        sums[nd.get_group().get_group_id(0)] = slm[0]


def both_ways(kernel, space, *args):
    """The arrays after a compiled launch and after a simulated one, from the same inputs."""
    needs_cpu_device()
    runs = []
    for launch in (kapi.call_kernel, kapi.simulate):
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        launch(kernel, space, *copies)
        runs.append([a for a in copies if isinstance(a, np.ndarray)])
    return runs


def test_local_memory_reversal_across_a_barrier():
    a = np.arange(48, dtype=np.float32)
    compiled, simulated = both_ways(
        reverse_in_groups, kapi.NdRange(48, 16), a, np.zeros(48, np.float32),
        K.LocalAccessor(16, np.float32),
    )  # fmt: skip
    want = np.concatenate([a[g : g + 16][::-1] for g in range(0, 48, 16)])
    np.testing.assert_array_equal(simulated[1], want)
    np.testing.assert_array_equal(simulated[1], compiled[1])


def test_tree_reduction_in_local_memory():
    a = np.arange(256, dtype=np.int64) % 7
    compiled, simulated = both_ways(
        tree_sum, kapi.NdRange(256, 64), a, np.zeros(4, np.int64), K.LocalAccessor(64, np.int64)
    )
    np.testing.assert_array_equal(simulated[1], a.reshape(4, 64).sum(axis=1))
    np.testing.assert_array_equal(simulated[1], compiled[1])


@kapi.kernel
def collectives(nd, a, out):
    g = nd.get_group()
    i = nd.get_global_id(1) * nd.get_global_range(0) + nd.get_global_id(0)
    x = a[i]
    out[0, i] = K.reduce_over_group(g, x, K.GroupOp.ADD)
    out[1, i] = K.inclusive_scan_over_group(g, x, K.GroupOp.ADD)
    out[2, i] = K.exclusive_scan_over_group(g, x, K.GroupOp.MAX)
    out[3, i] = K.group_broadcast(g, x, 2)
    out[4, i] = K.reduce_over_group(g, x, K.GroupOp.MIN)
    out[5, i] = K.any_of_group(g, x == 3)
    out[6, i] = K.all_of_group(g, x < 6)
    out[7, i] = K.none_of_group(g, x > 100)


def test_group_collectives_over_two_dimensional_groups():
    a = (np.arange(64, dtype=np.int64) * 5) % 11
    compiled, simulated = both_ways(
        collectives, kapi.NdRange((8, 8), (4, 2)), a, np.zeros((8, 64), np.int64)
    )
    np.testing.assert_array_equal(simulated[1], compiled[1])
    assert simulated[1][0].any() and (simulated[1][5] != simulated[1][6]).any()


@kapi.kernel
def early_return(nd, a, out, slm):
    lid = nd.get_local_id(0)
    if lid == 1:
        return
    slm[lid] = a[nd.get_global_id(0)]
    K.group_barrier(nd.get_group())
    out[nd.get_global_id(0)] = slm[0]


def test_a_work_item_that_returns_early_does_not_hold_the_barrier():
    out = np.zeros(8, np.int64)
    kapi.simulate(early_return, kapi.NdRange(8, 4), np.arange(8), out, K.LocalAccessor(4, np.int64))
    np.testing.assert_array_equal(out, [0, 0, 0, 0, 4, 0, 4, 4])


@kapi.kernel
def sub_groups(nd, a, out):
    sg = nd.get_sub_group()
    x = a[nd.get_global_id(0)]
    y = K.shuffle_down(sg, x, 1) + K.reduce_over_group(sg, x, K.GroupOp.ADD)
    K.sub_group_barrier(sg)
    out[nd.get_global_id(0)] = y * sg.get_local_range() + sg.get_group_id() * 1000


def test_sub_groups_of_one_work_item():
    out = np.zeros(8, np.int64)
    kapi.simulate(sub_groups, kapi.NdRange(8, 4), np.arange(8), out)
    np.testing.assert_array_equal(out, 2 * np.arange(8) + np.tile(np.arange(4), 2) * 1000)


# ---- atomics, private memory, device functions --------------------------------------------


@kapi.kernel
def local_histogram(nd, data, bins, local_bins):
    lid = nd.get_local_id(0)
    if lid < local_bins.shape[0]:
        local_bins[lid] = 0
    K.group_barrier(nd.get_group())
    v = data[nd.get_global_id(0)]
    K.AtomicRef(local_bins, v, address_space=K.AddressSpace.LOCAL).fetch_add(np.int32(1))
    K.group_barrier(nd.get_group())
    if lid < local_bins.shape[0]:
        K.AtomicRef(bins, lid).fetch_add(local_bins[lid])
        K.AtomicRef(bins, local_bins.shape[0] + lid).fetch_max(local_bins[lid])


def test_atomics_on_global_and_local_memory():
    data = (np.arange(128) * 7 % 8).astype(np.int32)
    compiled, simulated = both_ways(
        local_histogram, kapi.NdRange(128, 32), data, np.zeros(16, np.int32),
        K.LocalAccessor(8, np.int32),
    )  # fmt: skip
    np.testing.assert_array_equal(simulated[1][:8], np.bincount(data, minlength=8))
    np.testing.assert_array_equal(simulated[1], compiled[1])


@pytest.mark.parametrize(
    "op, new",
    [("fetch_add", 3), ("fetch_sub", -1), ("fetch_min", 1), ("fetch_max", 2),
     ("fetch_and", 0), ("fetch_or", 3), ("fetch_xor", 3), ("exchange", 2)],
)  # fmt: skip
def test_atomic_ref_in_python_on_kapi_arrays_returns_the_old_value(op, new):
    # a kapi array's element read is a 0-d view: the fetch must return the value before the
    # update (numba-dpex's tests compare a kernel's fetches with these)
    dev = devices_or_skip()[0]
    b = kapi.ones(2, dtype=np.int32, device=dev)
    old = getattr(K.AtomicRef(b, index=1), op)(np.int32(2))
    assert int(old) == 1
    assert b.asnumpy().tolist() == [1, new]


@kapi.kernel
def compare_exchange(item, flag, winners):
    expected = K.PrivateArray(1, np.int32, fill_zeros=True)
    if K.AtomicRef(flag, 0).compare_exchange(expected, np.int32(item.get_id(0) + 1)):
        winners[0] += 1


def test_compare_exchange_lets_one_work_item_win():
    flag, winners = np.zeros(1, np.int32), np.zeros(1, np.int32)
    kapi.simulate(compare_exchange, kapi.Range(10), flag, winners)
    assert flag[0] == 1 and winners[0] == 1  # work-items run in order: the first wins


@kapi.device_func
def running_sum(p, n):
    acc = 0
    for k in range(n):
        acc += p[k]
        p[k] = acc
    return acc


@kapi.kernel
def prefix_in_private(item, a, out, total):
    i = item.get_id(0)
    p = K.PrivateArray(4, np.int64)
    for k in range(4):
        p[k] = a[i, k]
    total[i] = running_sum(p, 4)
    for k in range(4):
        out[i, k] = p[k]


def test_private_arrays_and_device_functions():
    a = np.arange(24, dtype=np.int64).reshape(6, 4)
    compiled, simulated = both_ways(
        prefix_in_private, kapi.Range(6), a, np.zeros((6, 4), np.int64), np.zeros(6, np.int64)
    )
    np.testing.assert_array_equal(simulated[1], np.cumsum(a, axis=1))
    np.testing.assert_array_equal(simulated[2], a.sum(axis=1))
    np.testing.assert_array_equal(simulated[1], compiled[1])


SEEN = []


@kapi.device_func
def remember(x):
    SEEN.append((type(x).__name__, x))  # plain Python: no compiled kernel could do this
    return x


@kapi.kernel
def calls_python(item, a):
    a[item.get_id(0)] = remember(a[item.get_id(0)]) * 2


def test_device_functions_run_as_python():
    SEEN.clear()
    a = np.arange(3, dtype=np.float32)
    kapi.simulate(calls_python, kapi.Range(3), a)
    assert SEEN == [("float32", 0.0), ("float32", 1.0), ("float32", 2.0)]
    np.testing.assert_array_equal(a, [0, 2, 4])


# ---- arrays -----------------------------------------------------------------------------


@kapi.kernel
def scale_rows(item, x, y):
    i, j = item.get_id(0), item.get_id(1)
    y[i, j] = x[i, j] * (i + 1) + j


def test_kapi_arrays_are_viewed_or_copied_and_copied_back():
    needs_cpu_device()
    hx = np.arange(12, dtype=np.float32).reshape(3, 4)
    want = hx * np.arange(1, 4)[:, None] + np.arange(4)
    x = kapi.asarray(hx, device="cpu")
    y = kapi.zeros((3, 4), np.float32, device="cpu")
    kapi.simulate(scale_rows, kapi.Range(3, 4), x, y)  # host memory: viewed in place
    np.testing.assert_array_equal(y.asnumpy(), want)
    y2 = kapi.zeros((3, 4), np.float32, device="cpu")
    x._host_ok = y2._host_ok = False  # as GPU memory: copied in, and out after the launch
    kapi.simulate(scale_rows, kapi.Range(3, 4), x, y2)
    np.testing.assert_array_equal(y2.asnumpy(), want)


def test_a_pending_expression_is_computed_before_the_kernel_reads_it():
    needs_cpu_device()
    x = kapi.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device="cpu")
    y = kapi.zeros((3, 4), np.float32, device="cpu")
    kapi.simulate(scale_rows, kapi.Range(3, 4), x * 2, y)
    np.testing.assert_array_equal(y.asnumpy()[2], np.arange(8, 12) * 2 * 3 + np.arange(4))


# ---- print, assert, errors ----------------------------------------------------------------


@kapi.kernel
def prints(item, a):
    i = item.get_id(0)
    if i == 1:
        print("row", i, a[i], a)  # a whole array: plain Python only


def test_print_of_any_python_object(capsys):
    a = np.arange(3, dtype=np.int32)
    kapi.simulate(prints, kapi.Range(3), a)
    assert capsys.readouterr().out == "row 1 1 [0 1 2]\n"


@kapi.kernel
def asserts_after_barrier(nd, a):
    K.group_barrier(nd.get_group())
    assert a[nd.get_global_id(0)] < 5, "value too large"


@kapi.kernel
def asserts(item, a):
    assert a[item.get_id(0)] < 5, "value too large"


@pytest.mark.parametrize(
    "kernel, space", [(asserts, kapi.Range(8)), (asserts_after_barrier, kapi.NdRange(8, 4))]
)
def test_assert_raises_at_the_kernel_line(kernel, space):
    before = threading.active_count()
    with pytest.raises(AssertionError, match="value too large") as ei:
        kapi.simulate(kernel, space, np.arange(8))
    e = ei.value
    line = line_of(kernel.py_func, "assert a[")
    assert (e.kernel_file, e.kernel_line, e.work_item) == (__file__, line, (5,))
    assert ei.traceback[-1].lineno + 1 == line and ei.traceback[-1].path == pathlib.Path(__file__)
    assert f"in kernel '{kernel.__name__}', work-item (5,)" in e.__notes__[0]
    assert threading.active_count() == before  # the group's other threads have ended
    out = np.zeros(8, np.int64)  # and the next launch runs normally
    kapi.simulate(early_return, kapi.NdRange(8, 4), np.arange(8), out, K.LocalAccessor(4, np.int64))
    assert out[4] == 4


def test_launch_errors_are_call_kernels():
    a = np.zeros(4)
    with pytest.raises(kapi.InvalidKernelSpecializationError, match="takes 1 argument"):
        kapi.simulate(asserts, kapi.Range(4), a, a, a)
    with pytest.raises(kapi.UnsupportedKernelArgumentError, match="needs work-groups"):
        kapi.simulate(reverse_in_groups, kapi.Range(4), a, a, K.LocalAccessor(4, np.float64))
    with pytest.raises(kapi.InvalidRangeError, match="kapi.Range or kapi.NdRange"):
        kapi.simulate(asserts, "4", a)
    with pytest.raises(kapi.UnsupportedKernelArgumentError, match="has type list"):
        kapi.simulate(asserts, kapi.Range(4), [1, 2])
    with pytest.raises(TypeError, match="not int"):
        kapi.simulate(4, kapi.Range(4), a)


def test_kernels_without_an_item_warn_as_compiled():
    def fill(a):
        a[0] += 1

    a = np.zeros(1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        kapi.simulate(fill, kapi.Range(3), a)
    assert a[0] == 3 and w[0].category is DeprecationWarning


# ---- processes: KAPI_SIMULATOR, pdb, async, dpjit -------------------------------------------


def _python(code, env=None, stdin=None, path=None):
    """Runs code (from the file path, if given) under KAPI_SIMULATOR=1."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "KAPI_SIMULATOR": "1", **(env or {})}
    if path is not None:
        path.write_text(code)
    return subprocess.run(
        [sys.executable, *(["-c", code] if path is None else [str(path)])], env=full,
        input=stdin, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


PDB_SCRIPT = """\
import numpy as np, kapi
from kapi import kernel_api as K

@kapi.kernel
def rev(nd, a, out, slm):
    lid = nd.get_local_id(0)
    slm[lid] = a[nd.get_global_id(0)]
    K.group_barrier(nd.get_group())
    v = slm[nd.get_local_range(0) - 1 - lid]
    if nd.get_global_id(0) == 5:
        breakpoint()
    out[nd.get_global_id(0)] = v

out = np.zeros(8, np.int64)
kapi.call_kernel(rev, kapi.NdRange(8, 4), np.arange(8) * 10, out, K.LocalAccessor(4, np.int64))
print("out", out.tolist())
"""


def test_pdb_stops_inside_a_kernel(tmp_path):
    """breakpoint() in work-item 5, past a barrier (a thread of the simulator's own): pdb
    stops at the kernel's next line and sees its locals and its group's local memory."""
    script = tmp_path / "pdb_kernel.py"
    r = _python(PDB_SCRIPT, stdin="p ('locals', lid, v, slm.tolist())\nc\n", path=script)
    assert r.returncode == 0, r.stderr
    assert f"> {script}(12)rev()\n-> out[nd.get_global_id(0)] = v" in r.stdout
    assert "('locals', 1, np.int64(60), [40, 50, 60, 70])" in r.stdout
    assert "out [30, 20, 10, 0, 70, 60, 50, 40]" in r.stdout


def test_environment_variable_values():
    r = _python("import kapi, numpy as np; kapi.call_kernel(lambda i, a: None, 1, np.zeros(1))",
                env={"KAPI_SIMULATOR": "yes"})  # fmt: skip
    assert r.returncode != 0 and "KAPI_SIMULATOR must be 0 or 1, not 'yes'" in r.stderr
    r = _python("import kapi; print(kapi.call_kernel is kapi.simulate)", {"KAPI_SIMULATOR": "0"})
    assert r.stdout.strip() == "False"


ASYNC_SCRIPT = """
import numpy as np, kapi

@kapi.kernel
def inc(item, a):
    a[item.get_id(0)] += 1

a = kapi.zeros(4, np.int64)
h1, k1 = kapi.call_kernel_async(inc, kapi.Range(4), (), a)
h2, k2 = kapi.call_kernel_async(inc, kapi.Range(4), [k1], a)
kapi.wait_all([h1, k1, h2, k2])
print(k2.is_complete, a.asnumpy().tolist())
"""


def test_call_kernel_async_runs_at_once_and_returns_complete_events():
    r = _python(ASYNC_SCRIPT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True [2, 2, 2, 2]"


DPJIT_SCRIPT = """
import numpy as np, kapi
from kapi import prange

@kapi.dpjit
def total(x):
    s = 0.0
    for i in prange(x.shape[0]):
        if i == 2:
            print("body runs in Python:", type(x).__name__)
        s += x[i]
    return s

@kapi.kernel
def inc(item, a):
    if item.get_id(0) == 0:
        print("kernel runs in Python:", type(a).__name__)
    a[item.get_id(0)] += 1

@kapi.dpjit
def launches(a):
    kapi.call_kernel(inc, kapi.Range(a.shape[0]), a)
    return a.shape[0]

print(total(kapi.asarray(np.arange(100, dtype=np.float64))))
a = kapi.zeros(3, np.int64)
print(launches(a), a.asnumpy().tolist())
"""


@pytest.mark.parametrize("shape", ["blocks", "tree"])
def test_dpjit_prange_bodies_run_as_python(shape, tmp_path):
    r = _python(DPJIT_SCRIPT, env={"KAPI_DPJIT_REDUCE": shape}, path=tmp_path / "prange.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:4] == [
        "body runs in Python: ndarray",
        "4950.0",
        "kernel runs in Python: ndarray",  # call_kernel in dpjit host code
        "3 [1, 1, 1]",
    ]
