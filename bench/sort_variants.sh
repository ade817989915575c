#!/usr/bin/env bash
# One device call on the GPU machine for kapi.sort's scatter variants (issue 13): small sorts
# under compute-sanitizer first, then each variant timed in its own process beside cupy.sort
# (bench/sort_variants.py says what and how). Same setup as bench/gpu_run.sh; from the lead's
# checkout:
#   run(command="bash bench/sort_variants.sh", carry=["kapi/_lib", ".carry/debs"])
# Arguments go to bench/sort_variants.py (e.g. --variants ballot:8,cupy --sanitize '').
# The output goes to $OUT/sort_variants.log (or ./gpu-out when run elsewhere).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export PATH=$PATH:/usr/local/cuda/bin
PY=${PYTHON:-python3}
command -v nvidia-smi >/dev/null && nvidia-smi -L
timeout "${SORT_VARIANTS_TIMEOUT:-560}" "$PY" bench/sort_variants.py --device "${SORT_DEVICE:-gpu}" "$@" 2>&1 \
  | tee "$OUT/sort_variants.log"
