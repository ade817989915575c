#!/usr/bin/env bash
# kapi.argsort (and kapi.sort) of 2^24 uint32 and float32 keys on the GPU machine's CPU (kapi's
# CPU device, every core) beside np.sort in the same process, every result checked against
# NumPy (np.sort; argsort: the stable order), each variant in its own process, in turn (ROUNDS
# times):
# - "before": the buckets by one work-item each, moved between two arrays of n words, and the
#   packed argsort first by the top byte (KAPI_SORT_CPU_SCRATCH=0, KAPI_SORT_CPU_ARGSORT_WIDE=0:
#   the tree before this branch);
# - "after": the defaults (the buckets through a scratch region per worker, the last pass
#   into it then copied out: KAPI_SORT_CPU_SCRATCH=2; the packed argsort of 2^22 keys or more
#   first by a 10-bit digit: KAPI_SORT_CPU_ARGSORT_WIDE=10);
# - "after+w9": the argsort's first digit of 9 bits (512 buckets of 256 KiB of words);
# - "after+b11": the buckets by two 11-bit digits after the 10-bit first digit;
# - "after+fused": the bits that vary from the top byte's count (KAPI_SORT_CPU_FUSED_VARY=1);
# CALL1=1: the first device call's variants instead (before; scr1 and scr2: the scratch, the
# top byte first; w10: the 10-bit digit without the scratch; w10scr1; w10scr2 = after).
# VARIANTS adds others ("--variant NAME:VAR=VAL+VAR=VAL"); FEW=1 runs only before, after and VARIANTS.
# TESTS=1 first runs the CPU device's sort tests (tests/numeric/test_sort_cpu_scratch.py and
# test_primitives_sort.py's CPU schemes; TESTS_K="" for all) over 14 pytest-xdist workers;
# PHASES=1 then times each kernel of the sorts (bench/sort_phases.py: this host has no perf)
# for before and after (T1=1: before on one thread too, "t1": one core's cost).
# Setup as bench/cpu_primitives_run.sh:
#   run(command="bash bench/argsort3.sh", carry=["kapi/_lib", ".carry/debs"])
# LOG2N (default 24) and ROUNDS (default 1) change the sizes and repeats.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git rev-parse --short HEAD 2>/dev/null)"
if [ "${TESTS:-0}" = 1 ]; then
  python3 -m pytest -q -n 14 -p no:cacheprovider -p no:faulthandler \
    tests/numeric/test_sort_cpu_scratch.py tests/numeric/test_primitives_sort.py \
    -k "${TESTS_K-msd or packed or wide or fused or bucket or scratch or test_cpu_}" 2>&1 | tail -5 |
    tee "$OUT/argsort3_tests.log"
fi
B0=KAPI_SORT_CPU_SCRATCH=0+KAPI_SORT_CPU_ARGSORT_WIDE=0
if [ "${FEW:-0}" = 1 ]; then
  base=(--variant "before:$B0" --variant after:)
elif [ "${CALL1:-0}" = 1 ]; then
  base=(--variant "before:$B0" --variant scr1:KAPI_SORT_CPU_SCRATCH=1+KAPI_SORT_CPU_ARGSORT_WIDE=0
    --variant scr2:KAPI_SORT_CPU_ARGSORT_WIDE=0 --variant w10:KAPI_SORT_CPU_SCRATCH=0
    --variant w10scr1:KAPI_SORT_CPU_SCRATCH=1 --variant w10scr2:)
else
  base=(--variant "before:$B0" --variant after: --variant after+b11:KAPI_SORT_CPU_BUCKET_BITS=11
    --variant after+w9:KAPI_SORT_CPU_ARGSORT_WIDE=9
    --variant after+fused:KAPI_SORT_CPU_FUSED_VARY=1 --variant "before:$B0" --variant after:)
fi
# shellcheck disable=SC2086
python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --only sort,argsort \
  --sort-dtypes uint32,float32 --batches 7 --no-np-argsort --rounds "${ROUNDS:-1}" \
  "${base[@]}" ${VARIANTS:-} 2>&1 | tee "$OUT/argsort3.log"
PHASES_EXTRA=()
[ "${T1:-0}" = 1 ] && PHASES_EXTRA=("t1:$B0+KAPI_CPU_THREADS=1")
if [ "${PHASES:-0}" = 1 ]; then
  for v in "before:$B0" after: "${PHASES_EXTRA[@]}"; do
    name=${v%%:*}
    sets=${v#*:}
    rep=7
    [ "$name" = t1 ] && rep=3
    # shellcheck disable=SC2086
    env ${sets//+/ } python3 bench/sort_phases.py --log2n "${LOG2N:-24}" --repeat $rep 2>&1 |
      sed "s/^/$name: /" | tee -a "$OUT/argsort3_phases.log"
  done
fi
