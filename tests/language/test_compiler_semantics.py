"""Python semantics of the generated code, executed: KIR -> compile_kir -> optimised LLVM IR ->
run on the host with lli-15 (the IR is retargeted to x86-64 and given host definitions of the
few builtins it calls) -> compared with Python's own results. This checks the arithmetic the
compiler emits (floor division, modulo, power, shifts, casts, NaN comparisons) independently of
any device driver."""

import math
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest

from kapi._lib import _kapi

LLI = shutil.which("lli-15")
pytestmark = pytest.mark.skipif(LLI is None, reason="lli-15 (Debian llvm-15) is not installed")

M64 = 1 << 64


def wrap(v, bits=64, signed=True):
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


LLVM_TYPES = {"i64": "i64", "u32": "i32", "f64": "double", "i8": "i8"}


def host_ir(llvm_ir):
    """The kernel module made runnable on the host: x86-64 triple, default calling convention,
    flat address space, builtins defined in terms of a global id and libm."""
    ir = llvm_ir.replace('target triple = "spir64-unknown-unknown"', "")
    ir = re.sub(r"^target datalayout.*$", "", ir, flags=re.M)
    ir = ir.replace("spir_kernel ", "").replace("spir_func ", "").replace(" addrspace(1)", "")
    ir = re.sub(r"^declare .*@_Z\d+__spirv_BuiltInGlobalInvocationIdi.*$", "", ir, flags=re.M)
    defs = [
        "@kapi_gid = global i64 0",
        "define i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 %d) {\n"
        "  %v = load i64, i64* @kapi_gid\n  ret i64 %v\n}",
    ]
    for m in re.finditer(r"^declare (\w+) @(_Z\d+__spirv_ocl_(\w+))\((.*?)\).*$", ir, re.M):
        ret, name, mangled, params = m.groups()
        n = params.count(",") + 1
        libm = mangled[:-n] + ("f" if ret == "float" else "")
        args = ", ".join(f"{ret} %a{i}" for i in range(n))
        defs.append(f"declare {ret} @{libm}({', '.join([ret] * n)})")
        call = f"  %r = call {ret} @{libm}({args})\n  ret {ret} %r"
        defs.append(f"define {ret} @{name}({args}) {{\n{call}\n}}")
    ir = re.sub(r"^declare .*@_Z\d+__spirv_ocl_.*$", "", ir, flags=re.M)
    for m in re.finditer(r"^declare (\w+) @(_Z\d+__spirv_Atomic(\w+?)P\w*)\((.*?)\).*$", ir, re.M):
        defs.append(host_atomic(*m.groups()))
    ir = re.sub(r"^declare .*@_Z\d+__spirv_Atomic.*$", "", ir, flags=re.M)
    return ir + "\n" + "\n".join(defs) + "\n"


ATOMIC_OPS = {
    "IAdd": "add",
    "ISub": "sub",
    "And": "and",
    "Or": "or",
    "Xor": "xor",
    "FAddEXT": "fadd",
}
ATOMIC_PICKS = {"SMin": "slt", "SMax": "sgt", "UMin": "ult", "UMax": "ugt"}


def host_atomic(ret, name, op, params):
    """A single-threaded definition of a __spirv_Atomic* builtin (work-items run one by one)."""
    ptr = params.split(",")[0].strip()
    t = ptr.rstrip("*").replace(" addrspace(1)", "").replace(" addrspace(3)", "")
    ptr = t + "*"
    head = f"define {ret} @{name}({ptr} %p, i32 %s, i32 %m"
    old = f"  %old = load {t}, {ptr} %p"
    if op == "Load":
        return f"{head}) {{\n{old}\n  ret {t} %old\n}}"
    if op == "Store":
        return f"{head}, {t} %v) {{\n  store {t} %v, {ptr} %p\n  ret void\n}}"
    if op == "CompareExchange":
        return (
            f"{head}, i32 %u, {t} %v, {t} %c) {{\n{old}\n  %eq = icmp eq {t} %old, %c\n"
            f"  %new = select i1 %eq, {t} %v, {t} %old\n"
            f"  store {t} %new, {ptr} %p\n  ret {t} %old\n}}"
        )
    if op == "Exchange":
        new = f"  %new = add {t} %v, 0" if t.startswith("i") else f"  %new = fadd {t} %v, 0.0"
    elif op in ATOMIC_PICKS:
        pick = f"  %lt = icmp {ATOMIC_PICKS[op]} {t} %old, %v\n"
        new = pick + f"  %new = select i1 %lt, {t} %old, {t} %v"
    else:
        new = f"  %new = {ATOMIC_OPS[op]} {t} %old, %v"
    return f"{head}, {t} %v) {{\n{old}\n{new}\n  store {t} %new, {ptr} %p\n  ret {t} %old\n}}"


