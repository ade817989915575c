#!/usr/bin/env bash
# kapi.argsort (and kapi.sort) of 2^24 uint32 and float32 keys on the GPU machine's CPU (kapi's
# CPU device, every core) beside np.sort in the same process, every result checked against
# NumPy (np.sort, np.argsort(kind="stable")): "after" (the defaults) against "before":
# the argsort's packed keys and indices (KAPI_SORT_CPU_PACK=1) against separate key and int64
# index arrays (=0), and the sort's buckets counted in one read with constant shifts
# (KAPI_SORT_CPU_BUCKET_COUNT_ONCE=1) against a read per digit (=0); "after-wide" the
# defaults but skewed keys (the float32 rows) by the LSD passes (argsort: on packed words) rather than a
# 12-bit first digit (KAPI_SORT_CPU_WIDE=0); "after+wc" the defaults
# with the packed first pass's stores gathered a cache line at a time (KAPI_SORT_CPU_WC=1,
# off by default: it lost on 2 cores); each variant in its own process, in turn, twice. Setup as bench/cpu_primitives_run.sh:
#   run(command="bash bench/argsort2.sh", carry=["kapi/_lib", ".carry/debs"])
# LOG2N (default 24), ROUNDS (default 2), VARIANTS (extra --variant arguments) change it.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
# shellcheck disable=SC2086
python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --only sort,argsort \
  --sort-dtypes uint32,float32 --batches 7 --no-np-argsort --rounds "${ROUNDS:-2}" \
  --variant before:KAPI_SORT_CPU_PACK=0+KAPI_SORT_CPU_BUCKET_COUNT_ONCE=0 --variant after: \
  --variant after-wide:KAPI_SORT_CPU_WIDE=0 --variant after+wc:KAPI_SORT_CPU_WC=1 \
  ${VARIANTS:-} 2>&1 |
  tee "$OUT/argsort2.log"
