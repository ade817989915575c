"""pyfront keeps Numba behind one module and its typing out of Numba's CPU target."""

import pathlib
import re

import pytest

import pyfront
from kapi.kernel_api import AtomicRef

PYFRONT = pathlib.Path(pyfront.__file__).parent


def test_only_the_numba_module_imports_numba():
    offenders = []
    for path in PYFRONT.glob("*.py"):
        if path.name == "_numba.py":
            continue
        if re.search(r"^\s*(import numba|from numba)", path.read_text(), re.M):
            offenders.append(path.name)
    assert offenders == []


def test_kernel_api_imports_without_numba():
    src = (PYFRONT.parent / "kapi" / "kernel_api.py").read_text()
    assert "numba" not in re.sub(r'""".*?"""', "", src, flags=re.S).replace("numba-dpex", "")


def test_kapi_typing_does_not_leak_into_numba_cpu_target():
    numba = pytest.importorskip("numba")

    def k(item, a):
        AtomicRef(a, 0).fetch_add(a[0])

    pyfront.compile_kernel(k, ["array(f32,1,C,global)"], index=("item", 1))

    @numba.njit
    def cpu(a):
        AtomicRef(a, 0).fetch_add(a[0])

    with pytest.raises(numba.core.errors.TypingError):
        cpu(__import__("numpy").zeros(2, "f4"))
