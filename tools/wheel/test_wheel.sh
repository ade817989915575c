#!/usr/bin/env bash
# `make test-wheel`: the wheel from `make wheel` installed into a fresh venv outside the checkout,
# then, from a folder outside it too: tools/wheel/check_install.py (python -m kapi, a kernel on
# every device, ldd and exported symbols of every bundled library, the process's memory map),
# every sample, the C API sample (samples/c_extension) built against the installed wheel, and
# tools/wheel/llvm_coexist.py. Where it can (root, unshare), they run with the
# system's libLLVM-15, libLLVMSPIRVLib and libze_loader hidden (an empty file bind-mounted over
# each in a private mount namespace), so a stray dependency fails for real.
#
#   bash tools/wheel/test_wheel.sh dist/kapi-*.whl   (PYTHON picks the venv's interpreter)
set -euo pipefail
WHEEL=$(realpath "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/kapi-wheel-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --upgrade pip
# numba and numpy (kapi's dependencies) at the versions requirements.txt pins.
"$WORK/venv/bin/python" -m pip install -q "$WHEEL" \
  $(grep -E '^(numba|llvmlite|numpy)==' "$ROOT/requirements.txt")
cd "$WORK"
PY="$WORK/venv/bin/python"

run_all() {
  "$PY" "$ROOT/tools/wheel/check_install.py" "$ROOT"
  local n=0
  for s in "$ROOT"/samples/*.py; do
    out=$("$PY" "$s" 2>&1) || { echo "$out"; echo "sample $(basename "$s") failed"; return 1; }
    if grep -q -E 'MISMATCH|FAIL' <<<"$out"; then echo "$out"; return 1; fi
    n=$((n + 1))
  done
  echo "samples: $n ran and checked themselves"
  # The C API: samples/c_extension configured with find_package(kapi CONFIG) from the installed
  # wheel (its CMakeLists asks `python -m kapi --cmake-dir`), built outside the checkout, run.
  cmake -S "$ROOT/samples/c_extension" -B "$WORK/c_extension" -DPython3_EXECUTABLE="$PY" >/dev/null
  cmake --build "$WORK/c_extension" >/dev/null
  out=$(PYTHONPATH="$WORK/c_extension" "$PY" "$ROOT/samples/c_extension/demo.py" 2>&1) ||
    { echo "$out"; echo "the C API sample failed"; return 1; }
  echo "$out"
  grep -q -x OK <<<"$out"
  "$PY" "$ROOT/tools/wheel/llvm_coexist.py"
}

# Where it can, everything runs with the system's copies made unloadable (`export -f` carries
# run_all into the namespace's shell); elsewhere it runs as it is, checked by ldd and the maps.
HIDE=()
for lib in libLLVM-15.so.1 libLLVMSPIRVLib.so.15 libze_loader.so.1; do
  for dir in /usr/lib/x86_64-linux-gnu /usr/lib/llvm-15/lib /lib/x86_64-linux-gnu; do
    if [ -e "$dir/$lib" ]; then HIDE+=("$(realpath "$dir/$lib")"); fi
  done
done
if [ ${#HIDE[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  HIDE=($(printf '%s\n' "${HIDE[@]}" | sort -u))
  echo "== the installed wheel, with ${HIDE[*]} hidden"
  export -f run_all
  export PY ROOT WORK
  unshare -m bash -euo pipefail -c '
    for f in "$@"; do mount --bind /dev/null "$f"; done
    run_all' _ "${HIDE[@]}"
else
  [ ${#HIDE[@]} -eq 0 ] && echo "== none of the system's LLVM, translator or loader is here"
  echo "== the installed wheel"
  run_all
fi
echo "test-wheel: ok"
