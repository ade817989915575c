"""Python operators and `__array_ufunc__` on kapi arrays (installed on kapi.Array by
kapi/__init__.py): each operator is its NumPy ufunc (`x + y` is `np.add(x, y)`), run as a
generated kernel on the device where the operands live (kapi/_numeric/ufunc.py)."""

from __future__ import annotations

import numpy as np

from .._memory.array import Array
from . import ufunc as _ufunc

# operator name -> ufunc; reflected (__radd__) and in-place (__iadd__) forms follow
_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "truediv": np.true_divide,
    "floordiv": np.floor_divide,
    "mod": np.remainder,
    "pow": np.power,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "lshift": np.left_shift,
    "rshift": np.right_shift,
}
_COMPARE = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}
_UNARY = {"neg": np.negative, "pos": np.positive, "invert": np.invert, "abs": np.absolute}


def _binary(uf):
    def op(self, other):
        if _ufunc.operand(other) is None:
            return NotImplemented
        return _ufunc.apply(uf, (self, other))

    return op


def _reflected(uf):
    def op(self, other):
        if _ufunc.operand(other) is None:
            return NotImplemented
        return _ufunc.apply(uf, (other, self))

    return op


def _inplace(uf):
    def op(self, other):
        if _ufunc.operand(other) is None:
            return NotImplemented
        return _ufunc.apply(uf, (self, other), out=self)

    return op


def _unary(uf):
    def op(self):
        return _ufunc.apply(uf, (self,))

    return op


def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
    """np.sin(x), np.add(x, y, out=z): on the device of the kapi operands."""
    name = getattr(ufunc, "__name__", "?")
    if ufunc is np.matmul and method == "__call__":  # a generalised ufunc: kapi's matmul
        from .npcompat import matmul

        return matmul(*inputs, out=out, **kwargs)
    if method != "__call__":
        raise TypeError(
            f"numpy.{name}.{method} is not supported on kapi arrays; "
            "call the ufunc itself (or the array's reduction methods)"
        )
    casting = kwargs.pop("casting", "same_kind")
    if kwargs:
        raise TypeError(
            f"numpy.{name} on kapi arrays takes out= and casting= only, not "
            + ", ".join(f"{k}=" for k in kwargs)
        )
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError(f"numpy.{name} on kapi arrays takes one output array")
        out = out[0]
    return _ufunc.apply(ufunc, inputs, out=out, casting=casting)


def __array_function__(self, func, types, args, kwargs):
    """NumPy's functions on kapi arrays: those kapi implements run on the arrays' device
    (kapi/_numeric/npcompat.py); any other raises TypeError rather than running NumPy on a
    host copy."""
    from .npcompat import IMPLEMENTED

    impl = IMPLEMENTED.get(func)
    if impl is not None:
        return impl(*args, **kwargs)
    mod = getattr(func, "__module__", None) or "numpy"
    name = f"{mod}.{getattr(func, '__name__', func)}"
    raise TypeError(
        f"{name} is not implemented for kapi arrays, and kapi does not run NumPy on a copy "
        "of device memory: use kapi's own functions (kapi.array_api, or NumPy's names on "
        "kapi, `import kapi as dpnp`), or copy to the host explicitly with kapi.asnumpy(x) "
        "(x.asnumpy())"
    )


def install(cls) -> None:
    for name, uf in _BINARY.items():
        setattr(cls, f"__{name}__", _binary(uf))
        setattr(cls, f"__r{name}__", _reflected(uf))
        setattr(cls, f"__i{name}__", _inplace(uf))
    for name, uf in _COMPARE.items():
        setattr(cls, f"__{name}__", _binary(uf))
    for name, uf in _UNARY.items():
        setattr(cls, f"__{name}__", _unary(uf))
    cls.__array_ufunc__ = __array_ufunc__
    cls.__array_function__ = __array_function__
    cls.__hash__ = None  # == is elementwise, as for NumPy arrays


install(Array)
