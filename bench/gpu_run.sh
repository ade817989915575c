#!/usr/bin/env bash
# One device call on the GPU machine: the whole pytest suite (parametrised over every device,
# so the CUDA device too), then bench/gpu.py (issue 5) and the CPU benchmarks on that host.
# The machine has no LLVM 15, translator or Level Zero loader: Debian 12's .deb files travel
# in .carry/debs (`apt-get download libllvm15 libllvmspirvlib15 libze1 libz3-4`) and the build
# made here travels as kapi/_lib and .carry/bin. From the lead's checkout:
#   cp build/bench/stream_triad build/bench/launch_c \
#      build/runtime/drivers/cuda/tests/cuda_driver_test .carry/bin/
#   mkdir -p .carry/fixtures && cp build/compiler/tests/nvptx/fixtures/*.spv .carry/fixtures/
#   run(command="bash bench/gpu_run.sh",
#       carry=["kapi/_lib", ".carry/debs", ".carry/bin", ".carry/fixtures"])
# Logs go to $OUT (or ./gpu-out when run elsewhere).
set -uo pipefail
cd "$(dirname "$0")/.."
# The C benchmarks find kapi/_lib through their $ORIGIN rpath or KAPI_LIB_DIR (bench_common.h).
. bench/device_env.sh
nvidia-smi -L
python3 -m kapi 2>&1 | tee "$OUT/devices.txt"
# `bash bench/gpu_run.sh tests` runs only the tests, `... bench` only the benchmarks (each call
# of the device tool has 10 minutes), `... fuzz` only the long fuzz run; no argument: tests and
# benchmarks.
WHAT=${1:-all}
if [ "$WHAT" != bench ] && [ "$WHAT" != fuzz ]; then
[ "${SKIP_PYTEST:-0}" = 1 ] || step pytest timeout "${PYTEST_TIMEOUT:-270}" python3 -m pytest -q -p no:cacheprovider \
  --maxfail=40 -rfEs tests 2>&1 | tee "$OUT/pytest.log" | tail -60
if [ -x .carry/bin/cuda_driver_test ]; then
  step cuda-driver-test timeout 120 .carry/bin/cuda_driver_test "$PWD/kapi/_lib/libze_kapi_cuda.so" \
    "$PWD/.carry/fixtures" 2>&1 | tee "$OUT/cuda_driver_test.log" | tail -30
fi
fi
[ "$WHAT" = tests ] && exit 0
if [ "$WHAT" = fuzz ]; then
  # Issue 12's long fuzz run on every device, one process per core (docs/reliability.md):
  # FUZZ_FIRST resumes (the previous call's summary gives done_below), FUZZ_BUDGET seconds,
  # FUZZ_CASES cases per kernel (1: the 100,000-kernel run), FUZZ_DEVICE one device filter.
  step fuzz timeout $((${FUZZ_BUDGET:-480} + 90)) python3 tools/fuzz/kfuzz.py --seed "${FUZZ_SEED:-2000}" --kernels "${FUZZ_KERNELS:-12500}" \
    --first "${FUZZ_FIRST:-0}" --cases "${FUZZ_CASES:-8}" --jobs "${FUZZ_JOBS:-$(nproc)}" --budget "${FUZZ_BUDGET:-480}" \
    ${FUZZ_DEVICE:+--device "$FUZZ_DEVICE"} \
    --out /tmp/fuzz-findings 2>&1 | tee "$OUT/fuzz.log" | tail -40
  # the device tool brings back at most 8 files: the findings travel as one archive
  [ -d /tmp/fuzz-findings ] && tar -czf "$OUT/fuzz-findings.tgz" -C /tmp fuzz-findings
  exit 0
fi
step gpu-bench timeout 200 python3 bench/gpu.py 2>&1 | tee "$OUT/gpu_bench.log"
# Cold start and the disk cache (issue 11): fresh processes on every device, beside Numba's.
step cold-start timeout 300 python3 bench/cold_start.py --runs 5 2>&1 | tee "$OUT/cold_start.log"
# Coarsening (finalise_nvptx_coarsen.c): off, and other block sizes, beside the default above.
for c in ${COARSEN_VARIANTS:-0 128 512}; do
  step "saxpy-coarsen-$c" env KAPI_CUDA_COARSEN=$c timeout 60 python3 bench/gpu.py \
    --only saxpy,black-scholes 2>&1 | tee -a "$OUT/gpu_bench.log"
