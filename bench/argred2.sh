#!/usr/bin/env bash
# The CPU device's reductions of 2^24 float32 on every core of the GPU machine (16 Xeon cores),
# before and after the fourteenth session's change (argmin/argmax keeping each accumulator
# lane's extreme and block; 128 bytes of accumulators for min/max/argmin/argmax, 16 for float
# sums), in under 100 s:
#   1. bench/argred.py, the variants in one process, alternating (cpubefore = the settings
#      before, KAPI_REDUCE_CPU=before; cpublock = the accumulators now with argmin/argmax as
#      before; cpulanes = now; cpug2 = now with 2 work-groups per core instead of 4 for every
#      reduction, cpuag2 / cpuag1 for argmin/argmax only: longer chunks, less per-work-item
#      overhead; cpudefer = now with the block searched once per group; VARIANTS to choose), every variant checked against NumPy first, beside the triad
#      (its best sample; and, to show what bench/primitives.py measured before, single calls
#      after a pause);
#   2. bench/primitives.py's reduce rows (the issue's figures), now (PRIM="before lanes": also
#      KAPI_REDUCE_CPU=before; PRIM_ROUNDS=2: twice, alternating);
#   3. with INCACHE=1, one core's CPU time on 2^20 float32 in its caches (KAPI_CPU_THREADS=1,
#      --cpu-time);
#   4. with PYTEST=1, the arg-reduction and reduction-scheme tests on the CPU device (~60 s).
# From the checkout (the .deb files as for bench/gpu_run.sh):
#   run(command="bash bench/argred2.sh", carry=["kapi/_lib", ".carry/debs"])
# Logs go to $OUT (or ./gpu-out elsewhere). LOG2N (default 24), ROUNDS (5).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"

step argred timeout 100 python3 bench/argred.py --device cpu --log2n "${LOG2N:-24}" \
  --rounds "${ROUNDS:-5}" --variants "${VARIANTS:-cpubefore,cpulanes,cpudefer,cpug2,cpuag2,cpuag1}" 2>&1 | tee "$OUT/argred2_cpu.log"

for r in $(seq "${PRIM_ROUNDS:-1}"); do
  for v in ${PRIM:-lanes}; do
    step "primitives-$v-$r" env KAPI_REDUCE_CPU=$v timeout 25 python3 bench/primitives.py \
      --device cpu --log2n "${LOG2N:-24}" --only reduce 2>&1 | tee -a "$OUT/argred2_primitives.log"
  done
done

# one core's CPU time on 2^20 float32 in its caches (the kernels' own cost, no memory limit)
[ "${INCACHE:-0}" = 1 ] && step incache env KAPI_CPU_THREADS=1 timeout 30 python3 bench/argred.py --device cpu --log2n 20 \
  --rounds 3 --cpu-time --variants cpubefore,cpulanes 2>&1 | tee "$OUT/argred2_incache.log"

[ "${PYTEST:-0}" = 1 ] && step pytest timeout 90 python3 -m pytest -q -n 14 -p no:cacheprovider -p no:faulthandler \
  tests/numeric/test_arg_reductions.py tests/numeric/test_reduce_schemes.py 2>&1 | tail -5

echo "== summary"
grep -h -E 'triad|^[xk]|kapi (cpu|block|lanes)|FAILED' "$OUT/argred2_cpu.log" \
  "$OUT/argred2_incache.log" 2>/dev/null
grep -h -E '^== |x triad|triad' "$OUT/argred2_primitives.log" 2>/dev/null | grep -v '^== exit'
