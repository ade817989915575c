#!/usr/bin/env bash
# One device call on the GPU machine: the whole pytest suite (parametrised over every device,
# so the CUDA device too), then bench/gpu.py (issue 5) and the CPU benchmarks on that host.
# The machine has no LLVM 15, translator or Level Zero loader: Debian 12's .deb files travel
# in .carry/debs (`apt-get download libllvm15 libllvmspirvlib15 libze1 libz3-4`) and the build
# made here travels as kapi/_lib and .carry/bin. From the lead's checkout:
#   run(command="bash bench/gpu_run.sh", carry=["kapi/_lib", ".carry/debs", ".carry/bin"])
# Logs go to $OUT (or ./gpu-out when run elsewhere).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT" /tmp/deps
for f in .carry/debs/*.deb; do dpkg -x "$f" /tmp/deps; done
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:/tmp/deps/usr/lib/llvm-15/lib:$PWD/kapi/_lib
export PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=passive PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi -L
python3 -m kapi 2>&1 | tee "$OUT/devices.txt"
step() { echo "== $1"; shift; "$@"; echo "== exit $?"; }
[ "${SKIP_PYTEST:-0}" = 1 ] || step pytest timeout "${PYTEST_TIMEOUT:-270}" python3 -m pytest -q -p no:cacheprovider \
  --maxfail=40 -rfEs tests 2>&1 | tee "$OUT/pytest.log" | tail -60
step gpu-bench timeout 200 python3 bench/gpu.py 2>&1 | tee "$OUT/gpu_bench.log"
if [ -x .carry/bin/launch_c ]; then
  step gpu-launch-c env KAPI_BENCH_DRIVER=kapi-cuda timeout 30 .carry/bin/launch_c 2000 25 2>&1 | tee -a "$OUT/gpu_bench.log"
fi
if [ -x .carry/bin/stream_triad ]; then
  step cpu-triad env KAPI_DRIVERS=cpu timeout 60 .carry/bin/stream_triad 67108864 15 2>&1 | tee "$OUT/cpu.log"
  step cpu-launch env KAPI_DRIVERS=cpu timeout 30 .carry/bin/launch_c 2000 25 2>&1 | tee -a "$OUT/cpu.log"
fi
step cpu-pairwise timeout 90 python3 bench/pairwise_cpu.py 2>&1 | tee -a "$OUT/cpu.log"
