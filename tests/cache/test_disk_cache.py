"""The disk cache (kapi/_cache/store.py, kapi/_cache/identity.py): a hit skips the front end and
LLVM, and
every part of the key misses when it changes. Kernels are built from source text compiled
under one fixed file name, so two builds of the same text have equal code objects (as a
script run twice does) and a change to one part of the text changes only that part. Each test
points KAPI_CACHE_DIR at its own directory; "no recompilation" is checked by counting the
front end's calls (in process) or by the absence of Numba (in fresh processes)."""

import linecache
import os
import subprocess
import sys
import textwrap
import time
import types

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi import kernel_api as kapi_api
from kapi._cache import identity as _identity
from kapi._cache import store as _cache
from kapi._kernel import dispatcher as _kernel

DEVICES = devices_or_skip()
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIG = (("item", 1), ("array(f32,1,C,global)", "f32"))
FILE = "/virtual/kapi_cache_kernels.py"


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("KAPI_CACHE_DIR", str(d))
    monkeypatch.delenv("KAPI_CACHE", raising=False)
    monkeypatch.delenv("KAPI_CACHE_SIZE", raising=False)
    return d


@pytest.fixture
def front(monkeypatch):
    """Counts the front end's compiles (a disk hit makes none)."""
    calls = []
    real = _kernel._pyfront_compile

    def counting(pyfunc, argtypes, index, boundscheck=False, **options):
        calls.append(pyfunc.__name__)
        return real(pyfunc, argtypes, index, boundscheck, **options)

    monkeypatch.setattr(_kernel, "_pyfront_compile", counting)
    return calls


def build(src, name="k", ns=None, file=FILE, **options):
    """The kernel `name` of `src`, compiled under `file`; ns seeds its globals."""
    src = textwrap.dedent(src)
    linecache.cache[file] = (len(src), None, src.splitlines(True), file)
    g = {"__name__": "kapi_cache_kernels", "kapi": kapi, "kapi_api": kapi_api}
    g.update(ns or {})
    exec(compile(src, file, "exec"), g)
    return kapi.kernel(g[name], **options)


def entries(d, suffix=".spv"):
    return sorted(p for p in os.listdir(d) if p.endswith(suffix)) if d.exists() else []


SCALE_SRC = """
def k(item, a, s):
    i = item.get_id(0)
    a[i] = s * SCALE + i
"""


def compiled(kernel, sig=SIG):
    return kernel.compile(sig[1], sig[0])


def test_environment_key_reads_every_source_and_native_library(monkeypatch):
    # the key's environment part reads kapi's sources in every subpackage, pyfront's, and the
    # build id of every native library in kapi/_lib: a rebuilt compiler or driver misses
    sources, libraries = _cache._inputs()
    names = {_cache._source_name(p) for p in sources}
    assert {
        "kapi/__init__.py",
        "kapi/_cache/store.py",
        "kapi/_kernel/dispatcher.py",
        "kapi/_numeric/reduce.py",
        "pyfront/__init__.py",
    } <= names, sorted(names)
    built = sorted(
        os.path.join(ROOT, "kapi", "_lib", n)
        for n in os.listdir(os.path.join(ROOT, "kapi", "_lib"))
        if n.endswith(".so")
    )
    assert [os.path.realpath(p) for p in libraries] == [os.path.realpath(p) for p in built]
    assert any(os.path.basename(p).startswith("libkapi_compiler") for p in libraries)
    token = _cache._content_token(sources, libraries)
    real = _cache._elf_build_id

    def other_compiler(head):
        bid = real(head)
        return bid[::-1] if bid and real(head) == compiler_id else bid

    compiler = next(p for p in libraries if "libkapi_compiler" in p)
    with open(compiler, "rb") as f:
        compiler_id = real(f.read(1 << 16))
    assert compiler_id
    monkeypatch.setattr(_cache, "_elf_build_id", other_compiler)
    assert _cache._content_token(sources, libraries) != token


def test_hit_skips_front_end_and_runs(cache_dir, front, dev):
    ck1 = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    assert front == ["k"] and len(entries(cache_dir)) == 1
    k2 = build(SCALE_SRC, ns={"SCALE": 2.0})
    ck2 = compiled(k2)
    assert front == ["k"], "a disk hit must not run the front end"
    assert (ck2.spirv, ck2.kir, ck2.llvm_ir, ck2.entry) == (
        ck1.spirv,
        ck1.kir,
        ck1.llvm_ir,
        ck1.entry,
    )
    a = kapi.zeros(8, dtype="f4", device=dev)
    kapi.call_kernel(k2, kapi.Range(8), a, np.float32(1.5))
    np.testing.assert_array_equal(a.asnumpy(), 3.0 + np.arange(8, dtype=np.float32))
    assert k2.inspect_kir(ck2.signature) == ck1.kir


