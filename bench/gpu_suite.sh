#!/usr/bin/env bash
# The whole pytest suite on the GPU machine in one device call: CUDA and the host's CPU device
# at once, each split over pytest-xdist workers (about 6 minutes on the 16-core H100 host,
# where the sequential halves of bench/gpu_run.sh need two calls). The machine has no
# network: carry the wheels, made here with
#   pip download pytest-xdist execnet --no-deps -d .whl
# and the rest as for bench/gpu_run.sh:
#   run(command="T=400 bash bench/gpu_suite.sh",
#       carry=["kapi/_lib", ".carry/debs", ".carry/bin", ".carry/fixtures", ".carry/hosttest", ".whl"])
# T: seconds per run; NC, NP: workers for CUDA and for the CPU device; FAR_MMAP=1: the CPU
# JIT's layout check first (below, < 60 s); PYTEST_ARGS: more
# pytest options for both (e.g. "-p no:faulthandler", so that a crash reaches the native
# backtrace handler and kapi's own hint untouched). Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels .whl/*.whl
# The host finaliser's math and half tests for every x86-64 target the JIT may pick, on this
# host's CPU (carry build/compiler/tests/host's binaries and fixtures as .carry/hosttest; the
# test finds its fixtures under the build folder's absolute path, linked here).
if [ -x .carry/hosttest/host_finalise_test ]; then
  mkdir -p /work/main/build/compiler/tests && ln -sfn "$PWD/.carry/hosttest" /work/main/build/compiler/tests/host
  grep -o -w -E 'avx512(f|bw|vl|fp16)' /proc/cpuinfo | sort | uniq | tr '\n' ' '; echo
  for cpu in host x86-64-v2 haswell skylake-avx512 icelake-server znver4 sapphirerapids; do
    for t in math halves; do
      env $([ $cpu = host ] || echo KAPI_HOST_CPU=$cpu) .carry/hosttest/host_finalise_test $t >/dev/null 2>"$OUT/host_${t}_$cpu.err"
      echo "host_${t} $cpu: exit $? $(tail -c 200 "$OUT/host_${t}_$cpu.err" | tr '\n' ' ')"
    done
  done | tee "$OUT/host_targets.log"
  .carry/hosttest/host_rt_test >"$OUT/host_rt.log" 2>&1; echo "host_rt: exit $?"
fi
# The fake libcuda's tests (two GPUs without a GPU) find the library carried beside the
# fixtures: the build folder is not carried.
if [ -f .carry/fixtures/fakecuda/libkapi_fake_cuda.so ]; then
  export KAPI_FAKE_CUDA=$PWD/.carry/fixtures/fakecuda
fi
# A crash in any test process prints its native backtrace (tools/crashbt.c; no gdb there).
PRELOAD=
if gcc -O1 -shared -fPIC -o /tmp/libcrashbt.so tools/crashbt.c; then
  PRELOAD=/tmp/libcrashbt.so
fi
echo "crash backtraces: ${PRELOAD:-none (no gcc)}"
# FAR_MMAP=1: first (< 60 s) the CPU JIT's layout check on this host's CPU target: the tests
# that crashed here, with tests/drivers/cpu/far_mmap.c preloaded (every JIT section mapped far
# from the others, which made them crash every time before kernel objects lost their jump
# tables), and tests/drivers/cpu/test_cpu_jit_layout.py.
if [ "${FAR_MMAP:-0}" = 1 ] && gcc -O1 -shared -fPIC -o /tmp/libfar_mmap.so tests/drivers/cpu/far_mmap.c -ldl; then
  LD_PRELOAD=/tmp/libfar_mmap.so${PRELOAD:+:$PRELOAD} KAPI_DRIVERS=cpu timeout 60 python3 -m pytest -q \
    -p no:cacheprovider --tb=short -k "8x6of16x12 or statistics_and_utilities or jit_layout" \
    tests/language/test_group_algorithms.py tests/numeric/test_array_api.py \
    tests/drivers/cpu/test_cpu_jit_layout.py >"$OUT/far_mmap.log" 2>&1
  echo "far_mmap check: exit $? $(tail -1 "$OUT/far_mmap.log")"
  grep -A12 "=== crashbt" "$OUT/far_mmap.log" | head -30
fi
run() {
  LD_PRELOAD=$PRELOAD KAPI_DRIVERS=$1 timeout "${T:-420}" python3 -m pytest -q -n "$2" -p no:cacheprovider -rfE \
    --tb=short ${PYTEST_ARGS:-} tests >"$OUT/$1_all.log" 2>&1
}
# cuBLAS through the shared vendor loader: matmul on the GPU takes it when it loads.
python3 -c "
import numpy as np, kapi
from kapi._numeric.array_api import cublas
h = np.random.rand(256, 256).astype(np.float32)
a = kapi.asarray(h, device='gpu')
print('cublas available:', cublas.available(), 'matmul right:',
      np.allclose(kapi.asnumpy(a @ a), h @ h, rtol=1e-4))
" 2>&1 | tail -3
run cuda "${NC:-8}" &
run cpu "${NP:-4}" &
wait
for f in "$OUT"/cuda_all.log "$OUT"/cpu_all.log; do
  echo "## $f"
  grep -E "^(FAILED|ERROR)" "$f" | head -40
  grep -A8 "=== crashbt" "$f" | head -60
  tail -2 "$f"
done
