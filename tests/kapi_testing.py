"""What the end-to-end test modules share: the devices to run on, or a visible module skip
(with the reason) when the compiler extension or the runtime is not there."""

import inspect

import pytest

import kapi
from kapi import _native


def devices_or_skip():
    if not _native.has("compile_kir"):
        pytest.skip("the compiler extension (compile_kir) is not built", allow_module_level=True)
    try:
        return kapi.devices()
    except kapi.KapiError as e:  # pragma: no cover
        pytest.skip(f"no kapi runtime: {e}", allow_module_level=True)


def needs_cpu_device():
    """Skip, with the reason, a test that needs kapi's CPU device (NumPy array arguments,
    `device="cpu"`) in a run whose KAPI_DRIVERS leaves that driver out."""
    if not any(d.device_type == "cpu" for d in kapi.devices()):
        pytest.skip("needs kapi's CPU device, which KAPI_DRIVERS leaves out in this run")


def line_of(fn, text):
    """Line number of the first source line of `fn` containing `text`."""
    src, start = inspect.getsourcelines(fn)
    for i, ln in enumerate(src):
        if text in ln:
            return start + i
    raise AssertionError(text)
