"""kapi: Python kernels compiled to SPIR-V and run through Level Zero on CPUs and GPUs.

numba-dpex's kernel API: code written for numba-dpex runs after changing its imports to
`import kapi as dpex; from kapi import kernel_api as kapi`.
"""

# `import kapi` imports nothing: every public name is looked up in _EXPORTS and its module
# imported on first access (PEP 562 module __getattr__), so a script pays for NumPy, the C
# extension and the front end only when it uses them. To export a new name, add it to its
# module's _export(...) line below (__all__ is made from the table).

__version__ = "0.1.0"

prange = range  # numba.prange, re-exported by numba-dpex: plain range, offloaded by dpjit

# public name -> (module under kapi, attribute there)
_EXPORTS: dict[str, tuple[str, str]] = {}


def _export(module: str, *names: str, **renamed: str) -> None:
    for name in names:
        _EXPORTS[name] = (module, name)
    for name, attr in renamed.items():
        _EXPORTS[name] = (module, attr)


_export(
    "_numeric",
    "Array",
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
)
_export(
    "_memory.device",
    "Device",
    "Queue",
    "default_device",
    "devices",
    "device_for_local_rank",
    "local_rank",
)
_export(
    "_dpjit.dpjit",
    "DpjitFunction",
    "HostCompileError",
    "HostFallbackWarning",
    "UnsupportedPrangeError",
    "dpjit",
)
_export(
    "_errors",
    "DeviceError",
    "DeviceNotFoundError",
    "ExecutionQueueInferenceError",
    "InvalidKernelSpecializationError",
    "InvalidRangeError",
    "KapiError",
    "KernelCallError",
    "KernelCompileError",
    "KernelHasReturnValueError",
    "LaunchError",
    "MissingSpecializationError",
    "OutOfDeviceMemoryError",
    "UnmatchedNumberOfRangeDimsError",
    "UnsupportedDtypeError",
    "UnsupportedGroupWorkItemSizeError",
    "UnsupportedKernelArgumentError",
)
_export("_numeric.fuse", "FusedFunction", "fuse")
_export("_numeric.guvectorize", "GUFunc", "guvectorize")
_export("_numeric", "from_dlpack")
_export("_memory.interop", "cuda_aware_mpi")
_export("_kernel.dispatcher", "KernelDispatcher", "device_func", "kernel")
_export("_kernel.launch", "call_kernel", "call_kernel_async", "wait_all")
_export("_kernel.simulate", "simulate")
_export("_memory.pool", "MemoryPool", "get_default_memory_pool")
_export("_numeric.primitives", "reduce")
_export("_numeric.scan", "cumprod", "cumsum", "scan")
_export("_kernel.ranges", "NdRange", "Range")
_export("_numeric.sort", "argsort", "sort", "topk", "unique")
_export(
    "_kernel.types",
    "DpnpNdArray",
    "ItemType",
    "NdItemType",
    "USMNdArray",
    "usm_ndarray",
    array_type="array",
)
_export("_numeric.ufunc", "where")
# the C API for native extensions (docs/guide/c-api.md): its header folder and CMake package
_export("_capi", "get_cmake_dir", "get_include")
_export("_numeric.vectorize", "VectorizedFunction", "vectorize")
# dpnp's names (`import kapi as dpnp`): NumPy-named functions on kapi arrays, on their device
_export(
    "_numeric.npcompat",
    *"""asnumpy array copy linspace eye identity meshgrid tril triu
    reshape ravel transpose swapaxes moveaxis expand_dims squeeze concatenate stack hstack vstack
    flip roll tile repeat broadcast_to broadcast_arrays atleast_1d atleast_2d around round real
    imag clip sum prod mean var std amax amin max min argmax argmin all any count_nonzero
    nonzero argwhere searchsorted diff take take_along_axis isclose allclose array_equal matmul
    dot vdot inner outer tensordot trace histogram""".split(),
)
_export(
    "_numeric.npcompat",
    *"""add subtract multiply divide true_divide floor_divide power
    float_power remainder mod fmod negative positive absolute abs fabs sign sqrt square cbrt exp
    exp2 expm1 log log2 log10 log1p logaddexp logaddexp2 sin cos tan arcsin arccos arctan
    arctan2 sinh cosh tanh arcsinh arccosh arctanh hypot floor ceil trunc rint maximum minimum
    fmax fmin logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor
    invert bitwise_not left_shift right_shift equal not_equal less less_equal greater
    greater_equal isnan isinf isfinite signbit copysign reciprocal conjugate conj deg2rad
    rad2deg degrees radians gcd lcm ldexp""".split(),
)
_export("_numeric.array_api", linalg="linalg", fft="fft")

# Scalar types, as numba-dpex exports them (kapi/_kernel/scalar_names.py): conversions
# (kapi.int32(0)), dtypes, signature entries, signature objects (kapi.int64(kapi.int64)) and
# array types (kapi.float32[::1]). All come from one scalar_names() table, bound together.
_SCALAR_NAMES = (
    "bool_", "boolean", "b1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float32", "float64", "i4", "i8", "u4", "u8", "f4", "f8", "float_", "double",
    "none", "void",
)  # fmt: skip

# Submodules: kernel_api holds the in-kernel classes (Item, NdItem, AtomicRef, ...); random the
# Philox generator (kapi.random.default_rng). random stays out of __all__: a star import must
# not shadow Python's random module.
_SUBMODULES = ("kernel_api", "random", "array_api")


def _bind_scalars():
    from ._kernel.scalar_names import SCALARS

    for name in _SCALAR_NAMES:
        globals()[name] = SCALARS[name]


def __getattr__(name: str):
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        # __import__ (not importlib.import_module): the C import path, which -X importtime logs
        value = getattr(__import__(f"{__name__}.{module}", fromlist=(attr,)), attr)
    elif name in _SCALAR_NAMES:
        _bind_scalars()
        value = globals()[name]
    elif name in _SUBMODULES:
        value = __import__(f"{__name__}.{name}", fromlist=("__name__",))
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups are plain module attributes
    return value


def __dir__():
    return sorted({*globals(), *_EXPORTS, *_SCALAR_NAMES, *_SUBMODULES})


# what `from kapi import *` gives: every public name but those that would shadow Python's
# builtins (sum, min, max, abs, all, any, round: reach them as kapi.sum, ...)
_SHADOWING = ("abs", "all", "any", "max", "min", "round", "sum")
__all__ = sorted([*(n for n in _EXPORTS if n not in _SHADOWING), "kernel_api", "prange"])