def test_same_source_in_another_folder_hits(cache_dir, front):
    # a bundle serves an application installed elsewhere; its diagnostics name the new path
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    moved = "/elsewhere/app/" + os.path.basename(FILE)
    ck = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, file=moved))
    assert front == ["k"]
    assert f'file "{moved}"' in ck.kir and FILE not in ck.kir
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, file="/virtual/other_name.py"))
    assert len(front) == 2  # another file name: another kernel
    compiled(build("\n" + SCALE_SRC, ns={"SCALE": 2.0}))
    assert len(front) == 3  # moved down a line: its diagnostics' lines differ


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda: (SCALE_SRC.replace("+ i", "- i"), {"SCALE": 2.0}), id="code"),
        pytest.param(
            lambda: (SCALE_SRC.replace("SCALE +", "SCALE * 3.0 +"), {"SCALE": 2.0}), id="constant"
        ),
        pytest.param(lambda: (SCALE_SRC, {"SCALE": 2.5}), id="global-value"),
        pytest.param(lambda: (SCALE_SRC, {"SCALE": np.float32(2.0)}), id="global-type"),
    ],
)
def test_miss_on_source_and_globals(cache_dir, front, change):
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    src, ns = change()
    compiled(build(src, ns=ns))
    assert len(front) == 2 and len(entries(cache_dir)) == 2
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))  # the original still hits
    assert len(front) == 2


def test_miss_on_module_attribute(cache_dir, front):
    src = SCALE_SRC.replace("SCALE", "cfg.SCALE")
    cfg = types.ModuleType("kapi_cache_cfg")
    cfg.SCALE = 2.0
    compiled(build(src, ns={"cfg": cfg}))
    compiled(build(src, ns={"cfg": cfg}))
    assert len(front) == 1
    cfg.SCALE = 4.0
    compiled(build(src, ns={"cfg": cfg}))
    assert len(front) == 2


CLOSURE_SRC = """
def make(scale):
    def k(item, a, s):
        i = item.get_id(0)
        a[i] = s * scale + i
    return k
"""


def test_miss_on_closure_change(cache_dir, front):
    def kernel_for(scale):
        g = {}
        src = textwrap.dedent(CLOSURE_SRC)
        exec(compile(src, FILE, "exec"), g)
        return kapi.kernel(g["make"](scale))

    compiled(kernel_for(2.0))
    compiled(kernel_for(2.0))
    assert len(front) == 1
    compiled(kernel_for(3.0))
    assert len(front) == 2


DEVFUNC_SRC = """
@kapi.device_func
def helper(x):
    return x * 2.0

def k(item, a, s):
    i = item.get_id(0)
    a[i] = helper(s) + i
"""


def test_miss_on_device_function_change(cache_dir, front, dev):
    compiled(build(DEVFUNC_SRC))
    compiled(build(DEVFUNC_SRC))
    assert len(front) == 1
    k = build(DEVFUNC_SRC.replace("x * 2.0", "x * 5.0"))
    compiled(k)
    assert len(front) == 2
    a = kapi.zeros(4, dtype="f4", device=dev)
    kapi.call_kernel(k, kapi.Range(4), a, np.float32(1.0))
    np.testing.assert_array_equal(a.asnumpy(), 5.0 + np.arange(4, dtype=np.float32))


def test_miss_on_argument_types_and_options(cache_dir, front):
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}), (("item", 1), ("array(f64,1,C,global)", "f64")))
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}), (("item", 1), ("array(f32,1,A,global)", "f32")))
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, opt_level=3))
    assert len(front) == 4 and len(entries(cache_dir)) == 4


LOCAL_SRC = """
def k(nditem, a, tile):
    i = nditem.get_local_id(0)
    tile[i] = a[nditem.get_global_id(0)]
    kapi_api.group_barrier(nditem.get_group())
    a[nditem.get_global_id(0)] = tile[tile.shape[0] - 1 - i]
"""