done
# Array programming (issue 13): fused and lazy chains vs CuPy's ElementwiseKernel, sum vs
# cupy.sum (data made by CuPy on the device; NumPy checks on 2^16 only: < 90 s).
step array-ops timeout 120 python3 bench/array_ops.py --device gpu --log2n 28 2>&1 | tee -a "$OUT/gpu_bench.log"
# Parallel primitives (issue 13 item 4): sort of 2^27 uint32 vs cupy.sort, cumsum, random.
step primitives timeout 120 python3 bench/primitives.py --device gpu --log2n 27 2>&1 | tee -a "$OUT/gpu_bench.log"
# The same on the host's cores (CPU device) beside NumPy and Numba @vectorize(target="parallel").
step array-ops-cpu timeout 120 python3 bench/array_ops.py --device cpu --log2n 24 2>&1 | tee -a "$OUT/cpu.log"
# dpjit prange reductions (issue 14) on the GPU and on the host's cores, beside Numba parallel.
step dpjit-reduce-gpu timeout 120 python3 bench/dpjit_reduce.py --device gpu --log2n 26 2>&1 | tee -a "$OUT/gpu_bench.log"
step dpjit-reduce-cpu timeout 120 python3 bench/dpjit_reduce.py --device cpu --log2n 24 2>&1 | tee -a "$OUT/cpu.log"
# ... and with the GPU's kernel shape (a work-group tree) on the CPU device, the shape it replaced.
step dpjit-reduce-cpu-tree env KAPI_DPJIT_REDUCE=tree timeout 120 python3 bench/dpjit_reduce.py --device cpu --log2n 24 2>&1 | tee -a "$OUT/cpu.log"
# dpbench workloads as @dpjit + prange: CPU device vs Numba parallel, GPU vs numba-cuda.
step dpbench timeout 170 python3 bench/dpbench.py 2>&1 | tee -a "$OUT/dpbench.log"
# What a dpjit call costs besides its kernel: the l2 norm's reduction from 2^10 (fixed cost
# only) to dpbench's 2^25, beside numba-cuda / Numba parallel.
step dpjit-overhead-gpu timeout 120 python3 bench/dpjit_overhead.py --device gpu 2>&1 | tee -a "$OUT/dpbench.log"
step dpjit-overhead-cpu timeout 120 python3 bench/dpjit_overhead.py --device cpu --log2n 10,13,16,19,22 2>&1 | tee -a "$OUT/dpbench.log"
step group-reduce timeout 120 python3 bench/group_reduce.py 2>&1 | tee -a "$OUT/gpu_bench.log"
if [ -x .carry/bin/launch_c ]; then
  step gpu-launch-c env KAPI_BENCH_DRIVER=kapi-cuda timeout 30 .carry/bin/launch_c 2000 25 2>&1 | tee -a "$OUT/gpu_bench.log"
fi
# What an assert costs (bench/assert_cost.py: every device, the H200 and the host CPU).
step assert-cost timeout 120 python3 bench/assert_cost.py 2>&1 | tee "$OUT/assert_cost.log"
[ "${SKIP_CPU:-0}" = 1 ] && exit 0
if [ -x .carry/bin/stream_triad ]; then
  step cpu-triad env KAPI_DRIVERS=cpu timeout 60 .carry/bin/stream_triad 67108864 15 2>&1 | tee "$OUT/cpu.log"
  step cpu-launch env KAPI_DRIVERS=cpu timeout 30 .carry/bin/launch_c 2000 25 2>&1 | tee -a "$OUT/cpu.log"
  # OpenMP binding pins the main thread; the CPU driver's pool must not inherit that mask.
  step cpu-triad-omp-bound env KAPI_DRIVERS=cpu OMP_PROC_BIND=spread OMP_PLACES=cores timeout 60 \
    .carry/bin/stream_triad 67108864 15 2>&1 | tee -a "$OUT/cpu.log"
fi
# Barrier kernels on the CPU device (region scheme) beside Numba parallel, on this host's cores.
# The reduction also without prefetching the next batch (`prefetch 0`) and as by default.
step cpu-barrier env KAPI_DEFAULT_DEVICE=cpu timeout 120 python3 bench/cpu_barrier.py --repeat 21 --prefetch 0,auto 2>&1 | tee -a "$OUT/cpu.log"
# Where a tree reduction's time per group goes on this host (issue 10): in cache, from memory.
step cpu-tree-steps bash -c 'timeout 120 python3 bench/cpu_tree_steps.py && timeout 120 python3 bench/cpu_tree_steps.py --log2n 24 --repeat 15 --flush 512' 2>&1 | tee -a "$OUT/cpu.log"
step cpu-pairwise timeout 90 python3 bench/pairwise_cpu.py 2>&1 | tee -a "$OUT/cpu.log"
# Parallel primitives on the CPU device beside NumPy (issue 13 item 4), on this host's cores.
step cpu-primitives timeout 120 python3 bench/primitives.py --device cpu --log2n 24 2>&1 | tee -a "$OUT/cpu.log"
