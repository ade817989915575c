"""numba-dpex's kernel_api: the objects kernels use, and the launch API under its names.

`from kapi import kernel_api as kapi` gives numba-dpex code the names it expects. The objects
are defined in kapi_lang (below the front end, which recognises them inside kernels); the
launch API (call_kernel, Range, NdRange) is kapi's, and here call_kernel compiles and runs
the kernel on a device, plain functions included (with KAPI_SIMULATOR=1 it runs them as Python,
as numba-dpex's call_kernel did, barriers included).
"""

from kapi_lang import kernel_api as _objects
from kapi_lang.kernel_api import *  # noqa: F403
from kapi_lang.kernel_api import __all__ as _object_names

from ._kernel.launch import call_kernel
from ._kernel.ranges import NdRange, Range

# Reprs, pickles and help() name the module users import.
for _name in _object_names:
    _obj = getattr(_objects, _name)
    if getattr(_obj, "__module__", None) == _objects.__name__:
        _obj.__module__ = __name__
del _name, _obj

__all__ = [*_object_names, "NdRange", "Range", "call_kernel"]
