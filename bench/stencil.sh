#!/usr/bin/env bash
# The CPU device's 5-point stencil against Numba parallel on the GPU machine's 16 cores, where
# bench/numba_cpu.py measured it at 0.44x (every other kernel faster than Numba). One process
# per pool setting (the pool reads its settings once per process), each printing kapi beside
# Numba from the same process (bench/stencil_probe.py: alternating as numba_cpu.py times
# them, back to back, and after a sleep; every output checked against NumPy and Numba), with
# the pool's own account (KAPI_CPU_POOL_STATS=1: when workers joined, groups run outside their
# home block, workers that changed CPU between launches). Then bench/numba_cpu.py on the
# stencil and its neighbours under the default and the candidate settings. Under 100 s on
# the 16-core host. From the checkout:
#   run(command="bash bench/stencil.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS="name:ENV=V+ENV=V ..." replaces the list of pool settings; ONLY="probe numba" picks
# steps; logs go to $OUT (or ./gpu-out elsewhere).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu KAPI_CPU_POOL_STATS=1
echo "== $(date -u +%FT%TZ) $(nproc) cpus, $(lscpu | sed -n 's/^Model name: *//p')," \
  "L2 $(lscpu | sed -n 's/^L2 cache: *//p'), L3 $(lscpu | sed -n 's/^L3 cache: *//p')," \
  "threads per core $(lscpu | sed -n 's/^Thread(s) per core: *//p')"
VARIANTS=${VARIANTS:-"default: wide1:KAPI_CPU_WIDE=1 wide2:KAPI_CPU_WIDE=2 \
wake15:KAPI_CPU_WAKE=15 fanout15:KAPI_CPU_FANOUT=15 pin:KAPI_CPU_PIN=1 \
pinwide2:KAPI_CPU_PIN=1+KAPI_CPU_WIDE=2 spin2ms:KAPI_CPU_SPIN_US=2000 legacy:KAPI_CPU_POOL=0"}
NEIGHBOURS=stencil-f32,triad-f32,saxpy-f32,rowsum-f32,matmul-naive-f32

# env NAME=VALUE arguments for a variant spec "name:A=1+B=2"
variant_env() { local spec=${1#*:}; [ -n "$spec" ] && tr '+' ' ' <<<"$spec"; }

probe() {
  for v in $VARIANTS; do
    local name=${v%%:*} scales=0
    [ "$name" = default ] && scales=-2,0,2
    # shellcheck disable=SC2046
    env $(variant_env "$v") PROBE_LABEL="$name" timeout 25 python3 bench/stencil_probe.py \
      --scales="$scales" --repeat 15 2>&1
  done
}
step probe probe | tee "$OUT/stencil_probe.log"

# The stencil's host code on this CPU: its vector widths, and the JIT's target.
ir() {
  KAPI_CACHE=0 KAPI_DUMP=host python3 - <<'PY' 2>&1 | grep -o '<[0-9]* x float>\|"target-cpu"="[a-z0-9_-]*"\|"prefer-vector-width"="[0-9]*"' | sort | uniq -c
import sys
sys.path.insert(0, "bench")
import kernels
import numpy as np
import kapi
n = 256
a = kapi.asarray(np.ones((n, n), np.float32))
kapi.call_kernel(kapi.kernel(kernels.stencil5), kapi.Range(n - 2, n - 2), a, kapi.zeros_like(a))
PY
}
step ir ir | tee "$OUT/stencil_ir.log"

numba() {
  for v in default: ${NUMBA_VARIANTS:-wide1:KAPI_CPU_WIDE=1 wide2:KAPI_CPU_WIDE=2}; do
    echo "-- ${v%%:*}"
    # shellcheck disable=SC2046
    env $(variant_env "$v") timeout 30 python3 bench/numba_cpu.py --only "$NEIGHBOURS" \
      --repeat 9 2>&1
  done
}
step numba numba | tee "$OUT/stencil_numba.log"
