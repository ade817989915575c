#!/usr/bin/env bash
# The two lines of the performance targets that depend most on the GPU machine's host, in one
# call: the empty asynchronous launch from C through kapi's runtime beside the CUDA driver API
# alone (bench/launch_gap.sh, ROUNDS rounds, 3 by default), then bench/primitives.py's
# reductions of 2^24 float32 on the 16 Xeon cores against the triad, in three processes
# (bench/axis_reduce.sh's primitives step).
#   run(command="bash bench/launch_and_reduce.sh", carry=["kapi/_lib", ".carry/debs"])
set -uo pipefail
cd "$(dirname "$0")/.."
echo "== launch-gap"
ROUNDS=${ROUNDS:-3} timeout 300 bash bench/launch_gap.sh
echo "== reductions"
ONLY=primitives timeout 240 bash bench/axis_reduce.sh
