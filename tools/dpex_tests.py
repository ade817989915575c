"""numba-dpex's own test suite run against kapi, by import substitution.

    python tools/dpex_tests.py CHECKOUT [--ref 0.23.0] [--work DIR] [--json FILE] [-- PYTEST_ARGS]

CHECKOUT is a numba-dpex working tree (holding numba_dpex/tests) or a git directory of one
(then --ref names the tag or commit to read). Nothing of numba-dpex is kept in this repository:
the tests are copied into a scratch folder, their imports rewritten (`numba_dpex` -> kapi,
`numba_dpex.kernel_api` -> kapi.kernel_api, the exception and type modules -> kapi's top
level), and `dpnp`, `dpctl` and `dpctl.tensor` are served by small modules (written below)
that hand out kapi's equivalents: kapi arrays, devices and queues. pytest then runs on the
copy, on the device kapi picks (KAPI_DEFAULT_DEVICE chooses another).

Files that test numba-dpex's internals (its LLVM code generation, Numba data models, target
contexts, gdb integration, its config module, type classes kapi does not provide) are not
applicable and are listed with the reason in NOT_APPLICABLE; so are single tests of such
internals, or whose expected value NumPy 2 refuses to compute (NOT_APPLICABLE_TESTS). The
rate printed is passed / (passed + failed + errors) over the applicable tests; tests that
numba-dpex's own marks skip (a device that is not there) or mark as expected failures are
counted apart. Every failure that remains is a documented deviation (docs/guide/porting.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# test file (relative to numba_dpex/tests) -> why it does not apply to kapi
NOT_APPLICABLE = {
    "codegen/test_inline_threshold_codegen.py": "numba-dpex's LLVM IR and inline threshold",
    "codegen/test_intenum_literal_codegen.py": "numba-dpex's LLVM IR for IntEnumLiteral",
    "codegen/test_local_accessor_kernel_arg.py": "numba-dpex's LLVM IR of kernel arguments",
    "core/passes/test_parfor_legalize_cfd_pass.py": "numba-dpex's parfor legalisation pass",
    "core/runtime/test_llvm_registration.py": "numba-dpex's runtime library in LLVM",
    "core/test_dpjit_target.py": "numba-dpex's Numba target context",
    "core/test_itanium_mangler_extension.py": "numba-dpex's SPIR name mangler",
    "core/types/DpctlSyclEvent/test_models.py": "numba-dpex's Numba data models",
    "core/types/DpctlSyclQueue/test_queue_ref_attr.py": "numba-dpex's queue struct in LLVM",
    "core/types/DpnpNdArray/test_dpnp_ndarray_type.py": "numba-dpex's Numba typeof for dpnp",
    "core/types/IntEnumLiteral/test_compilation.py": "numba-dpex's FlagEnum/IntEnumLiteral",
    "core/types/IntEnumLiteral/test_type_creation.py": "numba-dpex's IntEnumLiteral type",
    "core/types/IntEnumLiteral/test_type_registration.py": "numba-dpex's data model registry",
    "core/types/USMNdArray/test_array_creation_errors.py": "numba-dpex's dpctl_types module",
    "core/types/USMNdArray/test_usm_ndarray_creation.py": "numba-dpex's DpctlSyclQueue type",
    "core/types/USMNdArray/test_usm_ndarray_type.py": "numba-dpex's Numba typeof for dpctl",
    "core/types/range_types/test_data_model.py": "numba-dpex's Numba data models",
    "core/types/test_array_models.py": "numba-dpex's Numba data models",
    "debugging/test_backtraces.py": "Intel's gdb-oneapi",
    "debugging/test_breakpoints.py": "Intel's gdb-oneapi",
    "debugging/test_info.py": "Intel's gdb-oneapi",
    "debugging/test_stepping.py": "Intel's gdb-oneapi",
    "dpjit_tests/parfors/test_dpnp_ufuncs.py": "numba-dpex's dpnp typing module (dpnpdecl)",
    "dpjit_tests/test_dpex_target_overload_isolation.py": "numba-dpex's Numba target registry",
    "kernel_tests/test_async_kernel.py": "numba-dpex's runtime context and dpjit target",
    "kernel_tests/test_dump_kernel_llvm.py": "numba-dpex's config and LLVM dumps",
    "kernel_tests/test_inline_threshold_config.py": "numba-dpex's Numba compiler passes",
    "kernel_tests/test_target_specific_overload.py": "numba-dpex's SPIR-V target registry",
    "misc/test_parse_sem_version.py": "numba-dpex's version helper",
    "misc/test_warnings.py": "numba-dpex's config module",
    "test_debuginfo.py": "numba-dpex's DWARF debug info",
    "test_examples.py": "numba-dpex's examples folder",
}

# single tests (node id prefixes, relative to numba_dpex/tests) that check numba-dpex internals
# or cannot pass on the NumPy kapi runs with
NOT_APPLICABLE_TESTS: dict[str, str] = {
    # numba-dpex 0.23 ran on NumPy 1.x; these tests compute their expected value with
    # numpy.full/full_like(..., 4294967295, dtype=int32), which NumPy 2 refuses
    f"dpjit_tests/dpnp/test_dpnp_{fn}.py::test_dpnp_{fn}_from_{how}"
    f"[{usm}-int32-4294967295-{shape}]": "its NumPy reference raises OverflowError under NumPy 2"
    for fn in ("full", "full_like")
    for how in ("device", "queue")
    for usm in ("device", "shared", "host")
    for shape in ("11", "shape1")
}

# (pattern, replacement) applied to every copied file, in order
IMPORT_REWRITES = [
    (r"\bnumba_dpex\.tests\b", "dpex_tests"),
    # the suite's package and helper read numba-dpex's config for its gdb tests only
    (r"^from numba_dpex\.core import config$", "import _dpex_config as config"),
    (
        r"^from numba_dpex import config, dpjit$",
        "import _dpex_config as config\nfrom kapi import dpjit",
    ),
    (r"\bfrom numba_dpex\.kernel_api import\b", "from kapi.kernel_api import"),
    (r"\bimport numba_dpex\.kernel_api as\b", "import kapi.kernel_api as"),
    (r"\bfrom numba_dpex\.core\.exceptions import\b", "from kapi import"),
    (r"\bfrom numba_dpex\.core\.types\.kernel_api\.index_space_ids import\b", "from kapi import"),
    (r"\bfrom numba_dpex\.core\.types\.dpnp_ndarray_type import\b", "from kapi import"),
    (r"\bfrom numba_dpex\.core\.types import\b", "from kapi import"),
    (r"\bfrom numba_dpex import\b", "from kapi import"),
    (r"\bimport numba_dpex as\b", "import kapi as"),
    (r"^(\s*)import numba_dpex\s*$", r"\1import kapi as numba_dpex"),
]

SHIMS = {
    "_dpex_config.py": "TESTING_SKIP_NO_DEBUGGING = True\n",
    "dpnp/__init__.py": '''
"""dpnp for numba-dpex's tests: kapi's array library under dpnp's names."""
import numpy as _np

