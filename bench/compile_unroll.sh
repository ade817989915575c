#!/usr/bin/env bash
# The CPU driver's late loop unrolling (KAPI_HOST_UNROLL) on the GPU machine's Xeon cores: the
# first call of four bench kernels (compile included, fresh processes, KAPI_CACHE=0) under
# each setting, then every bench/cpu_cases.py kernel's launch time under each setting side by
# side in one process (results bit-identical across settings, and equal to NumPy's where
# bench/cpu_variants.py has a reference). The C change travels as kapi/_lib:
#   run(command="bash bench/compile_unroll.sh", carry=["kapi/_lib", ".carry/debs"])
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu KAPI_CACHE=0
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
step first-call timeout 40 python3 bench/first_call.py --runs "${RUNS:-2}" \
  --only pairwise-f32,local-scan-i32,matmul-f32,black-scholes-f32 --variant before:KAPI_HOST_UNROLL=1 --variant none:KAPI_HOST_UNROLL=0
step speed timeout 55 python3 bench/cpu_variants.py --repeat "${REPEAT:-21}" \
  --variant before:KAPI_HOST_UNROLL=1 --variant none:KAPI_HOST_UNROLL=0
