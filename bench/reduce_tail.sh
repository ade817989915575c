#!/usr/bin/env bash
# Where the CPU device's reductions of 2^24 float32 lose to the triad on the GPU machine's 16
# Xeon cores, where the L3 holds a reduction's 64 MiB: what C threads read there by access
# pattern (.carry/bin/l3read, carried: gcc -O3 -march=x86-64-v3 -static -pthread
# bench/l3read.c -o .carry/bin/l3read), how long the pool's launcher waits for its workers
# after its own share (KAPI_CPU_POOL_STATS=1), and smaller work-groups with the same chunks per
# work-item (argred.py's cpuwWgG: the launch's last piece shorter), in both orders.
#   run(command="bash bench/reduce_tail.sh", carry=["kapi/_lib", ".carry/debs", ".carry/bin"])
# ONLY="l3read stats argred argred-rev big primitives" picks steps; VARIANTS, LOG2N (24), ROUNDS (7).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"
lscpu | grep -E 'L[123]|NUMA|Socket|Thread' || true
L=${LOG2N:-24}
[ -x .carry/bin/l3read ] && step l3read timeout 60 .carry/bin/l3read "$L" 9 2>&1 | tee "$OUT/tail_l3read.log"

stats() { # $1: what to run on 2^L float32 (x, a, b, c defined), 400 calls, waits every 4
  KAPI_CPU_POOL_STATS=1 timeout 60 python3 - "$L" "$1" <<'PY'
import sys, numpy as np, kapi
from primitives import triad
n = 1 << int(sys.argv[1]); dev = kapi.Device("cpu")
x = kapi.asarray(np.random.default_rng(0).random(n, dtype=np.float32), device=dev)
a, b, c = (kapi.ones(n, dtype=np.float32, device=dev) for _ in range(3))
def tri():
    kapi.call_kernel(triad, kapi.Range(n), a, b, c, np.float32(3))
f = eval("lambda: " + sys.argv[2])
for i in range(400):
    f()
    if i % 4 == 3:
        dev.default_queue.wait()
dev.default_queue.wait()
print("ran", sys.argv[2])
PY
}
export PYTHONPATH=$PWD/bench:$PYTHONPATH
step stats-max stats "x.max()"
step stats-sum stats "x.sum()"
step stats-triad stats "tri()"

A=(python3 bench/argred.py --device cpu --rounds "${ROUNDS:-7}" --no-check-small)
V=${VARIANTS:-cpulanes,cpuw16g16,cpuw8g32,cpuw32g8}
step argred timeout 150 "${A[@]}" --log2n "$L" --variants "$V" 2>&1 | tee "$OUT/tail_argred.log"
RV=$(echo "$V" | tr ',' '\n' | tac | paste -sd, -)
step argred-rev timeout 150 "${A[@]}" --log2n "$L" --variants "$RV" 2>&1 | tee "$OUT/tail_argred_rev.log"
step big timeout 150 "${A[@]}" --log2n 27 --rows max,sum,argmax --variants "$V" 2>&1 | tee "$OUT/tail_big.log"
step primitives timeout 60 python3 bench/primitives.py --device cpu --log2n "$L" --only reduce \
  2>&1 | tee "$OUT/tail_primitives.log"
