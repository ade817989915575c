"""Every exception kapi raises, and the one place that maps native statuses to them.

Compiler statuses (kc_*) and runtime statuses (kr_*) arrive from the C extension as a status
name plus a message; `from_status` picks the Python class. Names follow numba-dpex where it
had one, so `except` clauses written for numba-dpex keep working after an import change.
"""

from __future__ import annotations


class KapiError(Exception):
    """Base class of every error kapi raises on purpose."""


# --- compile time --------------------------------------------------------------------------


class KernelCompileError(KapiError):
    """The kernel could not be compiled (KIR, LLVM or SPIR-V stage). `status` names the stage."""

    def __init__(self, message: str, status: str | None = None):
        super().__init__(message)
        self.status = status


class KernelHasReturnValueError(KapiError, TypeError):
    """A kernel returns a value; kernels write their results into array arguments."""


class InvalidKernelSpecializationError(KapiError, TypeError):
    """A signature given to @kernel is malformed, or a call matches none of the signatures."""


class MissingSpecializationError(InvalidKernelSpecializationError):
    """A kernel declared with signatures was called with argument types none of them lists.
    Raised as `missing_specialization(message)`: also a Numba TypingError, the class
    numba-dpex's call_kernel raised in that case."""


# --- launch time ---------------------------------------------------------------------------


class KernelCallError(KapiError, TypeError):
    """A kernel object was called like a Python function."""


class UnsupportedKernelArgumentError(KapiError, TypeError):
    """An argument of a type kernels cannot take (or a NumPy array on a non-host device)."""


class ExecutionQueueInferenceError(KapiError):
    """The arrays of one launch live on different devices or queues, or there is no array."""


class UnsupportedGroupWorkItemSizeError(KapiError, ValueError):
    """The local (work-group) size does not divide the global size, or is not positive."""


class UnmatchedNumberOfRangeDimsError(KapiError, ValueError):
    """The global and local ranges of an NdRange have different numbers of dimensions."""


class InvalidRangeError(KapiError, ValueError, TypeError):
    """A Range with zero, negative or non-integer extents, or more than three dimensions.
    Also a TypeError: numba-dpex's Range raised TypeError for extents that are not ints."""


# --- runtime -------------------------------------------------------------------------------


class DeviceError(KapiError):
    """The runtime or a driver reported an error (message names device, driver and result)."""

    def __init__(self, message: str, status: str | None = None):
        super().__init__(message)
        self.status = status


class DeviceNotFoundError(DeviceError, ValueError):
    """No device matches a filter string."""


class OutOfDeviceMemoryError(DeviceError, MemoryError):
    """A USM allocation failed."""


class LaunchError(DeviceError):
    """The driver rejected or failed a kernel launch."""


class UnsupportedDtypeError(KapiError, TypeError):
    """An array dtype kapi arrays or kernels do not support."""


# Status name (from the C libraries) -> exception class. Unknown names fall back by prefix.
_STATUS_CLASSES: dict[str, type[Exception]] = {
    "KC_ERR_INVALID_ARGUMENT": KernelCompileError,
    "KC_ERR_KIR": KernelCompileError,
    "KC_ERR_UNSUPPORTED": KernelCompileError,
    "KC_ERR_LLVM": KernelCompileError,
    "KC_ERR_SPIRV": KernelCompileError,
    "KC_ERR_TARGET": KernelCompileError,
    "KC_ERR_OUT_OF_MEMORY": MemoryError,
    "KR_ERR_NO_DEVICE": DeviceNotFoundError,
    "KR_ERR_DEVICE_NOT_FOUND": DeviceNotFoundError,
    "KR_ERR_OUT_OF_MEMORY": OutOfDeviceMemoryError,
    "KR_ERR_OUT_OF_DEVICE_MEMORY": OutOfDeviceMemoryError,
    "KR_ERR_OUT_OF_HOST_MEMORY": MemoryError,
    "KR_ERR_LAUNCH": LaunchError,
    "KR_ERR_INVALID_ARGUMENT": DeviceError,
    "KR_ERR_BUILD": KernelCompileError,
    "KR_ERR_MODULE_BUILD": KernelCompileError,
}


def from_status(status: str, message: str) -> Exception:
    """The exception for a native status name and message (not raised here)."""
    cls = _STATUS_CLASSES.get(status)
    if cls is None:
        cls = KernelCompileError if status.startswith("KC_") else DeviceError
    if issubclass(cls, (KernelCompileError, DeviceError)):
        return cls(message, status)
    return cls(message)


# Shown as kapi.<Name> in tracebacks: the public names live in the kapi namespace.
for _cls in list(globals().values()):
    if isinstance(_cls, type) and issubclass(_cls, KapiError):
        _cls.__module__ = "kapi"
del _cls
