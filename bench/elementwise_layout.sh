#!/usr/bin/env bash
# Elementwise operations on arrays of 2-3 dimensions that do not merge into one (slices,
# broadcast rows and columns, a transposed operand) on the GPU machine: the CPU device (16 Xeon
# cores) beside NumPy and the H200 beside CuPy, each with the index space's dimension 0 on the
# first axis (before) and on the last (now) in the same process (bench/elementwise_layout.py),
# then the elementwise, array and CUDA grid tests on both devices.
#   run(command="bash bench/elementwise_layout.sh", carry=["kapi/_lib", ".carry/debs", ".carry/fixtures"])
# ONLY="cpu gpu pytest" picks steps; ROUNDS (5); VARIANTS (before,now); TALL (log2 sizes of
# (N, 3) + (3,) cases, into a new array and into out=).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
[ -f .carry/fixtures/fakecuda/libkapi_fake_cuda.so ] && export KAPI_FAKE_CUDA=$PWD/.carry/fixtures/fakecuda
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
step cpu timeout 200 python3 bench/elementwise_layout.py --device cpu --rounds "${ROUNDS:-5}" \
  --variants "${VARIANTS:-before,now}" --tall "${TALL:-}" --json "$OUT/elementwise_layout_cpu.json" 2>&1 |
  tee "$OUT/elementwise_layout_cpu.log"
step gpu timeout 150 python3 bench/elementwise_layout.py --device gpu --rounds "${ROUNDS:-5}" \
  --variants "${VARIANTS:-before,now}" --tall "${TALL:-}" --json "$OUT/elementwise_layout_gpu.json" 2>&1 |
  tee "$OUT/elementwise_layout_gpu.log"
step pytest timeout 300 python3 -m pytest -q -n 15 -p no:cacheprovider -rs \
  tests/numeric/test_numpy_ufuncs.py tests/numeric/test_array_ops.py tests/numeric/test_lazy.py \
  tests/numeric/test_array_api.py tests/numeric/test_elementwise_streaming.py \
  tests/drivers/cuda/test_cuda_grid.py 2>&1 | tail -12
