"""The C extension kapi._lib._kapi, loaded on first use so pure-Python parts import without it."""

from __future__ import annotations

import functools

from ._errors import KapiError

_KC_STATUS_NAMES = (
    "KC_OK",
    "KC_ERR_INVALID_ARGUMENT",
    "KC_ERR_KIR",
    "KC_ERR_UNSUPPORTED",
    "KC_ERR_LLVM",
    "KC_ERR_SPIRV",
    "KC_ERR_TARGET",
    "KC_ERR_OUT_OF_MEMORY",
)


class NativeMissingError(KapiError, ImportError):
    """The C extension is not built (in a checkout: `make build`) or not installed."""


@functools.cache
def ext():
    try:
        from ._lib import _kapi
    except ImportError as e:
        raise NativeMissingError(
            f"kapi's native extension kapi._lib._kapi is not available ({e}): in a source "
            "checkout run `make build`; otherwise install kapi with its native parts (the wheel "
            "from `make wheel`, or `pip install .`)"
        ) from None
    return _kapi


def has(name: str) -> bool:
    try:
        return hasattr(ext(), name)
    except NativeMissingError:
        return False


def compile_status_name(status) -> str:
    if isinstance(status, str):
        return status
    if isinstance(status, int) and 0 <= status < len(_KC_STATUS_NAMES):
        return _KC_STATUS_NAMES[status]
    return "KC_ERR_UNKNOWN"