def test_miss_on_local_accessor_shape(cache_dir, front, dev):
    for wg in (8, 16, 8):
        k = build(LOCAL_SRC)
        h = np.arange(32, dtype=np.float32)
        a = kapi.asarray(h, device=dev)
        slm = kapi_api.LocalAccessor((wg,), np.float32)
        kapi.call_kernel(k, kapi.NdRange((32,), (wg,)), a, slm)
        np.testing.assert_array_equal(a.asnumpy(), h.reshape(-1, wg)[:, ::-1].ravel())
    assert len(front) == 2  # 8, 16, then 8 again from the disk


def test_uncacheable_value_compiles_in_memory(cache_dir, front, capfd, monkeypatch):
    class Scale(float):
        pass

    monkeypatch.setenv("KAPI_DEBUG", "cache")
    k = build(SCALE_SRC, ns={"SCALE": Scale(2.0)})
    compiled(k)
    assert entries(cache_dir) == [] and k._cache_refusal
    assert "SCALE" in k._cache_refusal and "Scale" in k._cache_refusal
    assert "not cached on disk" in capfd.readouterr().err
    with pytest.raises(_identity.Uncacheable, match="unset"):

        def outer():
            def f():
                return late  # noqa: F821 - a cell assigned after f is made

            _identity.identity(f)
            late = 1
            return late

        outer()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
        pytest.param(lambda b: b[:-1] + bytes([b[-1] ^ 1]), id="flipped-byte"),
        pytest.param(lambda b: b"", id="empty"),
        pytest.param(lambda b: b"garbage" * 50, id="garbage"),
        pytest.param(lambda b: b[:10] + b"\x09\x00\x00\x00" + b[14:], id="other-format"),
    ],
)
def test_corrupt_entry_recompiles_and_is_rewritten(cache_dir, front, damage):
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    (name,) = entries(cache_dir)
    path = cache_dir / name
    good = path.read_bytes()
    path.write_bytes(damage(good))
    ck = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    assert len(front) == 2 and ck.spirv
    assert path.read_bytes() == good  # rewritten whole
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    assert len(front) == 2


def test_foreign_entry_is_a_miss(cache_dir, front):
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    compiled(build(SCALE_SRC, ns={"SCALE": 3.0}))
    a, b = entries(cache_dir)
    (cache_dir / b).write_bytes((cache_dir / a).read_bytes())  # a valid entry, another key
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    compiled(build(SCALE_SRC, ns={"SCALE": 3.0}))
    assert len(front) == 3


def test_eviction_keeps_the_most_recently_used(cache_dir, front, monkeypatch):
    # file times tick coarsely (a few ms): each new entry is dated into the past, in order, so
    # that "least recently used" is unambiguous however fast the compiles are
    base = time.time() - 1000
    seen = set()

    def compile_and_date(v):
        compiled(build(SCALE_SRC, ns={"SCALE": v}))
        for name in set(entries(cache_dir)) - seen:
            os.utime(cache_dir / name, (base + len(seen), base + len(seen)))
            seen.add(name)

    compile_and_date(1.0)
    size = os.path.getsize(cache_dir / entries(cache_dir)[0])
    monkeypatch.setenv("KAPI_CACHE_SIZE", str(int(size * 2.5)))
    for v in (2.0, 3.0, 4.0):
        compile_and_date(v)
    assert len(entries(cache_dir)) == 2
    assert sum(s for _, s, _ in _cache.entries()) <= size * 2.5
    compiled(build(SCALE_SRC, ns={"SCALE": 4.0}))  # newest: kept (and used now)
    assert len(front) == 4
    compiled(build(SCALE_SRC, ns={"SCALE": 1.0}))  # oldest: evicted
    assert len(front) == 5
    compiled(build(SCALE_SRC, ns={"SCALE": 4.0}))  # used last: kept over 3.0
    assert len(front) == 5
    monkeypatch.setenv("KAPI_CACHE_SIZE", "2K")
    assert _cache.size_cap() == 2048


def test_disabled(cache_dir, front, monkeypatch):
    monkeypatch.setenv("KAPI_CACHE", "0")
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    assert len(front) == 2 and not cache_dir.exists()
    monkeypatch.delenv("KAPI_CACHE")
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, cache=False))
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, cache=False))
    assert len(front) == 4 and entries(cache_dir) == []