import kapi as _kapi
from kapi import (
    arange, asarray, empty, empty_like, full, full_like, ones, ones_like, zeros, zeros_like,
)


class _NdarrayType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _kapi.Array)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _kapi.Array)


class ndarray(metaclass=_NdarrayType):
    """dpnp.ndarray: kapi arrays are its instances; its constructor, dpnp.ndarray(shape,
    dtype=...), allocates as kapi.empty does (kapi.Array itself is not a constructor)."""

    def __new__(cls, shape, dtype=None, buffer=None, offset=0, strides=None, order="C",
                device=None, usm_type="device", sycl_queue=None):
        if buffer is not None or strides is not None or offset:
            raise NotImplementedError("dpnp.ndarray(buffer=, strides=, offset=) has no kapi form")
        return _kapi.empty(shape, dtype=dtype, order=order, device=device, usm_type=usm_type,
                           sycl_queue=sycl_queue)

from . import random  # noqa: F401

bool = _np.bool_
for _n in ("int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 "
           "complex64 complex128 floating integer number").split():
    globals()[_n] = getattr(_np, _n)
sqrt, add, divide, true_divide, frexp = _np.sqrt, _np.add, _np.divide, _np.true_divide, _np.frexp


def asnumpy(a):
    return a.asnumpy() if isinstance(a, ndarray) else _np.asarray(a)


