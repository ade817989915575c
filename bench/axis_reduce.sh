#!/usr/bin/env bash
# Reductions along an axis on the CPU device of the GPU machine (16 Xeon cores), beside NumPy
# and the settings before in one process (bench/axis_reduce.py), the whole-array reductions
# that share their code (bench/argred.py at 2^24: ARGRED, by default cpuw64g4 (groups of 64
# work-items, 4 a core: before) against cpulanes (the defaults)), bench/primitives.py's reduce
# rows at 2^24 (the issue's figures) in three processes, and with PYTEST=1 the reduction tests.
#   run(command="PYTEST=1 bash bench/axis_reduce.sh", carry=["kapi/_lib", ".carry/debs"])
# ONLY="axis axis-rev argred primitives pytest" picks steps; ROUNDS (5); VARIANTS (now,before)
# and OPS (sum,max,argmax) for the axis step; PYTEST_FILES (the reduction tests).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export KAPI_DRIVERS=cpu
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(git log --oneline -1 2>/dev/null)"
step axis timeout "${AXIS_TIMEOUT:-240}" python3 bench/axis_reduce.py --rounds "${ROUNDS:-5}" \
  --variants "${VARIANTS:-now,before}" --ops "${OPS:-sum,max,argmax}" \
  --json "$OUT/axis_reduce.json" 2>&1 | tee "$OUT/axis_reduce.log"
step axis-rev timeout 150 python3 bench/axis_reduce.py --rounds "${ROUNDS:-5}" --variants before,now \
  --ops sum,max 2>&1 | tee "$OUT/axis_reduce_rev.log"
step argred timeout 120 python3 bench/argred.py --device cpu --rounds 7 --no-check-small --log2n 24 \
  --variants "${ARGRED:-cpuw64g4,cpulanes}" 2>&1 | tee "$OUT/axis_argred.log"
for i in 1 2 3; do
  step primitives timeout 60 python3 bench/primitives.py --device cpu --log2n 24 --only reduce \
    2>&1 | tee "$OUT/axis_primitives$i.log"
done
[ "${PYTEST:-0}" = 1 ] && step pytest timeout "${PYTEST_TIMEOUT:-240}" python3 -m pytest -q -n 14 \
  -p no:cacheprovider ${PYTEST_FILES:-tests/numeric/test_reduce_schemes.py \
  tests/numeric/test_reduce_streams.py tests/numeric/test_arg_reductions.py} 2>&1 | tail -8
