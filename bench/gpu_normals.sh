#!/usr/bin/env bash
# kapi.random's normals on the GPU in one device call (under 150 s), kapi beside CuPy in the
# same process, after (defaults) and before (switches read at import / per finalisation):
#   KAPI_PHILOX32=1     the Philox rounds on uint32 words (kapi/random.py; random_variants' row)
#   KAPI_CUDA_NARROW=0  the NVPTX finaliser leaves 64-bit arithmetic on values below 2^32 in
#                       64 bits (compiler/src/finalise/nvptx/finalise_nvptx_narrow.c, before)
#   KAPI_CUDA_ALIGNED=0 no aligned entries (16-byte aligned pointers: st.global.v4 where a
#                       work-item writes 4 neighbours; finalise_nvptx_align.c, before)
#   KAPI_RANDOM_WRITE   the staged kernel's write-out (random_variants.py's rows)
#   1. bench/random_variants.py: the random kernels' shapes (counters per work-item, group
#      sizes, uint32 or uint64 Philox words) beside CuPy's default_rng (XORWOW) and its
#      Philox4x3210, each variant's normals checked against the default's; defaults, and
#      then each finaliser switch off (other processes: the finaliser reads them per module and
#      the native cache keys on KAPI_CUDA_*);
#   2. bench/primitives.py --only random (the issue's figure), defaults (before, all four
#      switches off: 0.316 ms normals, 0.227 ms uniforms in the first call, RESULTS.md);
#   3. bench/aligned_entries.py (a kernel reading and writing 4 or 2 neighbours per work-item on
#      whole arrays and on views one element in, beside CuPy's copy), and the first
#      standard_normal call with aligned entries on and off (JIT cache off);
#   4. tests on the CUDA device: the random generator's stream, the narrowing pass's kernel
#      against NumPy, views at aligned and odd offsets (aligned entry or kernel), fastmath,
#      and the differential fuzzer (every kernel through both finaliser steps, against the
#      reference interpreter).
# From the checkout (the .deb files as for bench/gpu_run.sh; pytest-xdist from .whl; the fake
# libcuda from build/runtime/drivers/cuda/tests copied to .carry/fixtures/fakecuda):
#   run(command="bash bench/gpu_normals.sh",
#       carry=["kapi/_lib", ".carry/debs", ".whl", ".carry/fixtures"])
# Logs go to $OUT (or ./gpu-out elsewhere).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels .whl/*.whl
nvidia-smi -L
export KAPI_CACHE_DIR=/tmp/kapi-cache-normals
# The fake libcuda (the aligned entry's choice per launch) travels beside the fixtures.
if [ -f .carry/fixtures/fakecuda/libkapi_fake_cuda.so ]; then
  export KAPI_FAKE_CUDA=$PWD/.carry/fixtures/fakecuda
fi

step "random variants, defaults (after)" timeout 35 \
  python3 bench/random_variants.py --device gpu 2>&1 | tee "$OUT/random_variants.log"
step "random variants, KAPI_CUDA_NARROW=0" env KAPI_CUDA_NARROW=0 timeout 15 \
  python3 bench/random_variants.py --device gpu --rows 3 2>&1 |
  tee "$OUT/random_variants_nonarrow.log"
step "random variants, KAPI_CUDA_ALIGNED=0" env KAPI_CUDA_ALIGNED=0 timeout 15 \
  python3 bench/random_variants.py --device gpu --rows 2 2>&1 |
  tee "$OUT/random_variants_noaligned.log"
step "primitives random, defaults (after)" timeout 15 python3 bench/primitives.py --device gpu \
  --log2n 27 --only random 2>&1 | tee "$OUT/primitives_random_after.log"
step "aligned entries on a 4- and 2-neighbour kernel, beside CuPy's copy" timeout 15 \
  python3 bench/aligned_entries.py --device gpu 2>&1 | tee "$OUT/aligned_entries.log"
# First call (compile, PTX, the driver's JIT with its cache off), aligned entries on and off:
# the normals kernel's aligned copy is one more entry to finalise and JIT.
FIRST='import os, time, numpy as np, kapi
t = time.perf_counter()
g = kapi.random.default_rng(1, device="gpu")
z = g.standard_normal(1 << 20, dtype=np.float32).asnumpy()
a = os.environ["KAPI_CUDA_ALIGNED"]
print(f"KAPI_CUDA_ALIGNED={a}: first standard_normal call {(time.perf_counter() - t) * 1e3:.0f} ms")'
for a in 1 0; do
  step "first call, KAPI_CUDA_ALIGNED=$a" env KAPI_CUDA_ALIGNED=$a CUDA_CACHE_DISABLE=1 \
    KAPI_CACHE=0 timeout 10 python3 -c "$FIRST" 2>&1 | tee -a "$OUT/first_call.log"
done
step "tests on the CUDA device" env KAPI_DRIVERS=cuda timeout 30 python3 -m pytest -q \
  -p no:cacheprovider -rfE -n 8 tests/numeric/test_primitives_random.py \
  tests/drivers/cuda/test_nvptx_narrow.py tests/drivers/cuda/test_nvptx_aligned.py \
  tests/kernel/test_fastmath.py 2>&1 | grep -v -i benchmark | tail -15 | tee "$OUT/tests.log"
step "fuzzer on the CUDA device" env KAPI_DRIVERS=cuda KAPI_FUZZ_SMALL_KERNELS=150 \
  KAPI_FUZZ_KERNELS=12 timeout 30 python3 -m pytest -q -p no:cacheprovider -rfE -n 12 \
  tests/reliability/test_fuzz.py 2>&1 | grep -v -i benchmark | tail -15 | tee "$OUT/fuzz.log"

echo "== summary"
for f in random_variants random_variants_nonarrow random_variants_noaligned; do
  echo "-- $f"; grep -h -E 'cupy|ms' "$OUT/$f.log"
done
grep -h -E 'Generator\.(standard_normal|random)' "$OUT"/primitives_random_after.log
grep -h 'first standard' "$OUT/first_call.log"
grep -h -E 'GB/s' "$OUT/aligned_entries.log"
tail -1 "$OUT/tests.log" "$OUT/fuzz.log"
