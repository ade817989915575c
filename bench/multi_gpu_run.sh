#!/usr/bin/env bash
# One device call on the two-GPU machine (kind nvidia-h100-x2): kapi's multi-GPU tests, the
# multi-device-in-one-process benchmark, and the MPI samples and halo-exchange benchmark with
# one rank per GPU. The machine has no network and no LLVM 15, translator or Level Zero loader:
# as for bench/gpu_run.sh, Debian 12's .deb files travel in .carry/debs and the build made here
# as kapi/_lib; MPI comes as wheels in .whl, made here with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 \
#     -d .whl mpi4py==4.1.2 mpich==5.0.2
#   run(kind="nvidia-h100-x2", command="bash bench/multi_gpu_run.sh",
#       carry=["kapi/_lib", ".carry/debs", ".whl"])
# Logs go to $OUT (or ./gpu-out when run elsewhere). MPICH's wheel is not CUDA-aware, so GPU
# arrays cross MPI through pinned host rows in both the kapi and the CuPy program.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
# --prefix, not --target: MPICH's wheel puts libmpi in <prefix>/lib, which --target drops.
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi4py-*.whl \
  .whl/mpich-*.whl || exit 1
SITE=$(echo /tmp/mpi/lib/python3*/site-packages)
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/tmp/mpi/lib PATH=/tmp/mpi/bin:$PATH
export PYTHONPATH=$PYTHONPATH:$SITE
nvidia-smi -L
nvidia-smi topo -m 2>&1 | head -8
python3 -m kapi 2>&1 | tee "$OUT/devices.txt"
# Kernels, operators, reductions, sort and dpjit on each GPU, concurrent launches, copies.
step multi-gpu-tests timeout 240 python3 -m pytest -q -p no:cacheprovider -rfEs -m gpu \
  tests/memory/test_multi_device.py 2>&1 | tee "$OUT/multi_gpu_tests.log" | tail -20
# One process, one thread: 1 -> 2 GPU scaling and GPU-to-GPU copies beside CuPy.
step multi-gpu-bench timeout 240 python3 bench/multi_gpu.py 2>&1 | tee "$OUT/multi_gpu.log"
# One rank per GPU (kapi.device_for_local_rank): the samples, checked against NumPy.
step mpi-heat timeout 180 mpiexec -n 2 python3 samples/distributed/mpi_heat.py \
  --rows 4096 --cols 4096 --steps 200 2>&1 | tee "$OUT/mpi.log"
step mpi-kmeans timeout 180 mpiexec -n 2 python3 samples/distributed/mpi_kmeans.py \
  --points 1000000 --steps 5 2>&1 | tee -a "$OUT/mpi.log"
# The stencil's step with kapi arrays beside the same program with CuPy arrays.
step mpi-halo timeout 240 mpiexec -n 2 python3 bench/mpi_halo.py 2>&1 | tee -a "$OUT/mpi.log"
# PYTEST_PATHS="tests/..." also runs those tests here, on every device of this host (CUDA and CPU).
if [ -n "${PYTEST_PATHS:-}" ]; then
  step pytest-paths timeout "${PYTEST_TIMEOUT:-240}" python3 -m pytest -q -p no:cacheprovider -rfE \
    --tb=short $PYTEST_PATHS 2>&1 | tee "$OUT/pytest_paths.log" | tail -30
fi
