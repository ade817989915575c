"""Checks a wheel from `make wheel` before anyone installs it: one wheel for every CPython >= 3.11
(cp311-abi3), a manylinux tag that `auditwheel show` agrees with, at most 80 MB, and every
native library inside it. Prints the glibc floor the tag states.

    python tools/wheel/check_wheel.py dist/kapi-*.whl
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

MAX_BYTES = 80 * 1000 * 1000
# What kapi loads: the extension, its libraries, our drivers, and what auditwheel grafts
# (renamed) into kapi.libs/: LLVM 15, the SPIR-V translator and the Level Zero loader.
REQUIRED = (
    r"kapi/_lib/_kapi\.abi3\.so",
    r"kapi/_lib/libkapi_compiler\.so",
    r"kapi/_lib/libkapi_runtime\.so",
    r"kapi/_lib/libze_kapi_cpu\.so",
    r"kapi/_lib/libze_kapi_cuda\.so",
    r"kapi\.libs/libze_loader-[0-9a-f]+\.so[.0-9]*",
    r"kapi\.libs/libLLVM-15-[0-9a-f]+\.so[.0-9]*",
    r"kapi\.libs/libLLVMSPIRVLib-[0-9a-f]+\.so[.0-9]*",
    r"kapi/py\.typed",
    r"kapi/__init__\.pyi",
    # the C API for native extensions: its header and CMake package (docs/guide/c-api.md)
    r"kapi/include/kapi/capi\.h",
    r"kapi/cmake/kapiConfig\.cmake",
    r"kapi/cmake/kapiConfigVersion\.cmake",
)


def check(path: Path) -> list[str]:
    problems = []
    m = re.fullmatch(r"kapi-[^-]+-cp311-abi3-(manylinux_(\d+)_(\d+)_x86_64(\..+)?)\.whl", path.name)
    if not m:
        return [f"{path.name}: not a cp311-abi3 manylinux x86_64 wheel"]
    tag, glibc = m.group(1), f"{m.group(2)}.{m.group(3)}"
    size = path.stat().st_size
    if size > MAX_BYTES:
        problems.append(f"{size / 1e6:.1f} MB, more than {MAX_BYTES / 1e6:.0f} MB")
    names = zipfile.ZipFile(path).namelist()
    for pattern in REQUIRED:
        if not any(re.fullmatch(pattern, n) for n in names):
            problems.append(f"nothing in the wheel matches {pattern}")
    show = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(path)], capture_output=True, text=True
    )
    text = " ".join(show.stdout.split())
    if (
        show.returncode
        or f'consistent with the following platform tag: "{tag.split(".")[0]}"' not in text
    ):
        problems.append(f"auditwheel show does not confirm {tag}:\n{show.stdout}{show.stderr}")
    print(show.stdout.strip())
    print(f"{path.name}: {size / 1e6:.1f} MB; needs glibc >= {glibc} (x86-64); {len(names)} files")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_wheel.py WHEEL (exactly one)", file=sys.stderr)
        return 2
    problems = check(Path(argv[0]))
    for p in problems:
        print(f"check_wheel: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
