#!/usr/bin/env bash
# The last GPU peers in one device call (about 3 minutes on the H100), kapi beside CuPy / CUDA
# in the same process or the same run, each change after (defaults) and before (its switch off):
#   - kapi.reduce("max") and Generator.standard_normal float32, 2^27 (bench/primitives.py, with
#     CuPy): defaults, then KAPI_REDUCE_VIA_METHODS=0 (kapi.reduce's own generic kernel, read
#     at import); the random kernels' shapes in one process (bench/random_variants.py: SINCOS
#     off is the old normals with libdevice cosf/sinf; staging and group sizes);
#   - the empty launch from Python (bench/launch.py, CuPy RawKernel beside it);
#   - the empty launch from C through the runtime (bench/launch_c.c) beside the same launches
#     made with the CUDA driver API alone (bench/launch_cuda_c.c), both built here with gcc
#     (the machine has no cmake).
# From the checkout (the .deb files as for bench/gpu_run.sh: LLVM 15, the translator, the
# Level Zero loader):
#   run(command="bash bench/gpu_peers.sh", carry=["kapi/_lib", ".carry/debs"])
# Logs go to $OUT (or ./gpu-out elsewhere). SKIP_BEFORE=1 leaves out the switched-off runs.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
mkdir -p /tmp/kapi-bin
nvidia-smi -L

# 1. reduce and random against CuPy (cumsum comes along: primitives.py's fixed order), then
# kapi.reduce's old path alone, then the random kernels' shapes (SINCOS off: the old normals).
step "primitives, defaults (after)" timeout 120 python3 bench/primitives.py --device gpu \
  --log2n 27 --no-sort --json "$OUT/primitives_gpu.json" 2>&1 | tee "$OUT/primitives_after.log"
if [ "${SKIP_BEFORE:-0}" != 1 ]; then
  step "primitives, KAPI_REDUCE_VIA_METHODS=0 (before)" env KAPI_REDUCE_VIA_METHODS=0 \
    timeout 60 python3 bench/primitives.py --device gpu --log2n 27 --only reduce 2>&1 |
    tee "$OUT/primitives_before.log"
  step "random variants" timeout 90 python3 bench/random_variants.py --device gpu 2>&1 |
    tee "$OUT/random_variants.log"
fi

# 2. The empty launch from Python, CuPy's RawKernel beside it.
step "launch from Python" env BENCH_DEVICE=gpu timeout 60 python3 bench/launch.py 2000 15 --json "$OUT/launch_gpu.json" 2>&1 |
  tee "$OUT/launch_py.log"

# 3. The empty launch from C: kapi's runtime, then the CUDA driver API alone, twice each.
CC=$(command -v gcc || command -v cc)
$CC -O3 -march=native -Iruntime/include -Ibench bench/launch_c.c -o /tmp/kapi-bin/launch_c \
  -DKAPI_LIB_DIR="\"$PWD/kapi/_lib\"" -DKERNELS_SPV="\"/nonexistent.spv\"" -L"$PWD/kapi/_lib" \
  -lkapi_runtime -ldl -Wl,-rpath,"$PWD/kapi/_lib" -Wl,--allow-shlib-undefined &&
  $CC -O3 bench/launch_cuda_c.c -o /tmp/kapi-bin/launch_cuda_c -ldl ||
  echo "build of the C benchmarks failed"
for round in 1 2; do
  step "launch from C, kapi runtime (round $round)" env KAPI_BENCH_DRIVER=kapi-cuda timeout 60 \
    /tmp/kapi-bin/launch_c 2000 25 2>&1 | tee -a "$OUT/launch_c.log"
  step "launch from C, CUDA driver API alone (round $round)" timeout 60 \
    /tmp/kapi-bin/launch_cuda_c 2000 25 2>&1 | tee -a "$OUT/launch_c.log"
done

echo "== summary (kapi, peer, ratio; after then before)"
grep -h -E 'kapi.reduce\("max"\)|kapi Generator\.(standard_normal|random)' \
  "$OUT"/primitives_after.log "$OUT"/primitives_before.log 2>/dev/null
grep -h -E 'cupy:|ms' "$OUT/random_variants.log" 2>/dev/null
grep -h -E 'submit only|median' "$OUT/launch_py.log"
grep -h -E 'asynchronous|synchronous' "$OUT/launch_c.log"
