#!/usr/bin/env bash
# The CPU argsort's pass by the wide digit through write-combining buffers (KAPI_SORT_CPU_WIDE_WC)
# and the buckets' copy into the result by streaming stores (KAPI_SORT_CPU_STREAMING), each on
# and off, in one process per size on the GPU machine's 16 Xeon cores (bench/sort_ab.py, with
# np.sort in the same rounds), then the sort tests there.
#   run(command="bash bench/sort_wc.sh", carry=["kapi/_lib", ".carry/debs", ".whl"])
# ONLY="ab ab25 big sort tests" picks steps; ROUNDS, BIG_SIZES.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels .whl/pytest_xdist*.whl .whl/execnet*.whl
# (call 1, 2026-11-29, also had "wc-plain", the full lines written by plain stores: removed
# after it lost, bench/RESULTS.md)
S=(--setting "base:CPU_WIDE_WC='0'+CPU_STREAMING='0'"
   --setting "wc:CPU_WIDE_WC='1'+CPU_STREAMING='0'"
   --setting "copy-nt:CPU_WIDE_WC='0'+CPU_STREAMING='1'"
   --setting "default:CPU_WIDE_WC='auto'+CPU_STREAMING='auto'")
step ab env KAPI_DRIVERS=cpu timeout 200 python3 bench/sort_ab.py --log2n 24 \
  --rounds "${ROUNDS:-9}" "${S[@]}" 2>&1 | tee -a "$OUT/sort_ab.log"
# 2^25 keys: uniform float32's largest buckets by a 12-bit digit (fixed12) outgrow the scratch
# (4 MiB); by 13 bits (the default: a bit more per doubling) they do not
step ab25 env KAPI_DRIVERS=cpu timeout 200 python3 bench/sort_ab.py --log2n 25 --rounds 5 \
  --setting "base:CPU_WIDE_WC='0'+CPU_STREAMING='0'" \
  --setting "default:CPU_WIDE_WC='auto'+CPU_STREAMING='auto'" \
  --setting "fixed12:CPU_WIDE_BIG_SCALE=False" 2>&1 | tee -a "$OUT/sort_ab.log"
# 2^26 and 2^27 keys: digits of 14 bits (16,384 lines of buffer a block: 1 MiB), buffers on
# and off
for n in ${BIG_SIZES:-26 27}; do
  step big env KAPI_DRIVERS=cpu timeout 200 python3 bench/sort_ab.py --log2n "$n" --rounds 3 \
    --setting "default:CPU_WIDE_WC='auto'" --setting "no-wc:CPU_WIDE_WC='0'" \
    2>&1 | tee -a "$OUT/sort_ab.log"
done
# kapi.sort: the buckets' copy by streaming stores alone (the buffered pass is argsort's)
step sort env KAPI_DRIVERS=cpu timeout 200 python3 bench/sort_ab.py --op sort --log2n 24 \
  --rounds "${ROUNDS:-9}" --setting "plain:CPU_STREAMING='0'" --setting "copy-nt:CPU_STREAMING='1'" \
  2>&1 | tee -a "$OUT/sort_ab.log"
step tests timeout "${TESTS_TIMEOUT:-300}" python3 -m pytest -q -p no:cacheprovider -n 12 -rfEs \
  ${TESTS:-tests/numeric/test_sort_cpu_scratch.py tests/numeric/test_primitives_sort.py} \
  2>&1 | tee "$OUT/tests.log" | tail -15
