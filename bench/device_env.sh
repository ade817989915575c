# Sourced from the checkout's root by the scripts run on the GPU machine, which has no LLVM 15,
# translator or Level Zero loader and no network: Debian 12's .deb files travel in .carry/debs
# and are unpacked under /tmp/deps, kapi's build travels as kapi/_lib, logs go to $OUT.
# `device_wheels FILE.whl...` installs carried wheels into /tmp/site, on PYTHONPATH after the
# checkout.
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT" /tmp/deps
for f in .carry/debs/*.deb; do [ -e "$f" ] && dpkg -x "$f" /tmp/deps; done
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:/tmp/deps/usr/lib/llvm-15/lib:$PWD/kapi/_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KAPI_LIB_DIR=$PWD/kapi/_lib PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=passive
# Bytecode: the tree arrives without __pycache__, and a fresh process compiling kapi's and
# pyfront's sources again costs 136 ms (profiled 2026-11-24) when nothing may be written back
# (PYTHONDONTWRITEBYTECODE=1, or a read-only tree): one writable folder for all bytecode, filled
# by the first process and read by the rest (the suite's subprocesses, bench/cold_start.py).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/kapi-pycache}
# `step NAME command...` runs one step between "== NAME" and "== exit N" lines; ONLY="name ..."
# runs just the named steps (e.g. ONLY="group-reduce cpu-barrier").
step() {
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $1 "* ]]; then return 0; fi
  echo "== $1"
  shift
  "$@"
  echo "== exit $?"
}
export PATH=/usr/local/cuda/bin:$PATH
device_wheels() {
  [ $# -gt 0 ] || return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$@" || return 1
  export PYTHONPATH=$PYTHONPATH:/tmp/site
}
