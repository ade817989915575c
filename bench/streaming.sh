#!/usr/bin/env bash
# Streaming (non-temporal) stores on the GPU machine's 16 Xeon cores: what C threads get from
# them (bench/membw.c, built here as a static binary and carried in .carry/bin), then the CPU
# scan with and without them in one process (bench/scan_ab.py), at sizes below, near and
# above the caches (that host: 2 MiB of L2 per core, 300 MiB of L3 shared with other guests).
#   gcc -O3 -march=x86-64-v3 -static -pthread bench/membw.c -o .carry/bin/membw
#   run(command="bash bench/streaming.sh", carry=["kapi/_lib", ".carry/debs", ".carry/bin"])
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
for a in ${MEMBW:-"24 9" "26 5"}; do
  step "membw $a" timeout 60 .carry/bin/membw $a 2>&1 | tee -a "$OUT/membw.log"
done
cd bench
for n in ${SIZES:-22 24 26}; do
  step "scan 2^$n" timeout 150 python3 scan_ab.py --log2n "$n" --rounds "${ROUNDS:-9}" \
    --schemes "${SCHEMES:-chain-t,chain-nt}" 2>&1 | tee -a "$OUT/scan.log"
done