def test_unwritable_directory_compiles_in_memory(tmp_path, front, monkeypatch, dev):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KAPI_CACHE_DIR", str(blocker / "cache"))
    k = build(SCALE_SRC, ns={"SCALE": 2.0})
    a = kapi.zeros(4, dtype="f4", device=dev)
    kapi.call_kernel(k, kapi.Range(4), a, np.float32(1.0))
    np.testing.assert_array_equal(a.asnumpy(), 2.0 + np.arange(4, dtype=np.float32))
    assert len(front) == 1


def test_read_only_directory_still_hits(cache_dir, front, monkeypatch):
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_cache, "_mkstemp", refuse)  # as a read-only directory does
    compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    assert len(front) == 1
    compiled(build(SCALE_SRC, ns={"SCALE": 5.0}))  # a miss compiles, writes nothing
    assert len(front) == 2 and len(entries(cache_dir)) == 1


# -- fresh processes: native binaries, concurrency, the command line ---------------------------

SCRIPT = """
import sys, numpy as np, kapi

@kapi.kernel
def k(item, a, s):
    i = item.get_id(0)
    a[i] = s * 2.0 + i

dev = kapi.Device(sys.argv[1])
a = kapi.zeros(64, dtype="f4", device=dev)
kapi.call_kernel(k, kapi.Range(64), a, np.float32(1.0))
assert (a.asnumpy() == 2.0 + np.arange(64, dtype=np.float32)).all()
print("numba" in sys.modules, "pyfront._numba" in sys.modules)
"""


