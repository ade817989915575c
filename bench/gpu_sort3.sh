#!/usr/bin/env bash
# kapi.sort and kapi.argsort of 2^27 uint32 on the GPU beside cupy.sort / cupy.argsort, one
# device call (under 150 s on an H200): bench/sort_variants.py runs each variant in its own
# process (kapi.sort checked against np.sort of the whole array, kapi.argsort against
# np.argsort(kind="stable") of 2^22 keys and its input left alone, then both timed) and prints
# one table, the ratio to CuPy's in each row. Before and after in the same run (switches read
# at import): B (`+FIXED_GROUP=0+OR_ALL=0`) is the code before this branch (argsort's onesweep
# tiles then 8 keys per work-item capped at 64 registers); "default" the branch: the sort's
# kernels declaring their one work-group size (KAPI_SORT_FIXED_GROUP: on NVIDIA GPUs every
# warp is then whole and the sub-group operations name all 32 lanes, without ptxas's
# divergence checks), the atomic match without a branch (KAPI_SORT_OR_ALL) and argsort's
# tiles of 12 keys per work-item, uncapped (KAPI_SORT_ARGSORT_ITEMS / _MAXREG);
# "+KEYS_UNROLL=4" the keys pass (and its digit counts) with 4 loads in flight per work-item;
# the last row also argsort's tiles of 16 keys. B and the unrolled default run twice (this
# host's noise between processes is ~10%). Then with SORT_PYTEST=1 (default) the
# required_group_size tests and the sort tests on CUDA (the defaults: onesweep sizes with
# partial tiles, every scatter kind, argsort in place, the keys pass unrolled, the PTX checks).
# From the checkout:
#   run(command="bash bench/gpu_sort3.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS=... replaces the list. Last (SANITIZE_LAST, default "default"; empty: none),
# compute-sanitizer's memcheck, synccheck and racecheck of a sort and argsort of 2^14 keys.
# Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
command -v nvidia-smi >/dev/null && nvidia-smi -L
B=default+FIXED_GROUP=0+OR_ALL=0
U=default+KEYS_UNROLL=4
V=${VARIANTS:-cupy,$B,default,$U,$B,$U+ARGSORT_ITEMS=16}
echo "== sort variants: $V"
timeout "${SORT_TIMEOUT:-90}" python3 bench/sort_variants.py --device gpu --sanitize "" \
  --timeout 35 --variants "$V" 2>&1 | tee "$OUT/gpu_sort3.log"
echo "== exit $?"
if [ "${SORT_PYTEST:-1}" = 1 ]; then
  echo "== pytest (CUDA, the defaults): required_group_size, the sort's onesweep tests"
  KAPI_DRIVERS=cuda timeout 55 python3 -m pytest -q -x -p no:cacheprovider \
    tests/kernel/test_required_group_size.py tests/numeric/test_primitives_sort.py \
    -k "not test_primitives_sort or fixed_group or unrolled or onesweep_sizes or onesweep_dtypes or onesweep_argsort or every_scatter or argsort_leaves or register_cap" \
    2>&1 | tail -8 | tee "$OUT/gpu_sort3_pytest.log"
fi
if [ -n "${SANITIZE_LAST-default}" ]; then
  echo "== compute-sanitizer (2^14 keys): ${SANITIZE_LAST-default}"
  timeout 45 python3 bench/sort_variants.py --device gpu --sanitize "${SANITIZE_LAST-default}" \
    --sanitize-log2n 14 --log2n 14 --timeout 40 --variants "" 2>&1 | tee "$OUT/gpu_sort3_sanitize.log"
fi
