#!/usr/bin/env bash
# kapi.cumsum of 2^24 float32 on the GPU machine's 16 Xeon cores (kapi's CPU device) beside the
# triad in the same process (bench/primitives.py: every result checked against NumPy), each
# scheme of the CPU scan in its own process, in turn, ROUNDS times (default 2):
# - "lock": four sub-blocks a work-item scanned element by element in lockstep (before);
# - "vec-s1": each block scanned by vector tiles, one block a work-item;
# - "vec": two blocks a work-item side by side (the default), "vec-s4" four
#   (KAPI_SCAN_CPU_STREAMS).
#   run(command="bash bench/scan_cpu.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS replaces the list (NAME:VAR=VALUE+VAR=VALUE ...); LOG2N (default 24).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
args=()
for v in ${VARIANTS:-lock:KAPI_SCAN_CPU=lock vec-s1:KAPI_SCAN_CPU_STREAMS=1 vec: vec-s4:KAPI_SCAN_CPU_STREAMS=4}; do
  args+=(--variant "$v")
done
timeout 150 python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --only cumsum \
  --rounds "${ROUNDS:-2}" "${args[@]}" 2>&1 | grep -E "===|kapi.cumsum|triad|differs|Error" |
  tee "$OUT/scan_cpu.log"
