"""call_kernel and call_kernel_async: the Python face of the native launch path.

The per-call work is one C call (kapi/_ext/launch.c). Python helpers here only describe
argument kinds the C fast path does not handle (LocalAccessor, interop objects, NumPy arrays
and scalars of unusual layouts or dtypes, for their errors) and pick a queue when no argument
lives on a device.

KAPI_SIMULATOR=1, read once at import, binds the public call_kernel and call_kernel_async to
the simulator (simulate.py) instead: the choice costs the compiled path nothing per call. The
array library and kapi.random launch their own kernels through compiled_call_kernel(_async),
which always compile.
"""

from __future__ import annotations

import dis
import inspect
import os
import sys
import weakref

import numpy as np

from .. import _native
from .._errors import (
    DeviceNotFoundError,
    KapiError,
    UnsupportedDtypeError,
    UnsupportedKernelArgumentError,
)
from .._memory.array import Array
from .._memory.device import default_device, devices
from .._memory.dtypes import DTYPE_TO_KIR, KERNEL_MAX_NDIM
from .dispatcher import READONLY_MARK, KernelDispatcher
from .ranges import NdRange
from .simulate import SimulatedEvent
from .simulate import call_kernel_async as _simulated_call_kernel_async
from .simulate import enabled as _simulator_enabled
from .simulate import simulate as _simulate
from .types import kir_scalar, local_kir

_configured = False
_auto_kernels: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _UserErrorCheck(type):
    # pyfront (and its imports) must not load for a launch that the disk cache serves, yet
    # its KernelError is the user's to fix too: looked up when an error is being checked (one
    # can only have been raised once pyfront is imported).
    def __instancecheck__(cls, obj) -> bool:
        if isinstance(obj, KapiError):
            return True
        errors = sys.modules.get("pyfront.errors")
        kernel_error = getattr(errors, "KernelError", None)
        return isinstance(kernel_error, type) and isinstance(obj, kernel_error)


class _UserError(metaclass=_UserErrorCheck):
    """isinstance(e, _UserError): e is a KapiError or pyfront's KernelError; call_kernel
    then shows the user's frames only (kapi/_ext/call.c)."""