def array(obj, dtype=None, **kw):
    return _kapi.asarray(asnumpy(obj) if isinstance(obj, ndarray) else obj, dtype=dtype, **kw)


def copy(a, **kw):
    return a.copy()


reshape = _np.reshape  # kapi arrays take it (NumPy dispatches to kapi; dpjit compiles it)


def array_equal(a, b):
    return _np.array_equal(asnumpy(a), asnumpy(b))


def __getattr__(name):  # the rest of dpnp's namespace: NumPy's, which takes kapi arrays
    return getattr(_np, name)
''',
    "dpnp/random.py": """
import numpy as _np

import kapi as _kapi


def random(size=None):
    return _kapi.asarray(_np.random.random(size))
""",
    "dpctl/__init__.py": '''
"""dpctl for numba-dpex's tests: kapi's devices and queues under dpctl's names."""
import types as _types

import kapi as _kapi
from kapi import Device as SyclDevice, Queue as SyclQueue


class SyclQueueCreationError(Exception):
    pass


def select_default_device():
    return _kapi.default_device()


def _backend_matches(d, backend):
    # every kapi device is a Level Zero device; "opencl" code runs on the same devices
    return backend in (None, "level_zero", "opencl")


def get_num_devices(backend=None, device_type=None):
    return len([d for d in _kapi.devices(device_type) if _backend_matches(d, backend)])


class _Platform:
    backend = "level_zero"


def get_platforms():
    return [_Platform()]


backend_type = _types.SimpleNamespace(host="host", level_zero="level_zero", opencl="opencl")
device_type = _types.SimpleNamespace(cpu="cpu", gpu="gpu")


def _cached_queue(device):
    return _kapi.Device(device).default_queue


_sycl_queue_manager = _types.SimpleNamespace(get_device_cached_queue=_cached_queue)


def SyclEvent():  # noqa: N802 - dpctl's name: an event that has completed
    _host, ev = _kapi.call_kernel_async(_noop, _kapi.Range(1), (), _kapi.zeros(1))
    ev.wait()
    return ev


def _noop_fn(item, a):
    pass


_noop = _kapi.kernel(_noop_fn)
''',
    "dpctl/tensor/__init__.py": '''
"""dpctl.tensor for numba-dpex's tests: kapi arrays."""
import numpy as _np

import kapi as _kapi
from kapi import Array as usm_ndarray
from kapi import (
    arange, asarray, empty, empty_like, full, full_like, ones, ones_like, zeros, zeros_like,
)

# dpctl.tensor's type names are dtype objects (dpt.int32.type(0) is dpctl users' idiom)
for _n in ("bool int32 int64 float16 float32 float64 complex64 complex128").split():
    globals()[_n] = _np.dtype(_n)
dtype = _np.dtype


def asnumpy(a):
    return a.asnumpy()


def reshape(a, shape, order="C"):
    return a.reshape(shape, order=order)


def __getattr__(name):
    return getattr(_np, name)
