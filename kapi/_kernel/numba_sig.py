"""Numba type objects in kernel and device-function signatures, as numba-dpex code writes them:
`types.int32[::1]`, `types.Array(types.float32, 2, "F")`, `types.int64`, `numba.int32` and
signature objects such as `void(types.int32[::1])` or `int64(int64, int64)`.

They become KIR type strings (kapi/_kernel/types.py). kapi recognises them by their module and
imports
Numba only when it is handed one, so `import kapi` stays free of Numba.
"""

from __future__ import annotations

from .._errors import InvalidKernelSpecializationError


class Signature:
    """`ret(arg, ...)` built from kapi's names: what Numba's signature objects are to
    numba-dpex. `return_type` is None for `void(...)`."""

    __slots__ = ("return_type", "args")

    def __init__(self, return_type, args):
        self.return_type = return_type
        self.args = tuple(args)

    def __repr__(self) -> str:
        ret = "void" if self.return_type is None else repr(self.return_type)
        return f"{ret}({', '.join(map(repr, self.args))})"


def is_numba_object(obj) -> bool:
    return type(obj).__module__.split(".", 1)[0] == "numba"


def is_numba_signature(obj) -> bool:
    """A call signature object: Numba's (`int64(int64, int64)`, `void(...)`) or one built
    from kapi's names (`kapi.int64(kapi.int64)`)."""
    if isinstance(obj, Signature):
        return True
    return is_numba_object(obj) and hasattr(obj, "args") and hasattr(obj, "return_type")


def _scalar_dtype(t, where: str):
    """The NumPy dtype of a Numba scalar type."""
    import numpy as np  # with Numba's types in hand, NumPy is imported already
    from numba.core import types

    if isinstance(t, types.NumberClass):  # numba.int32 used as a class: the scalar type
        t = t.instance_type
    if isinstance(t, types.Number | types.Boolean):
        try:
            return np.dtype(str(t))  # Numba names its scalar types as NumPy does
        except TypeError:
            pass
    raise InvalidKernelSpecializationError(
        f"the Numba type {t} ({type(t).__name__}) in {where} is not a scalar or array type; "
        f"kernels take scalars (types.int32, types.float64, ...) and arrays of them "
        f"(types.float32[::1], types.Array(types.int64, 2, 'C'))"
    )


def numba_type_to_kir(t, array_kir, kir_scalar) -> str:
    """The KIR type of one Numba type. `array_kir(dtype, ndim, layout)` and
    `kir_scalar(dtype)` (kapi/_kernel/types.py) raise UnsupportedDtypeError for dtypes kernels do
    not support, naming the supported ones."""
    from numba.core import types

    where = "a kernel signature"
    if isinstance(t, types.Array):
        return array_kir(_scalar_dtype(t.dtype, where), t.ndim, t.layout)
    return kir_scalar(_scalar_dtype(t, where))


def numba_signature_parts(sig):
    """(argument types, return type or None for void) of a signature object."""
    if isinstance(sig, Signature):
        return sig.args, sig.return_type
    from numba.core import types

    ret = sig.return_type
    if ret is None or ret == types.none:
        ret = None
    return tuple(sig.args), ret
