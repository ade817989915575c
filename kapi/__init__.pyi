# kapi's public API as type checkers see it. kapi/__init__.py resolves these names lazily (PEP
# 562 __getattr__), which mypy and pyright cannot follow, so this stub declares each one with
# its signature. It imports none of kapi's private modules: they may move without touching it.
# A name exported in kapi/__init__.py must be declared here too (tests/test_typing.py checks).

from collections.abc import Callable, Iterator, Sequence
from typing import Any, SupportsIndex, TypeAlias, TypeVar, overload

import numpy as np
import numpy.typing as npt

from . import array_api as array_api
from . import kernel_api as kernel_api
from . import random as random

__version__: str
__all__: list[str]

prange = range

_F = TypeVar("_F", bound=Callable[..., Any])
_DTypeLike: TypeAlias = npt.DTypeLike | None
_ShapeLike: TypeAlias = SupportsIndex | Sequence[SupportsIndex]
_DeviceLike: TypeAlias = "str | Device | None"
# A kernel signature: a tuple of types (led by an index space such as "item(1)"), a string such
# as "(item(1), array(f32,1), f32)", or a signature object such as kapi.void(kapi.f4[::1]).
_Signature: TypeAlias = "str | tuple[Any, ...] | _SignatureObject"

class _SignatureObject: ...

class _ScalarType:
    """kapi.int32 and the other scalar names: a conversion (kapi.int32(7)), a dtype, a
    signature entry, a signature (kapi.int64(kapi.int64)) and array types (kapi.f4[::1])."""

    @property
    def dtype(self) -> np.dtype[Any]: ...
    def __call__(self, *args: Any) -> Any: ...
    def __getitem__(self, key: Any) -> str: ...

bool_: _ScalarType
boolean: _ScalarType
b1: _ScalarType
int8: _ScalarType
int16: _ScalarType
int32: _ScalarType
int64: _ScalarType
uint8: _ScalarType
uint16: _ScalarType
uint32: _ScalarType
uint64: _ScalarType
float32: _ScalarType
float64: _ScalarType
i4: _ScalarType
i8: _ScalarType
u4: _ScalarType
u8: _ScalarType
f4: _ScalarType
f8: _ScalarType
float_: _ScalarType
double: _ScalarType
none: _ScalarType
void: _ScalarType

# ---- errors ------------------------------------------------------------------------------------

class KapiError(Exception): ...

class DeviceError(KapiError):
    status: str | None
    def __init__(self, message: str, status: str | None = None) -> None: ...

class DeviceNotFoundError(DeviceError, ValueError): ...
class LaunchError(DeviceError): ...
class OutOfDeviceMemoryError(DeviceError, MemoryError): ...

class KernelCompileError(KapiError):
    status: str | None
    def __init__(self, message: str, status: str | None = None) -> None: ...

class ExecutionQueueInferenceError(KapiError): ...
class InvalidKernelSpecializationError(KapiError, TypeError): ...
class MissingSpecializationError(InvalidKernelSpecializationError): ...
class InvalidRangeError(KapiError, ValueError, TypeError): ...
class KernelCallError(KapiError, TypeError): ...
class KernelHasReturnValueError(KapiError, TypeError): ...
class UnmatchedNumberOfRangeDimsError(KapiError, ValueError): ...
class UnsupportedDtypeError(KapiError, TypeError): ...
class UnsupportedGroupWorkItemSizeError(KapiError, ValueError): ...
class UnsupportedKernelArgumentError(KapiError, TypeError): ...
class HostCompileError(KapiError, TypeError): ...
class UnsupportedPrangeError(KapiError, NotImplementedError): ...
class HostFallbackWarning(UserWarning): ...

# ---- devices and queues ------------------------------------------------------------------------

