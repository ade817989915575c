#!/usr/bin/env bash
# kapi.cumsum of 2^24 float32 on the GPU machine's 16 Xeon cores (kapi's CPU device) beside the
# triad in the same process (bench/primitives.py: every result checked against NumPy), each
# scheme of the CPU scan in its own process, in turn, ROUNDS times (default 2):
# - "vec": two launches, blocks folded, then scanned by vector tiles, two blocks a work-item side
#   by side (KAPI_SCAN_CPU=vec);
# - "chain" (the default): one launch, chunks of 256 KiB by ticket, each folded, its carry found
#   by look-back, then scanned while in the core's cache; "chain-c128", "-c512": chunks of that
#   many KiB (KAPI_SCAN_CPU_CHUNK); "chain-s1", "-s4": one or four blocks a chunk
#   (KAPI_SCAN_CPU_STREAMS).
# These move 20-40% between processes on the 16 Xeon cores: bench/scan_ab.py compares them in
# one process.
#   run(command="bash bench/scan_cpu.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS replaces the list (NAME:VAR=VALUE+VAR=VALUE ...); LOG2N (default 24); T: the time
# limit in seconds (default 150).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
args=()
c=KAPI_SCAN_CPU=chain
list="vec:KAPI_SCAN_CPU=vec chain:$c chain-s1:$c+KAPI_SCAN_CPU_STREAMS=1"
list+=" chain-s4:$c+KAPI_SCAN_CPU_STREAMS=4 chain-c128:$c+KAPI_SCAN_CPU_CHUNK=131072"
for v in ${VARIANTS:-$list}; do
  args+=(--variant "$v")
done
timeout "${T:-150}" python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --only cumsum \
  --rounds "${ROUNDS:-2}" "${args[@]}" 2>&1 | grep -E "===|kapi.cumsum|triad|differs|Error" |
  tee "$OUT/scan_cpu.log"