def _numpy_desc(a: np.ndarray, pos: int):
    if not 1 <= a.ndim <= KERNEL_MAX_NDIM:
        raise UnsupportedKernelArgumentError(
            f"kernel argument {pos}: kernels take arrays of 1 to {KERNEL_MAX_NDIM} dimensions, "
            f"not {a.ndim}"
        )
    if a.dtype not in DTYPE_TO_KIR:
        kir_scalar(a.dtype)  # raises with the list of supported dtypes
    i = a.itemsize
    if any(s % i for s in a.strides):
        raise UnsupportedKernelArgumentError(
            f"kernel argument {pos}: strides {a.strides} are not multiples of the item size"
        )
    layout = "C" if a.flags.c_contiguous else ("F" if a.flags.f_contiguous else "A")
    key = f"array({DTYPE_TO_KIR[a.dtype]},{a.ndim},{layout},global)"
    if not a.flags.writeable:  # the kernel is checked for stores to it once compiled
        key = READONLY_MARK + key
    return ("A", key, -1, None, a.ctypes.data, a.shape, tuple(s // i for s in a.strides))


def _local_desc(acc):
    shape = getattr(acc, "shape", None) or acc._shape
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dtype = np.dtype(getattr(acc, "dtype", None) or acc._dtype)
    n = 1
    for d in shape:
        n *= d
    return ("L", local_kir(dtype, shape), n * dtype.itemsize, shape)


def _arg_desc(obj, pos: int):
    """Descriptor of an argument the C fast path does not know (format: launch.c)."""
    if isinstance(obj, np.ndarray):
        return _numpy_desc(obj, pos)
    if isinstance(obj, np.generic):
        if obj.dtype not in DTYPE_TO_KIR:
            raise UnsupportedDtypeError(
                f"kernel argument {pos}: scalars of dtype {obj.dtype} are not supported; "
                f"use one of {', '.join(str(d) for d in DTYPE_TO_KIR)}"
            )
        if DTYPE_TO_KIR[obj.dtype] == "bf16":  # kernels take bfloat16 scalars as float32
            return ("S", "f32", np.float32(obj).tobytes())
        return ("S", DTYPE_TO_KIR[obj.dtype], obj.tobytes())
    if type(obj).__name__ == "LocalAccessor":
        return _local_desc(obj)
    if isinstance(obj, (int, float, bool)):  # subclasses of Python scalars
        return _arg_desc(np.asarray(obj)[()], pos)
    if isinstance(obj, complex):  # Python's complex is complex128, as Numba types it
        return ("S", "c128", np.complex128(obj).tobytes())
    from .._memory.interop import import_foreign

    a = import_foreign(obj)
    if a is not None:
        return a._kdesc
    raise UnsupportedKernelArgumentError(
        f"kernel argument {pos} has type {type(obj).__name__}; kernels take kapi arrays "
        f"(kapi.asarray(x)), NumPy arrays on the CPU device, LocalAccessor and scalars"
    )


def _host_queue(host_arrays: int):
    if host_arrays:
        cpus = devices("cpu")
        if not cpus:
            raise DeviceNotFoundError(
                "NumPy array arguments need kapi's CPU device, which is not loaded; copy them "
                "with kapi.asarray(x, device=...)"
            )
        dev = cpus[0]
    else:
        dev = default_device()
    return dev.default_queue._native, dev.index


def _numpy_formats() -> dict[str, tuple[str, ...]]:
    """{buffer format: (scalar key, array keys for ndim 1-3 x layout C, F, A)} of the NumPy
    dtypes kernels take: the launch reads such arrays and scalars through their buffers, with
    the keys _numpy_desc and _arg_desc would give."""
    out = {}
    for code in np.typecodes["All"]:
        try:
            dt = np.dtype(code)
            kir = DTYPE_TO_KIR.get(dt)
            fmt = memoryview(np.empty(1, dt)).format if kir else None
        except (TypeError, ValueError):
            continue
        if fmt:
            arrays = (f"array({kir},{nd},{lay},global)" for nd in (1, 2, 3) for lay in "CFA")
            out[fmt] = (kir, *arrays)
    return out


def _configure() -> None:
    global _configured
    ext = _native.ext()
    ext.rt_launch_configure(Array, NdRange, _arg_desc, _host_queue)
    ext.rt_launch_numpy(np.ndarray, np.generic, _numpy_formats())
    _configured = True


def _make_launcher(kernel):
    """The native launcher of a kernel (created once and kept on it); plain functions are
    decorated on the fly, as numba-dpex's kernel_api.call_kernel takes them undecorated."""
    if not isinstance(kernel, KernelDispatcher):
        if inspect.isfunction(kernel):
            k = _auto_kernels.get(kernel)
            if k is None:
                from .dispatcher import kernel as decorate

                k = _auto_kernels[kernel] = decorate(kernel)
            kernel = k
        else:
            raise TypeError(
                f"call_kernel takes a @kapi.kernel function, not {type(kernel).__name__}"
            )
    if not _configured:
        _configure()
    lau = kernel._launcher
    if lau is None:
        params = list(inspect.signature(kernel.py_func).parameters)
        item_first = _calls_index_space_methods(kernel.py_func, params[:1])
        lau = kernel._launcher = _native.ext().Launcher(
            kernel, len(params), tuple(params), item_first
        )
    return lau


def _index_space_methods() -> frozenset:
    from kapi_lang.kernel_api import Item, NdItem

    return frozenset(n for cls in (Item, NdItem) for n in vars(cls) if n.startswith("get_"))


def _calls_index_space_methods(pyfunc, first) -> bool:
    """True when the kernel's first parameter is certainly its Item/NdItem: the code calls an
    index-space method (get_id, get_global_id, ...) on it. A launch that passes as many
    arguments as the kernel has parameters is then one argument too many, not an item-less
    kernel."""
    code = getattr(pyfunc, "__code__", None)
    if code is None or not first:
        return False
    methods = _index_space_methods()
    prev = None
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval in methods:
            if prev is not None and prev.opname == "LOAD_FAST" and prev.argval == first[0]:
                return True
        prev = ins
    return False


def _missing(*args, **kwargs):
    _native.ext()  # raises NativeMissingError with what to do


try:
    _ext = _native.ext()
except ImportError:  # pure-Python use (no build): launching says how to build
    compiled_call_kernel = compiled_call_kernel_async = _missing
else:
    _ext.rt_call_configure(_make_launcher, (_UserError,), bool(os.environ.get("KAPI_TRACEBACK")))
    # C functions (kapi/_ext/call.c): one call per launch, no Python frame in tracebacks.
    compiled_call_kernel = _ext.call_kernel
    compiled_call_kernel_async = _ext.call_kernel_async

SIMULATOR = _simulator_enabled()  # KAPI_SIMULATOR=1: kernels run as Python (simulate.py)
if SIMULATOR:
    call_kernel, call_kernel_async = _simulate, _simulated_call_kernel_async
else:
    call_kernel, call_kernel_async = compiled_call_kernel, compiled_call_kernel_async


def wait_all(events) -> None:
    """Blocks until every event has completed."""
    events = tuple(e for e in events if not isinstance(e, SimulatedEvent))
    if events:
        _native.ext().rt_wait_all(events)
