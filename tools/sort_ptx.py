"""PTX and SASS-free instruction counts of the GPU sort's scatter kernels as NVIDIA GPUs get
them (sub-groups of 32, groups of 256), through kapi's NVPTX finaliser: no GPU needed.

    python tools/sort_ptx.py [--dump DIR] [--items 16]

For each kernel (the ballot scatter `_rank_scatter` and the onesweep pass `_onesweep`, keys
alone and with argsort's values) it prints the PTX instructions of the whole kernel, those of
the ranking loop (between the first and last ballot/atomic match of the unrolled batches,
divided by the batches), how many are 64-bit (.b64/.u64/.s64), and registers by ptxas -arch=sm_90
where ptxas is installed. The environment's KAPI_SORT_* switches apply (read at import), so
running it twice with a switch flipped shows before and after.
"""

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(HERE, "..", "tests")]  # this tree's kapi


def _instructions(ptx: str, entry: str) -> list[str]:
    """The instruction lines of entry's body (no labels, directives, braces or comments)."""
    start = ptx.index(f".entry {entry}")
    body = ptx[start:]
    out = []
    for ln in body.split("\n")[1:]:
        s = ln.strip()
        if s.startswith(".entry") or s.startswith(".visible .entry"):
            break
        if not s or s.startswith(("//", ".", "{", "}", ")", "$")) or s.endswith(":"):
            continue
        out.append(s)
    return out


def _is64(ins: str) -> bool:
    op = ins.split()[0]
    return bool(re.search(r"\.(b64|u64|s64)\b", op)) and not op.startswith(("ld.", "st.", "cvt"))


def _text_sizes(cubin: bytes) -> dict[str, int]:
    """{section name: size} of the ELF64 cubin's .text.* sections (SASS: 16 bytes each)."""
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    stroff = heads[shstrndx][4]
    out = {}
    for h in heads:
        end = cubin.index(b"\0", stroff + h[0])
        name = cubin[stroff + h[0] : end].decode()
        if name.startswith(".text."):
            out[name[6:]] = h[5]
    return out


def _assemble(ptx: str, entry: str) -> str:
    """ "registers / SASS instructions" by ptxas -arch=sm_90 ("-" without ptxas)."""
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not os.path.exists(ptxas):
        return "- | -"
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.ptx")
        with open(p, "w") as f:
            f.write(ptx)
        o = os.path.join(d, "k.cubin")
        r = subprocess.run([ptxas, "-arch=sm_90", "-O3", "-v", p, "-o", o],
                           capture_output=True, text=True)  # fmt: skip
        with open(o, "rb") as f:
            sass = _text_sizes(f.read()).get(entry, 0) // 16
    m = re.search(r"Used (\d+) registers", r.stderr)
    spill = re.search(r"(\d+) bytes spill stores", r.stderr)
    regs = m.group(1) if m else "?"
    if spill and spill.group(1) != "0":
        regs += f" (spill {spill.group(1)})"
    return f"{regs} | {sass}"


def _ranking(ins: list[str], batches: int) -> float:
    """Instructions per key batch of the ranking: from the first batch's match to the last's."""
    marks = [
        i
        for i, s in enumerate(ins)
        if s.startswith(("redux.sync", "atom.shared.or", "red.shared.or", "match."))
    ]
    if len(marks) < 2 or batches < 2:
        return float("nan")
    # the span from batch 0's first match to batch (B-1)'s first match covers B-1 batches
    per = len(marks) // batches
    return (marks[per * (batches - 1)] - marks[0]) / (batches - 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", default=None, help="write each kernel's PTX into this folder")
    ap.add_argument("--items", type=int, default=16, help="keys per work-item (values: half)")
    args = ap.parse_args()
    from nvptx_util import ptx_of

    from kapi._kernel.types import local_kir
    from kapi._numeric import sort_kernels as SK
    from kapi._numeric import sort_radix as R

    g, i64 = "array(u32,1,C,global)", "array(i64,1,C,global)"
    env = {k: v for k, v in os.environ.items() if k.startswith("KAPI_SORT")}
    print(f"match={SK._rank_match()} lookback={SK._os_lookback()} lean={SK.SORT_LEAN} env={env}")
    print("| kernel | values | batches | PTX instr | 64-bit ALU | per batch (ranking) | popc "
          "| registers sm_90 | SASS |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    i32 = "array(i32,1,C,global)"
    rows = [("_rank_scatter", False, ""), ("_rank_scatter", True, ""), ("_onesweep", False, "")]
    rows += [("_onesweep", True, ""), ("_onesweep", True, "v32"), ("_onesweep", True, "v32 iota")]
    for name, withv, how in rows:
        n = args.items // 2 if withv else args.items
        vt = i32 if "v32" in how else i64
        if name == "_rank_scatter":
            kern, lm, _ = R._rank_kernel_for(np.dtype(np.uint32), withv, n, (32,))
            at = (g, i64, g, i64, i64, "i64", "i64", "i64", "u32", "u32")
        else:
            kern, lm, _ = R._onesweep_kernel_for(
                np.dtype(np.uint32), withv, n, (32,), "v32" in how, "iota" in how
            )
            at = (g, vt, g, vt, g, "array(i32,1,C,global)", i64, "i64", "i64", "i64", "i64")
            at += ("u32", "u32")
        at += tuple(local_kir(a.dtype, a.shape) for a in lm)
        ptx = ptx_of(kern.compile(at, ("nditem", 1)).spirv)
        ins = _instructions(ptx, name)
        n64 = sum(map(_is64, ins))
        per = _ranking(ins, n)
        popc = sum(s.startswith("popc") for s in ins)
        label = f"{int(withv)} {how}".strip()
        print(f"| {name} | {label} | {n} | {len(ins)} | {n64} | {per:.0f} | {popc} "
              f"| {_assemble(ptx, name)} |")  # fmt: skip
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            tag = f"{int(withv)}{how.replace(' ', '_')}"
            with open(os.path.join(args.dump, f"{name}_v{tag}.ptx"), "w") as f:
                f.write(ptx)


if __name__ == "__main__":
    main()
