"""Shared pieces of the array API namespace: dtypes and their defaults, operand checks,
axes, allocation and the small kernels the namespace's functions build on."""

from __future__ import annotations

import operator

import numpy as np

from ..._errors import ExecutionQueueInferenceError
from ..._memory.array import Array, _check_dtype
from ..._memory.device import Queue, as_queue
from .. import lazy as _lazy
from .. import ufunc as _ufunc

BOOL = np.dtype(np.bool_)
INT64 = np.dtype(np.int64)
FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)

# the array API's data types (float16 and bfloat16 are kapi's own extras)
API_DTYPES = {
    "bool": BOOL,
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": INT64,
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "float32": FLOAT32,
    "float64": FLOAT64,
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}


def queue_of(device=None) -> Queue:
    """The queue of a device= argument (a Device, Queue, filter string or None: the
    default device)."""
    if isinstance(device, Queue):
        return device
    return as_queue(device)


def default_float(q: Queue) -> np.dtype:
    return FLOAT64 if q.device.has_aspect_fp64 else FLOAT32


def default_complex(q: Queue) -> np.dtype:
    return np.dtype(np.complex128 if q.device.has_aspect_fp64 else np.complex64)


def dtype_of(dtype) -> np.dtype:
    return _check_dtype(dtype)


def check(x, what: str) -> Array:
    if not isinstance(x, Array):
        raise TypeError(
            f"{what} takes a kapi array, not {type(x).__name__}; make one with "
            "kapi.asarray(x, device=...)"
        )
    return x


def same_queue(arrays, what: str):
    return _ufunc.common_queue([a for a in arrays if isinstance(a, Array)], what)


def allocate(shape, dtype, like: Array | Queue, usm_type: str | None = None) -> Array:
    if isinstance(like, Array):
        q, ut = like.sycl_queue, usm_type or like.usm_type
    else:
        q, ut = like, usm_type or "device"
    return Array._allocate(tuple(shape), np.dtype(dtype), q, ut)


def normalise_axis(axis, ndim: int, what: str = "axis") -> int:
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(a, ndim)
    return a % ndim


def normalise_axes(axis, ndim: int) -> tuple[int, ...]:
    """axis (None: all, an int, or a tuple) as sorted distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = [normalise_axis(a, ndim) for a in axes]
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis}")
    return tuple(sorted(out))


def copy_into(dst: Array, src) -> None:
    _ufunc.copy_into(dst, src)


def concrete(x: Array) -> Array:
    """x evaluated (a pending expression computed into its own memory)."""
    return _lazy.realize(x)


def contiguous(x: Array) -> Array:
    """x when C-contiguous, else a C-contiguous copy on its device."""
    x = concrete(x)
    if x.layout == "C" or x.size == 0:
        return x
    out = allocate(x.shape, x.dtype, x)
    _ufunc.copy_into(out, x)
    return out


def view(x: Array, shape, strides, offset: int = 0, dtype=None) -> Array:
    """A view of x's memory (strides and offset in bytes)."""
    x = concrete(x)
    return Array._make(
        x._owner,
        x._ptr + offset,
        tuple(shape),
        tuple(strides),
        np.dtype(dtype) if dtype is not None else x.dtype,
        x.sycl_queue,
        x.usm_type,
        x._host_ok,
    )


def scalar_operand(x):
    """x as what the elementwise functions take: an Array, or a Python/NumPy scalar."""
    if isinstance(x, Array):
        return x
    o = _ufunc.operand(x)
    if o is None:
        raise TypeError(
            f"kapi array functions take kapi arrays and Python scalars, not {type(x).__name__}"
        )
    return o


_KERNELS: dict = {}


def kernel(source: str, entry: str, **env):
    """The @kapi.kernel defined by source (our own text) and its globals env, built once per
    (source, env): a constant such as ZERO=dtype.type(0) differs between dtypes."""
    key = (source, tuple(sorted((n, type(v).__name__, repr(v)) for n, v in env.items())))
    k = _KERNELS.get(key)
    if k is None:
        from kapi_lang import kernel_api as K

        from ..._kernel.dispatcher import kernel as make

        g = {"np": np, "K": K, **env}
        exec(compile(source, f"<kapi {entry}>", "exec"), g)  # noqa: S102 - our own source
        k = _KERNELS[key] = make(g[entry])
    return k


def launch(k, size: int, *args) -> None:
    """Runs kernel k over range(size) (nothing for size 0)."""
    if size == 0:
        return
    from ..._kernel.ranges import Range
    from ..replay import launch as call

    call(k, Range(size), *args)


def check_devices(arrays, what: str):
    first = None
    for a in arrays:
        if not isinstance(a, Array):
            continue
        if first is None:
            first = a
        elif a.device != first.device:
            raise ExecutionQueueInferenceError(
                f"{what}: operands live on different devices ('{first.device.filter_string}' "
                f"and '{a.device.filter_string}'); move one with .to_device(...)"
            )
    return first


def scalar_array(v, dt, like: Array) -> Array:
    """A 0-d array of v (dtype dt) on like's device."""
    a = allocate((), dt, like)
    a.fill(v)
    return a