def run_script(path, dev, cache_dir, *, debug=True, **more):
    env = dict(os.environ, KAPI_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT, **more)
    env.pop("KAPI_CACHE", None)
    if debug:
        env["KAPI_DEBUG"] = "cache"
    return subprocess.Popen(
        [sys.executable, str(path), dev.filter_string],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(p):
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    return out.strip(), err


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "kapi_cache_script.py"
    path.write_text(SCRIPT)
    return path


def test_warm_process_runs_without_the_front_end(script, cache_dir, dev):
    out, err = finish(run_script(script, dev, cache_dir))
    assert out == "True True" and "miss" in err
    out, err = finish(run_script(script, dev, cache_dir))
    assert out == "False False", "a warm cache must not import Numba or pyfront's front end"
    assert "native hit" in err


def test_concurrent_writers(script, cache_dir, dev):
    procs = [run_script(script, dev, cache_dir) for _ in range(4)]
    for p in procs:
        finish(p)
    assert len(entries(cache_dir, ".spv")) == 1 and len(entries(cache_dir, ".nat")) == 1
    assert not [n for n in os.listdir(cache_dir) if n.startswith(".tmp-")]
    out, err = finish(run_script(script, dev, cache_dir))
    assert out == "False False" and "native hit" in err


def test_refused_or_corrupt_native_binary_is_rebuilt(script, cache_dir, dev):
    finish(run_script(script, dev, cache_dir))
    (nat,) = entries(cache_dir, ".nat")
    good = (cache_dir / nat).read_bytes()
    payload = _cache._decode(good)[0]
    # a well-formed entry whose binary the driver refuses (another format version, as a binary
    # from another build of the driver would be)
    native = payload["native"]
    bad = dict(payload, native=native[:8] + bytes([native[8] ^ 0x40]) + native[9:])
    (cache_dir / nat).write_bytes(_cache._encode(bad))
    out, err = finish(run_script(script, dev, cache_dir))
    assert out == "False False" and "refused" in err
    assert rebuilt(cache_dir / nat, native)
    (cache_dir / nat).write_bytes(good[:100])  # truncated: a plain miss
    out, err = finish(run_script(script, dev, cache_dir))
    assert out == "False False" and "truncated" in err
    assert rebuilt(cache_dir / nat, native)
    out, err = finish(run_script(script, dev, cache_dir))
    assert "native hit" in err


def rebuilt(path, native):
    """The entry was rewritten whole with a binary of the same format (code generation need
    not be byte-for-byte repeatable on every driver)."""
    payload, why = _cache._decode(path.read_bytes())
    return why is None and payload["native"][:12] == native[:12]


MODULE = """
import kapi

@kapi.kernel
def axpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]

@kapi.kernel("(item(1), array(f64,1,C,global))")
def twice(item, x):
    x[item.get_id(0)] *= 2
"""

USE = """
import sys, numpy as np, kapi
import aot_kernels as m
dev = kapi.Device(sys.argv[1])
x = kapi.asarray(np.arange(8.0), device=dev)
kapi.call_kernel(m.twice, kapi.Range(8), x)
y = kapi.ones(8, dtype="f4", device=dev)
kapi.call_kernel(m.axpy, kapi.Range(8), np.float32(2), kapi.ones(8, dtype="f4", device=dev), y)
assert (x.asnumpy() == 2 * np.arange(8.0)).all() and (y.asnumpy() == 3).all()
print("numba" in sys.modules)
"""


def test_compile_command_writes_a_bundle_and_cache_lists_it(tmp_path, dev):
    (tmp_path / "aot_kernels.py").write_text(MODULE)
    (tmp_path / "use.py").write_text(USE)
    bundle = tmp_path / "bundle"
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "kapi"]
    r = subprocess.run(
        cmd + ["compile", str(tmp_path / "aot_kernels.py"), "--device", dev.filter_string,
               "--signature", "(item(1), f32, array(f32,1), array(f32,1))",
               "--output", str(bundle)],
        env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "compiled 2 specialisation(s)" in r.stdout
    assert len(entries(bundle, ".spv")) == 2 and len(entries(bundle, ".nat")) == 2
    env["KAPI_CACHE_DIR"] = str(bundle)
    r = subprocess.run(cmd + ["cache", "-v"], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "entries: 4 (2 SPIR-V, 2 native)" in r.stdout
    assert "aot_kernels.axpy(item(1), f32" in r.stdout
    u = subprocess.run([sys.executable, "use.py", dev.filter_string], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert u.returncode == 0 and u.stdout.strip() == "False", u.stderr
    r = subprocess.run(cmd + ["cache", "--clear"], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "removed 4 entries" in r.stdout
    assert entries(bundle) == [] and entries(bundle, ".nat") == []
    r = subprocess.run(cmd + ["compile", "no_such_module_here"], env=env, capture_output=True,
                       text=True, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 1 and "cannot import" in r.stderr and "Traceback" not in r.stderr


def test_location(monkeypatch, tmp_path):
    monkeypatch.delenv("KAPI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _cache.directory() == str(tmp_path / "kapi")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _cache.directory() == os.path.join(os.path.expanduser("~"), ".cache", "kapi")


def test_import_kapi_does_not_import_numba():
    r = subprocess.run(
        [sys.executable, "-c", "import sys, kapi; print('numba' in sys.modules)"],
        env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True,
    )  # fmt: skip
    assert r.stdout.strip() == "False", r.stderr


RAISE_SRC = """
def k(item, a, s):
    i = item.get_id(0)
    if a[i] < 0:
        raise ValueError("negative element")
    assert a[i] < s, "element too large"
    print("item", i)
"""


def test_hit_keeps_assert_sites_and_print(cache_dir, front, dev, capfd):
    compiled(build(RAISE_SRC))
    k2 = build(RAISE_SRC)
    ck = compiled(k2)
    assert front == ["k"], "a disk hit must not run the front end"
    assert ck.prints and {site[0] for site in ck.raises} == {ValueError, AssertionError}
    a = kapi.asarray(np.array([1.0, 2.0, 9.0, 1.0], dtype=np.float32), device=dev)
    with pytest.raises(AssertionError, match=r"kapi_cache_kernels.py:6: .*element too large"):
        kapi.call_kernel(k2, kapi.Range(4), a, np.float32(5.0))
    b = kapi.asarray(np.array([1.0, -2.0], dtype=np.float32), device=dev)
    with pytest.raises(ValueError, match=r"negative element"):
        kapi.call_kernel(k2, kapi.Range(2), b, np.float32(5.0))
    capfd.readouterr()
    kapi.call_kernel(k2, kapi.Range(1), b, np.float32(5.0))
    assert "item 0" in capfd.readouterr().out


def test_max_registers_is_part_of_the_key(cache_dir, front):
    """A register-capped kernel, the same kernel uncapped and with another cap are three
    entries (their SPIR-V differs: the cap travels in it); each hits."""
    plain = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    capped = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, max_registers=32))
    other = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, max_registers=40))
    assert front == ["k", "k", "k"] and len(entries(cache_dir)) == 3
    assert "max_registers" not in plain.kir and "max_registers 32 {" in capped.kir
    assert len({plain.spirv, capped.spirv, other.spirv}) == 3
    again = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, max_registers=32))
    assert front == ["k", "k", "k"] and again.spirv == capped.spirv


