#!/usr/bin/env bash
# Two CPU-device comparisons on every core of the GPU machine (16 Xeon cores), each step a
# process of its own with its own timeout; ONLY="numba arg-24 ..." picks steps.
#   numba:   bench/numba_cpu.py (kapi beside Numba's parallel CPU target, the peer there:
#            Intel's OpenCL runtime cannot be carried) with a `before` column built with
#            KAPI_HOST_FREE_SAVES=0 (a divergent loop's saves keep the old lanes of the
#            work-items that left it, as before): mandelbrot's loop, and that no other
#            kernel moves;
#   arg-L:   (ARG_SIZES="" for none) bench/argred.py's argmax/argmin rows of 2^L float32 (L in ARG_SIZES, default
#            24 25 26 27), the defaults (one read stream) beside cpuargs2 (two), in one
#            process, alternating round by round, beside the triad;
#   pytest:  with PYTEST=1, the CPU driver's tests, the language tests and the reduction tests;
#   pytest-haswell: with PYTEST=1, the loop and barrier tests with KAPI_HOST_CPU=haswell (AVX2
#            code on this CPU: the divergent loops' 8 lanes and 32-bit flags, rows of 16).
# From the checkout (the .deb files as for bench/gpu_run.sh):
#   run(command="bash bench/loops_args.sh", carry=["kapi/_lib", ".carry/debs"])
# Logs go to $OUT (or ./gpu-out elsewhere). ROUNDS (7), REPEAT (15).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"

step numba timeout 280 python3 bench/numba_cpu.py --repeat "${REPEAT:-15}" --plot "" \
  --variant before:KAPI_HOST_FREE_SAVES=0 2>&1 | tee "$OUT/loops_numba.log"

for L in ${ARG_SIZES-24 25 26 27}; do
  step "arg-$L" timeout 120 python3 bench/argred.py --device cpu --rounds "${ROUNDS:-7}" \
    --log2n "$L" --no-check-small --rows argmax,argmin --variants cpulanes,cpuargs2 \
    2>&1 | tee "$OUT/loops_arg_$L.log"
done

[ "${PYTEST:-0}" = 1 ] && step pytest timeout 280 python3 -m pytest -q -n 15 -p no:cacheprovider \
  tests/drivers/cpu tests/language tests/numeric/test_arg_reductions.py \
  tests/numeric/test_reduce_streams.py 2>&1 | tail -5
[ "${PYTEST:-0}" = 1 ] && step pytest-haswell timeout 150 \
  env KAPI_HOST_CPU=haswell KAPI_CACHE=0 python3 -m pytest -q -n 15 -p no:cacheprovider tests/drivers/cpu/test_cpu_loopvec.py \
  tests/drivers/cpu/test_barrier_regions.py tests/drivers/cpu/test_cpu_gather_windows.py \
  --deselect tests/drivers/cpu/test_cpu_gather_windows.py::test_listing_switches_on_the_spacing \
  2>&1 | tail -5
exit 0
