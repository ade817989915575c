#!/usr/bin/env bash
# kapi.sort and kapi.argsort of 2^27 uint32 on the GPU beside cupy.sort / cupy.argsort, one
# device call (about 2 minutes on an H200). Steps (each capped by `timeout`):
# 1. bench/sort_variants.py: each variant in its own process, checked against NumPy (sort: the
#    whole array; argsort: 2^22 keys, input unchanged), then timed; one table, ratios to CuPy's.
#    Before and after in the same run (switches read at import): B is the tree before this
#    branch, "default" the ranks in local memory and the async keys pass (this branch's
#    defaults since its second call); R48 the onesweep ranks in local memory (KAPI_SORT_RANK_LOCAL) with the pass
#    for keys alone capped at 48 registers (5 groups of 256 per SM; argsort's uncapped); P3
#    three persistent groups per SM loading their next tile during this one
#    (KAPI_SORT_PERSIST, ranks in local memory, 80 registers); +KEYS_ASYNC=1 the keys pass
#    launched without a wait (KAPI_SORT_KEYS_ASYNC); +HIST_COPIES=8 the keys pass counting
#    digits into 8 interleaved copies per group (KAPI_SORT_HIST_COPIES). (+EARLY=1 / 2,
#    KAPI_SORT_EARLY: the tile's counts before its ranking; the first call measured them
#    slower.)
# 2. pytest on CUDA: the sort tests of the new switches (PYTEST_K).
# 3. Nsight Compute (where ncu exists): per-kernel GPU times of one sort of 2^27 (the second
#    call's `_keys_in`, `_dscan`, `_osclear` and four `_onesweep`; ncu runs them at base
#    clocks), for each PROFILE variant (KAPI_SORT_* settings, ';'-separated); with
#    NCU_DETAILS=1 also the warp stall reasons, occupancy and memory throughput of one
#    `_keys_in` and one `_onesweep` of the defaults.
# 4. compute-sanitizer memcheck (SANITIZE_TOOLS) of a sort and argsort of 2^18 keys for each
#    SANITIZE variant (default R48 and P3).
# From the checkout:
#   run(command="bash bench/gpu_sort4.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS=... replaces step 1's list; SORT_PYTEST=0, NCU_RUN=0, SANITIZE="" skip steps.
# Logs: $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
command -v nvidia-smi >/dev/null && nvidia-smi -L
R48=default+RANK_LOCAL=1+MAXREG=48+ARGSORT_MAXREG=0
P3=default+PERSIST=3+RANK_LOCAL=1+MAXREG=0
A=KEYS_ASYNC=1
C8=HIST_COPIES=8
B=default+RANK_LOCAL=0+KEYS_ASYNC=0  # the branch point (the defaults before this branch)
# the second call's list (run before the defaults changed):
#   cupy,default,$R48+$A+$C8,$P3,default+$C8,$R48+$A
V=${VARIANTS:-cupy,$B,default,$B,default,$P3}
echo "== sort variants: $V"
timeout "${SORT_TIMEOUT:-80}" python3 bench/sort_variants.py --device gpu --sanitize "" \
  --timeout 25 --variants "$V" 2>&1 | tee "$OUT/gpu_sort4.log"
echo "== exit $?"
if [ "${SORT_PYTEST:-1}" = 1 ]; then
  echo "== pytest (CUDA): ${PYTEST_K:=persistent_groups and 100003 or rank_local_fits or keys_pass_async and onesweep or count_copies and uint32-8}"
  KAPI_DRIVERS=cuda timeout "${PYTEST_TIMEOUT:-20}" python3 -m pytest -q -x -p no:cacheprovider \
    tests/numeric/test_primitives_sort.py -k "$PYTEST_K" 2>&1 | tail -8 | \
    tee "$OUT/gpu_sort4_pytest.log"
fi
NCU=$(command -v ncu || true)
if [ -n "$NCU" ] && [ "${NCU_RUN:-1}" = 1 ]; then
  K='regex:_(onesweep|keys_in|dscan|osclear)'
  M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
  M=$M,sm__warps_active.avg.pct_of_peak_sustained_active
  IFS=';' read -ra PV <<< "${PROFILE:-KAPI_SORT_RANK_LOCAL=1 KAPI_SORT_MAXREG=48 KAPI_SORT_HIST_COPIES=8;KAPI_SORT_HIST_COPIES=8 KAPI_SORT_KEYS_UNROLL=4}"
  for p in "${PV[@]}"; do
    echo "== ncu kernel times, sort of 2^27: $p"
    env $p timeout 13 "$NCU" -k "$K" --launch-skip 7 --launch-count 7 --metrics "$M" --csv \
      python3 bench/sort_profile.py 2>&1 | grep -v '^==PROF==' | \
      tee -a "$OUT/gpu_sort4_ncu_times.csv" | python3 bench/ncu_times.py
  done
  if [ "${NCU_DETAILS:-0}" = 1 ]; then
    echo "== ncu details: one _keys_in and one _onesweep of the defaults (2^27)"
    timeout 22 "$NCU" -k "$K" --launch-skip 7 --launch-count 4 --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis -o /tmp/os_detail -f \
      python3 bench/sort_profile.py > "$OUT/gpu_sort4_ncu_run.log" 2>&1
    echo "== exit $?"
    "$NCU" -i /tmp/os_detail.ncu-rep --page details > "$OUT/gpu_sort4_ncu_details.txt" 2>&1
    grep -E '^  _|Duration|Registers Per|Occupancy|Block Limit|Stall|Warp Cycles Per|Issued Ipc|Throughput|No Eligible|Shared Memory Config|Shared Memory Per' \
      "$OUT/gpu_sort4_ncu_details.txt" | head -90
  fi
fi
S=${SANITIZE-$R48,$P3}
if [ -n "$S" ]; then
  echo "== compute-sanitizer (2^14 keys): $S"
  timeout "${SANITIZE_TIMEOUT:-24}" python3 bench/sort_variants.py --device gpu --sanitize "$S" \
    --sanitize-tools "${SANITIZE_TOOLS:-memcheck}" --sanitize-log2n "${SANITIZE_LOG2N:-18}" \
    --log2n 14 --timeout 16 --variants "" 2>&1 | tee "$OUT/gpu_sort4_sanitize.log"
fi
