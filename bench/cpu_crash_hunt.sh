#!/usr/bin/env bash
# Hunt for the CPU device's rare SIGSEGV on the 32-core GPU host (seen 3 times in 4 whole-suite
# runs of bench/gpu_suite.sh, never on a 2-core machine). In one device call of < 4 minutes:
#  - the CUDA half of the suite (8 workers), as load, as bench/gpu_suite.sh runs it;
#  - the CPU half twice at once (4 workers each, in the suite's order: both crashes came 14%
#    and 30% into it), one plain and one with MALLOC_PERTURB_ (freed heap memory filled, so a
#    use after free fails at once instead of later), KAPI_BOUNDSCHECK=1 (a kernel indexing out
#    of bounds raises IndexError naming its line instead of writing anywhere) and without
#    faulthandler (the signal goes straight to kapi's hint and the native backtrace);
#  - the crashing files in a loop in 5 more processes: plain, MALLOC_PERTURB_, KAPI_CPU_SHARE=1
#    on 64 threads, KAPI_CPU_THREADS=1 (every launch on the caller: no pool at all), and with
#    tests/drivers/cpu/far_mmap.c preloaded (every JIT section mapped far from the others: the
#    cause found, a jump table's 32-bit offsets from .rodata to .text, crashed every time so
#    before the fix; with it nothing may fail), beside tests/drivers/cpu/test_cpu_jit_layout.py.
# Every process has tools/crashbt.c preloaded (instruction pointer, its mapping, backtrace).
#   run(command="T=200 bash bench/cpu_crash_hunt.sh",
#       carry=["kapi/_lib", ".carry/debs", ".carry/bin", ".carry/fixtures", ".whl"])
# Logs go to $OUT; the summary at the end lists crashes and failures per run.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
device_wheels .whl/*.whl
export PATH=/usr/local/cuda/bin:$PATH
if [ -f .carry/fixtures/fakecuda/libkapi_fake_cuda.so ]; then
  export KAPI_FAKE_CUDA=$PWD/.carry/fixtures/fakecuda
fi
PRELOAD=
if gcc -O1 -shared -fPIC -o /tmp/libcrashbt.so tools/crashbt.c; then
  PRELOAD=/tmp/libcrashbt.so
fi
FAR=
if gcc -O1 -shared -fPIC -o /tmp/libfar_mmap.so tests/drivers/cpu/far_mmap.c -ldl; then
  FAR=/tmp/libfar_mmap.so${PRELOAD:+:$PRELOAD}
fi
T=${T:-200}
echo "cores: $(nproc); crash backtraces: ${PRELOAD:-none}; $(grep -m1 'model name' /proc/cpuinfo)"
python3 -c "import kapi; d = kapi.devices('cpu')[0]; print(d, d.max_compute_units, d.sub_group_sizes)"
suite() { # name drivers workers [env...] -- pytest args
  local name=$1 drv=$2 n=$3
  shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" LD_PRELOAD=$PRELOAD KAPI_DRIVERS=$drv timeout "$T" python3 -m pytest -q \
    -n "$n" -p no:cacheprovider -rfE --tb=short "$@" >"$OUT/$name.log" 2>&1
}
loop() { # name [env...]: the two crashing files, again and again until T runs out
  local name=$1 end=$((SECONDS + T - 10)) i=0 start rc
  shift
  while [ $SECONDS -lt $end ]; do
    i=$((i + 1)) start=$SECONDS
    env LD_PRELOAD=$PRELOAD "$@" KAPI_DRIVERS=cpu timeout $((end - SECONDS + 5)) python3 -m pytest \
      -q -p no:cacheprovider -x --tb=short tests/language/test_group_algorithms.py \
      tests/numeric/test_array_api.py tests/memory/test_memory_pool.py >"$OUT/$name.$i.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] && rm -f "$OUT/$name.$i.log" || echo "$name round $i: exit $rc"
    [ $rc -eq 0 ] || [ $rc -ge 128 ] || [ $((SECONDS - start)) -ge 10 ] || break # not running
  done
  echo "$name: $i rounds"
}
suite cuda cuda "${NC:-8}" X=1 -- tests &
suite cpu_a cpu "${NP:-4}" X=1 -- tests &
suite cpu_b cpu "${NP:-4}" MALLOC_PERTURB_=165 KAPI_BOUNDSCHECK=1 -- -p no:faulthandler tests &
loop loop_plain X=1 &
loop loop_perturb MALLOC_PERTURB_=165 &
loop loop_share KAPI_CPU_THREADS=64 KAPI_CPU_SHARE=1 &
loop loop_inline KAPI_CPU_THREADS=1 MALLOC_PERTURB_=165 &
[ -n "$FAR" ] && loop loop_far LD_PRELOAD=$FAR &
KAPI_DRIVERS=cpu python3 -m pytest -q -p no:cacheprovider tests/drivers/cpu/test_cpu_jit_layout.py \
  >"$OUT/jit_layout.log" 2>&1
echo "jit layout tests: $(tail -1 "$OUT/jit_layout.log")"
wait
for f in "$OUT"/*.log; do
  if grep -q -E "crashed while running|=== crashbt|kapi: crashed|Fatal Python error" "$f"; then
    echo "## CRASH in $f"
    grep -E "crashed while running|Fatal Python error" "$f" | head -5
    grep -A40 "=== crashbt" "$f" | head -80
    grep -B2 -A25 "Fatal Python error" "$f" | head -60
  fi
done
for f in "$OUT"/cuda.log "$OUT"/cpu_a.log "$OUT"/cpu_b.log; do
  echo "## $f"
  grep -E "^(FAILED|ERROR)" "$f" | head -20
  tail -1 "$f"
done
