#!/usr/bin/env bash
# Hunts the CPU device's rare crash on many-core hosts: the tests that crashed under xdist on the
# 32-core two-GPU host, alone and repeated, then their files under 8 and 16 workers, each process
# with a fatal-signal backtrace (tools/crashbt.c, built there) so a crash names the library and
# offset. Then the CPU primitives' baseline on all cores and on 16.
#   run(command="bash bench/cpu_crash_probe.sh", kind="nvidia-h100-x2",
#       carry=["kapi/_lib", ".carry/debs", ".whl"])
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels .whl/pytest_xdist-*.whl .whl/execnet-*.whl
export KAPI_DRIVERS=cpu
nproc; command -v gdb || echo "no gdb"
gcc -O1 -shared -fPIC -o /tmp/libcrashbt.so tools/crashbt.c || exit 1
BT="LD_PRELOAD=/tmp/libcrashbt.so"
P="python3 -X faulthandler -m pytest -q -p no:cacheprovider -rfE --tb=short"
ids=(
  "tests/language/test_group_algorithms.py::test_reduce_and_scans"
  "tests/numeric/test_primitives.py -k 300001"
  "tests/numeric/test_array_ops.py::test_reductions_1d"
)
t0=$SECONDS
for round in 1 2 3; do
  for id in "${ids[@]}"; do
    env $BT timeout 60 $P $id >"$OUT/alone_$round.log" 2>&1
    echo "alone round $round [$id]: exit $? $(tail -1 "$OUT/alone_$round.log")"
    grep -A12 "crashbt" "$OUT/alone_$round.log" | head -40
  done
done
echo "alone: $((SECONDS - t0)) s"
files="tests/language/test_group_algorithms.py tests/numeric/test_primitives.py tests/numeric/test_array_ops.py"
for n in 8 16; do
  env $BT timeout 150 $P -n $n $files >"$OUT/xdist_$n.log" 2>&1
  echo "xdist -n $n: exit $? $(tail -1 "$OUT/xdist_$n.log")"
  grep -E "^(FAILED|ERROR)|crashed|crashbt|map of|Fatal Python" "$OUT/xdist_$n.log" | head -30
done
echo "after xdist: $((SECONDS - t0)) s"
timeout 100 python3 bench/primitives.py --device cpu --log2n 24 2>&1 | tee "$OUT/prims_all.log"
timeout 100 taskset -c 0-15 python3 bench/primitives.py --device cpu --log2n 24 2>&1 | tee "$OUT/prims_16.log"
