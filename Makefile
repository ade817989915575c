# kapi: the two-command quick start (`make demo`, `make test`) and the steps behind them.
# Each step is idempotent and fast when its work is already done.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BUILD ?= build
JOBS ?= $(shell nproc)
APT_PACKAGES := build-essential cmake ninja-build pkg-config python3 python3-venv python3-dev \
  llvm-15-dev libllvmspirvlib-15-dev llvm-spirv-15 clang-15 spirv-tools libze-dev libze1 \
  valgrind clang-format

.PHONY: all setup deps venv build demo test test-c test-py test-mpi test-asan test-opencl ocl-venv \
  bench-opencl test-array-api wheel test-wheel lint format clean

all: build

setup: deps venv

# System packages: installed only when one is missing.
deps: .stamps/deps
.stamps/deps: Makefile
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	  | grep -q "install ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@mkdir -p .stamps && touch $@

# Python environment with pinned packages; the checkout itself on the venv's path (a .pth file:
# kapi, kapi_lang and pyfront from the tree, the native parts from kapi/_lib, which `make build`
# fills). Not `pip install -e .`, which builds the native parts itself in a folder of its own and
# whose import hook would add its own modules to every `import kapi`.
DEV_PTH = $(1) -c "import site, sys; open(site.getsitepackages()[0] + '/kapi-checkout.pth', 'w').write(sys.argv[1] + '\\n')" $(CURDIR)
venv: .stamps/venv
.stamps/venv: requirements.txt pyproject.toml | .stamps/deps
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(call DEV_PTH,$(PY))
	@mkdir -p .stamps && touch $@

build: setup
	@test -f $(BUILD)/build.ninja || cmake -S . -B $(BUILD) -G Ninja \
	  -DPython3_EXECUTABLE=$(abspath $(PY)) > /dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(PY) samples/pairwise_distance.py

test: build
	$(MAKE) --no-print-directory lint test-c test-py

test-c:
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# pytest-xdist spreads the tests over the cores (kernel compiles are most of their time); the
# workers share the disk cache. PYTEST_JOBS=0 runs them in this process. The 30 slowest tests
# are listed at the end, to keep the suite's time in view.
PYTEST_JOBS ?= $(JOBS)
test-py:
	$(PY) -m pytest -q -n $(PYTEST_JOBS) --durations=30 tests

# The MPI samples with two ranks (mpi4py and MPICH's mpiexec come from requirements.txt): a heat
# stencil with halo exchange and distributed reductions, each checked against one NumPy process.
# On a machine without GPUs both ranks share kapi's CPU device.
MPI_RANKS ?= 2
test-mpi: build
	timeout 300 $(VENV)/bin/mpiexec -n $(MPI_RANKS) $(PY) samples/distributed/mpi_heat.py
	timeout 300 $(VENV)/bin/mpiexec -n $(MPI_RANKS) $(PY) samples/distributed/mpi_kmeans.py

# Intel's OpenCL CPU runtime runs our SPIR-V as a second opinion (tests/reliability/test_opencl_reference.py)
# and as the peer of bench/opencl_cpu.py (matplotlib draws its plot).
# Its wheels are about 1 GB installed, so they get their own environment, not requirements.txt.
OCL_VENV ?= .venv-ocl
OCL_PACKAGES := pyopencl intel-opencl-rt intel-cmplr-lib-rt matplotlib
ocl-venv: build
	test -x $(OCL_VENV)/bin/python || python3 -m venv $(OCL_VENV)
	$(OCL_VENV)/bin/python -m pip install -q -r requirements.txt $(OCL_PACKAGES)
	$(call DEV_PTH,$(OCL_VENV)/bin/python)

test-opencl: ocl-venv
	KAPI_REQUIRE_OPENCL=1 $(OCL_VENV)/bin/python -m pytest -q -rs tests/reliability/test_opencl_reference.py

# kapi's CPU device against Intel's OpenCL CPU runtime on the same SPIR-V, one ratio per kernel
# (bench/RESULTS.md); BENCH_ARGS="--repeat 31 --only matmul-f32" and the like pass through.
bench-opencl: ocl-venv
	$(OCL_VENV)/bin/python bench/opencl_cpu.py $(BENCH_ARGS)

