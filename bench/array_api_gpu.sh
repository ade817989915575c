#!/usr/bin/env bash
# One device call on the GPU machine: the array API conformance suite on kapi.array_api with
# arrays on the CUDA device, the same suite on CuPy in the same call, and bench/matmul.py
# (kapi's matmul through cuBLAS, and its tiled kernel, beside cupy.matmul).
#
# What travels (besides what bench/gpu_run.sh carries: kapi/_lib and .carry/debs):
#   .carry/array-api-tests  a checkout of data-apis/array-api-tests with its array-api
#                           submodule (cp -r, .git folders left out)
#   .carry/whl              wheels the image lacks: ndindex, pytest-json-report,
#                           pytest-metadata, hypothesis (6.151.0, the version used on the CPU)
# e.g. run(command="bash bench/array_api_gpu.sh", carry=["kapi/_lib", ".carry/debs",
#          ".carry/array-api-tests", ".carry/whl"])
# STEPS="kapi cupy matmul" (default all three) picks steps; MAX_EXAMPLES (default 20) and
# BUDGET (seconds per suite run, default 240) bound the time; XDIST=N runs each suite on N
# pytest-xdist workers (kapi compiles its kernels in each worker at first use; carry .whl with
# pytest-xdist and execnet). Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels $(ls .carry/whl/*.whl .whl/pytest_xdist-*.whl .whl/execnet-*.whl 2>/dev/null)
STEPS=${STEPS:-kapi cupy matmul}
XARGS=${XDIST:+-- -n $XDIST}
for s in $STEPS; do
  case $s in
    kapi)
      KAPI_DEFAULT_DEVICE=cuda OUT=$OUT BUDGET=${BUDGET:-240} MAX_EXAMPLES=${MAX_EXAMPLES:-20} \
        tools/array_api_tests.sh .carry/array-api-tests kapi.array_api $XARGS 2>&1 | tail -40 ;;
    cupy)
      OUT=$OUT BUDGET=${BUDGET:-240} MAX_EXAMPLES=${MAX_EXAMPLES:-20} \
        tools/array_api_tests.sh .carry/array-api-tests cupy $XARGS 2>&1 | tail -40 ;;
    matmul)
      python3 bench/matmul.py --device cuda --n 4096 --kernel 2>&1 | tee "$OUT/matmul.log" ;;
  esac
done
