"""@kapi.vectorize: a scalar Python function and its signatures become a device ufunc over
kapi arrays, in numba-cuda's form (`@vectorize(["float32(float32, float32)"], target=...)`).

The function becomes a device function; a call picks the first signature the operands' types
reach (exactly, else by NumPy's safe casting; Python scalars by kind), broadcasts the
operands, and runs `out[i] = f(T0(a[i]), T1(b[i]), ...)` as a generated kernel
(kapi/_numeric/ufunc.py) where the arrays live. The result has the signature's return type;
`out=` takes a kapi array of the broadcast shape.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from .._kernel.numba_sig import is_numba_signature, numba_signature_parts
from .._kernel.types import normalize_type
from .._memory.array import Array
from .._memory.dtypes import KIR_TO_DTYPE
from . import ufunc as _ufunc

# Numba's scalar names that NumPy does not spell the same way
_NAMES = {"boolean": "bool", "bool_": "bool", "b1": "bool", "float_": "float32", "byte": "int8"}
_SIG = re.compile(r"^\s*([A-Za-z_][\w]*)\s*\((.*)\)\s*$")
_TARGETS = {None, "cpu", "parallel", "cuda", "gpu", "kapi"}


def _dtype_of_name(name: str) -> np.dtype:
    name = name.strip()
    try:
        dt = np.dtype(_NAMES.get(name, name))
    except TypeError:
        raise TypeError(f"kapi.vectorize: unknown type {name!r} in a signature") from None
    _ufunc.check_kapi_dtype(dt, f"kapi.vectorize: signature type {name!r}")
    return dt


def _dtype_of_type(t) -> np.dtype:
    return KIR_TO_DTYPE[normalize_type(t)]


def parse(sig) -> tuple[tuple[np.dtype, ...], np.dtype]:
    """(argument dtypes, return dtype) of "float32(float32, int64)" or a signature object."""
    if isinstance(sig, str):
        m = _SIG.match(sig)
        if not m:
            raise TypeError(f"kapi.vectorize: signature {sig!r} is not of the form 'ret(arg, ...)'")
        args = [a for a in m.group(2).split(",") if a.strip()]
        return tuple(_dtype_of_name(a) for a in args), _dtype_of_name(m.group(1))
    if is_numba_signature(sig):
        args, ret = numba_signature_parts(sig)
        if ret is None:
            raise TypeError("kapi.vectorize: a signature needs a return type (not void)")
        return tuple(_dtype_of_type(a) for a in args), _dtype_of_type(ret)
    raise TypeError(
        "kapi.vectorize: signatures are strings ('float32(float32, float32)') or signature "
        f"objects (kapi.float32(kapi.float32, kapi.float32)), not {type(sig).__name__}"
    )


def _reaches(x, dt: np.dtype) -> bool:
    """Whether operand x may run in a loop of input type dt."""
    t = _ufunc.resolve_type(x)
    if isinstance(t, type):  # a weak Python scalar: by kind
        kinds = {int: "iuf", float: "f", complex: "c"}[t]
        return dt.kind in kinds or (t is float and dt.kind == "c")
    return np.can_cast(t, dt, "safe")


class VectorizedFunction:
    """What @kapi.vectorize returns: call it like a ufunc on kapi arrays and scalars."""

    def __init__(self, pyfunc, signatures, options=None):
        from .._kernel.dispatcher import device_func

        self._pyfunc = pyfunc
        self.types = [parse(s) for s in signatures]
        nin = {len(a) for a, _ in self.types}
        if len(nin) != 1:
            raise TypeError("kapi.vectorize: all signatures need the same number of arguments")
        self.nin = nin.pop()
        self.nout = 1
        # fastmath= applies to the element function (a device function with its own flags)
        self._device_func = device_func(pyfunc, **_element_options(options))
        self._kernels: dict[str, object] = {}
        functools.update_wrapper(self, pyfunc)

    def _select(self, ops):
        for exact in (True, False):
            for args, ret in self.types:
                if exact:
                    ok = all(_ufunc.resolve_type(o) == a for o, a in zip(ops, args, strict=True))
                else:
                    ok = all(_reaches(o, a) for o, a in zip(ops, args, strict=True))
                if ok:
                    return args, ret
        have = ", ".join(str(_ufunc.resolve_type(o)) for o in ops)
        sigs = "; ".join(f"{r}({', '.join(map(str, a))})" for a, r in self.types)
        raise TypeError(
            f"ufunc '{self.__name__}' not supported for the input types ({have}), and the "
            f"inputs could not be safely coerced to any of its signatures: {sigs}"
        )

    def __call__(self, *args, out=None, **kwargs):
        if kwargs:
            raise TypeError(
                f"{self.__name__}: kapi.vectorize functions take out= only, not "
                + ", ".join(kwargs)
            )
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} arguments, got {len(args)}")
        ops = []
        for x in args:
            o = _ufunc.operand(x)
            if o is None:
                raise TypeError(
                    f"{self.__name__}: arguments are kapi arrays and scalars, not "
                    f"{type(x).__name__}; copy host data with kapi.asarray(x, device=...)"
                )
            ops.append(o)
        arrays = [o for o in ops if isinstance(o, Array)]
        if not arrays:
            raise TypeError(f"{self.__name__}: at least one argument must be a kapi array")
        what = f"kapi.vectorize function {self.__name__}"
        queue = _ufunc.common_queue(arrays + ([out] if out is not None else []), what)
        argtypes, ret = self._select(ops)
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        if out is None:
            out = Array._allocate(shape, ret, queue, arrays[0].usm_type)
        else:
            _ufunc.check_out(out, shape, ret, self.__name__)
        leaves, exprs = [], []
        for n, (o, dt) in enumerate(zip(ops, argtypes, strict=True)):
            if isinstance(o, Array):
                leaves.append(o)
                exprs.append(_ufunc.cast(f"l{n}", o.dtype, dt))
            else:
                leaves.append(_ufunc._to_dtype(o, dt))
                exprs.append(f"l{n}")
        expr = _ufunc.cast(f"_f({', '.join(exprs)})", None, ret)
        _ufunc.launch(expr, leaves, out, what, {"_f": self._device_func}, self._kernels)
        return out


def _element_options(options) -> dict:
    """The device-function options of a ufunc's element function: fastmath, when given."""
    return {"fastmath": options["fastmath"]} if options and "fastmath" in options else {}


def vectorize(signatures=None, target=None, **options):
    """`@kapi.vectorize(["float32(float32, float32)", ...])`: a device ufunc over kapi arrays
    (numba-cuda's form; `target` is accepted and ignored: the call runs where its arrays
    live)."""
    if callable(signatures) and not isinstance(signatures, (str, list, tuple)):
        raise TypeError(
            "kapi.vectorize needs a list of signatures: @kapi.vectorize(['f8(f8, f8)'])"
        )
    if target not in _TARGETS:
        raise ValueError(f"kapi.vectorize: unknown target {target!r}")
    unknown = set(options) - {"nopython", "cache", "fastmath"}
    if unknown:
        raise TypeError("kapi.vectorize does not take " + ", ".join(sorted(unknown)))
    if not signatures:
        raise TypeError(
            "kapi.vectorize needs at least one signature (lazy typing is not supported)"
        )
    sigs = (
        [signatures]
        if isinstance(signatures, str) or is_numba_signature(signatures)
        else list(signatures)
    )

    def wrap(pyfunc):
        return VectorizedFunction(pyfunc, sigs, options)

    return wrap
