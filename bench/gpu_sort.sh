#!/usr/bin/env bash
# kapi.sort and kapi.argsort of 2^27 uint32 on the GPU beside cupy.sort / cupy.argsort, one
# device call (about 2.5 minutes on an H200): bench/sort_variants.py runs each variant in its own
# process (kapi.sort checked against np.sort of the whole array, kapi.argsort against
# np.argsort(kind="stable") of 2^22 keys, then both timed) and prints one table, the ratio to
# CuPy's in each row. Before and after in the same run (switches read at import):
# "default+NARROW=0+ARGSORT_IN_PLACE=0" is the code before this branch (KAPI_SORT_NARROW=0:
# the onesweep pass's places in 64 bits; KAPI_SORT_ARGSORT_IN_PLACE=0: argsort copies the
# unsigned keys before its passes), "default" both on (the defaults now),
# "default+NARROW=0" argsort reading the keys in place alone (its sort column is "before"
# again); before and default run twice (this host's noise between processes is ~10%). Then
# with TRIM=1 the same on 2^27 - 1000 keys (a partial last tile; argsort checked on 2^22 -
# 1000), and with SORT_PYTEST=1 (default) the sort tests on CUDA (onesweep sizes with
# partial tiles, every scatter kind, argsort in place, the PTX checks).
# From the checkout:
#   run(command="bash bench/gpu_sort.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS=... replaces the list; SANITIZE=default runs compute-sanitizer on 2^14 keys first.
# Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
command -v nvidia-smi >/dev/null && nvidia-smi -L
B=default+NARROW=0+ARGSORT_IN_PLACE=0
V=${VARIANTS:-cupy,$B,default,default+NARROW=0,$B,default}
echo "== sort variants: $V"
timeout "${SORT_TIMEOUT:-100}" python3 bench/sort_variants.py --device gpu --sanitize "${SANITIZE:-}" \
  --timeout 40 --variants "$V" 2>&1 | tee "$OUT/gpu_sort.log"
echo "== exit $?"
if [ "${TRIM:-0}" = 1 ]; then
  echo "== a partial last tile: 2^27 - 1000 keys"
  timeout 45 python3 bench/sort_variants.py --device gpu --sanitize '' --timeout 30 --trim 1000 \
    --variants default,$B 2>&1 | tee "$OUT/gpu_sort_trim.log"
  echo "== exit $?"
fi
if [ "${SORT_PYTEST:-1}" = 1 ]; then
  echo "== pytest (CUDA) tests/numeric/test_primitives_sort.py"
  KAPI_DRIVERS=cuda timeout 90 python3 -m pytest -q -x -p no:cacheprovider \
    tests/numeric/test_primitives_sort.py -k "onesweep or every_scatter or argsort_leaves or lean" \
    2>&1 | tail -8 | tee "$OUT/gpu_sort_pytest.log"
fi