# The array API standard's conformance suite (data-apis/array-api-tests) on kapi.array_api. The
# suite is on GitHub only, not on PyPI, so CI (PyPI and Debian only) runs
# tests/numeric/test_array_api.py instead; where a checkout exists (with its array-api
# submodule): make test-array-api ARRAY_API_TESTS=/path/to/array-api-tests [MAX_EXAMPLES=20]
# [SEED=0] [BUDGET=3000] [KAPI_DEFAULT_DEVICE=cuda]. Its dependencies get their own environment.
AAT_VENV ?= .venv-array-api
AAT_PACKAGES := hypothesis==6.151.0 ndindex==1.10.1 pytest-json-report==1.5.0 pytest-metadata==3.1.1
test-array-api: build
	@test -n "$(ARRAY_API_TESTS)" || { echo "set ARRAY_API_TESTS to a checkout of data-apis/array-api-tests"; exit 2; }
	test -x $(AAT_VENV)/bin/python || python3 -m venv $(AAT_VENV)
	$(AAT_VENV)/bin/python -m pip install -q -r requirements.txt $(AAT_PACKAGES)
	$(call DEV_PTH,$(AAT_VENV)/bin/python)
	PYTHON=$(abspath $(AAT_VENV))/bin/python tools/array_api_tests.sh $(ARRAY_API_TESTS)

# The C libraries and C tests again with AddressSanitizer and UBSan (build-asan/, libraries in
# build-asan/lib so kapi/_lib keeps the normal build). LLVM and libze are not instrumented and
# the CPU driver's JIT-compiled kernels are not either; valgrind tests are left out (they do not
# mix with ASan). UBSan stops at its first report; LeakSanitizer runs at each test's exit.
# About 6 minutes on 2 cores, so .ci/run calls it after `make test` rather than inside it.
ASAN_BUILD ?= build-asan
test-asan: setup
	@test -f $(ASAN_BUILD)/build.ninja || cmake -S . -B $(ASAN_BUILD) -G Ninja -DKAPI_SANITIZE=ON \
	  -DKAPI_LIB_DIR=$(abspath $(ASAN_BUILD))/lib -DPython3_EXECUTABLE=$(abspath $(PY)) > /dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:check_initialization_order=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

# The binary wheel: the normal build (Debian's shared LLVM 15 and SPIR-V translator), then
# auditwheel grafts every library it needs that a manylinux system lacks (libLLVM-15,
# libLLVMSPIRVLib, their dependencies, the Level Zero loader) into kapi.libs/, renamed, with
# $$ORIGIN-relative rpaths, and sets the manylinux tag. The CMake build is kept in
# $(WHEEL_BUILD)/cmake, so a second `make wheel` only rebuilds what changed.
# docs/guide/install.md says what the wheel needs on the target machine.
WHEEL_BUILD ?= build-wheel
DIST ?= dist
wheel: setup
	rm -rf $(WHEEL_BUILD)/raw $(DIST)
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip wheel -q --no-deps --no-build-isolation \
	  -w $(WHEEL_BUILD)/raw -Cbuild-dir=$(WHEEL_BUILD)/cmake .
	PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/auditwheel repair -z 9 -w $(DIST) \
	  $(WHEEL_BUILD)/raw/kapi-*.whl
	$(PY) tools/wheel/check_wheel.py $(DIST)/kapi-*.whl

# The wheel installed into a fresh venv outside the checkout: `python -m kapi`, a kernel, every
# sample, the C API sample (samples/c_extension) built against the installed wheel, the bundled
# libraries' dependencies and symbols, and kapi beside llvmlite's LLVM (and Triton's where
# installed), with the system's LLVM, translator and loader hidden.
test-wheel: wheel
	bash tools/wheel/test_wheel.sh $(DIST)/kapi-*.whl

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	git ls-files '*.c' '*.h' '*.cpp' | xargs clang-format --dry-run --Werror
	$(VENV)/bin/mypy

format:
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
	git ls-files '*.c' '*.h' '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(WHEEL_BUILD) $(DIST) kapi/_lib .stamps
