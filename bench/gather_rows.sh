#!/usr/bin/env bash
# Rows read across work-items on every core of the GPU machine (16 Xeon cores, AVX-512), and on
# the same cores held to AVX2 (KAPI_HOST_CPU=haswell): what each of the gathers' settings gains
# there (bench/gather_rows.py; each step a process of its own with its own timeout; ONLY="..."
# picks steps):
#   null-f32/-f64:      the same build in both columns (this host's spread between columns);
#   scalar-f32/-f64:    (and -reversed) KAPI_HOST_SCALAR_GATHERS=0 (a spacing without a window gathers) beside
#                       the default (scalar loads), AVX-512;
#   windows-f32/-f64:   windows to 4 beside windows to 8, for rows of 4 to 8 (scalar loads for
#                       the rest in both), AVX-512;
#   avx2-f32/-f64:      KAPI_HOST_AVX2_GATHERS=0 (LLVM's own scalar loads) beside the default
#                       (gathers, then windows or scalar loads), haswell;
#   avx2-windows:       windows to 4 beside windows to 8, haswell;
#   kernels, kernels-avx2: bench/cpu_variants.py's pairwise, rowsum, stencil and naive matmul
#                       with a `before` column built the old way;
#   membw:              C threads' read and triad at 2^24 float32 (the reductions' ceiling in
#                       the L3; .carry/bin/membw as bench/reduce3.sh says);
#   pytest:             with PYTEST=1, the CPU driver's tests and the language tests;
#   pytest-haswell, pytest-x86-64-v2: with PYTEST=1, the same held to AVX2, and to SSE4.2 (no
#                       FMA).
# From the checkout (the .deb files as for bench/gpu_run.sh):
#   run(command="bash bench/gather_rows.sh", carry=["kapi/_lib", ".carry/debs", ".carry/bin"])
# Logs go to $OUT (or ./gpu-out elsewhere). REPEAT (41), LOG2N (22: 2^22 elements in all, in
# the L3, so that the loads' cost shows rather than memory's or a launch's).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu KAPI_CACHE=0
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"
G=(python3 bench/gather_rows.py --repeat "${REPEAT:-41}" --log2n "${LOG2N:-22}")

for t in float32 float64; do
  s=${t/float/f}
  # the same build twice: how far two columns of one process differ on this host
  step "null-$s" timeout 90 "${G[@]}" --dtype "$t" --rows 3,5,8,16,64 \
    --compare KAPI_HOST_SCALAR_GATHERS=-,- 2>&1 | tee "$OUT/gather_null_$s.log"
  step "scalar-$s" timeout 90 "${G[@]}" --dtype "$t" --rows 3,5,8,16,64 \
    --compare KAPI_HOST_SCALAR_GATHERS=0,- 2>&1 | tee "$OUT/gather_scalar_$s.log"
  step "scalar-$s-reversed" timeout 90 "${G[@]}" --dtype "$t" --rows 3,5,8,16,64 \
    --compare KAPI_HOST_SCALAR_GATHERS=-,0 2>&1 | tee "$OUT/gather_scalar_${s}_reversed.log"
  step "windows-$s" timeout 90 "${G[@]}" --dtype "$t" --rows 3,4,5,6,7,8 \
    --compare KAPI_HOST_WINDOW_GATHERS=4,8 2>&1 | tee "$OUT/gather_windows_$s.log"
  step "avx2-$s" env KAPI_HOST_CPU=haswell timeout 90 "${G[@]}" --dtype "$t" --rows 3,5,8,16,64 \
    --compare KAPI_HOST_AVX2_GATHERS=0,- 2>&1 | tee "$OUT/gather_avx2_$s.log"
  step "avx2-$s-reversed" env KAPI_HOST_CPU=haswell timeout 90 "${G[@]}" --dtype "$t" \
    --rows 3,5,8,16,64 --compare KAPI_HOST_AVX2_GATHERS=-,0 2>&1 | tee "$OUT/gather_avx2_${s}_reversed.log"
done
step avx2-windows env KAPI_HOST_CPU=haswell timeout 90 "${G[@]}" --rows 3,4,5,6,7,8 \
  --compare KAPI_HOST_WINDOW_GATHERS=4,8 2>&1 | tee "$OUT/gather_avx2_windows.log"

K=(python3 bench/cpu_variants.py --repeat 15 --only pairwise-f32,rowsum-f32,stencil-f32,matmul-naive-f32)
step kernels timeout 120 "${K[@]}" --variant before:KAPI_HOST_SCALAR_GATHERS=0 2>&1 | tee "$OUT/gather_kernels.log"
step kernels-avx2 env KAPI_HOST_CPU=haswell timeout 120 "${K[@]}" \
  --variant before:KAPI_HOST_AVX2_GATHERS=0 2>&1 | tee "$OUT/gather_kernels_avx2.log"

[ -x .carry/bin/membw ] && step membw timeout 60 .carry/bin/membw 24 15 2>&1 | tee "$OUT/gather_membw.log"

[ "${PYTEST:-0}" = 1 ] && step pytest timeout 300 python3 -m pytest -q -n 14 -p no:cacheprovider \
  -p no:faulthandler tests/drivers/cpu tests/language 2>&1 | tail -5
for cpu in haswell x86-64-v2; do
  [ "${PYTEST:-0}" = 1 ] && step "pytest-$cpu" env KAPI_HOST_CPU=$cpu timeout 300 python3 -m pytest -q \
    -n 14 -p no:cacheprovider -p no:faulthandler tests/drivers/cpu tests/language 2>&1 | tail -5
done
