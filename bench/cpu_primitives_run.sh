#!/usr/bin/env bash
# bench/primitives.py on the GPU machine's CPU (kapi's CPU device, every core): reductions and
# scans beside a triad kernel in the same run, sort and argsort beside np.sort / np.argsort on
# the same 2^24 keys. Setup as bench/gpu_run.sh (Debian's LLVM 15, translator and Level Zero
# loader from .carry/debs; the build as kapi/_lib):
#   run(command="bash bench/cpu_primitives_run.sh", carry=["kapi/_lib", ".carry/debs"])
# Then the same on half the cores and on 4 (taskset: the driver sizes its pool by the CPUs
# the process may use), to see how each primitive scales. LOG2N (default 24) sets the size;
# CORES (default "all half 4") the variants. Then the sort's two CPU schemes
# (KAPI_SORT_CPU_MSD=1, 0) by bench/cpu_sort_rows.py. Logs go to $OUT (or ./gpu-out elsewhere).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
N=$(nproc)
echo "== $(date -u +%FT%TZ) $N cores, $(lscpu | sed -n 's/^Model name: *//p')"
for c in ${CORES:-all half 4}; do
  case $c in
    all) cpus=0-$((N - 1)) ;;
    half) cpus=0-$((N / 2 - 1)) ;;
    *) cpus=0-$((c - 1)) ;;
  esac
  echo "== cores $cpus: python3 bench/primitives.py --device cpu --log2n ${LOG2N:-24}"
  taskset -c "$cpus" python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --json "$OUT/primitives_cpu_$cpus.json" 2>&1 |
    tee "$OUT/cpu_primitives_$c.log"
done
# The sort's two CPU schemes side by side on every core (MSD-then-buckets, the default, and
# the LSD passes alone), alternating.
for i in 1 2; do
  for m in 1 0; do
    KAPI_SORT_CPU_MSD=$m python3 bench/cpu_sort_rows.py "msd=$m" --log2n "${LOG2N:-24}" 2>&1 |
      head -1 | tee -a "$OUT/cpu_sort_schemes.log"
  done
done
