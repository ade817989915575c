"""kapi's C API for native extensions (kapi/include/kapi/capi.h, docs/guide/c-api.md): the sample
extension in samples/c_extension is configured with CMake's find_package(kapi CONFIG) from
kapi.get_cmake_dir(), built into a temporary folder, imported, and run against kapi arrays: what
C reads of an array, writes through its pointer, kernels it launches, errors and versions."""

import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig

import numpy as np
import pytest
from kapi_testing import devices_or_skip, needs_cpu_device

import kapi
from kapi import _native
from kapi import kernel_api as kapi_api

devices_or_skip()

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "c_extension"


def _needs_build_tools() -> None:
    """A visible skip where an extension cannot be built (a GPU host without CMake, a C compiler
    or Python's headers); `make test` installs all three (the Makefile's APT_PACKAGES), so the
    tests run in CI."""
    for tool in ("cmake", "cc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH: building a C extension needs it")
    header = pathlib.Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not header.is_file():
        pytest.skip(f"{header} is missing: building a C extension needs Python's headers")


def _build(out: pathlib.Path, *defines: str) -> pathlib.Path:
    """Configures and builds the sample into out; the path of the built module."""
    _needs_build_tools()
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    cfg = [
        "cmake",
        "-S",
        str(SAMPLE),
        "-B",
        str(out),
        *gen,
        f"-DPython3_EXECUTABLE={sys.executable}",
        f"-Dkapi_DIR={kapi.get_cmake_dir()}",
        *(f"-D{d}" for d in defines),
    ]
    for cmd in (cfg, ["cmake", "--build", str(out)]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{' '.join(cmd)}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    (mod,) = out.glob("kapi_sample*.so")
    return mod


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("capi-sample"))


@pytest.fixture(scope="module")
def ext(built):
    spec = importlib.util.spec_from_file_location("kapi_sample", built)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def cpu():
    needs_cpu_device()
    return kapi.Device("cpu")


@kapi.kernel
def scale_kernel(item: kapi_api.Item, src, dst, factor):
    i = item.get_id(0)
    dst[i] = src[i] * factor


@kapi.kernel
def add_one_2d(nditem: kapi_api.NdItem, a):
    i = nditem.get_global_id(0)
    j = nditem.get_global_id(1)
    a[i, j] += 1


# -- where the header and the CMake package are ------------------------------------------------


def test_header_and_cmake_package_are_in_the_package():
    inc = pathlib.Path(kapi.get_include())
    header = (inc / "kapi" / "capi.h").read_text()
    m = re.search(r"#define KAPI_CAPI_VERSION (\d+)", header)
    assert m and int(m.group(1)) == _native.ext().C_API_VERSION
    cmake = pathlib.Path(kapi.get_cmake_dir())
    assert (cmake / "kapiConfig.cmake").is_file()
    version = (cmake / "kapiConfigVersion.cmake").read_text()
    assert f'set(PACKAGE_VERSION "{kapi.__version__}")' in version
    assert inc.parent == cmake.parent == pathlib.Path(kapi.__file__).parent


