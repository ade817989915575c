#!/usr/bin/env bash
# kapi.cumsum of 2^24 float32 on the GPU machine's 16 Xeon cores (kapi's CPU device) beside the
# triad in the same process (bench/primitives.py: every result checked against NumPy), each
# scheme of the CPU scan in its own process, in turn, ROUNDS times (default 2):
# - "lock": four sub-blocks a work-item scanned element by element in lockstep (before);
# - "vec": each block scanned by vector tiles, one block a work-item (the default);
# - "vec-s2", "vec-s4": two or four blocks a work-item side by side (KAPI_SCAN_CPU_STREAMS);
# - "tiled-K": stretches of a block of K KiB per core, each folded then scanned from the core's
#   cache (KAPI_SCAN_CPU=tiled, KAPI_SCAN_CPU_TILE_KIB=K).
#   run(command="bash bench/scan_cpu.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS replaces the list (NAME:VAR=VALUE+VAR=VALUE ...); LOG2N (default 24).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
args=()
for v in ${VARIANTS:-vec: vec-s2:KAPI_SCAN_CPU_STREAMS=2 tiled-512:KAPI_SCAN_CPU=tiled tiled-1024:KAPI_SCAN_CPU=tiled+KAPI_SCAN_CPU_TILE_KIB=1024 tiled-256:KAPI_SCAN_CPU=tiled+KAPI_SCAN_CPU_TILE_KIB=256}; do
  args+=(--variant "$v")
done
timeout 150 python3 bench/primitives.py --device cpu --log2n "${LOG2N:-24}" --only cumsum \
  --rounds "${ROUNDS:-2}" "${args[@]}" 2>&1 | grep -E "===|kapi.cumsum|triad|differs|Error" |
  tee "$OUT/scan_cpu.log"
