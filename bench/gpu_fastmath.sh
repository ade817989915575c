#!/usr/bin/env bash
# fastmath on the GPU in one device call (under 3 minutes), kapi beside CuPy in the same
# process, after (defaults) and before (KAPI_RANDOM_FASTMATH=0, read at import):
#   1. bench/fastmath.py: standard_normal float32 2^27 with the normal kernels accurate, with
#      fastmath={"afn"} (the default) and fastmath=True, beside CuPy's Generator (each
#      variant's normals checked: moments, KS, against the accurate ones); then a math kernel
#      (sqrt, log, exp, sin, cos, division) accurate and fastmath=True beside CuPy
#      ElementwiseKernels without and with --use_fast_math, each checked against NumPy;
#   2. bench/primitives.py --only random (the issue's figure: standard_normal float32 2^27
#      beside CuPy), defaults, then KAPI_RANDOM_FASTMATH=0;
#   3. bench/random_variants.py (the random kernels' shapes: staged or not, group sizes,
#      counters per work-item), now with fastmath, beside CuPy's default (XORWOW) and its
#      Philox4x3210 (kapi's algorithm), to see which shape is fastest once log/sqrt are cheap;
#   4. the fastmath and random tests on the CUDA device (approximate PTX on the GPU itself).
# From the checkout (the .deb files as for bench/gpu_run.sh: LLVM 15, the translator, the
# Level Zero loader):
#   run(command="bash bench/gpu_fastmath.sh", carry=["kapi/_lib", ".carry/debs"])
# Logs go to $OUT (or ./gpu-out elsewhere).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
nvidia-smi -L

step "fastmath.py (normals: accurate / afn / fast; math kernel)" timeout 60 \
  python3 bench/fastmath.py --device gpu 2>&1 | tee "$OUT/fastmath.log"
step "primitives random, defaults (after)" timeout 35 python3 bench/primitives.py --device gpu \
  --log2n 27 --only random 2>&1 | tee "$OUT/primitives_random_after.log"
step "primitives random, KAPI_RANDOM_FASTMATH=0 (before)" env KAPI_RANDOM_FASTMATH=0 \
  timeout 35 python3 bench/primitives.py --device gpu --log2n 27 --only random 2>&1 |
  tee "$OUT/primitives_random_before.log"
step "random variants (fastmath on; counters per work-item)" timeout 75 \
  python3 bench/random_variants.py --device gpu 2>&1 | tee "$OUT/random_variants.log"
step "tests on the CUDA device" env KAPI_DRIVERS=cuda timeout 75 python3 -m pytest -q \
  -p no:cacheprovider -rfE tests/kernel/test_fastmath.py tests/drivers/cuda/test_fastmath_ptx.py \
  tests/numeric/test_primitives_random.py \
  2>&1 | tail -25 | tee "$OUT/tests.log"

echo "== summary (kapi, peer, ratio)"
grep -h -E 'kapi |cupy' "$OUT/fastmath.log"
grep -h -E 'Generator\.standard_normal' "$OUT"/primitives_random_after.log \
  "$OUT"/primitives_random_before.log
grep -h -E 'cupy:|ms' "$OUT/random_variants.log"
tail -1 "$OUT/tests.log"
