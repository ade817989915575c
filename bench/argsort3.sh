#!/usr/bin/env bash
# kapi.argsort (and kapi.sort) of 2^24 uint32 and float32 keys on the GPU machine's CPU (kapi's
# CPU device, every core) beside np.sort in the same process, every result checked against
# NumPy (np.sort; argsort: the stable order), each variant in its own process, in turn (ROUNDS
# times):
# - "before": today's defaults;
# - "scr1": the buckets' passes through a scratch region per worker, reused from bucket to
#   bucket (KAPI_SORT_CPU_SCRATCH=1: the last pass writes the result directly);
# - "scr2": the same, the last pass into the scratch then one sequential copy out
#   (KAPI_SORT_CPU_SCRATCH=2);
# - "w10", "w10scr1", "w10scr2": the packed argsort first by a 10-bit digit
#   (KAPI_SORT_CPU_ARGSORT_WIDE=10: 1,024 buckets of 128 KiB of words for 2^24 keys), without
#   and with the scratch;
# - "w9scr1": by a 9-bit digit, with the scratch;
# - "fused": the bits that vary from the top byte's count (KAPI_SORT_CPU_FUSED_VARY=1);
# - "scr2fused": scr2 and fused;
# - "w10b11scr1", "w11b11scr2": a 10- or 11-bit first digit, then the buckets by two digits of
#   11 bits instead of three bytes (KAPI_SORT_CPU_BUCKET_BITS=11), with the scratch.
# VARIANTS adds others ("--variant NAME:VAR=VAL+VAR=VAL"); FEW=1 runs only before and VARIANTS.
# TESTS=1 first runs the CPU device's sort tests (tests/numeric/test_sort_cpu_scratch.py and
# test_primitives_sort.py's CPU schemes; TESTS_K="" for all) over 14 pytest-xdist workers;
# PHASES=1 then times each kernel of the sorts (bench/sort_phases.py: this host has no perf) for before, scr1, scr2, w10scr2 and, to
# tell one core's cost from the cores' contention, before on one thread (t1).
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
    -k "${TESTS_K-cpu or msd or packed or wide or fused or bucket}" 2>&1 | tail -5 |
    tee "$OUT/argsort3_tests.log"
fi
if [ "${FEW:-0}" = 1 ]; then
  base=(--variant before:)
else
  base=(--variant before: --variant scr1:KAPI_SORT_CPU_SCRATCH=1
    --variant scr2:KAPI_SORT_CPU_SCRATCH=2 --variant w10:KAPI_SORT_CPU_ARGSORT_WIDE=10
    --variant w10scr1:KAPI_SORT_CPU_ARGSORT_WIDE=10+KAPI_SORT_CPU_SCRATCH=1
    --variant w9scr1:KAPI_SORT_CPU_ARGSORT_WIDE=9+KAPI_SORT_CPU_SCRATCH=1
    --variant fused:KAPI_SORT_CPU_FUSED_VARY=1
    --variant scr2fused:KAPI_SORT_CPU_SCRATCH=2+KAPI_SORT_CPU_FUSED_VARY=1
    --variant w10scr2:KAPI_SORT_CPU_ARGSORT_WIDE=10+KAPI_SORT_CPU_SCRATCH=2
    --variant w10b11scr1:KAPI_SORT_CPU_ARGSORT_WIDE=10+KAPI_SORT_CPU_BUCKET_BITS=11+KAPI_SORT_CPU_SCRATCH=1
    --variant w11b11scr2:KAPI_SORT_CPU_ARGSORT_WIDE=11+KAPI_SORT_CPU_BUCKET_BITS=11+KAPI_SORT_CPU_SCRATCH=2)
fi
# shellcheck disable=SC2086
python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --only sort,argsort \
  --sort-dtypes uint32,float32 --batches 7 --no-np-argsort --rounds "${ROUNDS:-1}" \
  "${base[@]}" ${VARIANTS:-} 2>&1 | tee "$OUT/argsort3.log"
if [ "${PHASES:-0}" = 1 ]; then
  for v in before: scr1:KAPI_SORT_CPU_SCRATCH=1 scr2:KAPI_SORT_CPU_SCRATCH=2 \
    w10scr2:KAPI_SORT_CPU_ARGSORT_WIDE=10+KAPI_SORT_CPU_SCRATCH=2 t1:KAPI_CPU_THREADS=1; do
    name=${v%%:*}
    sets=${v#*:}
    rep=7
    [ "$name" = t1 ] && rep=3
    # shellcheck disable=SC2086
    env ${sets//+/ } python3 bench/sort_phases.py --log2n "${LOG2N:-24}" --repeat $rep 2>&1 |
      sed "s/^/$name: /" | tee -a "$OUT/argsort3_phases.log"
  done
fi
