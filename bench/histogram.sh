#!/usr/bin/env bash
# kapi.histogram on the GPU machine: the CPU device (16 Xeon cores) beside NumPy, the H200
# beside CuPy, each beside kapi's sorting path in the same process (bench/histogram.py), and
# the histogram, indexing, CUDA grid and reduction tests on both devices; cpu-w and gpu-w the
# same with float32 weights.
# The fake libcuda of the grid test travels in .carry/fixtures/fakecuda (copied from
# build/runtime/drivers/cuda/tests):
#   run(command="bash bench/histogram.sh", carry=["kapi/_lib", ".carry/debs", ".carry/fixtures"])
# ONLY="cpu gpu cpu-w gpu-w pytest" picks steps; ROUNDS (5).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
[ -f .carry/fixtures/fakecuda/libkapi_fake_cuda.so ] && export KAPI_FAKE_CUDA=$PWD/.carry/fixtures/fakecuda
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"
step cpu timeout 200 python3 bench/histogram.py --device cpu --log2n 24 --rounds "${ROUNDS:-5}" \
  --json "$OUT/histogram_cpu.json" 2>&1 | tee "$OUT/histogram_cpu.log"
step gpu timeout 150 python3 bench/histogram.py --device gpu --log2n 27 --rounds "${ROUNDS:-5}" \
  --json "$OUT/histogram_gpu.json" 2>&1 | tee "$OUT/histogram_gpu.log"
step cpu-w timeout 200 python3 bench/histogram.py --device cpu --log2n 24 --rounds "${ROUNDS:-5}" \
  --weights --json "$OUT/histogram_w_cpu.json" 2>&1 | tee "$OUT/histogram_w_cpu.log"
step gpu-w timeout 150 python3 bench/histogram.py --device gpu --log2n 27 --rounds "${ROUNDS:-5}" \
  --weights --json "$OUT/histogram_w_gpu.json" 2>&1 | tee "$OUT/histogram_w_gpu.log"
step pytest timeout 240 python3 -m pytest -q -n 15 -p no:cacheprovider -rs \
  tests/numeric/test_histogram.py tests/numeric/test_array_api.py \
  tests/drivers/cuda/test_cuda_grid.py tests/numeric/test_reduce_schemes.py 2>&1 | tail -12
