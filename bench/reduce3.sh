#!/usr/bin/env bash
# The CPU device's reductions of 2^24 float32 on every core of the GPU machine (16 Xeon cores)
# with several read streams per work-item (KAPI_REDUCE_CPU_STREAMS), beside the triad, in
# under 110 s:
#   1. bench/argred.py, the variants in one process, alternating, each checked against NumPy
#      first (NaN, ties, -0.0 cases too), beside the triad (its best sample is the
#      denominator): cpulanes1 = the settings before (one stream, chunks n // T + 1),
#      cpus2 = the default now (2 streams for all but argmin/argmax), cpuas2 = argmin/argmax
#      in 2 streams too, cpuone = the default in one launch, the last work-group folding the
#      groups' partials (VARIANTS to choose; cpuround = one stream, chunks a whole number of
#      the loop's steps; cpusN = N streams; cpusNgM: also M groups per core);
#   2. the same at 2^20 (LOG2N_SMALL; 64 work-groups as at 2^24, 4 MB from the caches): the
#      per-call cost that is not reading memory;
#   3. bench/primitives.py's reduce rows (the issue's figures), the default (PRIM="1 2": also
#      KAPI_REDUCE_CPU_STREAMS=1, a process each, in turn);
#   4. with PYTEST=1, the reduction tests on the CPU device.
# From the checkout (the .deb files as for bench/gpu_run.sh):
#   run(command="bash bench/reduce3.sh", carry=["kapi/_lib", ".carry/debs"])
# Logs go to $OUT (or ./gpu-out elsewhere). LOG2N (default 24), ROUNDS (7).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"

step argred timeout 70 python3 bench/argred.py --device cpu --log2n "${LOG2N:-24}" \
  --rounds "${ROUNDS:-7}" --variants "${VARIANTS:-cpulanes1,cpus2,cpuas2,cpuone}" 2>&1 | tee "$OUT/reduce3_cpu.log"

step small timeout 20 python3 bench/argred.py --device cpu --log2n "${LOG2N_SMALL:-20}" --no-check-small \
  --rounds 5 --variants "${VARIANTS_SMALL:-cpulanes1,cpus2,cpuone}" 2>&1 | tee "$OUT/reduce3_small.log"

prim=()
for v in ${PRIM:-2}; do prim+=(--variant "streams$v:KAPI_REDUCE_CPU_STREAMS=$v"); done
step primitives timeout 20 python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" \
  --only reduce "${prim[@]}" 2>&1 | tee "$OUT/reduce3_primitives.log"

[ "${PYTEST:-0}" = 1 ] && step pytest timeout 90 python3 -m pytest -q -n 14 -p no:cacheprovider -p no:faulthandler \
  tests/numeric/test_reduce_streams.py tests/numeric/test_arg_reductions.py tests/numeric/test_reduce_schemes.py 2>&1 | tail -5

echo "== summary"
grep -h -E 'triad|^[xk]|kapi (cpu)|FAILED' "$OUT/reduce3_cpu.log" "$OUT/reduce3_small.log" 2>/dev/null
grep -h -E '^== |x triad|triad' "$OUT/reduce3_primitives.log" 2>/dev/null | grep -v '^== exit'
