#!/usr/bin/env bash
# kapi.sort and kapi.argsort of 2^27 uint32 on the GPU beside cupy.sort / cupy.argsort, one
# device call (under 150 s on an H200): bench/sort_variants.py runs each variant in its own
# process (kapi.sort checked against np.sort of the whole array, kapi.argsort against
# np.argsort(kind="stable") of 2^22 keys and its input left alone, then both timed) and prints
# one table, the ratio to CuPy's in each row. Before and after in the same run (switches read
# at import): "default" is the code before this branch; "+FIXED_GROUP=1" the sort's kernels
# declaring their one work-group size (KAPI_SORT_FIXED_GROUP: on NVIDIA GPUs every warp is then
# whole and the sub-group operations name all 32 lanes, without ptxas's divergence checks);
# "+OR_ALL=1" with it, the ranking's atomic match without a branch (KAPI_SORT_OR_ALL: a lane
# past the chunk ORs 0); "+KEYS_UNROLL=4" the keys pass (and its digit counts) with 4 loads
# in flight per work-item; last, with 24 keys per work-item and no register cap (80
# registers: 3 groups per SM), the size that lost the device before (kapi refuses it;
# +UNTRIED=1 lets the bench try it). This host's noise between processes is ~10%. Then
# with SORT_PYTEST=1 (default) the required_group_size tests and the sort tests on CUDA with
# FIXED_GROUP=1, OR_ALL=1 and KEYS_UNROLL=4 (onesweep sizes with partial tiles, every scatter
# kind, argsort in place, the keys pass unrolled).
# From the checkout:
#   run(command="bash bench/gpu_sort3.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS=... replaces the list; SANITIZE=default+FIXED_GROUP=1 runs compute-sanitizer on
# 2^14 keys first. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
command -v nvidia-smi >/dev/null && nvidia-smi -L
F=default+FIXED_GROUP=1
V=${VARIANTS:-cupy,default,$F,$F+OR_ALL=1,$F+OR_ALL=1+KEYS_UNROLL=4,default:24:0+FIXED_GROUP=1+OR_ALL=1+UNTRIED=1}
echo "== sort variants: $V"
timeout "${SORT_TIMEOUT:-90}" python3 bench/sort_variants.py --device gpu --sanitize "${SANITIZE:-}" \
  --timeout 35 --variants "$V" 2>&1 | tee "$OUT/gpu_sort3.log"
echo "== exit $?"
if [ "${SORT_PYTEST:-1}" = 1 ]; then
  echo "== pytest (CUDA, FIXED_GROUP=1 OR_ALL=1 KEYS_UNROLL=4): required_group_size, the sort's onesweep tests"
  KAPI_SORT_FIXED_GROUP=1 KAPI_SORT_OR_ALL=1 KAPI_SORT_KEYS_UNROLL=4 KAPI_DRIVERS=cuda timeout 55 python3 -m pytest -q -x -p no:cacheprovider \
    tests/kernel/test_required_group_size.py tests/numeric/test_primitives_sort.py \
    -k "not test_primitives_sort or fixed_group or unrolled or onesweep_sizes or onesweep_dtypes or onesweep_argsort or every_scatter or argsort_leaves" \
    2>&1 | tail -8 | tee "$OUT/gpu_sort3_pytest.log"
fi
