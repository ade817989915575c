#!/usr/bin/env bash
# The tests of kernel arrays of more than 3 dimensions, dpjit's array statements by the arrays'
# ndims and kapi.histogram on CUDA (the GPU machine; a few minutes). Carry as for
# bench/gpu_suite.sh:
#   run(command="bash bench/gpu_dpbench.sh", carry=["kapi/_lib", ".carry/debs", ".whl"])
# Logs go to $OUT/cuda_dpbench.log.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels .whl/*.whl
KAPI_DRIVERS=cuda timeout "${T:-270}" python3 -m pytest -q -p no:cacheprovider -rfE --tb=short \
  tests/kernel/test_ndim_arrays.py tests/dpjit/test_dpjit_arraytyped.py \
  tests/dpjit/test_dpjit_arrayexpr.py tests/numeric/test_histogram.py \
  "tests/dpjit/test_dpjit_host.py::test_host_code_histogram_transpose_and_dpjit_in_a_kernel" \
  >"$OUT/cuda_dpbench.log" 2>&1
rc=$?
tail -n 30 "$OUT/cuda_dpbench.log"
exit $rc
