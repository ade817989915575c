"""kapi's LLVM beside llvmlite's (Numba's) in one process, in both load orders, and beside
Triton's where PyTorch and Triton are installed (tools/wheel/llvm_coexist.py; `make test-wheel`
runs the same scenarios against the installed wheel)."""

import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "tools" / "wheel" / "llvm_coexist.py"
SKIPPED = 3


@pytest.mark.parametrize("scenario", ["numba_then_kapi", "kapi_then_numba", "triton_and_kapi"])
def test_llvms_coexist(scenario):
    r = subprocess.run(
        [sys.executable, str(SCRIPT), scenario], capture_output=True, text=True, timeout=600
    )
    out = (r.stdout + r.stderr).strip()
    if r.returncode == SKIPPED:
        pytest.skip(out.splitlines()[-1])
    assert r.returncode == 0, out[-3000:]
    assert out.splitlines()[-1] == f"ok {scenario}"
