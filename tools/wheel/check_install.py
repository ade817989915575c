"""Checks an installed kapi (the wheel from `make wheel`, in a venv outside the checkout): kapi
comes from that install, `python -m kapi` lists the CPU device, a kernel runs on every device,
and nothing kapi loads comes from the system's LLVM, SPIR-V translator or Level Zero loader:
every ldd line and every mapped file naming one of them must lie inside the wheel (kapi.libs/,
where auditwheel grafted them, renamed), never /usr/lib/llvm-15 or another system folder.
kapi's own libraries export no C++ or LLVM symbol.

    python tools/wheel/check_install.py CHECKOUT   (run with the venv's python, from outside)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import kapi

# An ldd line or mapped path naming one of these must resolve inside the wheel.
BUNDLED = re.compile(r"libLLVM|libLLVMSPIRVLib|libze_loader")
SYSTEM_LLVM = re.compile(r"/usr/lib/llvm-15")


def fail(msg: str) -> None:
    print(f"check_install: {msg}", file=sys.stderr)
    sys.exit(1)


def bundled_libraries(pkg: Path) -> list[Path]:
    libs = sorted((pkg / "_lib").glob("*.so*")) + sorted((pkg.parent / "kapi.libs").glob("*.so*"))
    if not libs:
        fail(f"no native libraries under {pkg}")
    return libs


def check_ldd(libs: list[Path], site: Path) -> None:
    for lib in libs:
        out = subprocess.run(["ldd", str(lib)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            resolved = line.split("=>")[-1].strip()
            if "not found" in line:
                fail(f"{lib.name}: {line.strip()}")
            if SYSTEM_LLVM.search(line) or (
                BUNDLED.search(line) and not resolved.startswith(str(site))
            ):
                fail(f"{lib.name} reaches the system's LLVM, translator or loader: {line.strip()}")
        print(f"ldd {lib.name}: {len(out.splitlines())} dependencies, LLVM and loader bundled")


def check_exports(pkg: Path) -> None:
    for lib in sorted((pkg / "_lib").glob("*.so")):  # kapi's own, not the grafted LLVM
        out = subprocess.run(
            ["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True
        ).stdout
        names = [line.split()[-1] for line in out.splitlines() if line.strip()]
        # C++ (mangled _Z...), LLVM's C API (LLVM...), the translator's and SPIRV-Tools' C names
        leaked = [n for n in names if n.startswith(("_Z", "LLVM", "llvm", "spv", "SPIRV"))]
        if leaked:
            fail(f"{lib.name} exports C++/LLVM symbols: {leaked[:5]} (of {len(leaked)})")
        print(f"{lib.name}: exports {len(names)} symbols, no C++ or LLVM one")


def run_kernels() -> None:
    @kapi.kernel
    def axpy(item, a, x, y):
        i = item.get_id(0)
        y[i] = a * x[i] + y[i]

    x = np.arange(1000, dtype=np.float32)
    for dev in kapi.devices():
        dx, dy = kapi.asarray(x, device=dev), kapi.ones(1000, dtype=np.float32, device=dev)
        kapi.call_kernel(axpy, kapi.Range(1000), np.float32(2), dx, dy)
        if not np.array_equal(dy.asnumpy(), 2 * x + 1):
            fail(f"wrong result on {dev.filter_string}")
        print(f"kernel ran on {dev.filter_string} ({dev.name})")


def check_maps(site: Path) -> None:
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if SYSTEM_LLVM.search(path) or (BUNDLED.search(path) and not path.startswith(str(site))):
            fail(f"the process mapped the system's LLVM, translator or loader: {path}")
    print("process memory map: no system LLVM, translator or Level Zero loader")


def main(checkout: str) -> None:
    pkg = Path(kapi.__file__).resolve().parent
    site = pkg.parent
    if Path(checkout).resolve() in pkg.parents:
        fail(f"kapi was imported from the checkout ({pkg}), not from the install")
    print(f"kapi {kapi.__version__} from {pkg}")
    cli = subprocess.run(
        [sys.executable, "-m", "kapi"], capture_output=True, text=True, timeout=120
    )
    print(cli.stdout, end="")
    if cli.returncode or not re.search(r"\[[a-z_]+:cpu:\d+\]", cli.stdout):
        fail(f"`python -m kapi` does not list the CPU device:\n{cli.stdout}{cli.stderr}")
    libs = bundled_libraries(pkg)
    check_ldd(libs, site)
    check_exports(pkg)
    run_kernels()
    check_maps(site)
    if not (pkg / "py.typed").is_file() or not (pkg / "__init__.pyi").is_file():
        fail("py.typed or __init__.pyi missing from the install")
    print("check_install: ok")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_install.py CHECKOUT")
    main(sys.argv[1])