def llvm_const(t, v):
    if t == "double":
        return f"0x{struct.unpack('<Q', struct.pack('<d', v))[0]:016X}"
    return str(v)


def run(kir, kernel, inputs, out_type, n_out, opt_level=2):
    """Runs kernel(in0, in1, ..., out) for every work-item g < len(inputs[0]); inputs are lists of
    (kir type, values); out is a 2-D array [n, n_out] of out_type. Returns the rows."""
    _, llvm_ir, spirv = _kapi.compile_kir(kir, opt_level)
    _kapi.spirv_validate(spirv)
    n = len(inputs[0][1])
    lines = [host_ir(llvm_ir), '@fmt = constant [6 x i8] c"%lld\\0A\\00"']
    lines.append('@fmtd = constant [4 x i8] c"%a\\0A\\00"')
    lines.append("declare i32 @printf(i8*, ...)")
    args = []
    for k, (kt, vals) in enumerate(inputs):
        t = LLVM_TYPES[kt]
        init = ", ".join(f"{t} {llvm_const(t, v)}" for v in vals)
        lines.append(f"@in{k} = global [{n} x {t}] [{init}]")
        args.append(f"{t}* getelementptr ([{n} x {t}], [{n} x {t}]* @in{k}, i64 0, i64 0)")
        args += [f"i64 {n}", "i64 1"]
    ot = LLVM_TYPES[out_type]
    lines.append(f"@out = global [{n * n_out} x {ot}] zeroinitializer")
    args.append(
        f"{ot}* getelementptr ([{n * n_out} x {ot}], [{n * n_out} x {ot}]* @out, i64 0, i64 0)"
    )
    args += [f"i64 {n}", f"i64 {n_out}", f"i64 {n_out}", "i64 1"]
    body = []
    for g in range(n):
        body.append(f"  store i64 {g}, i64* @kapi_gid")
        body.append(f"  call void @{kernel}({', '.join(args)})")
    for i in range(n * n_out):
        p = f"getelementptr ([{n * n_out} x {ot}], [{n * n_out} x {ot}]* @out, i64 0, i64 {i})"
        body.append(f"  %v{i} = load {ot}, {ot}* {p}")
        if ot == "double":
            fmt = "getelementptr ([4 x i8], [4 x i8]* @fmtd, i64 0, i64 0)"
            body.append(f"  call i32 (i8*, ...) @printf(i8* {fmt}, double %v{i})")
        else:
            ext = "sext" if out_type != "u32" else "zext"
            body.append(
                f"  %w{i} = {ext} {ot} %v{i} to i64"
                if ot != "i64"
                else f"  %w{i} = add i64 %v{i}, 0"
            )
            fmt = "getelementptr ([6 x i8], [6 x i8]* @fmt, i64 0, i64 0)"
            body.append(f"  call i32 (i8*, ...) @printf(i8* {fmt}, i64 %w{i})")
    lines.append("define i32 @main() {\n" + "\n".join(body) + "\n  ret i32 0\n}")
    res = subprocess.run([LLI], input="\n".join(lines), capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    vals = res.stdout.split()
    conv = float.fromhex if ot == "double" else int
    flat = [conv(v) for v in vals]
    return [flat[g * n_out : (g + 1) * n_out] for g in range(n)]


def binary_kernel(t, ops, out_t=None):
    out_t = out_t or t
    body = []
    for k, op in enumerate(ops):
        body.append(f"  %k{k} = const i64 {k}  #4")
        if op.startswith("cmp "):
            body.append(f"  %c{k} = {op.replace('cmp ', 'cmp bool ')} %a %b  #4")
            body.append(f"  %r{k} = cast {out_t} %c{k}  #4")
        else:
            body.append(f"  %r{k} = {op} {t} %a %b  #4")
        body.append(f"  astore %o %r{k} %g %k{k}  #4")
    return (
        "kir 1\n"
        f"kernel @k(%x: array({t},1,C,global), %y: array({t},1,C,global), "
        f'%o: array({out_t},2,C,global)) -> void file "sem.py" line 1 {{\n'
        "^entry:\n  %g = global_id i64 0  #2\n"
        f"  %a = aload {t} %x %g  #3\n  %b = aload {t} %y %g  #3\n"
        + "\n".join(body)
        + "\n  ret  #5\n}\n"
    )


INT_PAIRS = [
    (7, 2),
    (-7, 2),
    (7, -2),
    (-7, -2),
    (5, 0),
    (-5, 0),
    (0, 3),
    (-(2**63), -1),
    (2**63 - 1, -1),
    (3, 5),
    (-3, 3),
    (2, 62),
    (1, 64),
    (-8, 65),
    (-8, -1),
    (13, -13),
]


def py_int_ops(a, b):
    overflow = a == -(2**63) and b == -1  # Numba's int_divmod_signed: 0, not a trap
    return [
        wrap(a // b) if b and not overflow else 0,
        wrap(a % b) if b else 0,
        wrap(pow(a, b, M64)) if b >= 0 else 0,
        wrap(a << b) if 0 <= b < 64 else 0,
        a >> b if 0 <= b < 64 else (-1 if a < 0 else 0),
        min(a, b),
        max(a, b),
        wrap(a * b),
    ]


@pytest.mark.parametrize("opt_level", [0, 2])
def test_signed_integer_semantics(opt_level):
    ops = ["floordiv", "mod", "pow", "shl", "shr", "min", "max", "mul"]
    xs, ys = zip(*INT_PAIRS, strict=True)
    rows = run(
        binary_kernel("i64", ops), "k", [("i64", xs), ("i64", ys)], "i64", len(ops), opt_level
    )
    for (a, b), row in zip(INT_PAIRS, rows, strict=True):
        assert row == py_int_ops(a, b), (a, b)


def test_unsigned_integer_semantics():
    pairs = [(7, 2), (2**32 - 7, 2), (5, 0), (2**32 - 1, 2**32 - 1), (3, 31), (3, 32), (9, 3)]
    ops = ["floordiv", "mod", "shr", "pow", "cmp lt"]
    xs, ys = zip(*pairs, strict=True)
    rows = run(binary_kernel("u32", ops), "k", [("u32", xs), ("u32", ys)], "u32", len(ops))
    for (a, b), row in zip(pairs, rows, strict=True):
        want = [
            a // b if b else 0,
            a % b if b else 0,
            a >> b if b < 32 else 0,
            pow(a, b, 2**32),
            int(a < b),
        ]
        assert row == want, (a, b)


def test_float_semantics():
    nan, inf = math.nan, math.inf
    pairs = [
        (7.5, 2.0),
        (-7.5, 2.0),
        (7.5, -2.0),
        (-7.5, -2.0),
        (6.0, 3.0),
        (-6.0, 3.0),
        (0.0, -3.0),
        (1.0, nan),
        (nan, 1.0),
        (inf, 2.0),
        (2.5, 0.5),
        (1.0, 0.1),
        (-1.0, 0.1),
        (7.0, -0.1),
        (-3.0, 0.0),
    ]
    ops = ["floordiv", "mod", "min", "max", "div", "cmp ne", "cmp lt", "cmp eq"]
    xs, ys = zip(*pairs, strict=True)
    rows = run(binary_kernel("f64", ops), "k", [("f64", xs), ("f64", ys)], "f64", len(ops))
    for (a, b), row in zip(pairs, rows, strict=True):
        # Python's // (NumPy's floor_divide: a / b for a zero divisor, docs/kir.md)
        with np.errstate(all="ignore"):
            fd = float(np.floor_divide(np.float64(a), np.float64(b)))
        md = math.nan if (math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0) else a % b
        want = [
            fd,
            md,
            a if a < b else b,
            a if a > b else b,
            math.copysign(math.inf, a) * math.copysign(1, b) if b == 0 else a / b,
            float(a != b),
            float(a < b),
            float(a == b),
        ]
        for got, exp in zip(row, want, strict=True):
            if math.isnan(exp):
                assert math.isnan(got), (a, b, row)
            else:
                assert got == exp and math.copysign(1, got) == math.copysign(1, exp), (a, b, row)


def test_cast_semantics():
    vals = [-1, 255, 128, -129, 2**40 + 5, 0]
    kir = (
        "kir 1\n"
        "kernel @k(%x: array(i64,1,C,global), %o: array(i64,2,C,global)) -> void "
        'file "c.py" line 1 {\n'
        "^entry:\n  %g = global_id i64 0  #2\n  %a = aload i64 %x %g  #3\n"
        "  %t8 = cast i8 %a  #4\n  %s = cast u64 %t8  #4\n  %s2 = cast i64 %s  #4\n"
        "  %u8 = cast u8 %a  #5\n  %z = cast i64 %u8  #5\n"
        "  %f = cast f64 %a  #6\n  %h = const f64 -0x1.8p+0  #6\n  %fh = add f64 %f %h  #6\n"
        "  %ti = cast i32 %fh  #6\n  %tw = cast i64 %ti  #6\n"
        "  %bb = cast bool %a  #7\n  %bi = cast i64 %bb  #7\n"
        "  %c0 = const i64 0  #8\n  %c1 = const i64 1  #8\n"
        "  %c2 = const i64 2  #8\n  %c3 = const i64 3  #8\n"
        "  astore %o %s2 %g %c0  #8\n  astore %o %z %g %c1  #8\n  astore %o %tw %g %c2  #8\n"
        "  astore %o %bi %g %c3  #8\n  ret  #9\n}\n"
    )
    rows = run(kir, "k", [("i64", vals)], "i64", 4)
    for a, row in zip(vals, rows, strict=True):
        trunc = int(float(a) - 1.5)
        want = [
            wrap(a, 8),
            a & 0xFF,
            wrap(trunc, 32) if -(2**31) <= trunc < 2**31 else row[2],
            int(a != 0),
        ]
        assert row == want, (a, row)


def test_atomics_semantics():
    """Float min/max (compare-exchange loops), float add/sub (FAddEXT), integer min and
    compare-exchange: every work-item updates one shared element; old values come back."""
    xs = [3.5, -1.25, 8.0, 0.5, -7.0]
    kir = (
        "kir 1\n"
        "kernel @k(%x: array(f64,1,C,global), %o: array(f64,2,C,global)) -> void "
        'file "a.py" line 1 {\n'
        "^entry:\n  %g = global_id i64 0  #2\n  %v = aload f64 %x %g  #3\n"
        "  %z = const i64 0  #4\n  %c1 = const i64 1  #4\n  %c2 = const i64 2  #4\n"
        "  %c3 = const i64 3  #4\n  %c4 = const i64 4  #4\n"
        "  %a = atomic_rmw f64 min relaxed device %o %v %z %z  #5\n"
        "  %b = atomic_rmw f64 max seq_cst device %o %v %z %c1  #6\n"
        "  %c = atomic_rmw f64 add relaxed device %o %v %z %c2  #7\n"
        "  %d = atomic_rmw f64 sub acq_rel work_group %o %v %z %c3  #8\n"
        "  %e = atomic_cmpxchg f64 seq_cst device %o %a %v %z %c4  #9\n"
        "  astore %o %a %c1 %g  #10\n  ret  #10\n}\n"
    )
    n = len(xs)
    # out is [n, n] here: row 0 holds the shared cells, row 1 the old values of the min
    rows = run(kir, "k", [("f64", xs)], "f64", n)
    shared = rows[0]
    assert shared[0] == min(xs) and shared[1] == max(xs)
    assert shared[2] == sum(xs) and shared[3] == -sum(xs)
    # cmpxchg stores x[g] when the cell equals the old min: only g = 0 sees 0.0 == 0.0
    assert shared[4] == xs[0]
    olds = rows[1]
    running, want = 0.0, []
    for v in xs:
        want.append(running)
        running = min(running, v)
    assert olds == want
