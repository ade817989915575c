#!/usr/bin/env bash
# argmax / argmin / max / kapi.reduce("max") of float32 on the GPU machine, in one device call
# (under 3 minutes on the 2x H200 host):
#   1. H200, 2^27 float32, CuPy in the same process: bench/argred.py switches reduce.py's
#      schemes in one process (pairs: the argmin/argmax before; pairs4; blocks: the default
#      now, with 1024 work-groups per row; blocks8; keys: one int64 key per element;
#      max/argmax with 2048, 4096 (before) or 8192 work-groups), each checked against NumPy;
#   2. kapi's CPU device on every core, 2^24: the same beside the triad kernel (pairs: before,
#      blocks: after), then bench/primitives.py's reduce rows (the issue's figures) with
#      KAPI_REDUCE_ARG=pairs (before, read at import) and the default (after).
# From the checkout (the .deb files as for bench/gpu_run.sh: LLVM 15, the translator, the
# Level Zero loader):
#   run(command="bash bench/gpu_argred.sh", carry=["kapi/_lib", ".carry/debs"])
# Logs go to $OUT (or ./gpu-out elsewhere). LOG2N_GPU / LOG2N_CPU change the sizes.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
nvidia-smi -L

step "H200: argred variants beside CuPy" timeout 120 python3 bench/argred.py --device gpu \
  --log2n "${LOG2N_GPU:-27}" 2>&1 | tee "$OUT/argred_gpu.log"

N=$(nproc)
echo "== CPU device: $N cores, $(lscpu | sed -n 's/^Model name: *//p')"
step "CPU device: argred variants beside the triad" env KAPI_DRIVERS=cpu timeout 60 \
  python3 bench/argred.py --device cpu --log2n "${LOG2N_CPU:-24}" 2>&1 |
  tee "$OUT/argred_cpu.log"
for arg in pairs blocks; do
  step "CPU device: primitives.py reduce rows, KAPI_REDUCE_ARG=$arg" env KAPI_DRIVERS=cpu \
    KAPI_REDUCE_ARG=$arg timeout 30 python3 bench/primitives.py --device cpu \
    --log2n "${LOG2N_CPU:-24}" --only reduce 2>&1 | tee -a "$OUT/primitives_cpu_$arg.log"
done

echo "== summary"
grep -h -E 'cupy|kapi|triad|^[xk]' "$OUT/argred_gpu.log" "$OUT/argred_cpu.log" 2>/dev/null
grep -E 'argm|reduce\("max"\)|x.max|triad \(' "$OUT"/primitives_cpu_*.log 2>/dev/null
