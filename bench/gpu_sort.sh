#!/usr/bin/env bash
# kapi.sort and kapi.argsort of 2^27 uint32 on the GPU beside cupy.sort / cupy.argsort, one
# device call (< 3 minutes on an H200): bench/sort_variants.py runs each variant in its own
# process (kapi.sort checked against np.sort of the whole array, kapi.argsort against
# np.argsort(kind="stable") of 2^22 keys, then both timed) and prints one table, the ratio to
# CuPy's in each row. Before and after in the same run: "+LEAN=0+V32=0" is the code before
# this branch (KAPI_SORT_LEAN=0: without the lean indices and loads; KAPI_SORT_V32=0: argsort's
# onesweep values int64 in every pass; both read at import), "default" the defaults now, the
# onesweep rows the one-kernel-per-pass kind for sort too (KIND:KEYS:MAXREG: 16 or 24 keys
# per work-item, argsort half as many; register caps of 64 or 80, 4 or 3 groups per SM,
# where ptxas 13 spills nothing).
# From the checkout:
#   run(command="bash bench/gpu_sort.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS=... replaces the list; SORT_PYTEST=1 also runs the sort tests on CUDA (about a
# minute more); SANITIZE=default runs compute-sanitizer on 2^14 keys first. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
export PATH=$PATH:/usr/local/cuda/bin
command -v nvidia-smi >/dev/null && nvidia-smi -L
V=${VARIANTS:-cupy,default+LEAN=0+V32=0,default,onesweep,onesweep:16:64,onesweep:24:80,onesweep:24,default+V32=0,onesweep+LEAN=0,default+LEAN=0+V32=0,onesweep:16:64}
echo "== sort variants: $V"
timeout "${SORT_TIMEOUT:-175}" python3 bench/sort_variants.py --device gpu --sanitize "${SANITIZE:-}" \
  --timeout 60 --variants "$V" 2>&1 | tee "$OUT/gpu_sort.log"
echo "== exit $?"
if [ "${SORT_PYTEST:-0}" = 1 ]; then
  KAPI_DRIVERS=cuda timeout 150 python3 -m pytest -q -x -p no:cacheprovider \
    tests/numeric/test_primitives_sort.py 2>&1 | tail -5 | tee "$OUT/gpu_sort_pytest.log"
fi
