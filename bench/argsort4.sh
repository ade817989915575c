#!/usr/bin/env bash
# kapi.argsort (and kapi.sort) of 2^24 uint32 and float32 keys on the GPU machine's CPU (kapi's
# CPU device, every core) beside np.sort in the same process, every result checked against
# NumPy (np.sort; argsort: the stable order), each variant in its own process, in turn:
# - "before": the bits in which the keys differ by kapi.reduce's OR and AND, the wide digit's
#   table by kapi's scan, and 10 bits for the argsort's first digit at every size, as before
#   this branch (KAPI_SORT_CPU_VARY_WIDE=0, KAPI_SORT_CPU_HOST_SCAN=0,
#   KAPI_SORT_CPU_ARGSORT_WIDE_BIG=0, KAPI_SORT_CPU_FUSED_VARY=0);
# - "after": the defaults (the packed argsort's wide digit counted in the same read that finds
#   the bits that vary, its table scanned by the host; from 2^24 keys a 12-bit first digit and
#   the buckets by two 10-bit digits);
# - "after-big": the 10-bit first digit at 2^24 too (KAPI_SORT_CPU_ARGSORT_WIDE_BIG=0);
# - "after-hscan": the wide digit's table scanned by kapi's scan (KAPI_SORT_CPU_HOST_SCAN=0);
# - "after+fused": the sorts count their top varying byte in the read that finds the bits that
#   vary (KAPI_SORT_CPU_FUSED_VARY=1, the byte placed where the last such keys had it; on by
#   default since call 2, so that "after" has it now);
# then before and after again; last, before, after and after+fused at 2^20 keys (the fixed
# cost per call: below 2^22 keys the argsort goes by the top byte).
# CALL1=1: the first device call's variants that still exist (before, after, the 12-bit first
# digit as it was then: KAPI_SORT_CPU_ARGSORT_WIDE=12 and KAPI_SORT_CPU_BUCKET_BITS=10, and
# after+fused; the wide pass by sweeps or by regions first lost and is gone).
# VARIANTS adds others ("--variant NAME:VAR=VAL+VAR=VAL"); FEW=1 runs only before, after and
# VARIANTS (2^24).
# TESTS=1 first runs the CPU device's sort tests (tests/numeric/test_sort_cpu_scratch.py and
# test_primitives_sort.py's CPU schemes; TESTS_K="" for all) over 14 pytest-xdist workers;
# PHASES=1 then times each kernel of the sorts (bench/sort_phases.py: this host has no perf;
# "reduce": kapi.reduce's calls, "other": the host) for before, after and after-big.
# Setup as bench/cpu_primitives_run.sh:
#   run(command="TESTS=1 PHASES=1 bash bench/argsort4.sh", carry=["kapi/_lib", ".carry/debs"])
# LOG2N (default 24) and ROUNDS (default 1) change the sizes and repeats.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git rev-parse --short HEAD 2>/dev/null)"
SECONDS=0
if [ "${TESTS:-0}" = 1 ]; then
  python3 -m pytest -q -n 14 -p no:cacheprovider -p no:faulthandler \
    tests/numeric/test_sort_cpu_scratch.py tests/numeric/test_primitives_sort.py \
    -k "${TESTS_K-msd or packed or wide or fused or bucket or scratch or test_cpu_}" 2>&1 | tail -5 |
    tee "$OUT/argsort4_tests.log"
  echo "== tests done at ${SECONDS}s"
fi
B0=KAPI_SORT_CPU_VARY_WIDE=0+KAPI_SORT_CPU_HOST_SCAN=0+KAPI_SORT_CPU_ARGSORT_WIDE_BIG=0+KAPI_SORT_CPU_FUSED_VARY=0
W12=KAPI_SORT_CPU_ARGSORT_WIDE=12+KAPI_SORT_CPU_BUCKET_BITS=10+KAPI_SORT_CPU_ARGSORT_WIDE_BIG=0
if [ "${FEW:-0}" = 1 ]; then
  base=(--variant "before:$B0" --variant after:)
elif [ "${CALL1:-0}" = 1 ]; then
  base=(--variant "before:$B0" --variant after:KAPI_SORT_CPU_ARGSORT_WIDE_BIG=0
    --variant "after+w12b10:$W12"
    --variant after+fused:KAPI_SORT_CPU_FUSED_VARY=1+KAPI_SORT_CPU_ARGSORT_WIDE_BIG=0)
else
  base=(--variant "before:$B0" --variant after: --variant after-big:KAPI_SORT_CPU_ARGSORT_WIDE_BIG=0
    --variant after-hscan:KAPI_SORT_CPU_HOST_SCAN=0 --variant after+fused:KAPI_SORT_CPU_FUSED_VARY=1
    --variant "before:$B0" --variant after:)
fi
# shellcheck disable=SC2086
python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --only sort,argsort \
  --sort-dtypes uint32,float32 --batches 7 --no-np-argsort --rounds "${ROUNDS:-1}" \
  "${base[@]}" ${VARIANTS:-} 2>&1 | tee "$OUT/argsort4.log"
echo "== 2^${LOG2N:-24} done at ${SECONDS}s"
if [ "${PHASES:-0}" = 1 ]; then
  for v in "before:$B0" after: after-big:KAPI_SORT_CPU_ARGSORT_WIDE_BIG=0; do
    name=${v%%:*}
    sets=${v#*:}
    # shellcheck disable=SC2086
    env ${sets//+/ } python3 bench/sort_phases.py --log2n "${LOG2N:-24}" --repeat 5 2>&1 |
      sed "s/^/$name: /" | tee -a "$OUT/argsort4_phases.log"
  done
  echo "== phases done at ${SECONDS}s"
fi
if [ "${FEW:-0}" != 1 ] && [ "${CALL1:-0}" != 1 ]; then
  python3 bench/primitives.py --device cpu --log2n 20 --only sort,argsort \
    --sort-dtypes uint32 --batches 15 --no-np-argsort --rounds 1 \
    --variant "before:$B0" --variant after: --variant after+fused:KAPI_SORT_CPU_FUSED_VARY=1 \
    2>&1 | tee "$OUT/argsort4_2e20.log"
  echo "== 2^20 done at ${SECONDS}s"
fi
