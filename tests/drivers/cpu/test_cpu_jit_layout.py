"""Kernel objects of the CPU device run wherever the JIT maps their sections. RuntimeDyld maps a
kernel's code and its read-only data separately, and nothing keeps the two within 2 GiB: in a
crowded address space (a 32-core host: many threads, their stacks and malloc arenas) they can land
farther apart, where a 32-bit offset from one to the other (LLVM 15's switch jump tables,
.eh_frame) truncates and the kernel jumps to a wild address. The objects must refer across
sections only through 64-bit offsets; far_mmap.c (LD_PRELOAD) places every section far from the
others to show that they run so."""

import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest
from kapi_testing import devices_or_skip

from kapi import _native

CPU = [d for d in devices_or_skip() if d.filter_string.startswith("level_zero:cpu")]
if not CPU:  # pragma: no cover
    pytest.skip("no kapi CPU device", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

KERNELS = """
import numpy as np
import kapi
from kapi import kernel_api as K

ADD, MAX = K.GroupOp.ADD, K.GroupOp.MAX

@kapi.kernel
def group_algos(nd, a, out):
    # work-group collectives: barriers, so the region scheme with its states
    g = nd.get_group()
    i = nd.get_global_linear_id()
    x = a[i]
    out[i, 0] = K.reduce_over_group(g, x, ADD)
    out[i, 1] = K.inclusive_scan_over_group(g, x, ADD)
    out[i, 2] = K.exclusive_scan_over_group(g, x, MAX)
    out[i, 3] = K.reduce_over_group(g, x, MAX)

def check(gshape, lshape):
    n = int(np.prod(gshape))
    h = (np.arange(n, dtype=np.int32) * 7919) % 1000
    out = kapi.zeros((n, 4), dtype=np.int32, device="cpu")
    kapi.call_kernel(group_algos, kapi.NdRange(gshape, lshape), kapi.asarray(h, device="cpu"), out)
    got = out.asnumpy()
    ids = np.indices(gshape).reshape(len(gshape), -1).T
    grp = np.ravel_multi_index((ids // np.array(lshape)).T, np.array(gshape) // np.array(lshape))
    lin = np.ravel_multi_index((ids % np.array(lshape)).T, lshape)
    for g in np.unique(grp):
        m = np.nonzero(grp == g)[0]
        m = m[np.argsort(lin[m])]
        v = h[m]
        assert (got[m, 0] == v.sum()).all() and (got[m, 3] == v.max()).all()
        assert (got[m, 1] == np.cumsum(v)).all()
        before = np.concatenate([[np.iinfo(np.int32).min], np.maximum.accumulate(v)[:-1]])
        assert (got[m, 2] == before).all()
"""

# ELF x86-64 relocations that reach 64 bits: absolute, and relative to the GOT or to the place.
_WIDE = {
    1,
    24,
    25,
    27,
    28,
    29,
    30,
}  # R_X86_64_64, PC64, GOTOFF64, GOT64, GOTPCREL64, GOTPC64, PLTOFF64


def _cross_section_narrow_relocations(obj: bytes) -> list[str]:
    """Relocations of an ELF64 object that point from one section at a symbol defined in another
    with fewer than 64 bits (their type, and the two sections' names)."""
    assert obj[:4] == b"\x7fELF" and obj[4] == 2, "not an ELF64 object"
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx]

    def name(off, tab):
        start = tab[4] + off
        return obj[start : obj.index(b"\0", start)].decode()

    bad = []
    for s in secs:
        if s[1] != 4:  # SHT_RELA
            continue
        symtab, target = secs[s[6]], s[7]
        for k in range(s[5] // 24):
            _, info, _ = struct.unpack_from("<QQq", obj, s[4] + 24 * k)
            rtype, sym = info & 0xFFFFFFFF, info >> 32
            shndx = struct.unpack_from("<H", obj, symtab[4] + 24 * sym + 6)[0]
            if shndx in (0, 0xFFF1) or shndx == target or rtype in _WIDE:
                continue  # undefined (a stub is made beside the code), absolute, or in-section
            bad.append(f"type {rtype} in {name(secs[target][0], strtab)} -> "
                       f"{name(secs[shndx][0], strtab)}")  # fmt: skip
    return bad


def _kernels(tmp_path):
    """KERNELS as a module of its own (pyfront reads a kernel's source file)."""
    path = tmp_path / "layout_kernels.py"
    path.write_text(KERNELS)
    return path


def test_kernel_objects_refer_across_sections_with_64_bit_offsets(tmp_path):
    spec = importlib.util.spec_from_file_location("layout_kernels", _kernels(tmp_path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.check((16, 12), (8, 6))
    kern = mod.group_algos
    spirv = kern.inspect_spirv(kern.signatures[0])
    native = _native.ext().rt_native_binary(CPU[0].index, spirv)
    assert native, "the CPU driver gave no native binary"
    obj = native[native.index(b"\x7fELF") :]
    assert _cross_section_narrow_relocations(obj) == []


def _compiler():
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


@pytest.mark.skipif(_compiler() is None, reason="needs a C compiler to build far_mmap.c")
def test_kernels_run_with_their_sections_far_apart(tmp_path):
    lib = tmp_path / "libfar_mmap.so"
    subprocess.run(
        [_compiler(), "-O1", "-shared", "-fPIC", "-o", str(lib), os.path.join(HERE, "far_mmap.c"),
         "-ldl"],
        check=True,
    )  # fmt: skip
    _kernels(tmp_path)
    code = textwrap.dedent(
        """
        from layout_kernels import check

        for shape in [((128,), (64,)), ((60,), (20,)), ((16, 12), (8, 6)), ((32, 8), (16, 4))]:
            check(*shape)
        far = [l for l in open("/proc/self/maps") if " r-xp " in l and l.split()[-1] == "0"
               and l.startswith(("1000", "5000"))]
        print("far code mappings:", len(far))
        """
    )
    env = dict(os.environ, LD_PRELOAD=str(lib), KAPI_DRIVERS="cpu")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    script = tmp_path / "run_far.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], env=env, cwd=ROOT, capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    # the JIT's code did land in the spread regions (else this test would prove nothing)
    assert "far code mappings: 0" not in r.stdout and "far code mappings:" in r.stdout, r.stdout