def test_required_group_size_is_part_of_the_key(cache_dir, front):
    """A kernel requiring groups of 64, the same kernel without and with groups of 128 are
    three entries (the size travels in the KIR and the SPIR-V); each hits."""
    plain = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    g64 = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, required_group_size=64))
    g128 = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, required_group_size=(128,)))
    assert front == ["k", "k", "k"] and len(entries(cache_dir)) == 3
    assert "group_size" not in plain.kir and "group_size 64 1 1 {" in g64.kir
    assert len({plain.spirv, g64.spirv, g128.spirv}) == 3
    again = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, required_group_size=(64, 1)))
    assert front == ["k", "k", "k"] and again.spirv == g64.spirv


def test_fastmath_is_part_of_the_key(cache_dir, front):
    """fastmath=True, another set of flags and none are three entries (their KIR and SPIR-V
    differ); the same flags in another order or as a dict hit the same entry."""
    plain = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    fast = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, fastmath=True))
    some = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, fastmath={"nnan", "ninf"}))
    assert front == ["k", "k", "k"] and len(entries(cache_dir)) == 3
    assert "fastmath" not in plain.kir and "fastmath fast {" in fast.kir
    assert "fastmath ninf nnan {" in some.kir
    assert len({plain.spirv, fast.spirv, some.spirv}) == 3
    again = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, fastmath={"ninf": True, "nnan": True}))
    assert front == ["k", "k", "k"] and again.spirv == some.spirv


def test_boundscheck_is_part_of_the_key(cache_dir, front):
    """A bounds-checked kernel and the same kernel unchecked are two entries; each hits."""
    plain = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}))
    checked = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, boundscheck=True))
    assert front == ["k", "k"] and len(entries(cache_dir)) == 2
    assert "raise" not in plain.kir and "raise" in checked.kir
    again = compiled(build(SCALE_SRC, ns={"SCALE": 2.0}, boundscheck=True))
    assert front == ["k", "k"] and again.kir == checked.kir and again.raises == checked.raises


SCRIPT_APP = """
import sys
import numpy as np
import kapi

@kapi.kernel
def scale(item, x, f):
    i = item.get_id(0)
    if x[i] < 0:
        raise ValueError("negative input")
    x[i] = x[i] * f

if __name__ == "__main__":
    x = kapi.asarray(np.arange(8.0, dtype=np.float32), device=kapi.Device(sys.argv[1]))
    kapi.call_kernel(scale, kapi.Range(8), x, np.float32(2))
    assert (x.asnumpy() == 2 * np.arange(8.0)).all()
    print("numba" in sys.modules)
"""


def test_a_script_compiled_ahead_of_time_hits_when_run_as_main(tmp_path, dev):
    # `kapi compile app.py` imports the script as module `app`; `python app.py` runs it as
    # `__main__`: the cache names both `app`, so the run neither misses nor imports Numba
    (tmp_path / "app.py").write_text(SCRIPT_APP)
    env = dict(os.environ, PYTHONPATH=ROOT, KAPI_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("KAPI_CACHE", None)
    r = subprocess.run(
        [sys.executable, "-m", "kapi", "compile", "app.py", "--device", dev.filter_string,
         "--signature", "(item(1), array(f32,1,C,global), f32)"],
        env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0 and "compiled 1 specialisation(s)" in r.stdout, r.stderr
    u = subprocess.run([sys.executable, "app.py", dev.filter_string], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert u.returncode == 0 and u.stdout.strip() == "False", u.stderr


def test_compile_fails_when_it_compiled_nothing_asked_for(tmp_path, dev):
    (tmp_path / "app.py").write_text(SCRIPT_APP)
    env = dict(os.environ, PYTHONPATH=ROOT, KAPI_CACHE_DIR=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "kapi", "compile", "app.py", "--device", dev.filter_string]

    def run(*more):
        return subprocess.run([*cmd, *more], env=env, capture_output=True, text=True,
                              cwd=tmp_path, timeout=300)  # fmt: skip

    r = run()  # no signature: the kernel declares none
    assert r.returncode == 1 and "nothing to compile in app.py" in r.stderr, r.stderr
    assert "--signature" in r.stderr and "scale (3)" in r.stderr
    r = run("--signature", "(item(1), f32)")  # a wrong arity
    assert r.returncode == 1 and "fits no kernel" in r.stderr and "arity" in r.stderr
    r = run("--kernel", "scale", "--signature", "(item(1), f32)")
    assert r.returncode == 1 and "kernel scale takes 3 parameter(s)" in r.stderr
    assert "Traceback" not in r.stderr
