#!/usr/bin/env bash
# The wheel on the GPU machine, which has none of LLVM 15, the SPIR-V translator or the Level Zero
# loader: proof that the wheel carries everything kapi needs. Build it here with `make wheel`,
# carry dist/ (about 61 MB; run's carry: ["dist"]), then on the GPU machine, from the checkout:
#
#   bash bench/wheel_proof.sh
#
# It installs the wheel, offline, into a fresh venv that sees the machine's own NumPy, Numba,
# PyTorch and Triton (--system-site-packages), and from a folder outside the checkout runs
# tools/wheel/check_install.py (python -m kapi, a kernel on every device: CPU and CUDA, ldd and
# exported symbols of each bundled library, the process's memory map), every sample on the
# default device (the GPU), and tools/wheel/llvm_coexist.py (kapi beside llvmlite's LLVM and
# beside Triton compiling a kernel for the same GPU). Output also goes to $OUT/wheel_proof.log.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WHEEL=$(ls "$ROOT"/dist/kapi-*.whl)
LOG=${OUT:-/tmp}/wheel_proof.log
WORK=$(mktemp -d /tmp/kapi-wheel-proof.XXXXXX)
exec > >(tee "$LOG") 2>&1

echo "== machine: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
echo "== $(python3 --version); wheel: $(basename "$WHEEL") ($(du -h "$WHEEL" | cut -f1))"
echo "== system copies of LLVM 15, the translator, the Level Zero loader (expected: none):"
ldconfig -p | grep -E 'libLLVM-15|libLLVMSPIRVLib|libze_loader' || echo "   none"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true

python3 -m venv --system-site-packages "$WORK/venv"
# The machine's python3 may itself be a venv (its NumPy, Numba, PyTorch and Triton live there, not
# in the system's site-packages): put its site-packages behind the new venv's own.
"$WORK/venv/bin/python" -c 'import sys; open(sys.argv[1], "w").write(sys.argv[2] + "\n")' \
  "$("$WORK/venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/machine.pth" \
  "$(python3 -c 'import site; print(site.getsitepackages()[0])')"
"$WORK/venv/bin/python" -m pip install -q --no-index --no-deps "$WHEEL"
PY="$WORK/venv/bin/python"
cd "$WORK"
"$PY" -c 'import numba, numpy; print("numba", numba.__version__, "numpy", numpy.__version__)'
"$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' \
  || echo "torch/triton not importable here"

echo "== check_install"
"$PY" "$ROOT/tools/wheel/check_install.py" "$ROOT"
echo "== samples"
for s in "$ROOT"/samples/*.py; do
  if out=$("$PY" "$s" 2>&1) && ! grep -q -E 'MISMATCH|FAIL' <<<"$out"; then
    echo "ok   $(basename "$s")"
  else
    echo "FAIL $(basename "$s")"; echo "$out" | tail -20; exit 1
  fi
done
echo "== llvm_coexist"
"$PY" "$ROOT/tools/wheel/llvm_coexist.py"
echo "wheel_proof: ok"

# SUITE=1: the test suite itself against the installed wheel, on CUDA and on this host's CPU device
# at once over pytest-xdist workers (carry its wheels in .whl-xdist: `pip download pytest-xdist
# execnet --no-deps -d .whl-xdist`). It runs from a folder outside the checkout with the tests
# folder alone on the path, so `import kapi` is the wheel's. Tests that need the source build's
# folders (build/: the C fixtures, the fake libcuda) fail here by design; the log names them.
if [ "${SUITE:-0}" = 1 ]; then
  "$PY" -m pip install -q --no-index --no-deps --target "$WORK/xdist" "$ROOT"/.whl-xdist/*.whl
  export PYTHONPATH="$WORK/xdist"
  "$PY" -c 'import kapi, sys; print("suite imports kapi from", kapi.__file__); sys.exit("/work/" in kapi.__file__ and "venv" not in kapi.__file__)'
  suite() {
    KAPI_DRIVERS=$1 timeout "${T:-400}" "$PY" -m pytest -q -n "$2" -p no:cacheprovider -rfE --tb=line \
      --rootdir "$ROOT" -c "$ROOT/pyproject.toml" -o pythonpath="$ROOT/tests" "$ROOT/tests" \
      >"${OUT:-/tmp}/wheel_suite_$1.log" 2>&1
  }
  suite cuda "${NC:-8}" &
  suite cpu "${NP:-6}" &
  wait
  for d in cuda cpu; do
    echo "== suite from the wheel, $d"
    grep -E "^(FAILED|ERROR)" "${OUT:-/tmp}/wheel_suite_$d.log" | head -40 || true
    tail -1 "${OUT:-/tmp}/wheel_suite_$d.log"
  done
fi
