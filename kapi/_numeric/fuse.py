"""kapi.fuse: an elementwise function of arrays and scalars compiled to ONE kernel.

`f = kapi.fuse(lambda x, y: np.exp(-(x - 1.5) ** 2) * y)` traces the function once per
argument types with symbolic operands that record every operator and ufunc call (types
resolved by NumPy 2's rules at each step, exactly as the unfused operators would), then runs
the whole expression as one generated kernel (kapi/_numeric/ufunc.py) where the arrays live: one
pass
over memory instead of one per operator, and no temporaries. Like cupy.fuse; kapi arrays do
not build such expressions lazily on their own.
"""

from __future__ import annotations

import functools

import numpy as np

from .._memory.array import Array
from . import ufunc as _ufunc
from .ops import _BINARY, _COMPARE, _UNARY


class _Node:
    """A traced value: expr (source text over leaves l0, l1, ...) of dtype."""

    __slots__ = ("expr", "dtype", "tracer")
    __hash__ = None

    def __init__(self, expr: str, dtype: np.dtype, tracer: _Tracer):
        self.expr, self.dtype, self.tracer = expr, dtype, tracer

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            raise TypeError(
                f"kapi.fuse: numpy.{ufunc.__name__}.{method}"
                f"{' with ' + ', '.join(kwargs) if kwargs else ''} is not supported in a fused "
                "function; call ufuncs with their operands only"
            )
        return self.tracer.call(ufunc, inputs)

    def __bool__(self):
        raise TypeError(
            "kapi.fuse: a fused function cannot branch on array values (if, and, or, "
            "comparisons chains); use np.where-free arithmetic or np.maximum/np.minimum"
        )

    shape = property(lambda self: self.tracer.shape)
    ndim = property(lambda self: len(self.tracer.shape))


def _install_node_operators():
    def binary(uf, reflected):
        def op(self, other):
            args = (other, self) if reflected else (self, other)
            return self.tracer.call(uf, args)

        return op

    for name, uf in _BINARY.items():
        setattr(_Node, f"__{name}__", binary(uf, False))
        setattr(_Node, f"__r{name}__", binary(uf, True))
    for name, uf in _COMPARE.items():
        setattr(_Node, f"__{name}__", binary(uf, False))
    for name, uf in _UNARY.items():
        setattr(_Node, f"__{name}__", lambda self, uf=uf: self.tracer.call(uf, (self,)))


_install_node_operators()


class _Tracer:
    """Records one trace: the leaves (the arguments, then constants met while tracing)."""

    def __init__(self, arg_types, shape):
        self.shape = shape
        self.n_args = len(arg_types)
        self.consts: list = []  # (value, loop dtype) of constants, leaves after the args
        self.leaves = [
            _Node(f"l{n}", np.dtype(t) if not isinstance(t, type) else None, self)
            for n, t in enumerate(arg_types)
        ]
        self.weak = {n: t for n, t in enumerate(arg_types) if isinstance(t, type)}

    def _type_of(self, x):
        if isinstance(x, _Node):
            if x.dtype is None:  # a weak Python-scalar argument
                return self.weak[int(x.expr[1:])]
            return x.dtype
        o = _ufunc.operand(x)
        if o is None or isinstance(o, Array):
            raise TypeError(
                f"kapi.fuse: {type(x).__name__} values cannot appear in a fused function "
                "except as its arguments; pass arrays as arguments"
            )
        return _ufunc.resolve_type(o)

    def _leaf_expr(self, x, want: np.dtype) -> str:
        if isinstance(x, _Node):
            if x.dtype is None:  # weak argument: converted on the host when launched
                self.weak_loop.setdefault(int(x.expr[1:]), want)
                return _ufunc.cast(x.expr, self.weak_loop[int(x.expr[1:])], want)
            return _ufunc.cast(x.expr, x.dtype, want)
        self.consts.append(_ufunc._to_dtype(_ufunc.operand(x), want))
        return f"l{self.n_args + len(self.consts) - 1}"

    def call(self, ufunc, inputs) -> _Node:
        _ufunc.check_ufunc(ufunc)
        if len(inputs) != ufunc.nin:
            raise TypeError(f"{ufunc.__name__}() takes {ufunc.nin} arguments")
        loop = _ufunc.loop_dtypes(ufunc, [self._type_of(x) for x in inputs])
        _ufunc.check_kapi_dtype(loop[-1], f"kapi.fuse: numpy.{ufunc.__name__}'s result")
        args = [self._leaf_expr(x, dt) for x, dt in zip(inputs, loop, strict=False)]
        return _Node(f"np.{ufunc.__name__}({', '.join(args)})", loop[-1], self)


class FusedFunction:
    """kapi.fuse(fn): calling it runs fn's elementwise expression as one kernel."""

    def __init__(self, fn):
        self._fn = fn
        self._traces: dict = {}
        functools.update_wrapper(self, fn)

    def _trace(self, arg_types, shape):
        key = (tuple(arg_types), len(shape))
        t = self._traces.get(key)
        if t is None:
            tracer = _Tracer(arg_types, shape)
            tracer.weak_loop = {}
            result = self._fn(*tracer.leaves)
            if not isinstance(result, _Node):
                raise TypeError(
                    f"kapi.fuse: {getattr(self._fn, '__name__', 'the function')} must return "
                    f"one elementwise expression of its arguments, not {type(result).__name__}"
                )
            if result.dtype is None:
                raise TypeError("kapi.fuse: the function returns a scalar argument unchanged")
            t = self._traces[key] = (result.expr, result.dtype, tracer.consts, tracer.weak_loop)
        return t

    def __call__(self, *args, out=None):
        ops = []
        for x in args:
            o = _ufunc.operand(x)
            if o is None:
                raise TypeError(
                    f"kapi.fuse: arguments are kapi arrays and scalars, not {type(x).__name__}"
                )
            ops.append(o)
        arrays = [o for o in ops if isinstance(o, Array)]
        if not arrays:
            raise TypeError("kapi.fuse: a fused function needs at least one kapi array argument")
        queue = _ufunc.common_queue(arrays + ([out] if out is not None else []), "kapi.fuse")
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        types = [_ufunc.resolve_type(o) for o in ops]
        expr, dtype, consts, weak_loop = self._trace(types, shape)
        if out is None:
            out = Array._allocate(shape, dtype, queue, arrays[0].usm_type)
        else:
            _ufunc.check_out(out, shape, dtype, "kapi.fuse")
        leaves = [
            _ufunc._to_dtype(o, weak_loop[n]) if n in weak_loop else o for n, o in enumerate(ops)
        ] + list(consts)
        _ufunc.launch(f"{expr}", leaves, out, "kapi.fuse")
        return out


def fuse(fn=None):
    """Decorator (or function): `@kapi.fuse def f(x, y): return x * 2 + y` compiles the
    elementwise expression to one kernel per argument types and dimensions."""
    if fn is None:
        return fuse
    return FusedFunction(fn)
