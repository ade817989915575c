"""kapi's LLVM beside the other LLVMs a Python process may hold: llvmlite's (Numba's, always
there: kapi depends on Numba) and PyTorch/Triton's where they are installed. Each scenario runs
in a fresh process, in a different load order, and checks both sides' results.

    python tools/wheel/llvm_coexist.py            every scenario; exit status 0 when all pass
    python tools/wheel/llvm_coexist.py SCENARIO   one, in this process

A scenario that needs what is not installed (Triton, a CUDA GPU) says so and is skipped.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

SKIPPED = 3  # exit status of a scenario whose peer is not installed


def kapi_axpy(devices: list | None = None) -> None:
    import kapi

    @kapi.kernel
    def axpy(item, a, x, y):
        i = item.get_id(0)
        y[i] = a * x[i] + y[i]

    x = np.arange(4096, dtype=np.float32)
    for dev in devices or kapi.devices():
        dx, dy = kapi.asarray(x, device=dev), kapi.ones(4096, dtype=np.float32, device=dev)
        kapi.call_kernel(axpy, kapi.Range(4096), np.float32(3), dx, dy)
        assert np.array_equal(dy.asnumpy(), 3 * x + 1), f"kapi wrong on {dev.filter_string}"


def numba_njit(scale: float) -> None:
    import numba

    @numba.njit(fastmath=True)
    def dot_scaled(a, b):
        s = 0.0
        for i in range(a.size):
            s += a[i] * b[i]
        return s * scale

    a = np.linspace(0, 1, 1001)
    assert abs(dot_scaled(a, a) - scale * np.dot(a, a)) < 1e-9, "numba wrong"


def llvmlite_codegen() -> None:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(
        "define i32 @twice(i32 %x) {\n  %y = mul i32 %x, 2\n  ret i32 %y\n}\n"
    )
    mod.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    assert "twice" in tm.emit_assembly(mod), "llvmlite codegen wrong"


def numba_then_kapi() -> None:
    numba_njit(2.0)
    llvmlite_codegen()
    kapi_axpy()
    numba_njit(3.0)


def kapi_then_numba() -> None:
    kapi_axpy()
    numba_njit(2.0)
    llvmlite_codegen()
    kapi_axpy()


def triton_and_kapi() -> None:
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError as e:
        print(f"skipped: PyTorch/Triton not installed ({e})")
        sys.exit(SKIPPED)
    import kapi

    kapi_axpy()  # kapi's LLVM first, then Triton's compiles, then kapi's again
    if not torch.cuda.is_available():
        print("Triton imported (its LLVM loaded) but not run: no CUDA GPU")
        kapi_axpy()
        return

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(
            out_ptr + offs,
            tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
            mask=mask,
        )  # noqa: E501

    n = 1 << 16
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.allclose(out, x + y), "triton wrong"
    # every device kapi sees: its GPUs, and its CPU device unless KAPI_DRIVERS leaves it out
    kapi_axpy(kapi.devices())


SCENARIOS = {f.__name__: f for f in (numba_then_kapi, kapi_then_numba, triton_and_kapi)}


def main(argv: list[str]) -> int:
    if argv:
        SCENARIOS[argv[0]]()
        print(f"ok {argv[0]}")
        return 0
    failed = 0
    for name in SCENARIOS:
        r = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True)
        out = (r.stdout + r.stderr).strip()
        if r.returncode == SKIPPED:
            print(f"skip {name}: {out.splitlines()[-1] if out else ''}")
        elif r.returncode:
            failed += 1
            print(f"FAIL {name} (status {r.returncode}):\n{out[-3000:]}")
        else:
            print(out.splitlines()[-1] if out else f"ok {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
