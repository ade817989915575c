"""The element types kapi arrays and kernels support, and their KIR scalar names.

Arrays (this package) and kernel signatures (kapi._kernel) share one table, so an array of a
dtype can always be passed to a kernel and the other way round.
"""

from __future__ import annotations

import numpy as np

# NumPy dtype -> KIR scalar type. Kernels and kapi arrays support exactly these.
DTYPE_TO_KIR: dict[np.dtype, str] = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",  # arithmetic in f32, as Numba types it (docs/kir.md)
    # complex: pyfront expands a complex value into its two parts (docs/architecture.md)
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}
try:  # bfloat16 arrays where ml_dtypes is installed (not a dependency): elements read as float32
    import ml_dtypes

    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
    DTYPE_TO_KIR[BFLOAT16] = "bf16"
except ImportError:
    BFLOAT16 = None
KIR_TO_DTYPE: dict[str, np.dtype] = {v: k for k, v in DTYPE_TO_KIR.items()}
SCALAR_KIR = frozenset(KIR_TO_DTYPE)
SUPPORTED_DTYPES = tuple(DTYPE_TO_KIR)
# The most dimensions of a kernel's array argument (the compiler's KIR_MAX_NDIM).
KERNEL_MAX_NDIM = 8
