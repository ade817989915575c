"""The NVPTX finaliser called directly through ctypes (it needs no GPU): PTX text and kernel
tables of a SPIR-V module, for tests that check what the CUDA driver would load."""

import ctypes
from pathlib import Path

import kapi

LIB = Path(kapi.__file__).parent / "_lib" / "libkapi_compiler.so"


class NvptxOptions(ctypes.Structure):
    """kc_nvptx_options_t (compiler/include/kapi/compiler.h)."""

    _fields_ = [
        ("libdevice_path", ctypes.c_char_p),
        ("sm", ctypes.c_uint32),
        ("opt_level", ctypes.c_int),
        ("coarsen", ctypes.c_int),
    ]


class NvptxKernel(ctypes.Structure):
    """kc_nvptx_kernel_t (compiler/include/kapi/compiler.h)."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("num_args", ctypes.c_uint32),
        ("args", ctypes.c_void_p),
        ("required_local_size", ctypes.c_uint32 * 3),
        ("coarse_name", ctypes.c_char_p),
        ("coarse_factor", ctypes.c_uint32),
        ("coarse_aligned", ctypes.c_uint64),
        ("aligned_name", ctypes.c_char_p),
        ("aligned_mask", ctypes.c_uint64),
    ]


def _lib():
    lib = ctypes.CDLL(str(LIB))
    lib.kc_nvptx_module_ptx.restype = ctypes.c_char_p
    lib.kc_nvptx_module_find.restype = ctypes.POINTER(NvptxKernel)
    lib.kc_nvptx_module_find.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    return lib


def finalise(spirv: bytes, kernels=(), coarsen=True, libdevice=None, aligned=False):
    """(PTX text, {kernel name: (coarse entry name or None, factor, aligned mask)}), with
    aligned=True (..., aligned entry name or None, its mask) (kc_nvptx_kernel_t).
    `libdevice` (a path) is needed for kernels calling math functions."""
    lib = _lib()
    opts = NvptxOptions()
    lib.kc_nvptx_options_init(ctypes.byref(opts))
    opts.coarsen = int(coarsen)
    if libdevice is not None:
        opts.libdevice_path = str(libdevice).encode()
    mod, log = ctypes.c_void_p(), ctypes.c_char_p()
    st = lib.kc_nvptx_finalise(
        spirv, len(spirv), ctypes.byref(opts), ctypes.byref(mod), ctypes.byref(log)
    )
    assert st == 0, log.value
    try:
        table = {}
        for name in kernels:
            k = lib.kc_nvptx_module_find(mod, name.encode())
            assert k, f"no kernel {name}"
            c = k.contents
            coarse = c.coarse_name.decode() if c.coarse_name else None
            table[name] = (coarse, c.coarse_factor, c.coarse_aligned)
            if aligned:
                entry = c.aligned_name.decode() if c.aligned_name else None
                table[name] += (entry, c.aligned_mask)
        return lib.kc_nvptx_module_ptx(mod, None).decode(), table
    finally:
        lib.kc_nvptx_module_destroy(mod)


def ptx_of(spirv: bytes, libdevice=None) -> str:
    return finalise(spirv, libdevice=libdevice)[0]


# ---- warp-synchronous instructions under divergent control flow ------------------------------

# Instructions every lane of the member mask (every work-item, for bar.sync) must reach
# together: under a branch that lanes of one warp take differently they are undefined (sm_70+
# shfl/vote/redux.sync) or hang (bar.sync).
_WARP_SYNC = ("shfl.sync", "vote.sync", "redux.sync", "bar.warp.sync", "match.sync", "bar.sync")
_LANE_VARYING_SREGS = ("%tid", "%laneid", "%lanemask", "%clock", "%globaltimer")
_NO_DEST = ("st.", "bar.", "barrier.", "bra", "ret", "exit", "red.", "membar", "fence", "trap")


def _entry_body(ptx: str, entry: str) -> list[str]:
    lines = ptx.splitlines()
    start = next(i for i, ln in enumerate(lines) if f".entry {entry}(" in ln)
    open_ = next(i for i in range(start, len(lines)) if lines[i].strip() == "{")
    end = next(i for i in range(open_, len(lines)) if lines[i].rstrip() == "}")
    out = []
    for ln in lines[open_ + 1 : end]:
        ln = ln.split("//")[0].strip().rstrip(";").strip()
        if ln and not ln.startswith("."):
            out.append(ln)
    return out


def _parse(inst: str):
    """(guard predicate or None, opcode, destination registers, source registers)."""
    import re

    guard = None
    m = re.match(r"@!?(%\w+)\s+(.*)", inst)
    if m:
        guard, inst = m.group(1), m.group(2)
    op, _, rest = inst.partition(" ")
    rest = rest.strip()
    if op.startswith(_NO_DEST) or not rest:
        dest_txt, src_txt = "", rest
    elif rest.startswith("{"):
        dest_txt, _, src_txt = rest[1:].partition("}")
    else:
        dest_txt, _, src_txt = rest.partition(",")
    regs = re.compile(r"%[\w.]+")
    srcs = regs.findall(src_txt) + ([guard] if guard else [])
    return guard, op, regs.findall(dest_txt), srcs


def _blocks(body: list[str]):
    """Basic blocks: [(label or None, [instructions], [successor labels; None: exit])]."""
    blocks, cur, label = [], [], "entry"
    for ln in body:
        if ln.endswith(":"):
            if cur or label == "entry":
                blocks.append([label, cur])
            label, cur = ln[:-1], []
            continue
        cur.append(ln)
        op = _parse(ln)[1]
        if op.startswith(("bra", "ret", "exit")):
            blocks.append([label, cur])
            label, cur = f"after:{len(blocks)}", []
    blocks.append([label, cur])
    out = []
    for i, (label, insts) in enumerate(blocks):
        nxt = blocks[i + 1][0] if i + 1 < len(blocks) else None
        succ = [nxt]
        if insts:
            guard, op, _, _ = _parse(insts[-1])
            if op.startswith("bra"):
                target = insts[-1].split()[-1]
                succ = [target, nxt] if guard else [target]
            elif op.startswith(("ret", "exit")):
                succ = [None]
        out.append((label, insts, succ))
    return out


def divergent_warp_sync(ptx: str, entry: str) -> list[str]:
    """The warp-synchronous instructions and barriers of kernel `entry` that lanes of one warp
    may reach apart: those under a conditional branch (or guard) whose predicate may differ
    between lanes. A register may differ between lanes when it comes from a lane-varying
    special register (%tid, %laneid, ...), an atomic or a shuffle, or is computed from one (a
    load from such an address included), by any of its definitions (a conservative, flow-
    insensitive taint); a load from an address every lane shares gives them the same value,
    and so do sub-group reductions and votes. Values the same within a warp but computed from
    the thread id count as lane-varying too: the sub-group size of a possibly partial last
    warp (kc_nvptx_sub_group_size), so a loop bounded by it (kapi.scan's shuffle steps) is
    reported although its lanes never part; the sort's ballot scatter has none."""
    body = _entry_body(ptx, entry)
    insts = [_parse(ln) for ln in body if not ln.endswith(":")]
    varying, changed = set(), True
    while changed:
        changed = False
        for _, op, dests, srcs in insts:
            if op.startswith(("redux.sync", "vote.sync")):
                continue
            seed = op.startswith(("atom.", "shfl.")) or any(
                s.startswith(_LANE_VARYING_SREGS) for s in srcs
            )
            if (seed or any(s in varying for s in srcs)) and not set(dests) <= varying:
                varying |= set(dests)
                changed = True
    blocks = _blocks(body)
    index = {label: i for i, (label, _, _) in enumerate(blocks)}
    succ = [[index.get(s, len(blocks)) if s else len(blocks) for s in ss] for _, _, ss in blocks]
    exit_ = len(blocks)
    nodes = set(range(exit_ + 1))
    pdom = {b: set(nodes) for b in range(exit_)}
    pdom[exit_] = {exit_}
    changed = True
    while changed:
        changed = False
        for b in range(exit_ - 1, -1, -1):
            new = {b} | set.intersection(*(pdom[s] for s in succ[b]))
            if new != pdom[b]:
                pdom[b], changed = new, True
    found = []
    for b, (label, binsts, _) in enumerate(blocks):
        for ln in binsts:
            guard, op, _, _ = _parse(ln)
            if op.startswith(_WARP_SYNC) and guard in varying:
                found.append(f"{label}: {ln} (guarded by a lane-varying predicate)")
        if not binsts:
            continue
        guard, op, _, _ = _parse(binsts[-1])
        if not (op.startswith("bra") and guard in varying):
            continue
        after = pdom[b] - {b}
        ipdom = max(after, key=lambda x: len(pdom[x]))  # the nearest post-dominator
        seen, todo = set(), [s for s in succ[b] if s != ipdom]
        while todo:
            x = todo.pop()
            if x in seen or x == exit_:
                continue
            seen.add(x)
            todo += [s for s in succ[x] if s != ipdom]
        for x in sorted(seen):
            for ln in blocks[x][1]:
                if _parse(ln)[1].startswith(_WARP_SYNC):
                    found.append(f"{blocks[x][0]}: {ln} (under the branch ending {label})")
    return found


def assert_assembles(ptx: str, tag: str) -> None:
    """ptxas (when the CUDA toolkit is here) accepts ptx for sm_90."""
    import os
    import shutil
    import subprocess

    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if os.path.exists(ptxas):
        src = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"{tag}_{os.getpid()}.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([ptxas, "-arch=sm_90", src, "-o", os.devnull], capture_output=True)
        os.unlink(src)
        assert r.returncode == 0, r.stderr.decode()


def kernel_ptx(kern, signature: str) -> str:
    """The PTX of a kapi kernel's specialisation `signature` (inspect_spirv's key), without
    work-item coarsening: the instructions as the kernel wrote them."""
    return finalise(kern.inspect_spirv(signature), coarsen=False)[0]


def assemble_or_skip(ptx: str, tmp_path) -> None:
    """ptxas accepts ptx for sm_90; the test is skipped, saying why, without the toolkit."""
    import os
    import shutil
    import subprocess

    import pytest

    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not os.path.exists(ptxas):
        pytest.skip("ptxas not found (install the CUDA toolkit to assemble the PTX)")
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    r = subprocess.run([ptxas, "-arch=sm_90", str(src), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
