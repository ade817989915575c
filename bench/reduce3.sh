#!/usr/bin/env bash
# The CPU device's reductions of 2^24 float32 on every core of the GPU machine (16 Xeon cores)
# with several read streams per work-item (KAPI_REDUCE_CPU_STREAMS), beside the triad. Each
# step is a process of its own with its own timeout: a fresh host compiles every variant's
# kernels (argmin/argmax in 2 streams, 64 lanes, take LLVM about twice as long as one
# stream's; the second call of the fifteenth session ran out of 70 s compiling cpulanes1,
# cpus2, cpuas2 and cpuone together). About 4 minutes in all; ONLY="argred" etc. picks steps.
#   argred:   bench/argred.py, cputwo (before: two launches, two streams) and cpulanes (the
#             default now: one launch, streams by size) in one process, alternating,
#             each checked against NumPy first (NaN, ties, -0.0 cases too), beside the triad
#             (its best sample is the denominator); VARIANTS to choose (cpuround = one
#             stream, chunks a whole number of the loop's steps; cpusN = N streams;
#             cpusNgM: also M groups per core);
#   one:      cpus2 beside cpuone (the same, in one launch: the last work-group folds the
#             groups' partials, _CPU_ONE_LAUNCH), at 2^24 and at 2^20 (LOG2N_SMALL; 64
#             work-groups as at 2^24, 4 MB from the caches: the per-call cost);
#   arg:      cpus2 beside cpuas2 (argmin/argmax in 2 streams too, _CPU_ARG_STREAMS);
#   primitives: bench/primitives.py's reduce rows (the issue's figures), the default
#             (PRIM="1 2": also KAPI_REDUCE_CPU_STREAMS=1, a process each, in turn);
#   pytest:   with PYTEST=1, the reduction tests on the CPU device.
#   big:      the same reduce rows and the one-process comparison at LOG2N_BIG (default 27:
#             512 MiB an array, the triad's 1.5 GiB well past the 300 MiB L3, where STREAM's
#             rule of arrays at least 4x the last-level cache holds and the triad measures
#             memory, not the L3), beside membw's C triad and reads at the same size
#             (.carry/bin/membw, carried: gcc -O3 -march=x86-64-v3 -static -pthread
#             bench/membw.c -o .carry/bin/membw).
# From the checkout (the .deb files as for bench/gpu_run.sh):
#   run(command="bash bench/reduce3.sh", carry=["kapi/_lib", ".carry/debs"])
# Logs go to $OUT (or ./gpu-out elsewhere). LOG2N (default 24), ROUNDS (7).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"
A=(python3 bench/argred.py --device cpu --rounds "${ROUNDS:-7}")

step argred timeout 90 "${A[@]}" --log2n "${LOG2N:-24}" --variants "${VARIANTS:-cputwo,cpulanes}" \
  2>&1 | tee "$OUT/reduce3_cpu.log"

step one timeout 60 "${A[@]}" --log2n "${LOG2N:-24}" --variants cpus2,cpuone 2>&1 | tee "$OUT/reduce3_one.log"
step one-small timeout 30 "${A[@]}" --log2n "${LOG2N_SMALL:-20}" --no-check-small \
  --variants cpulanes1,cpus2,cpuone 2>&1 | tee "$OUT/reduce3_small.log"

step arg timeout 120 "${A[@]}" --log2n "${LOG2N:-24}" --variants cpus2,cpuas2 2>&1 | tee "$OUT/reduce3_arg.log"

prim=()
for v in ${PRIM:-2}; do prim+=(--variant "streams$v:KAPI_REDUCE_CPU_STREAMS=$v"); done
step primitives timeout 30 python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" \
  --only reduce "${prim[@]}" 2>&1 | tee "$OUT/reduce3_primitives.log"

B=${LOG2N_BIG:-27}
step big-primitives timeout 90 python3 bench/primitives.py --device cpu --log2n "$B" \
  --only reduce 2>&1 | tee "$OUT/reduce3_big_primitives.log"
step big-argred timeout 150 "${A[@]}" --log2n "$B" --no-check-small --variants "${VARIANTS:-cputwo,cpulanes}" \
  2>&1 | tee "$OUT/reduce3_big.log"
[ -x .carry/bin/membw ] && step big-membw timeout 90 .carry/bin/membw "$B" 5 2>&1 | tee "$OUT/reduce3_membw.log"

[ "${PYTEST:-0}" = 1 ] && step pytest timeout 120 python3 -m pytest -q -n 14 -p no:cacheprovider -p no:faulthandler \
  tests/numeric/test_reduce_streams.py tests/numeric/test_arg_reductions.py tests/numeric/test_reduce_schemes.py 2>&1 | tail -5

echo "== summary"
grep -h -E 'triad|^[xk]|kapi (cpu)|FAILED' "$OUT/reduce3_cpu.log" "$OUT/reduce3_one.log" \
  "$OUT/reduce3_small.log" "$OUT/reduce3_arg.log" "$OUT/reduce3_big.log" 2>/dev/null
grep -h -E '^== |x triad|triad' "$OUT/reduce3_primitives.log" "$OUT/reduce3_big_primitives.log" 2>/dev/null | grep -v '^== exit'
