#!/usr/bin/env bash
# Builds and runs the C benchmarks on kapi's CPU driver: STREAM triad (C/OpenMP vs kapi) and
# the empty-kernel launch time. Usage: bench/run_cpu.sh [build dir (default: build)]
# Extra arguments go through environment: TRIAD_N, TRIAD_REPS, LAUNCH_CALLS, LAUNCH_BATCHES.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
test -f "$BUILD/build.ninja" || cmake -S . -B "$BUILD" -G Ninja > /dev/null
cmake --build "$BUILD" --target stream_triad launch_c
export KAPI_DRIVERS=${KAPI_DRIVERS:-cpu}
# Both triads run alternately in one process: OpenMP's default (active) waiting leaves its
# workers spinning after each region, taking the cores from the CPU driver's threads (the
# kapi side then measures about half). Passive waiting makes them sleep, as the driver's do.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
echo "== $(date -u +%FT%TZ) $(uname -m), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
"$BUILD/bench/stream_triad" "${TRIAD_N:-33554432}" "${TRIAD_REPS:-15}"
"$BUILD/bench/launch_c" "${LAUNCH_CALLS:-2000}" "${LAUNCH_BATCHES:-25}"
