#!/usr/bin/env bash
# Where the empty launch from C through kapi's runtime (bench/launch_c.c) loses to the same
# launches made with the CUDA driver API alone (bench/launch_cuda_c.c) on the GPU machine: both
# built here, alternating, ROUNDS times, in three settings of kapi's process:
# - "all": the default drivers (the CPU driver is loaded too: its threads exist, idle);
# - "cuda": KAPI_DRIVERS=cuda, the CUDA driver alone;
# - "short": KAPI_DRIVERS=cuda with 200 calls per batch instead of 2000 (the launch queue of the
#   CUDA driver never fills: what the host side alone costs);
# - "all-t1": the default drivers, the CPU driver with one thread (KAPI_CPU_THREADS=1: no
#   workers of its own);
# - "all-nolib": the default drivers with the CPU driver's library absent from the list
#   (KAPI_DRIVERS=cuda,intel: the Intel GPU entry as "all" has it, no CPU driver).
# Each round runs the settings in a different order (rotated), so that a setting is not always
# first after the previous round's.
# The bare driver runs with 2000 and 200 calls per batch too. Medians over 25 batches each.
#   run(command="bash bench/launch_gap.sh", carry=["kapi/_lib", ".carry/debs"])
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
mkdir -p /tmp/kapi-bin
CC=$(command -v gcc || command -v cc)
$CC -O3 -march=native -Iruntime/include -Ibench bench/launch_c.c -o /tmp/kapi-bin/launch_c \
  -DKAPI_LIB_DIR="\"$PWD/kapi/_lib\"" -DKERNELS_SPV="\"/nonexistent.spv\"" -L"$PWD/kapi/_lib" \
  -lkapi_runtime -ldl -Wl,-rpath,"$PWD/kapi/_lib" -Wl,--allow-shlib-undefined &&
  $CC -O3 bench/launch_cuda_c.c -o /tmp/kapi-bin/launch_cuda_c -ldl || {
  echo "build of the C benchmarks failed"
  exit 1
}
SETTINGS=(all cuda short bare bare-short all-t1 all-nolib)
for r in $(seq "${ROUNDS:-4}"); do
  for ((s = 0; s < ${#SETTINGS[@]}; s++)); do
    v=${SETTINGS[$(((s + r) % ${#SETTINGS[@]}))]}
    case $v in
    all) out=$(KAPI_BENCH_DRIVER=kapi-cuda timeout 60 /tmp/kapi-bin/launch_c 2000 25 2>&1) ;;
    cuda) out=$(KAPI_DRIVERS=cuda KAPI_BENCH_DRIVER=kapi-cuda timeout 60 /tmp/kapi-bin/launch_c 2000 25 2>&1) ;;
    short) out=$(KAPI_DRIVERS=cuda KAPI_BENCH_DRIVER=kapi-cuda timeout 60 /tmp/kapi-bin/launch_c 200 25 2>&1) ;;
    bare) out=$(timeout 60 /tmp/kapi-bin/launch_cuda_c 2000 25 2>&1) ;;
    bare-short) out=$(timeout 60 /tmp/kapi-bin/launch_cuda_c 200 25 2>&1) ;;
    all-t1) out=$(KAPI_CPU_THREADS=1 KAPI_BENCH_DRIVER=kapi-cuda timeout 60 /tmp/kapi-bin/launch_c 2000 25 2>&1) ;;
    all-nolib) out=$(KAPI_DRIVERS=cuda,intel KAPI_BENCH_DRIVER=kapi-cuda timeout 60 /tmp/kapi-bin/launch_c 2000 25 2>&1) ;;
    esac
    sync=$(echo "$out" | sed -n 's/.*synchronous (launch + wait) *\([0-9.]*\).*/\1/p; s/.*synchronous[^0-9]*\([0-9.]*\) us.*/\1/p' | head -1)
    asyn=$(echo "$out" | sed -n 's/.*asynchronous[^0-9]*\([0-9.]*\) us.*/\1/p' | head -1)
    printf 'round %s %-10s sync %6s us  async %6s us\n' "$r" "$v" "$sync" "$asyn"
    [ -z "$asyn" ] && echo "$out" | tail -5
  done
done
