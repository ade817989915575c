#!/usr/bin/env bash
# The C API for native extensions (tests/test_capi.py: samples/c_extension and the guide's
# extension built with CMake and run against kapi arrays) on the GPU machine, once with kapi's
# CUDA driver and once with its CPU driver, in one device call (about a minute). Building an
# extension there needs CMake, a C compiler and Python's headers: the first line says which are
# missing (the tests then skip with that reason). As for bench/gpu_run.sh, Debian 12's .deb
# files travel in .carry/debs and the build made here as kapi/_lib:
#   run(command="bash bench/capi_gpu.sh", carry=["kapi/_lib", ".carry/debs"])
# Where the machine has no CMake, carry its wheel too (`pip download cmake --only-binary=:all:
# --no-deps -d .whl` here) and add ".whl" to carry. Logs go to $OUT (or ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
if ! command -v cmake >/dev/null && ls .whl/cmake-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/cmake-site .whl/cmake-*.whl
  export PATH=/tmp/cmake-site/bin:$PATH PYTHONPATH=$PYTHONPATH:/tmp/cmake-site
fi
header=$(python3 -c 'import os, sysconfig; print(os.path.join(sysconfig.get_paths()["include"], "Python.h"))')
echo "cmake: $(command -v cmake || echo missing); cc: $(command -v cc || echo missing);" \
  "Python.h: $([ -f "$header" ] && echo "$header" || echo "missing ($header)")" | tee "$OUT/capi_tools.txt"
python3 -m kapi | tee "$OUT/capi_devices.txt"
for drv in cuda cpu; do
  echo "== KAPI_DRIVERS=$drv"
  KAPI_DRIVERS=$drv timeout 200 python3 -m pytest -q -rs -p no:cacheprovider tests/test_capi.py \
    >"$OUT/capi_$drv.log" 2>&1
  echo "== exit $?"
  tail -n 15 "$OUT/capi_$drv.log"
done
