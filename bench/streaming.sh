#!/usr/bin/env bash
# Streaming (non-temporal) stores on the GPU machine's 16 Xeon cores: what C threads get from
# them (bench/membw.c, built here as a static binary and carried in .carry/bin), the CPU scan
# with and without them in one process (bench/scan_ab.py) at sizes below, near and above the
# caches (that host: 2 MiB of L2 a core, 300 MiB of L3 shared with other guests), the issue's
# own bench (bench/primitives.py), and the tests that use them, on the CPU and the GPU.
#   gcc -O3 -march=x86-64-v3 -static -pthread bench/membw.c -o .carry/bin/membw
#   pip download pytest-xdist execnet -d .whl --no-deps
#   run(command="bash bench/streaming.sh", carry=["kapi/_lib", ".carry/debs", ".carry/bin", ".whl"])
# ONLY="membw scan elementwise triad peer primitives tests" picks steps (bench/device_env.sh's
# `step`); the elementwise kernels' streaming entries by bench/elementwise_ab.py, the CPU
# driver's streaming entries by bench/triad_streaming.py, the reductions beside Numba's
# parallel ones by bench/reduce_peer.py.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels .whl/pytest_xdist*.whl .whl/execnet*.whl
for a in ${MEMBW:-"24 9" "26 5"}; do
  step membw env KAPI_DRIVERS=cpu timeout 60 .carry/bin/membw $a 2>&1 | tee -a "$OUT/membw.log"
done
for n in ${SIZES:-22 24 26}; do
  step scan env KAPI_DRIVERS=cpu timeout 150 python3 bench/scan_ab.py --log2n "$n" \
    --rounds "${ROUNDS:-9}" --schemes "${SCHEMES:-chain-t,chain-nt}" 2>&1 | tee -a "$OUT/scan.log"
done
for n in ${EW_SIZES:-22 23 24 26}; do
  step elementwise env KAPI_DRIVERS=cpu timeout 120 python3 bench/elementwise_ab.py --log2n "$n" \
    --rounds "${ROUNDS:-9}" 2>&1 | tee -a "$OUT/elementwise.log"
done
for n in ${TRIAD_SIZES:-24 26}; do
  step triad env KAPI_DRIVERS=cpu timeout 120 python3 bench/triad_streaming.py --log2n "$n" \
    --rounds "${ROUNDS:-9}" 2>&1 | tee -a "$OUT/triad.log"
done
step peer env KAPI_DRIVERS=cpu timeout 150 python3 bench/reduce_peer.py --log2n 24 \
  --rounds "${ROUNDS:-9}" 2>&1 | tee "$OUT/peer.log"
step primitives env KAPI_DRIVERS=cpu timeout 300 python3 bench/primitives.py --device cpu \
  --log2n 24 --only cumsum,reduce --rounds 2 --variant streaming:KAPI_SCAN_CPU_STREAMING=auto \
  --variant plain:KAPI_SCAN_CPU_STREAMING=0 2>&1 | tee "$OUT/primitives.log"
step tests timeout "${TESTS_TIMEOUT:-400}" python3 -m pytest -q -p no:cacheprovider -n 12 -rfEs \
  ${TESTS:-tests/language/test_store_nontemporal.py tests/numeric/test_elementwise_streaming.py \
  tests/numeric/test_primitives.py} -k "${TESTS_K-scan or nontemporal or stream}" \
  2>&1 | tee "$OUT/tests.log" | tail -25
