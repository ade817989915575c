#!/usr/bin/env bash
# kapi.histogram on the GPU machine: the CPU device (16 Xeon cores) beside NumPy, the H200
# beside CuPy, each beside kapi's sorting path in the same process (bench/histogram.py), and
# the histogram and reduction tests on both devices.
#   run(command="bash bench/histogram.sh", carry=["kapi/_lib", ".carry/debs"])
# ONLY="cpu gpu pytest" picks steps; ROUNDS (5).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"
step cpu timeout 200 python3 bench/histogram.py --device cpu --log2n 24 --rounds "${ROUNDS:-5}" \
  --json "$OUT/histogram_cpu.json" 2>&1 | tee "$OUT/histogram_cpu.log"
step gpu timeout 150 python3 bench/histogram.py --device gpu --log2n 27 --rounds "${ROUNDS:-5}" \
  --json "$OUT/histogram_gpu.json" 2>&1 | tee "$OUT/histogram_gpu.log"
step pytest timeout 240 python3 -m pytest -q -n 15 -p no:cacheprovider \
  tests/numeric/test_histogram.py tests/numeric/test_array_api.py \
  tests/numeric/test_reduce_schemes.py 2>&1 | tail -8
