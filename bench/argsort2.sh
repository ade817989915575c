#!/usr/bin/env bash
# kapi.argsort (and kapi.sort) of 2^24 uint32 and float32 keys on the GPU machine's CPU (kapi's
# CPU device, every core) beside np.sort in the same process, every result checked against
# NumPy (np.sort; argsort: the stable order), each variant in its own process, in turn (ROUNDS
# times):
# - "before": the argsort's keys and int64 indices in two arrays (KAPI_SORT_CPU_PACK=0), the
#   sort's buckets read once per digit (KAPI_SORT_CPU_BUCKET_COUNT_ONCE=0): the tree before
#   this branch;
# - "after": the defaults (keys and indices packed in one word, the buckets counted in one
#   read);
# - "after+wide": the defaults with skewed keys (the float32 rows) first by a 12-bit digit
#   (KAPI_SORT_CPU_WIDE=12; off by default: it lost on these 16 cores);
# - "after+fused": the defaults with the bits that vary found by the top byte's count
#   (KAPI_SORT_CPU_FUSED_VARY=1: no reductions; off by default, no gain on 2 cores);
# VARIANTS adds others, e.g. "--variant wc:KAPI_SORT_CPU_WC=1 --variant b12:KAPI_SORT_CPU_BUCKET_BITS=12"
# (both lost here too). TESTS=1 first runs the sort tests on the CPU device over 14
# pytest-xdist workers (there the buckets must balance over 16 cores, not the dev box's 2);
# PHASES=1 then times each kernel of the sorts (bench/sort_phases.py: this host has no perf).
# Setup as bench/cpu_primitives_run.sh:
#   run(command="bash bench/argsort2.sh", carry=["kapi/_lib", ".carry/debs"])
# LOG2N (default 24) and ROUNDS (default 1) change the sizes and repeats.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
if [ "${TESTS:-0}" = 1 ]; then
  python3 -m pytest -q -n 14 -p no:cacheprovider -p no:faulthandler \
    tests/numeric/test_primitives_sort.py 2>&1 | tail -15 | tee "$OUT/argsort2_tests.log"
fi
# shellcheck disable=SC2086
python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --only sort,argsort \
  --sort-dtypes uint32,float32 --batches 7 --no-np-argsort --rounds "${ROUNDS:-1}" \
  --variant before:KAPI_SORT_CPU_PACK=0+KAPI_SORT_CPU_BUCKET_COUNT_ONCE=0 --variant after: \
  --variant after+wide:KAPI_SORT_CPU_WIDE=12 --variant after+fused:KAPI_SORT_CPU_FUSED_VARY=1 \
  ${VARIANTS:-} 2>&1 |
  tee "$OUT/argsort2.log"
if [ "${PHASES:-0}" = 1 ]; then
  python3 bench/sort_phases.py --log2n "${LOG2N:-24}" 2>&1 | tee "$OUT/argsort2_phases.log"
  KAPI_SORT_CPU_PACK=0 KAPI_SORT_CPU_BUCKET_COUNT_ONCE=0 python3 bench/sort_phases.py \
    --log2n "${LOG2N:-24}" 2>&1 | sed 's/^/before: /' | tee -a "$OUT/argsort2_phases.log"
fi
