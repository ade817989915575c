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
# pytest-xdist and execnet); SUITE_K="expr" runs only the suite's tests that pytest -k expr
# selects. STEPS=gputests runs kapi's own GPU tests of the array namespace (cuFFT, cuSOLVER,
# the FFT and solver kernels on CUDA, the complex functions' special cases; TESTS_BUDGET
# seconds, default 170). Logs go to $OUT.
# e.g. STEPS="gputests kapi" XDIST=8 BUDGET=120 \
#      SUITE_K="test_fft or test_linalg or test_special_cases" bash bench/array_api_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels $(ls .carry/whl/*.whl .whl/pytest_xdist-*.whl .whl/execnet-*.whl 2>/dev/null)
STEPS=${STEPS:-kapi cupy matmul}
XARGS=()
[ -n "${XDIST:-}${SUITE_K:-}" ] && XARGS=(--)
[ -n "${XDIST:-}" ] && XARGS+=(-n "$XDIST")
[ -n "${SUITE_K:-}" ] && XARGS+=(-k "$SUITE_K")
for s in $STEPS; do
  case $s in
    kapi)
      KAPI_DEFAULT_DEVICE=cuda OUT=$OUT BUDGET=${BUDGET:-240} MAX_EXAMPLES=${MAX_EXAMPLES:-20} \
        tools/array_api_tests.sh .carry/array-api-tests kapi.array_api ${XARGS[@]+"${XARGS[@]}"} 2>&1 | tail -40 ;;
    cupy)
      OUT=$OUT BUDGET=${BUDGET:-240} MAX_EXAMPLES=${MAX_EXAMPLES:-20} \
        tools/array_api_tests.sh .carry/array-api-tests cupy ${XARGS[@]+"${XARGS[@]}"} 2>&1 | tail -40 ;;
    gputests)
      timeout --signal=INT "${TESTS_BUDGET:-170}" python3 -m pytest -q -rs -p no:cacheprovider \
        tests/numeric/test_array_api_fft.py \
        tests/numeric/test_array_api_linalg.py tests/language/test_complex.py \
        -k "cuda or cufft or cusolver or standard_special" 2>&1 | tee "$OUT/gputests.log" | tail -40 ;;
    matmul)
      python3 bench/matmul.py --device cuda --n 4096 --kernel --json "$OUT/matmul_gpu.json" 2>&1 | tee "$OUT/matmul.log" ;;
  esac
done
