"""kapi.Array: an N-dimensional array in USM memory of one device, with NumPy-style metadata.

Memory belongs to an owner object (a runtime Buffer, or a foreign producer's holder for
zero-copy imports) that every view, DLPack capsule and pending launch keeps alive. Strides
are in bytes, as in NumPy. Where the host can address the memory (kapi's CPU driver, host or
shared USM), reads and writes go through a NumPy view of it; elsewhere through queue copies.
"""

from __future__ import annotations

import ctypes
import functools
import operator

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import _native
from .._errors import (
    DeviceError,
    OutOfDeviceMemoryError,
    UnsupportedDtypeError,
    UnsupportedKernelArgumentError,
)
from . import pool as _memory
from .device import Queue, as_queue
from .dtypes import DTYPE_TO_KIR, KERNEL_MAX_NDIM, SUPPORTED_DTYPES
from .flags import ArrayFlags

_USM_KINDS = {"host": 1, "device": 2, "shared": 3}
_USM_NAMES = {v: k for k, v in _USM_KINDS.items()}

# Set by kapi/_numeric/lazy.py (only then can lazy expressions exist): _on_write(a) before kapi
# writes
# a's memory, _on_export(a) when a's memory leaves kapi's sight (host view, DLPack, ...).
_on_write = _on_export = None


def _check_dtype(dtype) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt not in DTYPE_TO_KIR:
        names = ", ".join(str(d) for d in SUPPORTED_DTYPES)
        shown = dt if dt is not None else repr(dtype)  # "object", not "dtype('O')"
        raise UnsupportedDtypeError(f"kapi arrays do not support dtype {shown}; use one of {names}")
    return dt


def _default_dtype(queue: Queue, kind: str = "f") -> np.dtype:
    if kind == "i":
        return np.dtype(np.int64)
    if kind == "b":
        return np.dtype(np.bool_)
    return np.dtype(np.float64 if queue.device.has_aspect_fp64 else np.float32)


def _shape_tuple(shape) -> tuple[int, ...]:
    if isinstance(shape, (tuple, list)):
        dims = tuple(operator.index(s) for s in shape)
    else:
        dims = (operator.index(shape),)
    if any(d < 0 for d in dims):
        raise ValueError(f"array dimensions must be non-negative, got {dims}")
    return dims


def _contiguous_strides(shape, itemsize: int, order: str) -> tuple[int, ...]:
    return _contiguous_strides_of(tuple(shape), itemsize, order)


@functools.lru_cache(maxsize=4096)
def _contiguous_strides_of(shape, itemsize: int, order: str) -> tuple[int, ...]:
    strides = [0] * len(shape)
    acc = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for d in dims:
        strides[d] = acc
        acc *= max(shape[d], 1)
    return tuple(strides)


def _is_contiguous(shape, strides, itemsize: int, order: str) -> bool:
    acc = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for d in dims:
        if shape[d] != 1 and strides[d] != acc:
            return False
        acc *= shape[d]
    return True


def _basic_index(shape, strides, key):
    """(byte offset, shape, strides) of the view a key of integers, slices and at most one
    Ellipsis selects, computed as NumPy does; None for any other key (the general path).
    Halo exchanges and row loops index rows in a loop: this keeps a view at a few hundred
    nanoseconds."""
    ndim, off, out_shape, out_strides, d = len(shape), 0, [], [], 0
    n_ell = 0
    for k in key:
        if k is Ellipsis:
            n_ell += 1
        elif k is None or isinstance(k, (bool, np.bool_)):
            return None
    if n_ell > 1 or len(key) - n_ell > ndim:
        return None  # NumPy's own errors
    for k in key:
        if k is Ellipsis:
            fill = ndim - (len(key) - 1)
            out_shape.extend(shape[d : d + fill])
            out_strides.extend(strides[d : d + fill])
            d += fill
        elif isinstance(k, slice):
            start, stop, step = k.indices(shape[d])
            out_shape.append(len(range(start, stop, step)))
            out_strides.append(strides[d] * step)
            off += start * strides[d]
            d += 1
        else:
            try:
                i = operator.index(k)
            except TypeError:
                return None
            if i < 0:
                i += shape[d]
            if not 0 <= i < shape[d]:
                raise IndexError(
                    f"index {operator.index(k)} is out of bounds for axis {d} with size {shape[d]}"
                )
            off += i * strides[d]
            d += 1
    out_shape.extend(shape[d:])
    out_strides.extend(strides[d:])
    return off, tuple(out_shape), tuple(out_strides)


