#!/usr/bin/env bash
# The array API standard's conformance suite (data-apis/array-api-tests) on kapi.array_api,
# or on another library for comparison, with a fixed seed and a time budget.
#
#   tools/array_api_tests.sh CHECKOUT [MODULE] [-- extra pytest arguments]
#
# CHECKOUT: a checkout of array-api-tests with its array-api submodule (the suite is on
# GitHub only, not on PyPI, so CI cannot fetch it; run this where a checkout exists).
# MODULE: kapi.array_api (default), or e.g. cupy, numpy, array_api_strict.
# Environment: MAX_EXAMPLES (default 20, the suite's own default), SEED (default 0),
# BUDGET (seconds, default 3000: pytest is stopped after it, the summary so far is kept),
# KAPI_DEFAULT_DEVICE (which device kapi.array_api creates arrays on: cpu, cuda, ...),
# OUT (a folder for the log and the JSON report; default ./array-api-out).
# Needs pytest, hypothesis >= 6.151, ndindex and pytest-json-report importable.
# Kernels compile on first use (kapi's disk cache keeps them), so a first run takes longest;
# deadlines are off for that reason.
set -uo pipefail
CHECKOUT=$(cd "${1:?usage: tools/array_api_tests.sh CHECKOUT [MODULE] [-- pytest args]}" && pwd)
shift
MODULE=kapi.array_api
if [ $# -gt 0 ] && [ "$1" != "--" ]; then MODULE=$1; shift; fi
[ "${1:-}" = "--" ] && shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/array-api-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export ARRAY_API_TESTS_MODULE=$MODULE PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
name=${MODULE//./_}
cd "$CHECKOUT"
timeout --signal=INT "${BUDGET:-3000}" "$PY" -m pytest array_api_tests -p no:cacheprovider \
  --max-examples "${MAX_EXAMPLES:-20}" --hypothesis-seed "${SEED:-0}" --disable-deadline \
  -q -rfE --json-report --json-report-file="$OUT/$name.json" "$@" 2>&1 | tee "$OUT/$name.log"
rc=${PIPESTATUS[0]}
"$PY" - "$OUT/$name.log" "$MODULE" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
tail = [l for l in text.splitlines() if re.search(r"\d+ (passed|failed)", l)]
counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|xfailed|error)", tail[-1])} if tail else {}
p, f, e = counts.get("passed", 0), counts.get("failed", 0), counts.get("error", 0)
run = p + f + e
print(f"{sys.argv[2]}: {p} passed, {f} failed, {e} errors, {counts.get('skipped', 0)} skipped"
      + (f"; pass rate {100 * p / run:.1f}% of the tests run" if run else ""))
PY
exit $rc
