"""kapi: Python kernels compiled to SPIR-V and run through Level Zero on CPUs and GPUs.

numba-dpex's kernel API: code written for numba-dpex runs after changing its imports to
`import kapi as dpex; from kapi import kernel_api as kapi`.
"""

from . import _ops, _reduce  # noqa: F401 - operators, ufuncs, reductions on kapi.Array
from ._array import (
    Array,
    arange,
    asarray,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from ._device import Device, Queue, default_device, devices
from ._dpjit import DpjitFunction, UnsupportedPrangeError, dpjit
from ._errors import (
    DeviceError,
    DeviceNotFoundError,
    ExecutionQueueInferenceError,
    InvalidKernelSpecializationError,
    InvalidRangeError,
    KapiError,
    KernelCallError,
    KernelCompileError,
    KernelHasReturnValueError,
    LaunchError,
    MissingSpecializationError,
    OutOfDeviceMemoryError,
    UnmatchedNumberOfRangeDimsError,
    UnsupportedDtypeError,
    UnsupportedGroupWorkItemSizeError,
    UnsupportedKernelArgumentError,
)
from ._fuse import FusedFunction, fuse
from ._guvectorize import GUFunc, guvectorize
from ._interop import from_dlpack
from ._kernel import KernelDispatcher, device_func, kernel
from ._launch import call_kernel, call_kernel_async, wait_all
from ._memory import MemoryPool, get_default_memory_pool
from ._ranges import NdRange, Range
from ._scalar_names import scalar_names as _scalar_names
from ._types import DpnpNdArray, ItemType, NdItemType, USMNdArray, usm_ndarray
from ._types import array as array_type
from ._ufunc import where
from ._vectorize import VectorizedFunction, vectorize

try:  # the in-kernel classes (Item, NdItem, AtomicRef, ...) live in kapi/kernel_api.py
    from . import kernel_api
except ImportError:  # pragma: no cover - only while the kernel_api module is being written
    kernel_api = None

# Scalar types, as numba-dpex exports them (kapi/_scalar_names.py): conversions
# (kapi.int32(0)), dtypes, signature entries, signature objects (kapi.int64(kapi.int64)) and
# array types (kapi.float32[::1]).
_SCALARS = _scalar_names()
bool_ = boolean = b1 = _SCALARS["bool_"]
int8, int16, int32, int64 = (_SCALARS[n] for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (_SCALARS[n] for n in ("uint8", "uint16", "uint32", "uint64"))
float32, float64 = _SCALARS["float32"], _SCALARS["float64"]
i4, i8, u4, u8, f4, f8 = int32, int64, uint32, uint64, float32, float64
float_, double = float32, float64
none = void = _SCALARS["void"]  # void(args...) is a signature; kernels return nothing

prange = range  # numba.prange, re-exported by numba-dpex: plain range, offloaded by dpjit

__version__ = "0.1.0"

__all__ = [
    "Array",
    "MemoryPool",
    "get_default_memory_pool",
    "DpnpNdArray",
    "ItemType",
    "NdItemType",
    "USMNdArray",
    "usm_ndarray",
    "Device",
    "DpjitFunction",
    "NdRange",
    "Queue",
    "Range",
    "arange",
    "array_type",
    "asarray",
    "call_kernel",
    "call_kernel_async",
    "default_device",
    "device_func",
    "dpjit",
    "devices",
    "empty",
    "empty_like",
    "from_dlpack",
    "full",
    "full_like",
    "fuse",
    "FusedFunction",
    "GUFunc",
    "guvectorize",
    "kernel",
    "kernel_api",
    "ones",
    "ones_like",
    "prange",
    "vectorize",
    "VectorizedFunction",
    "wait_all",
    "where",
    "zeros",
    "zeros_like",
    "DeviceError",
    "DeviceNotFoundError",
    "ExecutionQueueInferenceError",
    "InvalidKernelSpecializationError",
    "InvalidRangeError",
    "KapiError",
    "KernelCallError",
    "KernelCompileError",
    "KernelDispatcher",
    "KernelHasReturnValueError",
    "LaunchError",
    "MissingSpecializationError",
    "OutOfDeviceMemoryError",
    "UnmatchedNumberOfRangeDimsError",
    "UnsupportedDtypeError",
    "UnsupportedGroupWorkItemSizeError",
    "UnsupportedKernelArgumentError",
    "UnsupportedPrangeError",
]