@functools.lru_cache(maxsize=4096)
def _desc_parts(dtype, shape, strides) -> tuple[str, tuple[int, ...]]:
    """(KIR type key, strides in elements) of an array kernel argument (Array._kdesc)."""
    i = dtype.itemsize
    if _is_contiguous(shape, strides, i, "C"):
        layout = "C"
    else:
        layout = "F" if _is_contiguous(shape, strides, i, "F") else "A"
    return f"array({DTYPE_TO_KIR[dtype]},{len(shape)},{layout},global)", tuple(
        s // i for s in strides
    )


def _span(shape, strides, itemsize: int) -> tuple[int, int]:
    """[lo, hi) byte offsets, relative to element 0, that the array touches."""
    return _span_of(tuple(shape), tuple(strides), itemsize)


@functools.lru_cache(maxsize=4096)
def _span_of(shape, strides, itemsize: int) -> tuple[int, int]:
    if any(s == 0 for s in shape):
        return 0, 0
    lo = hi = 0
    for n, st in zip(shape, strides, strict=True):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + itemsize


def _shortest_pattern(b: bytes) -> bytes:
    """The shortest power-of-two prefix whose repetition is b (drivers prefer small fills)."""
    n = len(b)
    while n > 1 and b[: n // 2] * 2 == b[:n]:
        n //= 2
    return b[:n]


def _untraced() -> None:
    """Host reads and writes cannot be part of a recorded launch plan (kapi/_numeric/replay.py)."""
    if _memory._TRACING:
        _memory.untraceable()


def _host_buffer(ptr: int, nbytes: int, keep):
    buf = (ctypes.c_char * max(nbytes, 1)).from_address(ptr)
    buf._kapi_keep = keep  # the NumPy view keeps the memory's owner alive
    return buf


def _array_base():
    """The native base class that gives Array the buffer protocol (object without the build)."""
    try:
        return _native.ext().ArrayBase
    except _native.NativeMissingError:
        return object


class Array(_array_base()):
    """A USM array of one device: `kapi.empty/zeros/ones/full/arange/asarray(...)`."""

    __slots__ = (
        "_owner",
        "_ptr",
        "_shape",
        "_strides",
        "_dtype",
        "_queue",
        "_usm_type",
        "_host_ok",
        "_kd",
        "_own",
        "_expr",  # a pending array's expression (kapi/_numeric/lazy.py)
        "__weakref__",
    )

    @classmethod
    def _make(cls, owner, ptr, shape, strides, dtype, queue, usm_type, host_ok) -> Array:
        self = object.__new__(cls)
        self._owner = owner
        self._ptr = ptr
        self._shape = tuple(shape)
        self._strides = tuple(strides)
        self._dtype = dtype
        self._queue = queue
        self._usm_type = usm_type
        self._host_ok = host_ok
        self._kd = None
        self._own = False  # allocated for this array (NumPy's OWNDATA); views share memory
        return self

    @classmethod
    def _allocate(cls, shape, dtype, queue: Queue, usm_type: str, order: str = "C") -> Array:
        if usm_type not in _USM_KINDS:
            raise ValueError(f"usm_type must be 'device', 'shared' or 'host', not {usm_type!r}")
        if order not in ("C", "F"):
            raise ValueError(f"order must be 'C' or 'F', not {order!r}")
        shape = _shape_tuple(shape)
        n = 1
        for d in shape:
            n *= d
        if n * dtype.itemsize >= 2**63:  # past size_t's half: no device has that much
            raise OutOfDeviceMemoryError(
                f"an array of shape {shape} and dtype {dtype} needs {n * dtype.itemsize} bytes, "
                f"more than any device has; allocate less or split the data"
            )
        buf = _memory.allocate(queue.device.index, _USM_KINDS[usm_type], n * dtype.itemsize)
        strides = _contiguous_strides(shape, dtype.itemsize, order)
        a = cls._make(buf, buf.ptr, shape, strides, dtype, queue, usm_type, buf.host_accessible)
        a._own = True
        return a

    def __init__(self, *args, **kwargs):
        raise TypeError("create kapi arrays with kapi.empty/zeros/ones/full/arange/asarray")

    # -- metadata ------------------------------------------------------------------------

    shape = property(lambda self: self._shape)
    strides = property(lambda self: self._strides, doc="Strides in bytes, as in NumPy.")
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    itemsize = property(lambda self: self._dtype.itemsize)
    usm_type = property(lambda self: self._usm_type)
    sycl_queue = property(lambda self: self._queue)
    queue = sycl_queue
    device = property(lambda self: self._queue.device)
    sycl_device = device

    @property
    def size(self) -> int:
        n = 1
        for d in self._shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def data_ptr(self) -> int:
        if _on_export is not None:
            _on_export(self)
        return self._ptr

    @property
    def base(self):
        if _on_export is not None:
            _on_export(self)  # the owner exposes the memory (a Buffer is a writable buffer)
        owner = self._owner
        if type(owner) is _memory.Block:
            return owner.detach()  # the caller may keep the Buffer: it leaves the pool
        return owner

    @property
    def _array_obj(self) -> Array:
        """dpnp.ndarray's `_array_obj` (its dpctl.tensor.usm_ndarray): the array itself, which
        is both in kapi. Code written for dpnp with numba-dpex reads it (dpbench's kmeans)."""
        return self

    @property
    def flags(self) -> ArrayFlags:
        """NumPy's flags: `a.flags.c_contiguous`, `a.flags["F"]`, ... (read only)."""
        s, st, i = self._shape, self._strides, self.itemsize
        aligned = self._ptr % i == 0 and all(x % i == 0 for x in st)
        return ArrayFlags(
            _is_contiguous(s, st, i, "C"), _is_contiguous(s, st, i, "F"), self._own, aligned
        )

    @property
    def layout(self) -> str:
        """'C', 'F' or 'A': how kernels specialise on this array."""
        s, st, i = self._shape, self._strides, self.itemsize
        if _is_contiguous(s, st, i, "C"):
            return "C"
        return "F" if _is_contiguous(s, st, i, "F") else "A"

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d kapi array")
        return self._shape[0]

    @property
    def _kdesc(self):
        """The launcher's descriptor (an ArgDesc, see kapi/_ext/launch.c), parsed once per
        array: an array never changes after it is made."""
        kd = self._kd
        if kd is None:
            nd = len(self._shape)
            if not 1 <= nd <= KERNEL_MAX_NDIM:
                raise UnsupportedKernelArgumentError(
                    f"kernels take arrays of 1 to {KERNEL_MAX_NDIM} dimensions; this one has {nd}"
                )
            key, est = _desc_parts(self._dtype, self._shape, self._strides)
            q = self._queue
            desc = ("A", key, q.device.index, q._native, self._ptr, self._shape, est)
            kd = self._kd = _native.ext().ArgDesc(desc)
        return kd

    # -- host transfer -------------------------------------------------------------------

    def _host_view(self) -> np.ndarray:
        """A NumPy view of host-addressable memory (after the queue's pending work)."""
        _untraced()
        self._queue.wait()
        lo, hi = _span(self._shape, self._strides, self.itemsize)
        buf = _host_buffer(self._ptr + lo, hi - lo, self)
        return np.ndarray(self._shape, self._dtype, buf, -lo, self._strides)

    def _read_span(self) -> tuple[np.ndarray, int]:
        _untraced()
        lo, hi = _span(self._shape, self._strides, self.itemsize)
        host = np.empty(max(hi - lo, 1), np.uint8)
        if hi > lo:
            _native.ext().rt_memcpy(self._queue._native, host.ctypes.data, self._ptr + lo, hi - lo)
        return host, lo

    def asnumpy(self) -> np.ndarray:
        """A NumPy copy of the array (C order for contiguous arrays, the same strides else)."""
        if self._host_ok:
            return np.array(self._host_view(), copy=True, order="K")
        host, lo = self._read_span()
        view = np.ndarray(self._shape, self._dtype, host, -lo, self._strides)
        if self.layout != "A" and lo == 0:
            return view  # the fresh host buffer is already a contiguous copy
        return np.array(view, copy=True, order="K")

    def __array__(self, dtype=None, copy=None):
        if not self._host_ok:
            raise TypeError(
                f"a kapi array on '{self.device.filter_string}' is not in host memory: it is "
                "not converted to a NumPy array implicitly; copy it to the host explicitly with "
                "x.asnumpy() or kapi.asnumpy(x)"
            )
        if copy is not True:
            if _on_export is not None:
                _on_export(self)  # the view can write the memory behind kapi's back
            a = self._host_view()
        else:
            a = self.asnumpy()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError("a dtype conversion needs a copy")
            a = a.astype(dtype)
        return a

    def _assign(self, value) -> None:
        """self[...] = value, with NumPy broadcasting and casting."""
        _untraced()
        if _on_write is not None:
            _on_write(self)
        if isinstance(value, Array):
            if (
                (value._queue is self._queue or value.device == self.device)
                and value._dtype == self._dtype
                and value._shape == self._shape
                and value.layout == "C"
                and self.layout == "C"
            ):
                _native.ext().rt_memcpy(self._queue._native, self._ptr, value._ptr, self.nbytes)
                return
            if value.device == self.device and _copy_into is not None:
                _copy_into(self, value)  # a kernel: broadcasts and converts on the device
                return
            value = value.asnumpy()  # another device: through the host (to_device's copy)
        src = np.broadcast_to(np.asarray(value).astype(self._dtype, copy=False), self._shape)
        if self.size == 0:
            return
        if self._host_ok:
            self._host_view()[...] = src
            return
        if self.layout == "C":
            src = np.ascontiguousarray(src)
            _native.ext().rt_memcpy(self._queue._native, self._ptr, src.ctypes.data, self.nbytes)
            return
        if _copy_into is not None:  # host data to a device buffer, then a kernel scatters it
            tmp = Array._allocate(self._shape, self._dtype, self._queue, self._usm_type)
            tmp._assign(src)
            _copy_into(self, tmp)
            return
        host, lo = self._read_span()
        np.ndarray(self._shape, self._dtype, host, -lo, self._strides)[...] = src
        _native.ext().rt_memcpy(self._queue._native, self._ptr + lo, host.ctypes.data, host.nbytes)

    def fill(self, value) -> None:
        """Sets every element to value (converted to the array's dtype)."""
        item = np.asarray(value).astype(self._dtype)
        if item.ndim != 0:
            raise ValueError("fill takes a scalar")
        pattern = _shortest_pattern(item.tobytes())
        _untraced()
        if _on_write is not None:
            _on_write(self)
        if self.layout != "A" and self.size:
            try:
                _native.ext().rt_fill(self._queue._native, self._ptr, pattern, self.nbytes)
                return
            except DeviceError:
                pass  # a driver without this pattern size: write from the host instead
        if self.size and not self._host_ok and _copy_into is not None:
            _copy_into(self, item[()])  # a strided view: a kernel writes it
            return
        self._assign(item)

    def copy(self, order: str = "C") -> Array:
        out = Array._allocate(self._shape, self._dtype, self._queue, self._usm_type, order)
        out._assign(self)
        return out

    def astype(self, dtype, copy: bool = True) -> Array:
        """This array converted to dtype by a kernel on its device (NumPy's unsafe casting;
        lazy, like the operators); itself when the dtype matches and copy is False."""
        dt = _check_dtype(dtype)
        if dt == self._dtype and not copy:
            return self
        return _convert(self, dt)

    def to_device(self, device, stream=None) -> Array:
        """This array on another device (a copy), or itself if it is already there. Between
        two devices of one driver (two GPUs) the copy goes from device to device: directly
        where they have peer access (NVLink, PCIe), else staged through host memory by the
        driver; between drivers (a GPU and the CPU device) through a host copy."""
        q = device if isinstance(device, Queue) else as_queue(device)
        if q.device == self.device:
            if q is self._queue:
                return self
            return Array._make(
                self._owner,
                self._ptr,
                self._shape,
                self._strides,
                self._dtype,
                q,
                self._usm_type,
                self._host_ok,
            )
        layout = self.layout
        order = "F" if layout == "F" else "C"
        out = Array._allocate(self._shape, self._dtype, q, self._usm_type, order)
        if layout != "A" and q.device.driver_name == self.device.driver_name and self.size:
            _untraced()
            ptr = self._ptr  # a pending (lazy) array is evaluated here
            self._queue.wait()  # the copy runs on the destination's queue
            _native.ext().rt_memcpy(q._native, out._ptr, ptr, self.nbytes)
            return out
        out._assign(self.asnumpy())
        return out

    def _buffer_export(self) -> np.ndarray:
        """The buffer protocol (kapi/_ext/rt_memory.c's ArrayBase): a NumPy view of memory the
        host can address, after the queue's pending work. Device memory is refused, so MPI and
        other consumers go on to DLPack or __cuda_array_interface__; nothing is copied."""
        if not self._host_ok:
            raise BufferError(
                f"this kapi array is in device memory of {self.device.filter_string}, which the "
                "host cannot address: pass it by DLPack or __cuda_array_interface__ (mpi4py does "
                "with a CUDA-aware MPI), or copy it to host memory first (.asnumpy(), or "
                "kapi.empty_like(a, usm_type='host'))"
            )
        if _on_export is not None:
            _on_export(self)  # the consumer may write the memory behind kapi's back
        return self._host_view()

    def __copy__(self) -> Array:
        return self.copy()

    def __deepcopy__(self, memo) -> Array:
        return self.copy()

    def __reduce__(self):
        """Pickles the data (Dask moves chunks between workers so): the copy is made on the
        unpickling process's default device (its pinned device in kapi.dask clusters)."""
        order = "F" if self.layout == "F" else "C"
        return _rebuild, (np.asarray(self.asnumpy(), order=order), self._usm_type)

    # -- indexing ------------------------------------------------------------------------

    def _view(self, key) -> Array:
        if not isinstance(key, tuple):
            key = (key,)
        fast = _basic_index(self._shape, self._strides, key)
        if fast is not None:
            off, shape, strides = fast
            return Array._make(
                self._owner,
                self._ptr + off,
                shape,
                strides,
                self._dtype,
                self._queue,
                self._usm_type,
                self._host_ok,
            )
        for k in key:
            if not (k is None or k is Ellipsis or isinstance(k, slice)):
                try:
                    operator.index(k)
                except TypeError:
                    raise IndexError(
                        "kapi arrays support basic indexing (integers, slices, None, ...) "
                        f"only, not {type(k).__name__}; use .asnumpy() for advanced indexing"
                    ) from None
        if Ellipsis not in key:
            key = key + (Ellipsis,)
        fake = as_strided(np.zeros(1, self._dtype), self._shape, self._strides, writeable=False)
        sub = fake[key]
        off = sub.__array_interface__["data"][0] - fake.__array_interface__["data"][0]
        return Array._make(
            self._owner,
            self._ptr + off,
            sub.shape,
            sub.strides,
            self._dtype,
            self._queue,
            self._usm_type,
            self._host_ok,
        )

    def __getitem__(self, key):
        """Basic indexing gives a view (0-d for a single element, as in the array API);
        kapi's array library adds integer-array and boolean-mask indexing."""
        return self._view(key)

    def __setitem__(self, key, value) -> None:
        (self if key is Ellipsis else self._view(key))._assign(value)

    @property
    def T(self) -> Array:
        return self._permuted(range(self.ndim - 1, -1, -1))

    def _permuted(self, perm) -> Array:
        """A view whose dimension k is this array's dimension perm[k] (no copy)."""
        perm = tuple(perm)
        return Array._make(
            self._owner,
            self._ptr,
            tuple(self._shape[d] for d in perm),
            tuple(self._strides[d] for d in perm),
            self._dtype,
            self._queue,
            self._usm_type,
            self._host_ok,
        )

    def reshape(self, *shape, order: str = "C", copy=None) -> Array:
        """A view of the same elements in another shape where strides allow one, else (not
        with copy=False) a copy on the device, as NumPy's reshape."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if order not in ("C", "F"):
            raise ValueError(f"order must be 'C' or 'F', not {order!r}")
        fake = as_strided(np.zeros(1, self._dtype), self._shape, self._strides, writeable=False)
        try:
            new = np.reshape(fake, shape, order=order, copy=False)
        except ValueError as e:
            if copy is False or "cannot reshape" in str(e):
                raise  # a size that does not fit, or no view where one was asked for
            return self.copy(order).reshape(shape, order=order)
        if copy is True:
            return self.copy(order).reshape(shape, order=order)
        return Array._make(
            self._owner,
            self._ptr,
            new.shape,
            new.strides,
            self._dtype,
            self._queue,
            self._usm_type,
            self._host_ok,
        )

    def _scalar(self):
        if self.size != 1:
            raise TypeError("only size-1 kapi arrays can be converted to Python scalars")
        return self.asnumpy().reshape(())[()]

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __bool__(self) -> bool:
        return bool(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __index__(self) -> int:
        if self._dtype.kind not in "iu" or self.ndim != 0:
            raise TypeError("only 0-d integer kapi arrays can be used as an index")
        return int(self._scalar())

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        body = np.array2string(self.asnumpy(), separator=", ", prefix="kapi.Array(")
        return f"kapi.Array({body}, dtype={self._dtype}, device='{self.device.filter_string}')"

    def __str__(self) -> str:
        return str(self.asnumpy())

    # -- interop -------------------------------------------------------------------------

    @property
    def __sycl_usm_array_interface__(self) -> dict:
        if _on_export is not None:
            _on_export(self)
        i = self.itemsize
        return {
            "data": (self._ptr, False),
            "shape": self._shape,
            "strides": None if self.layout == "C" else tuple(s // i for s in self._strides),
            "typestr": self._dtype.str,
            "version": 1,
            "syclobj": self._queue,
        }

    @property
    def __cuda_array_interface__(self) -> dict:
        if self.device.backend != "cuda":
            raise AttributeError("__cuda_array_interface__ exists only for CUDA-device arrays")
        if _on_export is not None:
            _on_export(self)
        self._queue.wait()  # "stream": None promises the data is ready
        return {
            "shape": self._shape,
            "typestr": self._dtype.str,
            "data": (self._ptr, False),
            "version": 3,
            "strides": None if self.layout == "C" else self._strides,
            "stream": None,
        }

    def __dlpack_device__(self) -> tuple[int, int]:
        from .interop import dlpack_device

        return dlpack_device(self.device)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        from .interop import to_dlpack

        return to_dlpack(self, dl_device=dl_device, copy=copy, max_version=max_version)


Array.__module__ = "kapi"


def _rebuild(host: np.ndarray, usm_type: str) -> Array:
    return asarray(host, usm_type=usm_type)


def _queue_for(device, sycl_queue, queue) -> Queue:
    return as_queue(device, queue if queue is not None else sycl_queue)


def empty(
    shape, dtype=None, order="C", *, device=None, usm_type="device", sycl_queue=None, queue=None
) -> Array:
    q = _queue_for(device, sycl_queue, queue)
    dt = _check_dtype(dtype) if dtype is not None else _default_dtype(q)
    return Array._allocate(shape, dt, q, usm_type, order)


def full(
    shape,
    fill_value,
    dtype=None,
    order="C",
    *,
    device=None,
    usm_type="device",
    sycl_queue=None,
    queue=None,
) -> Array:
    q = _queue_for(device, sycl_queue, queue)
    if dtype is None:
        v = np.asarray(fill_value)
        kind = "b" if v.dtype == np.bool_ else ("i" if v.dtype.kind in "iu" else "f")
        dt = v.dtype if v.dtype in DTYPE_TO_KIR and kind != "f" else _default_dtype(q, kind)
    else:
        dt = _check_dtype(dtype)
    a = Array._allocate(shape, dt, q, usm_type, order)
    a.fill(fill_value)
    return a


def zeros(
    shape, dtype=None, order="C", *, device=None, usm_type="device", sycl_queue=None, queue=None
) -> Array:
    q = _queue_for(device, sycl_queue, queue)
    dt = _check_dtype(dtype) if dtype is not None else _default_dtype(q)
    return full(shape, 0, dt, order, queue=q, usm_type=usm_type)


def ones(
    shape, dtype=None, order="C", *, device=None, usm_type="device", sycl_queue=None, queue=None
) -> Array:
    q = _queue_for(device, sycl_queue, queue)
    dt = _check_dtype(dtype) if dtype is not None else _default_dtype(q)
    return full(shape, 1, dt, order, queue=q, usm_type=usm_type)


def arange(
    start,
    stop=None,
    step=1,
    dtype=None,
    *,
    device=None,
    usm_type="device",
    sycl_queue=None,
    queue=None,
) -> Array:
    q = _queue_for(device, sycl_queue, queue)
    host = np.arange(start, stop, step, dtype=dtype)
    if dtype is None and host.dtype.kind == "f":
        host = host.astype(_default_dtype(q))
    return asarray(host, queue=q, usm_type=usm_type)


def _like(a, dtype, order, device, usm_type, sycl_queue, queue):
    if device is None and sycl_queue is None and queue is None and isinstance(a, Array):
        q = a.sycl_queue
    else:
        q = _queue_for(device, sycl_queue, queue)
    dt = _check_dtype(dtype if dtype is not None else a.dtype)
    ut = usm_type or (a.usm_type if isinstance(a, Array) else "device")
    return q, dt, ut, order if order in ("C", "F") else "C"


def _like_shape(a, shape):
    """NumPy's shape= of the *_like functions: another shape, a's dtype and placement."""
    if shape is None:
        return a.shape
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))


def empty_like(
    a,
    dtype=None,
    order="C",
    *,
    device=None,
    usm_type=None,
    sycl_queue=None,
    queue=None,
    shape=None,
) -> Array:
    q, dt, ut, order = _like(a, dtype, order, device, usm_type, sycl_queue, queue)
    return Array._allocate(_like_shape(a, shape), dt, q, ut, order)


def zeros_like(
    a,
    dtype=None,
    order="C",
    *,
    device=None,
    usm_type=None,
    sycl_queue=None,
    queue=None,
    shape=None,
) -> Array:
    q, dt, ut, order = _like(a, dtype, order, device, usm_type, sycl_queue, queue)
    return full(_like_shape(a, shape), 0, dt, order, queue=q, usm_type=ut)


def ones_like(
    a,
    dtype=None,
    order="C",
    *,
    device=None,
    usm_type=None,
    sycl_queue=None,
    queue=None,
    shape=None,
) -> Array:
    q, dt, ut, order = _like(a, dtype, order, device, usm_type, sycl_queue, queue)
    return full(_like_shape(a, shape), 1, dt, order, queue=q, usm_type=ut)


def full_like(
    a,
    fill_value,
    dtype=None,
    order="C",
    *,
    device=None,
    usm_type=None,
    sycl_queue=None,
    queue=None,
    shape=None,
) -> Array:
    q, dt, ut, order = _like(a, dtype, order, device, usm_type, sycl_queue, queue)
    return full(_like_shape(a, shape), fill_value, dt, order, queue=q, usm_type=ut)


def asarray(
    obj,
    dtype=None,
    order="K",
    *,
    device=None,
    usm_type=None,
    sycl_queue=None,
    queue=None,
    copy=None,
) -> Array:
    """A kapi array from a kapi array, a USM/CUDA/DLPack producer, or anything NumPy reads.

    Device memory of another library is wrapped without a copy when it is on the requested
    device (or no device is requested); host data (NumPy, lists, buffers) is copied into USM.
    """
    from .interop import import_foreign

    explicit = device is not None or sycl_queue is not None or queue is not None
    if isinstance(obj, Array):
        a = obj
    else:
        a = import_foreign(obj) if copy is not True else None
    if a is not None:
        if explicit:
            a = a.to_device(_queue_for(device, sycl_queue, queue))
        if dtype is not None and _check_dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError("asarray(copy=False) cannot change the dtype")
            a = a.astype(dtype)
        elif copy is True:
            a = a.copy()
        if usm_type is not None and usm_type != a.usm_type:
            b = Array._allocate(a.shape, a.dtype, a.sycl_queue, usm_type)
            b._assign(a)
            a = b
        return a
    if copy is False:
        raise ValueError("asarray(copy=False): this object can only be copied into USM")
    q = _queue_for(device, sycl_queue, queue)
    host = np.asarray(obj, dtype=dtype)
    if dtype is None and host.dtype.kind == "f" and host.dtype != np.float32:
        if not q.device.has_aspect_fp64:
            host = host.astype(np.float32)
    dt = _check_dtype(host.dtype)
    order = (
        "F"
        if order == "F"
        or (order in ("K", "A") and host.flags.f_contiguous and not host.flags.c_contiguous)
        else "C"
    )
    out = Array._allocate(host.shape, dt, q, usm_type or "device", order)
    out._assign(host)
    return out


# The array library (kapi._numeric) sits above arrays: importing it installs the operators,
# NumPy ufuncs and reductions on Array, and sets this conversion kernel's launcher and the
# device copy (_copy_into(dst, src): src, an array of dst's device or a scalar, broadcast and
# converted into dst by a kernel). kapi's root hands Array and every function that makes one
# out through that package.
_convert = None
_copy_into = None
