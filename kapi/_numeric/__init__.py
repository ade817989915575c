"""The array library: what computes on kapi arrays, each operation a kernel on their device.

Operators and NumPy ufuncs (ufunc, ops), lazy expressions and kapi.fuse (lazy, fuse),
reductions (reduce), kapi.reduce with any operation (primitives), scans (scan), sorting (sort,
on sort_radix and sort_kernels), vectorize and guvectorize, and the recorded launch plans that
replay them (replay). Arrays themselves (storage, views, copies, devices) live below, in
kapi._memory; importing this package completes kapi.Array with its operators, ufuncs,
reductions and astype, so kapi's root hands Array and every function that makes one out from
here.
"""

# The launch path comes with arrays, so a kernel's first call pays for the call only.
from .._kernel import launch  # noqa: F401
from .._memory.array import (  # noqa: F401
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
from .._memory.interop import from_dlpack  # noqa: F401
from . import (  # noqa: F401  (install the operators, ufuncs and reductions on Array)
    array_api,  # noqa: F401, E402  (the array API namespace; completes Array's indexing)
    ops,
    reduce,
)