''',
}

# numba-dpex 0.23 ran on Numba 0.59, whose config still had CAPTURED_ERRORS (its tests set and
# restore it); Numba 0.68 has no such setting and nothing reads it
ROOT_CONFTEST = """
import numba.core.config as _config

if not hasattr(_config, "CAPTURED_ERRORS"):
    _config.CAPTURED_ERRORS = "new_style"
"""

PYTEST_INI = """[pytest]
addopts = -p no:cacheprovider
filterwarnings = ignore::DeprecationWarning
"""


def extract(checkout: Path, ref: str, dest: Path) -> None:
    """Copies numba_dpex/tests of the checkout (or of `ref` in a git directory) to dest."""
    tests = checkout / "numba_dpex" / "tests"
    if tests.is_dir():
        shutil.copytree(tests, dest)
        return
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", f"--git-dir={checkout}", "archive", ref, "numba_dpex/tests"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(
        ["tar", "-x", "--strip-components=2", "-C", str(dest)], input=archive, check=True
    )


def rewrite(dest: Path) -> None:
    for path in dest.rglob("*.py"):
        text = path.read_text()
        for pattern, repl in IMPORT_REWRITES:
            text = re.sub(pattern, repl, text, flags=re.M)
        path.write_text(text)


def prepare(checkout: Path, ref: str, work: Path) -> Path:
    tests = work / "dpex_tests"
    if tests.exists():
        shutil.rmtree(tests)
    extract(checkout, ref, tests)
    rewrite(tests)
    for rel in NOT_APPLICABLE:
        (tests / rel).unlink(missing_ok=True)
    for rel, text in SHIMS.items():
        p = work / "shims" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text.lstrip())
    (work / "pytest.ini").write_text(PYTEST_INI)
    (work / "conftest.py").write_text(ROOT_CONFTEST.lstrip())
    return tests


def deselect_args(tests: Path) -> list[str]:
    return [f"--deselect=dpex_tests/{node}" for node in NOT_APPLICABLE_TESTS]


def outcomes(junit: Path) -> dict[str, str]:
    """node id -> passed / failed / error / skipped / xfailed / xpassed, from pytest's XML."""
    out = {}
    for case in ET.parse(junit).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = [child.tag for child in case]
        skipped = case.find("skipped")
        if "failure" in kinds:
            state = "failed"
        elif "error" in kinds:
            state = "error"
        elif skipped is not None:
            xfail = (skipped.get("type") or "") == "pytest.xfail"
            state = "xfailed" if xfail else "skipped"
        else:
            state = "passed"
        out[name] = state
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path, help="numba-dpex working tree or git directory")
    ap.add_argument("--ref", default="0.23.0", help="tag or commit, for a git directory")
    ap.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    ap.add_argument("--json", type=Path, help="write every test's outcome here")
    ap.add_argument(
        "--files", nargs="+", help="only these test files (relative to numba_dpex/tests)"
    )
    ap.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = ap.parse_args(argv)

    work = args.work or Path(tempfile.mkdtemp(prefix="dpex_tests_"))
    work.mkdir(parents=True, exist_ok=True)
    tests = prepare(args.checkout.resolve(), args.ref, work)
    junit = work / "junit.xml"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(work / "shims"), str(ROOT), str(work), env.get("PYTHONPATH", "")]
    )
    cmd = [
        sys.executable, "-m", "pytest", "-c", str(work / "pytest.ini"), "--rootdir", str(work),
        "-q", "--continue-on-collection-errors", f"--junitxml={junit}", "-o", "junit_family=xunit1",
        *deselect_args(tests), *args.pytest_args,
        *([str(tests / f) for f in args.files] if args.files else [str(tests)]),
    ]  # fmt: skip
    subprocess.run(cmd, cwd=work, env=env)
    results = outcomes(junit)
    counts: dict[str, int] = {}
    for state in results.values():
        counts[state] = counts.get(state, 0) + 1
    ran = sum(counts.get(k, 0) for k in ("passed", "failed", "error"))
    passed = counts.get("passed", 0)
    print(f"\nnumba-dpex {args.ref} tests on kapi: {passed} of {ran} applicable tests pass", end="")
    states = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    print(f" ({100.0 * passed / max(ran, 1):.1f}%); {states}")
    print(f"not applicable: {len(NOT_APPLICABLE)} files, {len(NOT_APPLICABLE_TESTS)} tests")
    for name, state in sorted(results.items()):
        if state in ("failed", "error"):
            print(f"  {state}: {name}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0 if passed == ran else 1


if __name__ == "__main__":
    sys.exit(main())
