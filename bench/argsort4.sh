#!/usr/bin/env bash
# kapi.argsort (and kapi.sort) of 2^24 uint32 and float32 keys on the GPU machine's CPU (kapi's
# CPU device, every core) beside np.sort in the same process, every result checked against
# NumPy (np.sort; argsort: the stable order), each variant in its own process, in turn:
# - "before": the bits in which the keys differ by kapi.reduce's OR and AND, and the wide
#   digit's table by kapi's scan, as before this branch (KAPI_SORT_CPU_VARY_WIDE=0,
#   KAPI_SORT_CPU_HOST_SCAN=0);
# - "after": the defaults (the packed argsort's wide digit counted in the same read that finds
#   the bits that vary, its table scanned by the host);
# - "after+sw2": the wide digit's pass in 2 sweeps per chunk of 65,536 keys
#   (KAPI_SORT_CPU_WIDE_SWEEPS=2: 512 write streams at once instead of 1,024, which a Xeon
#   core's 48 KiB L1 holds);
# - "after+sp4": that pass in two steps per chunk of 32,768 keys, into 4 regions of the block's
#   own first, then each region to its 256 digits (KAPI_SORT_CPU_WIDE_SPLIT=4);
# - "after+w12b10": a first digit of 12 bits (4,096 buckets of 4,096 keys for 2^24: 32 KiB
#   of words) and the buckets by two digits of 10 bits (KAPI_SORT_CPU_ARGSORT_WIDE=12,
#   KAPI_SORT_CPU_BUCKET_BITS=10);
# - "after+fused": the sorts (and argsorts below 2^22 keys) count their top varying byte in
#   the read that finds the bits that vary (KAPI_SORT_CPU_FUSED_VARY=1, the byte placed where
#   the last such keys had it);
# (VARIANTS for others: KAPI_SORT_CPU_WIDE_TOUCH=1 loads one line ahead in each digit's run;
# with the 12-bit digit, KAPI_SORT_CPU_WIDE_SPLIT=16 splits its pass into 16 regions first.)
# CALL2=1 instead: before, after (twice) and the 2^20 keys' before and after (the fixed cost
# per call).
# VARIANTS adds others ("--variant NAME:VAR=VAL+VAR=VAL"); FEW=1 runs only before, after and
# VARIANTS (2^24).
# TESTS=1 first runs the CPU device's sort tests (tests/numeric/test_sort_cpu_scratch.py and
# test_primitives_sort.py's CPU schemes; TESTS_K="" for all) over 14 pytest-xdist workers;
# PHASES=1 then times each kernel of the sorts (bench/sort_phases.py: this host has no perf;
# "reduce": kapi.reduce's calls, "other": the host) for before, after, after+w12b10.
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
B0=KAPI_SORT_CPU_VARY_WIDE=0+KAPI_SORT_CPU_HOST_SCAN=0
W12=KAPI_SORT_CPU_ARGSORT_WIDE=12+KAPI_SORT_CPU_BUCKET_BITS=10
if [ "${FEW:-0}" = 1 ]; then
  base=(--variant "before:$B0" --variant after:)
elif [ "${CALL2:-0}" = 1 ]; then
  base=(--variant "before:$B0" --variant after: --variant "before:$B0" --variant after:)
else
  base=(--variant "before:$B0" --variant after: --variant after+sw2:KAPI_SORT_CPU_WIDE_SWEEPS=2
    --variant after+sp4:KAPI_SORT_CPU_WIDE_SPLIT=4 --variant after+fused:KAPI_SORT_CPU_FUSED_VARY=1
    --variant "after+w12b10:$W12")
fi
# shellcheck disable=SC2086
python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --only sort,argsort \
  --sort-dtypes uint32,float32 --batches 7 --no-np-argsort --rounds "${ROUNDS:-1}" \
  "${base[@]}" ${VARIANTS:-} 2>&1 | tee "$OUT/argsort4.log"
echo "== 2^${LOG2N:-24} done at ${SECONDS}s"
if [ "${PHASES:-0}" = 1 ]; then
  for v in "before:$B0" after: "after+w12b10:$W12"; do
    name=${v%%:*}
    sets=${v#*:}
    # shellcheck disable=SC2086
    env ${sets//+/ } python3 bench/sort_phases.py --log2n "${LOG2N:-24}" --repeat 5 2>&1 |
      sed "s/^/$name: /" | tee -a "$OUT/argsort4_phases.log"
  done
  echo "== phases done at ${SECONDS}s"
fi
if [ "${CALL2:-0}" = 1 ]; then
  python3 bench/primitives.py --device cpu --log2n 20 --only sort,argsort \
    --sort-dtypes uint32 --batches 15 --no-np-argsort --rounds 1 \
    --variant "before:$B0" --variant after: 2>&1 | tee "$OUT/argsort4_2e20.log"
  echo "== 2^20 done at ${SECONDS}s"
fi