@pytest.mark.parametrize(
    "compiler,std", [("cc", "-std=c99"), ("c++", "-std=c++11"), ("c++", "-std=c++17")]
)
def test_header_is_c99_and_cpp(tmp_path, compiler, std):
    """<kapi/capi.h> compiles without a warning as C99 and C++ (pedantic), with the limited API
    too."""
    _needs_build_tools()
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not on PATH")
    src = tmp_path / ("t.c" if compiler == "cc" else "t.cpp")
    src.write_text(
        "#include <kapi/capi.h>\n"
        "int f(void) { return kapi_import_capi() || !KAPI_CAPI_HAS(call_kernel_async); }\n"
    )
    inc = sysconfig.get_paths()["include"]
    for limited in ([], ["-DPy_LIMITED_API=0x030B0000"]):
        cmd = [compiler, std, "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only"]
        cmd += [*limited, f"-I{inc}", f"-I{kapi.get_include()}", str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{' '.join(cmd)}:\n{r.stderr[-3000:]}"


@pytest.mark.parametrize(
    "flag,fn", [("--include", "get_include"), ("--cmake-dir", "get_cmake_dir")]
)
def test_cli_prints_the_folders(flag, fn):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run(
        [sys.executable, "-m", "kapi", flag], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == getattr(kapi, fn)()


def test_find_package_refuses_a_newer_version(tmp_path):
    """kapiConfigVersion.cmake: find_package(kapi 99 CONFIG) fails, naming the version found."""
    _needs_build_tools()
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(v NONE)\n"
        "find_package(kapi 99 CONFIG REQUIRED)\n"
    )
    r = subprocess.run(
        [
            "cmake",
            "-S",
            str(tmp_path),
            "-B",
            str(tmp_path / "b"),
            f"-Dkapi_DIR={kapi.get_cmake_dir()}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode != 0
    assert kapi.__version__ in r.stderr, r.stderr


# -- the sample extension ----------------------------------------------------------------------


def test_demo_checks_itself(built):
    """samples/c_extension/demo.py, as make test-wheel runs it against the installed wheel."""
    needs_cpu_device()
    env = dict(os.environ, PYTHONPATH=f"{built.parent}{os.pathsep}{ROOT}")
    r = subprocess.run(
        [sys.executable, str(SAMPLE / "demo.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    assert r.stdout.splitlines()[-1] == "OK", r.stdout


def test_version(ext):
    assert ext.capi_version() == (1, _native.ext().C_API_VERSION)


def test_an_older_kapi_is_refused_at_import(tmp_path):
    """Built to need a newer table than this kapi offers, the extension fails to import with
    ImportError naming both versions (kapi_import_capi)."""
    mod = _build(tmp_path / "b", "CMAKE_C_FLAGS=-DKAPI_CAPI_REQUIRED_VERSION=99")
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('kapi_sample', {str(mod)!r})\n"
        "try:\n"
        "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "ImportError: this extension needs kapi's C API version 99" in r.stdout, r.stdout
    assert f"offers version {_native.ext().C_API_VERSION}" in r.stdout


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a,
        lambda a: a[1:, ::2],
        lambda a: a[::-1],
        lambda a: a.T,
    ],
    ids=["contiguous", "strided", "reversed", "transposed"],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex64, np.bool_, np.uint8])
def test_describe_reads_what_python_sees(ext, make, dtype):
    a = make(kapi.asarray(np.arange(24).reshape(4, 6).astype(dtype)))
    d = ext.describe(a)
    assert d["ndim"] == a.ndim
    assert d["shape"] == list(a.shape)
    assert d["strides"] == list(a.strides)
    assert d["element_strides"] == [s // a.itemsize for s in a.strides]
    assert d["typenum"] == a.dtype.num
    assert d["char"] == a.dtype.char
    assert d["itemsize"] == a.dtype.itemsize
    assert d["data"] == a.__sycl_usm_array_interface__["data"][0]
    assert d["host_accessible"] == (a.device.device_type == "cpu" or a.usm_type != "device")


def test_describe_a_0d_array(ext):
    a = kapi.asarray(np.float64(2.5))
    d = ext.describe(a)
    assert (d["ndim"], d["shape"], d["strides"], d["itemsize"]) == (0, [], [], 8)


def test_scale_writes_through_the_pointer(ext, cpu):
    host = np.arange(48, dtype=np.float64).reshape(6, 8)
    a = kapi.asarray(host, device=cpu)
    ext.scale(a[1::2, ::-3], 10.0)  # a strided, reversed view: only its elements change
    want = host.copy()
    want[1::2, ::-3] *= 10
    np.testing.assert_array_equal(a.asnumpy(), want)
    b = kapi.asarray(np.ones(5, np.float32), device=cpu)
    ext.scale(b, 0.5)
    np.testing.assert_array_equal(b.asnumpy(), np.full(5, 0.5, np.float32))


def test_scale_computes_a_pending_array_first(ext, cpu):
    """A lazy expression's array gets its memory before C writes it (kapi_array_data)."""
    a = kapi.asarray(np.arange(10, dtype=np.float32), device=cpu)
    b = a * 2
    ext.scale(b, 3.0)
    np.testing.assert_array_equal(b.asnumpy(), np.arange(10, dtype=np.float32) * 6)
    np.testing.assert_array_equal(a.asnumpy(), np.arange(10, dtype=np.float32))


def test_errors(ext, cpu):
    with pytest.raises(
        TypeError, match=r"kapi_array_ndim: expected a kapi array \(kapi.Array\), got ndarray"
    ):
        ext.describe(np.zeros(3))
    with pytest.raises(TypeError, match="got list"):
        ext.scale([1.0, 2.0], 2.0)
    with pytest.raises(TypeError, match="expected a kapi array"):
        ext.handles(None)
    with pytest.raises(TypeError, match="float32 or float64 arrays, not dtype char 'l'"):
        ext.scale(kapi.zeros(3, dtype=np.int64, device=cpu), 2.0)
    with pytest.raises(ValueError, match="the array has 2 dimensions, more than the 1 out has"):
        ext.scaled_copy(scale_kernel, kapi.zeros((2, 2), device=cpu), 1.0)


def test_kernel_launched_from_c(ext):
    x = kapi.asarray(np.arange(1000, dtype=np.float32))
    y = ext.scaled_copy(scale_kernel, x, np.float32(0.25))
    assert isinstance(y, kapi.Array)
    assert y.device == x.device and y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y.asnumpy(), np.arange(1000, dtype=np.float32) * 0.25)


def test_launch_from_c_is_call_kernels_path(ext):
    """C launches share the kernel's dispatch cache with kapi.call_kernel: one specialisation."""

    @kapi.kernel
    def k(item: kapi_api.Item, src, dst, factor):
        i = item.get_id(0)
        dst[i] = src[i] + factor

    x = kapi.asarray(np.arange(8, dtype=np.float32))
    y = kapi.empty_like(x)
    ext.call(k, (8,), None, x, y, np.float32(1))
    kapi.call_kernel(k, kapi.Range(8), x, y, np.float32(2))
    np.testing.assert_array_equal(y.asnumpy(), np.arange(8, dtype=np.float32) + 2)
    assert k._launcher.cache_size == 1


def test_ndrange_launch_from_c(ext):
    a = kapi.zeros((4, 6), dtype=np.int32)
    ext.call(add_one_2d, (4, 6), (2, 3), a)
    ext.call(add_one_2d, (4, 6), (4, 1), a)
    np.testing.assert_array_equal(a.asnumpy(), np.full((4, 6), 2, np.int32))


def test_launch_errors_are_kapis(ext):
    a = kapi.zeros((4, 6), dtype=np.int32)
    with pytest.raises(kapi.UnsupportedGroupWorkItemSizeError, match="does not divide"):
        ext.call(add_one_2d, (4, 6), (3, 3), a)
    with pytest.raises(kapi.InvalidRangeError, match="positive integer"):
        ext.call(add_one_2d, (0, 6), None, a)
    with pytest.raises(kapi.InvalidKernelSpecializationError, match="add_one_2d"):
        ext.call(add_one_2d, (4, 6), (2, 3), a, a)
    with pytest.raises(TypeError, match="call_kernel takes a @kapi.kernel function, not int"):
        ext.call(3, (4,), None, a)


def test_async_launch_from_c(ext):
    x = kapi.asarray(np.arange(64, dtype=np.float32))
    y = kapi.empty_like(x)
    ev = ext.call_async(scale_kernel, (64,), (), x, y, np.float32(3))
    ev2 = ext.call_async(scale_kernel, (64,), (ev,), y, y, np.float32(2))
    ev2.wait()
    np.testing.assert_array_equal(y.asnumpy(), np.arange(64, dtype=np.float32) * 6)


def test_level_zero_handles(ext):
    a, b = kapi.zeros(3), kapi.zeros(5)
    ha, hb = ext.handles(a), ext.handles(b)
    assert all(v != 0 for v in ha.values())
    assert ha == hb  # one device, its default queue
    q = kapi.Queue(a.device)
    hc = ext.handles(kapi.zeros(3, sycl_queue=q))
    assert hc["command_list"] != ha["command_list"]  # a queue of its own: another list
    assert {k: hc[k] for k in ("driver", "device", "context")} == {
        k: ha[k] for k in ("driver", "device", "context")
    }


# -- the guide's example (docs/guide/c-api.md) --------------------------------------------------


def _fenced(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, re.S | re.M)


def test_the_guides_extension_builds_and_runs(tmp_path):
    """The page's CMakeLists, myext.c and the Python session that uses it, as the page shows
    them (its python blocks that need the build are marked not-a-program for test_docs.py)."""
    _needs_build_tools()
    needs_cpu_device()  # the page's session scales an array on device="cpu"
    page = (ROOT / "docs" / "guide" / "c-api.md").read_text()
    (cmake,) = _fenced(page, "cmake")
    (source,) = _fenced(page, "c")
    session = next(b for b in _fenced(page, "python") if "import myext" in b)
    (tmp_path / "CMakeLists.txt").write_text(cmake)
    (tmp_path / "myext.c").write_text(source)
    build = tmp_path / "build"
    for cmd in (
        [
            "cmake",
            "-S",
            str(tmp_path),
            "-B",
            str(build),
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-Dkapi_DIR={kapi.get_cmake_dir()}",
        ],
        ["cmake", "--build", str(build)],
    ):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    check = (
        "\nwant = np.arange(12, dtype=np.float32).reshape(3, 4)\nwant[:, ::2] *= 10\n"
        "assert np.array_equal(a.asnumpy(), want)\n"
        "assert y.device == x.device and np.array_equal(y.asnumpy(), np.arange(5) * 0.5)\n"
        "print('checked')\n"
    )
    env = dict(os.environ, PYTHONPATH=f"{build}{os.pathsep}{ROOT}")
    r = subprocess.run(
        [sys.executable, "-c", session + check],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "expected a kapi array (kapi.Array), got ndarray" in r.stdout
    assert r.stdout.rstrip().endswith("checked"), r.stdout
