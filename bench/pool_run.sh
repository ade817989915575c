#!/usr/bin/env bash
# The CPU device's launch cost and reductions on the GPU machine's cores, the pool's scheme
# before (KAPI_CPU_POOL=0: fixed chunks, poll-count spin, every sleeper woken by the launcher,
# cost learned from the whole launch) and after (the default: guided chunks, time-bounded poll,
# wake tree; KAPI_CPU_LEARN=1 also the cost learned from the launcher's own groups), in one
# device call (under 120 s on the 16-core host):
#   0. build/bench/pool_c (bench/pool_c.c; carry it): the pool's own cost per launch of 64
#      empty groups, of 64 groups of 2 us, and after 1 ms idle, against the participants;
#   1. bench/pool_launch.py: per-call times of a triad at 2^10..2^24, after an idle gap, and
#      x.max()/x.argmax() of 2^24, in fresh processes at THREADS pool threads (all cores by
#      default; KAPI_CPU_THREADS), the variants alternating; then the pool's own account
#      (KAPI_CPU_POOL_STATS=1) of x.max() and a 2^17 triad; chunk2us: chunks down to 2 us of
#      work (KAPI_CPU_CHUNK_NS=2000; 8 us by default), so small launches use more workers;
#   2. bench/argred.py --device cpu --log2n 24 under each scheme (argmax/argmin/max beside the
#      triad);
#   3. bench/primitives.py --device cpu --log2n 24 --only reduce,cumsum under each scheme.
# Every result is checked against NumPy first. From the checkout:
#   run(command="bash bench/pool_run.sh", carry=["kapi/_lib", ".carry/debs", "build/bench/pool_c"])
# Logs go to $OUT (or ./gpu-out elsewhere). ONLY="launch argred primitives" picks steps.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
N=$(nproc)
echo "== $(date -u +%FT%TZ) $N cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "cpuidle: $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null)" \
  "$(cat /sys/devices/system/cpu/cpu1/cpuidle/state*/name 2>/dev/null | tr '\n' ' ')" \
  "governor: $(cat /sys/devices/system/cpu/cpu1/cpufreq/scaling_governor 2>/dev/null)"
THREADS=${THREADS:-$N}

# The pool alone, without Python (built here: carry build/bench/pool_c).
if [ -x build/bench/pool_c ]; then
  step pool-c timeout 20 build/bench/pool_c 1 2 4 8 "$N" 2>&1 | tee "$OUT/pool_c.log"
fi

step launch timeout 55 python3 bench/pool_launch.py --threads "$THREADS" --rounds "${ROUNDS:-2}" --stats \
  --variant before:KAPI_CPU_POOL=0 --variant learn1:KAPI_CPU_LEARN=1 \
  --variant chunk2us:KAPI_CPU_CHUNK_NS=2000 --json "$OUT/pool_launch.json" 2>&1 | tee "$OUT/pool_launch.log"

for pool in 0 1; do
  step argred env KAPI_CPU_POOL=$pool timeout 12 python3 bench/argred.py --device cpu \
    --log2n 24 --rounds 3 --variants blocks 2>&1 | tee "$OUT/argred_pool$pool.log"
done
for pool in 0 1; do
  step primitives env KAPI_CPU_POOL=$pool timeout 11 python3 bench/primitives.py --device cpu \
    --log2n 24 --only reduce,cumsum 2>&1 | tee "$OUT/primitives_pool$pool.log"
done
