"""`import kapi` imports nothing (issue 11): names resolve on first use (PEP 562), and every
public name is still there for dir(), `from kapi import *` and attribute access."""

import json
import os
import subprocess
import sys

import pytest

import kapi

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fresh(code: str) -> dict:
    """Run `code` in a new interpreter (this tree's kapi); it prints one JSON value."""
    r = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=ROOT),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_kapi_imports_no_numpy_numba_or_submodules():
    out = fresh(
        "import json, sys; before = set(sys.modules); import kapi; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    assert out == ["kapi"], f"`import kapi` imported {out}"


def test_numpy_arrives_with_the_first_name_that_needs_it():
    out = fresh(
        "import json, sys, kapi; r = kapi.Range(4); k = kapi.KapiError; before = 'numpy' in "
        "sys.modules; a = kapi.Array; print(json.dumps([before, 'numpy' in sys.modules, "
        "hasattr(a, '__add__') and hasattr(a, 'sum')]))"
    )
    assert out == [False, True, True]  # Array comes with its operators and reductions


def test_decorating_a_kernel_imports_no_numpy():
    out = fresh(
        "import json, sys, kapi\n"
        "@kapi.kernel\ndef k(item, a):\n    a[item.get_id(0)] = 1\n"
        "@kapi.device_func\ndef f(x):\n    return x\n"
        "print(json.dumps(['numpy' in sys.modules, type(k).__name__]))"
    )
    assert out == [False, "KernelDispatcher"]


def test_star_import_and_dir_list_every_public_name():
    out = fresh(
        "import json, kapi; ns = {}; exec('from kapi import *', ns); "
        "print(json.dumps([sorted(n for n in ns if n != '__builtins__'), dir(kapi)]))"
    )
    star, listed = out
    assert sorted(kapi.__all__) == star
    assert set(kapi.__all__) <= set(listed)
    assert {"int32", "float64", "void", "bool_", "f4", "kernel_api", "__version__"} <= set(listed)


def test_every_export_is_public_and_resolves():
    # a name added to _EXPORTS must be in __all__ (and the other way round), except dpnp's
    # names that would shadow Python's builtins in a star import (sum, min, max, ...)
    public = set(kapi._EXPORTS) - set(kapi._SHADOWING)
    assert public | {"kernel_api", "prange"} == set(kapi.__all__)
    assert set(kapi._SHADOWING) <= set(kapi._EXPORTS)
    for name in [*kapi._EXPORTS, *kapi.__all__, *kapi._SCALAR_NAMES]:
        assert getattr(kapi, name) is not None, name
    assert kapi.i4 is kapi.int32 and kapi.f8 is kapi.double and kapi.none is kapi.void
    assert kapi.array_type is kapi._kernel.types.array
    from kapi import kernel_api

    assert kapi.kernel_api is kernel_api


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = kapi.no_such_name
    assert not hasattr(kapi, "also_missing")


def test_user_error_check_covers_kapi_and_pyfront_errors():
    # call_kernel drops kapi's frames from these (kapi/_ext/call.c), pyfront's without
    # kapi importing pyfront for a launch the disk cache serves
    import pyfront
    from kapi._kernel.launch import _UserError

    assert isinstance(kapi.KernelCompileError("x"), _UserError)
    assert isinstance(pyfront.KernelTypingError("m", "f.py", 3), _UserError)
    assert isinstance(pyfront.UnsupportedConstructError("m"), _UserError)
    assert not isinstance(RuntimeError("internal"), _UserError)
    assert not isinstance(KeyError("internal"), _UserError)


def test_launch_module_does_not_import_the_front_end():
    out = fresh(
        "import json, sys, kapi; kapi.call_kernel; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyfront', 'numba'))))"
    )
    assert out == []
