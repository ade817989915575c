#!/usr/bin/env bash
# kapi.sort and kapi.argsort of 2^27 uint32 on the GPU beside cupy.sort / cupy.argsort, one
# device call (about 3 minutes on an H200): bench/sort_variants.py runs each variant in its own
# process (kapi.sort checked against np.sort of the whole array, kapi.argsort against
# np.argsort(kind="stable") of 2^22 keys, then both timed) and prints one table, the ratio to
# CuPy's in each row. Before and after in the same run:
# "default::0+LEAN=0+V32=0+ONESWEEP_KEYS=0" is the code before this branch (KAPI_SORT_MAXREG=0:
# no register cap; KAPI_SORT_LEAN=0: without the lean indices and loads; KAPI_SORT_V32=0:
# argsort's onesweep values int64 in every pass; KAPI_SORT_ONESWEEP_KEYS=0: sort by the
# ballot passes; all read at import), "default" the defaults now (onesweep passes capped at
# 64 registers for sort and argsort), "default+ONESWEEP_KEYS=0" sort by the lean ballot
# passes. Then the same on 2^27 - 1000 keys (a partial last tile; argsort checked on 2^22 -
# 1000), and with SORT_PYTEST=1 (default) the sort tests on CUDA (every scatter kind,
# partial tiles, int32 values).
# From the checkout:
#   run(command="bash bench/gpu_sort.sh", carry=["kapi/_lib", ".carry/debs"])
# VARIANTS=... replaces the list; SANITIZE=default runs compute-sanitizer on 2^14 keys first.
# Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
command -v nvidia-smi >/dev/null && nvidia-smi -L
V=${VARIANTS:-cupy,default::0+LEAN=0+V32=0+ONESWEEP_KEYS=0,default,default+ONESWEEP_KEYS=0,onesweep::0,default::0+LEAN=0+V32=0+ONESWEEP_KEYS=0,default,default+ONESWEEP_KEYS=0}
echo "== sort variants: $V"
timeout "${SORT_TIMEOUT:-100}" python3 bench/sort_variants.py --device gpu --sanitize "${SANITIZE:-}" \
  --timeout 40 --variants "$V" 2>&1 | tee "$OUT/gpu_sort.log"
echo "== exit $?"
echo "== a partial last tile: 2^27 - 1000 keys"
timeout 45 python3 bench/sort_variants.py --device gpu --sanitize '' --timeout 30 --trim 1000 \
  --variants default,default+ONESWEEP_KEYS=0 2>&1 | tee "$OUT/gpu_sort_trim.log"
echo "== exit $?"
if [ "${SORT_PYTEST:-1}" = 1 ]; then
  echo "== pytest (CUDA) tests/numeric/test_primitives_sort.py"
  KAPI_DRIVERS=cuda timeout 90 python3 -m pytest -q -x -p no:cacheprovider \
    tests/numeric/test_primitives_sort.py -k "onesweep or every_scatter or values or rank or lean or sizes" \
    2>&1 | tail -8 | tee "$OUT/gpu_sort_pytest.log"
fi
