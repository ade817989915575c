#!/usr/bin/env bash
# Loops bounded by get_id(1) on the CPU device of the GPU machine (16 Xeon cores), now and
# before (KAPI_HOST_LOOPVEC_ROWS=0), each step a process of its own with its own timeout;
# ONLY="numba dim1 pytest-haswell" picks steps.
#   numba:  bench/numba_cpu.py (kapi beside Numba's parallel CPU target, the peer there: Intel's
#           OpenCL runtime cannot be carried) with a `before` column: the row-block and
#           prefix-row kernels, and that no other kernel moves;
#   dim1:   bench/dim1_loops.py (the same kernels, two mandelbrots and kapi's own scans and
#           folds, now, before and with KAPI_HOST_ROUND_UNIFORMS=0 alone, in alternating
#           processes, beside NumPy);
#   pytest-haswell: the loop tests with KAPI_HOST_CPU=haswell (AVX2 code on this CPU).
#   run(command="bash bench/dim1_loops.sh", carry=["kapi/_lib", ".carry/debs", ".whl"])
# Logs go to $OUT (or ./gpu-out elsewhere). REPEAT (15), PROCS (3).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels .whl/*.whl
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"
step numba timeout 300 python3 bench/numba_cpu.py --repeat "${REPEAT:-15}" --plot "" \
  --json "$OUT/dim1_numba.json" --variant before:KAPI_HOST_LOOPVEC_ROWS=0 2>&1 | tee "$OUT/dim1_numba.log"
step dim1 timeout 240 python3 bench/dim1_loops.py --procs "${PROCS:-3}" --repeat "${REPEAT:-15}" \
  --json "$OUT/dim1_loops.json" 2>&1 | tee "$OUT/dim1_loops.log"
step pytest-haswell env KAPI_HOST_CPU=haswell timeout 150 python3 -m pytest -q -n 8 \
  -p no:cacheprovider tests/drivers/cpu/test_cpu_loopvec.py 2>&1 | tail -4