class Device:
    def __new__(cls, filter_string: str | Device | None = None) -> Device: ...
    @property
    def filter_string(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def vendor(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def driver_name(self) -> str: ...
    @property
    def device_type(self) -> str: ...
    @property
    def is_cpu(self) -> bool: ...
    @property
    def is_gpu(self) -> bool: ...
    @property
    def info(self) -> dict[str, Any]: ...
    @property
    def global_mem_size(self) -> int: ...
    @property
    def local_mem_size(self) -> int: ...
    @property
    def max_compute_units(self) -> int: ...
    @property
    def max_work_group_size(self) -> int: ...
    @property
    def max_work_item_sizes(self) -> tuple[int, ...]: ...
    @property
    def sub_group_sizes(self) -> tuple[int, ...]: ...
    @property
    def has_aspect_fp16(self) -> bool: ...
    @property
    def has_aspect_fp64(self) -> bool: ...
    @property
    def has_aspect_atomic64(self) -> bool: ...
    @property
    def host_accessible(self) -> bool: ...
    @property
    def dlpack_device_type(self) -> int: ...
    @property
    def default_queue(self) -> Queue: ...
    @property
    def sycl_device(self) -> Device: ...

class Queue:
    def __init__(self, device: _DeviceLike = None) -> None: ...
    @property
    def device(self) -> Device: ...
    @property
    def sycl_device(self) -> Device: ...
    def synchronize(self) -> None: ...
    def wait(self) -> None: ...

def devices(device_type: str | None = None) -> list[Device]: ...
def default_device() -> Device: ...

# ---- arrays ------------------------------------------------------------------------------------

class Array:
    """An n-dimensional array in one device's memory (USM)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def device(self) -> Device: ...
    @property
    def queue(self) -> Queue: ...
    @property
    def sycl_queue(self) -> Queue: ...
    @property
    def sycl_device(self) -> Device: ...
    @property
    def usm_type(self) -> str: ...
    @property
    def flags(self) -> Any: ...
    @property
    def layout(self) -> str: ...
    @property
    def data_ptr(self) -> int: ...
    @property
    def base(self) -> Array | None: ...
    @property
    def T(self) -> Array: ...
    def asnumpy(self) -> np.ndarray[Any, Any]: ...
    def astype(self, dtype: _DTypeLike, copy: bool = True) -> Array: ...
    def copy(self, order: str = "C") -> Array: ...
    def fill(self, value: Any) -> None: ...
    def reshape(self, *shape: Any, order: str = "C") -> Array: ...
    def to_device(self, device: _DeviceLike, stream: Any = None) -> Array: ...
    def sum(
        self,
        axis: Any = None,
        dtype: _DTypeLike = None,
        out: Array | None = None,
        keepdims: bool = False,
        **kwargs: Any,
    ) -> Any: ...
    def prod(
        self,
        axis: Any = None,
        dtype: _DTypeLike = None,
        out: Array | None = None,
        keepdims: bool = False,
        **kwargs: Any,
    ) -> Any: ...
    def mean(
        self,
        axis: Any = None,
        dtype: _DTypeLike = None,
        out: Array | None = None,
        keepdims: bool = False,
        **kwargs: Any,
    ) -> Any: ...
    def min(
        self,
        axis: Any = None,
        dtype: _DTypeLike = None,
        out: Array | None = None,
        keepdims: bool = False,
        **kwargs: Any,
    ) -> Any: ...
    def max(
        self,
        axis: Any = None,
        dtype: _DTypeLike = None,
        out: Array | None = None,
        keepdims: bool = False,
        **kwargs: Any,
    ) -> Any: ...
    def argmin(
        self,
        axis: Any = None,
        dtype: _DTypeLike = None,
        out: Array | None = None,
        keepdims: bool = False,
        **kwargs: Any,
    ) -> Any: ...
    def argmax(
        self,
        axis: Any = None,
        dtype: _DTypeLike = None,
        out: Array | None = None,
        keepdims: bool = False,
        **kwargs: Any,
    ) -> Any: ...
    def all(
        self,
        axis: Any = None,
        dtype: _DTypeLike = None,
        out: Array | None = None,
        keepdims: bool = False,
        **kwargs: Any,
    ) -> Any: ...
    def any(
        self,
        axis: Any = None,
        dtype: _DTypeLike = None,
        out: Array | None = None,
        keepdims: bool = False,
        **kwargs: Any,
    ) -> Any: ...
    def __array__(
        self, dtype: _DTypeLike = None, copy: bool | None = None
    ) -> np.ndarray[Any, Any]: ...
    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: Any = None,
        copy: bool | None = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...
    @property
    def __sycl_usm_array_interface__(self) -> dict[str, Any]: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __getitem__(self, key: Any) -> Any: ...
    def __setitem__(self, key: Any, value: Any) -> None: ...
    def __bool__(self) -> bool: ...
    def __int__(self) -> int: ...
    def __float__(self) -> float: ...
    def __neg__(self) -> Array: ...
    def __pos__(self) -> Array: ...
    def __abs__(self) -> Array: ...
    def __invert__(self) -> Array: ...
    def __add__(self, other: Any) -> Array: ...
    def __radd__(self, other: Any) -> Array: ...
    def __sub__(self, other: Any) -> Array: ...
    def __rsub__(self, other: Any) -> Array: ...
    def __mul__(self, other: Any) -> Array: ...
    def __rmul__(self, other: Any) -> Array: ...
    def __truediv__(self, other: Any) -> Array: ...
    def __rtruediv__(self, other: Any) -> Array: ...
    def __floordiv__(self, other: Any) -> Array: ...
    def __rfloordiv__(self, other: Any) -> Array: ...
    def __mod__(self, other: Any) -> Array: ...
    def __rmod__(self, other: Any) -> Array: ...
    def __pow__(self, other: Any) -> Array: ...
    def __rpow__(self, other: Any) -> Array: ...
    def __and__(self, other: Any) -> Array: ...
    def __rand__(self, other: Any) -> Array: ...
    def __or__(self, other: Any) -> Array: ...
    def __ror__(self, other: Any) -> Array: ...
    def __xor__(self, other: Any) -> Array: ...
    def __rxor__(self, other: Any) -> Array: ...
    def __lshift__(self, other: Any) -> Array: ...
    def __rlshift__(self, other: Any) -> Array: ...
    def __rshift__(self, other: Any) -> Array: ...
    def __rrshift__(self, other: Any) -> Array: ...
    def __iadd__(self, other: Any) -> Array: ...
    def __isub__(self, other: Any) -> Array: ...
    def __imul__(self, other: Any) -> Array: ...
    def __itruediv__(self, other: Any) -> Array: ...
    def __ifloordiv__(self, other: Any) -> Array: ...
    def __imod__(self, other: Any) -> Array: ...
    def __ipow__(self, other: Any) -> Array: ...
    def __iand__(self, other: Any) -> Array: ...
    def __ior__(self, other: Any) -> Array: ...
    def __ixor__(self, other: Any) -> Array: ...
    def __ilshift__(self, other: Any) -> Array: ...
    def __irshift__(self, other: Any) -> Array: ...
    # Comparisons are elementwise, as in NumPy.
    def __lt__(self, other: Any) -> Array: ...
    def __le__(self, other: Any) -> Array: ...
    def __gt__(self, other: Any) -> Array: ...
    def __ge__(self, other: Any) -> Array: ...
    def __eq__(self, other: Any) -> Array: ...  # type: ignore[override]
    def __ne__(self, other: Any) -> Array: ...  # type: ignore[override]

def asarray(
    obj: Any,
    dtype: _DTypeLike = None,
    order: str = "K",
    *,
    device: _DeviceLike = None,
    usm_type: str | None = None,
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
    copy: bool | None = None,
) -> Array: ...
def empty(
    shape: _ShapeLike,
    dtype: _DTypeLike = None,
    order: str = "C",
    *,
    device: _DeviceLike = None,
    usm_type: str = "device",
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
) -> Array: ...
def zeros(
    shape: _ShapeLike,
    dtype: _DTypeLike = None,
    order: str = "C",
    *,
    device: _DeviceLike = None,
    usm_type: str = "device",
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
) -> Array: ...
def ones(
    shape: _ShapeLike,
    dtype: _DTypeLike = None,
    order: str = "C",
    *,
    device: _DeviceLike = None,
    usm_type: str = "device",
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
) -> Array: ...
def full(
    shape: _ShapeLike,
    fill_value: Any,
    dtype: _DTypeLike = None,
    order: str = "C",
    *,
    device: _DeviceLike = None,
    usm_type: str = "device",
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
) -> Array: ...
def arange(
    start: Any,
    stop: Any = None,
    step: Any = 1,
    dtype: _DTypeLike = None,
    *,
    device: _DeviceLike = None,
    usm_type: str = "device",
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
) -> Array: ...
def empty_like(
    a: Any,
    dtype: _DTypeLike = None,
    order: str = "C",
    *,
    device: _DeviceLike = None,
    usm_type: str | None = None,
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
) -> Array: ...
def zeros_like(
    a: Any,
    dtype: _DTypeLike = None,
    order: str = "C",
    *,
    device: _DeviceLike = None,
    usm_type: str | None = None,
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
) -> Array: ...
def ones_like(
    a: Any,
    dtype: _DTypeLike = None,
    order: str = "C",
    *,
    device: _DeviceLike = None,
    usm_type: str | None = None,
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
) -> Array: ...
def full_like(
    a: Any,
    fill_value: Any,
    dtype: _DTypeLike = None,
    order: str = "C",
    *,
    device: _DeviceLike = None,
    usm_type: str | None = None,
    sycl_queue: Queue | None = None,
    queue: Queue | None = None,
) -> Array: ...
def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array: ...
def where(cond: Any, x: Any, y: Any) -> Array: ...
def get_include() -> str: ...
def get_cmake_dir() -> str: ...

class MemoryPool:
    def __init__(self) -> None: ...
    def malloc(self, device: int, kind: int, nbytes: int) -> Any: ...
    def free_all_blocks(self, device: int | None = None) -> None: ...
    def used_bytes(self) -> int: ...
    def free_bytes(self) -> int: ...
    def total_bytes(self) -> int: ...
    def n_free_blocks(self) -> int: ...

def get_default_memory_pool() -> MemoryPool | None: ...

# ---- index spaces ------------------------------------------------------------------------------

class Range(tuple[int, ...]):
    def __new__(cls, dim0: int, dim1: int | None = None, dim2: int | None = None) -> Range: ...
    @property
    def ndim(self) -> int: ...
    @property
    def dim0(self) -> int: ...
    @property
    def dim1(self) -> int: ...
    @property
    def dim2(self) -> int: ...
    def get(self, index: int) -> int: ...
    def size(self) -> int: ...

class NdRange:
    def __init__(
        self, global_size: Range | Sequence[int] | int, local_size: Range | Sequence[int] | int
    ) -> None: ...
    @property
    def global_range(self) -> Range: ...
    @property
    def local_range(self) -> Range: ...
    @property
    def ndim(self) -> int: ...
    def get_global_range(self) -> Range: ...
    def get_local_range(self) -> Range: ...

# ---- kernels and launches ----------------------------------------------------------------------

class _Event:
    """What call_kernel_async returns: wait() blocks until the launch has completed."""

    def wait(self) -> None: ...

class KernelDispatcher:
    """A @kapi.kernel function: specialised per argument types, launched by call_kernel."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __getitem__(self, index_space: Any) -> Any: ...
    @property
    def signatures(self) -> list[Any]: ...
    @property
    def compile_enabled(self) -> bool: ...
    def compile(self, argtypes: Any, index: Any = None) -> Any: ...
    def inspect_kir(self, signature: Any = None) -> Any: ...
    def inspect_llvm(self, signature: Any = None) -> Any: ...
    def inspect_spirv(self, signature: Any = None) -> Any: ...
    def inspect_spirv_asm(self, signature: Any = None) -> Any: ...
    def inspect_asm(self, signature: Any = None) -> Any: ...

@overload
def kernel(function_or_signature: Callable[..., Any], /) -> KernelDispatcher: ...
@overload
def kernel(
    function_or_signature: _Signature | list[_Signature] | None = None, **options: Any
) -> Callable[[Callable[..., Any]], KernelDispatcher]: ...
@overload
def device_func(function_or_signature: _F, /) -> _F: ...
@overload
def device_func(
    function_or_signature: _Signature | list[_Signature] | None = None, **options: Any
) -> Callable[[_F], _F]: ...
def call_kernel(
    kernel_fn: KernelDispatcher, index_space: Range | NdRange | Sequence[int], /, *kernel_args: Any
) -> None: ...
def call_kernel_async(
    kernel_fn: KernelDispatcher,
    index_space: Range | NdRange | Sequence[int],
    dependent_events: Sequence[_Event],
    /,
    *kernel_args: Any,
) -> _Event: ...
def wait_all(events: Sequence[_Event]) -> None: ...

# numba-dpex's type constructors, for signatures: each returns the type's name as a string.
def ItemType(ndim: int) -> str: ...
def NdItemType(ndim: int) -> str: ...
def array_type(dtype: Any, ndim: int, layout: str = "C") -> str: ...
def USMNdArray(ndim: int, dtype: Any, layout: str = "C", **ignored: Any) -> str: ...
def DpnpNdArray(ndim: int, dtype: Any, layout: str = "C", **ignored: Any) -> str: ...
def usm_ndarray(ndim: int, dtype: Any, layout: str = "C", **ignored: Any) -> str: ...

# ---- dpjit, ufuncs and array algorithms --------------------------------------------------------

class DpjitFunction:
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    @property
    def host(self) -> Any: ...
    @property
    def kernels(self) -> Any: ...
    @property
    def python_signatures(self) -> Any: ...

@overload
def dpjit(function: Callable[..., Any], /) -> DpjitFunction: ...
@overload
def dpjit(
    *signatures: Any, fallback: bool = False, **options: Any
) -> Callable[[Callable[..., Any]], DpjitFunction]: ...

class VectorizedFunction:
    def __call__(self, *args: Any, out: Array | None = None, **kwargs: Any) -> Any: ...

class GUFunc:
    def __call__(self, *args: Any, out: Any = None, **kwargs: Any) -> Any: ...

class FusedFunction:
    def __call__(self, *args: Any, out: Array | None = None) -> Any: ...

def vectorize(
    signatures: str | Sequence[str] | None = None, target: str | None = None, **options: Any
) -> Callable[[Callable[..., Any]], VectorizedFunction]: ...
def guvectorize(
    signatures: str | Sequence[str] | None = None,
    layout: str | None = None,
    target: str | None = None,
    **options: Any,
) -> Callable[[Callable[..., Any]], GUFunc]: ...
@overload
def fuse(fn: Callable[..., Any]) -> FusedFunction: ...
@overload
def fuse(fn: None = None) -> Callable[[Callable[..., Any]], FusedFunction]: ...
def reduce(
    op: Any,
    a: Any,
    axis: int | None = None,
    identity: Any = None,
    dtype: _DTypeLike = None,
    keepdims: bool = False,
) -> Any: ...
def scan(
    a: Any,
    op: Any = "add",
    axis: int | None = None,
    inclusive: bool = True,
    identity: Any = None,
    dtype: _DTypeLike = None,
) -> Array: ...
def cumsum(
    a: Any, axis: int | None = None, dtype: _DTypeLike = None, out: Array | None = None
) -> Array: ...
def cumprod(
    a: Any, axis: int | None = None, dtype: _DTypeLike = None, out: Array | None = None
) -> Array: ...
def sort(
    a: Any,
    axis: int | None = -1,
    kind: str | None = None,
    order: Any = None,
    *,
    descending: bool = False,
    stable: bool = True,
) -> Array: ...
def argsort(
    a: Any,
    axis: int | None = -1,
    kind: str | None = None,
    order: Any = None,
    *,
    descending: bool = False,
    stable: bool = True,
) -> Array: ...
def topk(a: Any, k: int) -> tuple[Array, Array]: ...
def unique(a: Any, return_counts: bool = False) -> Any: ...

# The array library's functions (the array API standard's names and dpnp's, on the device where
# their arrays live; docs/guide/array-api.md), and the helpers for several devices and MPI.
def abs(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def absolute(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def add(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def all(
    a: Any, axis: Any = ..., out: Any = ..., keepdims: Any = ..., *, where: Any = ...
) -> Any: ...
def allclose(a: Any, b: Any, rtol: Any = ..., atol: Any = ..., equal_nan: Any = ...) -> Any: ...
def amax(
    a: Any,
    axis: Any = ...,
    out: Any = ...,
    keepdims: Any = ...,
    initial: Any = ...,
    where: Any = ...,
) -> Any: ...
def amin(
    a: Any,
    axis: Any = ...,
    out: Any = ...,
    keepdims: Any = ...,
    initial: Any = ...,
    where: Any = ...,
) -> Any: ...
def any(
    a: Any, axis: Any = ..., out: Any = ..., keepdims: Any = ..., *, where: Any = ...
) -> Any: ...
def arccos(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def arccosh(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def arcsin(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def arcsinh(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def arctan(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def arctan2(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def arctanh(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def argmax(a: Any, axis: Any = ..., out: Any = ..., *, keepdims: Any = ...) -> Any: ...
def argmin(a: Any, axis: Any = ..., out: Any = ..., *, keepdims: Any = ...) -> Any: ...
def argwhere(a: Any) -> Any: ...
def around(a: Any, decimals: Any = ..., out: Any = ...) -> Any: ...
def array(
    obj: Any,
    dtype: Any = ...,
    *,
    copy: Any = ...,
    order: Any = ...,
    ndmin: Any = ...,
    device: Any = ...,
    usm_type: Any = ...,
    sycl_queue: Any = ...,
) -> Any: ...
def array_equal(a1: Any, a2: Any, equal_nan: Any = ...) -> Any: ...
def asnumpy(a: Any, order: Any = ...) -> Any: ...
def atleast_1d(*arys: Any) -> Any: ...
def atleast_2d(*arys: Any) -> Any: ...
def bitwise_and(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def bitwise_not(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def bitwise_or(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def bitwise_xor(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def broadcast_arrays(*args: Any, subok: Any = ...) -> Any: ...
def broadcast_to(array: Any, shape: Any, subok: Any = ...) -> Any: ...
def cbrt(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def ceil(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def clip(
    a: Any,
    a_min: Any = ...,
    a_max: Any = ...,
    out: Any = ...,
    *,
    min: Any = ...,
    max: Any = ...,
    **kwargs: Any,
) -> Any: ...
def concatenate(
    arrays: Any, /, axis: Any = ..., out: Any = ..., *, dtype: Any = ..., casting: Any = ...
) -> Any: ...
def conj(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def conjugate(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def copy(a: Any, order: Any = ...) -> Any: ...
def copysign(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def cos(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def cosh(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def count_nonzero(a: Any, axis: Any = ..., *, keepdims: Any = ...) -> Any: ...
def cuda_aware_mpi() -> Any: ...
def deg2rad(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def degrees(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def device_for_local_rank(comm: Any = ..., device_type: Any = ...) -> Any: ...
def diff(a: Any, n: Any = ..., axis: Any = ..., prepend: Any = ..., append: Any = ...) -> Any: ...
def divide(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def dot(a: Any, b: Any, out: Any = ...) -> Any: ...
def equal(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def exp(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def exp2(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def expand_dims(a: Any, axis: Any) -> Any: ...
def expm1(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def eye(
    N: Any,
    M: Any = ...,
    /,
    *,
    k: Any = ...,
    dtype: Any = ...,
    order: Any = ...,
    device: Any = ...,
    usm_type: Any = ...,
    sycl_queue: Any = ...,
) -> Any: ...
def fabs(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...

fft: Any  # the FFT extension: kapi.fft.fft(x), ... (host memory; docs/guide/array-api.md)

def flip(m: Any, axis: Any = ...) -> Any: ...
def float_power(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def floor(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def floor_divide(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def fmax(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def fmin(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def fmod(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def gcd(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def greater(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def greater_equal(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def histogram(
    a: Any, bins: Any = ..., range: Any = ..., density: Any = ..., weights: Any = ...
) -> Any: ...
def hstack(tup: Any, *, dtype: Any = ..., casting: Any = ...) -> Any: ...
def hypot(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def identity(
    n: Any, /, dtype: Any = ..., *, device: Any = ..., usm_type: Any = ..., sycl_queue: Any = ...
) -> Any: ...
def imag(val: Any) -> Any: ...
def inner(a: Any, b: Any) -> Any: ...
def invert(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def isclose(a: Any, b: Any, rtol: Any = ..., atol: Any = ..., equal_nan: Any = ...) -> Any: ...
def isfinite(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def isinf(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def isnan(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def lcm(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def ldexp(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def left_shift(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def less(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def less_equal(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...

linalg: Any  # the linear algebra extension: kapi.linalg.norm(x), ...

def linspace(
    start: Any,
    stop: Any,
    /,
    num: Any = ...,
    *,
    dtype: Any = ...,
    device: Any = ...,
    usm_type: Any = ...,
    sycl_queue: Any = ...,
    endpoint: Any = ...,
    retstep: Any = ...,
    axis: Any = ...,
) -> Any: ...
def local_rank(comm: Any = ...) -> Any: ...
def log(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def log10(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def log1p(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def log2(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def logaddexp(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def logaddexp2(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def logical_and(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def logical_not(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def logical_or(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def logical_xor(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def matmul(x1: Any, x2: Any, /, out: Any = ..., **kwargs: Any) -> Any: ...
def max(
    a: Any,
    axis: Any = ...,
    out: Any = ...,
    keepdims: Any = ...,
    initial: Any = ...,
    where: Any = ...,
) -> Any: ...
def maximum(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def mean(
    a: Any,
    axis: Any = ...,
    dtype: Any = ...,
    out: Any = ...,
    keepdims: Any = ...,
    *,
    where: Any = ...,
) -> Any: ...
def meshgrid(*xi: Any, indexing: Any = ...) -> Any: ...
def min(
    a: Any,
    axis: Any = ...,
    out: Any = ...,
    keepdims: Any = ...,
    initial: Any = ...,
    where: Any = ...,
) -> Any: ...
def minimum(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def mod(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def moveaxis(a: Any, source: Any, destination: Any) -> Any: ...
def multiply(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def negative(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def nonzero(a: Any) -> Any: ...
def not_equal(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def outer(a: Any, b: Any, out: Any = ...) -> Any: ...
def positive(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def power(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def prod(
    a: Any,
    axis: Any = ...,
    dtype: Any = ...,
    out: Any = ...,
    keepdims: Any = ...,
    initial: Any = ...,
    where: Any = ...,
) -> Any: ...
def rad2deg(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def radians(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def ravel(a: Any, order: Any = ...) -> Any: ...
def real(val: Any) -> Any: ...
def reciprocal(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def remainder(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def repeat(a: Any, repeats: Any, axis: Any = ...) -> Any: ...
def reshape(
    a: Any, /, newshape: Any = ..., order: Any = ..., copy: Any = ..., *, shape: Any = ...
) -> Any: ...
def right_shift(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def rint(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def roll(a: Any, shift: Any, axis: Any = ...) -> Any: ...
def round(a: Any, decimals: Any = ..., out: Any = ...) -> Any: ...
def searchsorted(a: Any, v: Any, side: Any = ..., sorter: Any = ...) -> Any: ...
def sign(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def signbit(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def simulate(kernel: Any, index_space: Any, *args: Any) -> Any: ...
def sin(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def sinh(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def sqrt(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def square(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def squeeze(a: Any, axis: Any = ...) -> Any: ...
def stack(
    arrays: Any, /, axis: Any = ..., out: Any = ..., *, dtype: Any = ..., casting: Any = ...
) -> Any: ...
def std(
    a: Any,
    axis: Any = ...,
    dtype: Any = ...,
    out: Any = ...,
    ddof: Any = ...,
    keepdims: Any = ...,
    *,
    where: Any = ...,
    mean: Any = ...,
    correction: Any = ...,
) -> Any: ...
def subtract(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def sum(
    a: Any,
    axis: Any = ...,
    dtype: Any = ...,
    out: Any = ...,
    keepdims: Any = ...,
    initial: Any = ...,
    where: Any = ...,
) -> Any: ...
def swapaxes(a: Any, axis1: Any, axis2: Any) -> Any: ...
def take(a: Any, indices: Any, axis: Any = ..., out: Any = ..., mode: Any = ...) -> Any: ...
def take_along_axis(arr: Any, indices: Any, axis: Any) -> Any: ...
def tan(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def tanh(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def tensordot(a: Any, b: Any, axes: Any = ...) -> Any: ...
def tile(A: Any, reps: Any) -> Any: ...
def trace(
    a: Any, offset: Any = ..., axis1: Any = ..., axis2: Any = ..., dtype: Any = ..., out: Any = ...
) -> Any: ...
def transpose(a: Any, axes: Any = ...) -> Any: ...
def tril(m: Any, /, k: Any = ...) -> Any: ...
def triu(m: Any, /, k: Any = ...) -> Any: ...
def true_divide(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def trunc(
    *args: Any,
    out: Any = ...,
    where: Any = ...,
    casting: Any = ...,
    order: Any = ...,
    dtype: Any = ...,
    **kw: Any,
) -> Any: ...
def var(
    a: Any,
    axis: Any = ...,
    dtype: Any = ...,
    out: Any = ...,
    ddof: Any = ...,
    keepdims: Any = ...,
    *,
    where: Any = ...,
    mean: Any = ...,
    correction: Any = ...,
) -> Any: ...
def vdot(a: Any, b: Any) -> Any: ...
def vstack(tup: Any, *, dtype: Any = ..., casting: Any = ...) -> Any: ...
