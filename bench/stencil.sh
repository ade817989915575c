#!/usr/bin/env bash
# The CPU device's 5-point stencil against Numba parallel on the GPU machine's 16 cores, where
# bench/numba_cpu.py measured it at 0.44x (every other kernel faster than Numba), with the
# pool's own account (KAPI_CPU_POOL_STATS=1: when workers joined, groups run outside their
# home block, workers that changed CPU between launches):
#   probe: bench/stencil_probe.py (kapi beside Numba in one process: alternating as
#     numba_cpu.py times them, back to back, and after a sleep; every output checked against
#     NumPy and Numba) at 1024^2, 2048^2 and 4096^2 with --extras: kapi's arrays staggered
#     modulo 4 KiB (KAPI_CPU_MEM_COLOR=1, the default now) and not (=0, before), in small pages
#     (KAPI_CPU_MEM_HUGE=0), the output 64 or 4096 bytes from the input modulo 2 MiB; Numba's
#     arrays on 2 MiB boundaries as kapi's were, or staggered;
#     the per-kernel switches as in-process variants (KAPI_CPU_WIDE: how a long launch wakes
#     the workers), then one process per setting read once (PROCS);
#   ir: the stencil's host vector widths on this CPU;
#   numba: bench/numba_cpu.py on the stencil and its neighbours, the same variants in-process,
#     by default and with every huge allocation on a 2 MiB boundary as before
#     (KAPI_CPU_MEM_COLOR=0).
# Under 100 s on the 16-core host. From the checkout:
#   run(command="bash bench/stencil.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS / PROCS / SCALES / SHAPES replace the lists below; ONLY="probe ir numba" picks steps;
# logs go to $OUT (or ./gpu-out elsewhere).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu KAPI_CPU_POOL_STATS=1
{
  echo "== $(date -u +%FT%TZ) $(nproc) cpus"
  lscpu | grep -E '^(Model name|Thread|Core|Socket|NUMA|L1d|L2|L3)'
  echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
} 2>&1 | tee "$OUT/stencil_machine.log"
VARIANTS=${VARIANTS:-"wide1:KAPI_CPU_WIDE=1"}
PROCS=${PROCS:-"before:KAPI_CPU_MEM_COLOR=0 after:KAPI_CPU_MEM_COLOR=1"}
SCALES=${SCALES:--2,0,2}
SHAPES=${SHAPES-}
NEIGHBOURS=stencil-f32,triad-f32,saxpy-f32,rowsum-f32,matmul-naive-f32
variant_args=()
for v in $VARIANTS; do variant_args+=(--variant "$v"); done

# env NAME=VALUE arguments for a spec "name:A=1+B=2"
spec_env() { local spec=${1#*:}; [ -n "$spec" ] && tr '+' ' ' <<<"$spec"; }

probe() {
  timeout 45 python3 bench/stencil_probe.py --scales="$SCALES" --repeat 15 --extras \
    --shapes="$SHAPES" "${variant_args[@]}" 2>&1
  for p in $PROCS; do
    # shellcheck disable=SC2046
    env $(spec_env "$p") PROBE_LABEL="${p%%:*}" timeout 15 python3 bench/stencil_probe.py \
      --repeat 15 --modes alt,hot "${variant_args[@]}" 2>&1
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
  timeout 25 python3 bench/numba_cpu.py --only "$NEIGHBOURS" --repeat 9 "${variant_args[@]}" 2>&1
  echo "-- before: every huge allocation on a 2 MiB boundary (KAPI_CPU_MEM_COLOR=0)"
  KAPI_CPU_MEM_COLOR=0 timeout 25 python3 bench/numba_cpu.py --only "$NEIGHBOURS" --repeat 9 \
    "${variant_args[@]}" 2>&1
}
step numba numba | tee "$OUT/stencil_numba.log"
