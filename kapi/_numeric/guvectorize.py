"""@kapi.guvectorize: a Python function over core-dimension rows becomes a generalized device
ufunc over kapi arrays, in numba-cuda's form:

    @kapi.guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),(n)->()")
    def dot(a, b, out):
        ...
        out[0] = acc

The layout names each operand's core dimensions; the dimensions in front of them are loop
dimensions, broadcast across the inputs as in NumPy. The function becomes a device function;
a generated kernel runs one work-item per loop point, calling it on that point's row views
(`f(a0[i], a1[i], o0[i])` with the loop dimensions flattened into i). A `()` output is a
one-element array the function writes at [0] (as in Numba), returned without that axis.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from .._kernel.numba_sig import is_numba_signature, numba_signature_parts
from .._kernel.types import normalize_type
from .._memory.array import Array, _span
from .._memory.dtypes import KIR_TO_DTYPE
from . import ufunc as _ufunc
from .vectorize import _dtype_of_name, _element_options, _reaches

_DIMS = re.compile(r"\(\s*(\w+(?:\s*,\s*\w+)*)?\s*\)")
_LAYOUT = re.compile(r"^\s*(\(.*?\)(?:\s*,\s*\(.*?\))*)\s*->\s*(\(.*?\)(?:\s*,\s*\(.*?\))*)\s*$")
_SIG = re.compile(r"^\s*(?:(\w+)\s*)?\((.*)\)\s*$")
_ARG = re.compile(r"^\s*(\w+)\s*(?:\[([\s:,\d]*)\])?\s*$")
_KIR_ARRAY = re.compile(r"^array\((\w+),(\d)")
_TARGETS = {None, "cpu", "parallel", "cuda", "gpu", "kapi"}
_MAX_CORE = 2  # kernels take arrays of up to 3 dimensions: one loop + two core dimensions


def parse_layout(layout: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """ "(m,n),(n)->(m)" -> ([("m", "n"), ("n",)], [("m",)])."""
    m = _LAYOUT.match(layout) if isinstance(layout, str) else None
    if not m:
        raise ValueError(f"kapi.guvectorize: layout {layout!r} is not of the form '(n),(n)->()'")

    def side(text):
        return [
            tuple(d.strip() for d in (g or "").split(",") if d.strip()) for g in _DIMS.findall(text)
        ]

    ins, outs = side(m.group(1)), side(m.group(2))
    bound = {d for core in ins for d in core}
    for core in outs:
        for d in core:
            if d not in bound:
                raise ValueError(
                    f"kapi.guvectorize: output dimension {d!r} of layout {layout!r} is not a "
                    "dimension of any input"
                )
    for core in ins + outs:
        if len(core) > _MAX_CORE:
            raise ValueError(
                f"kapi.guvectorize: {len(core)} core dimensions in {layout!r}; kapi supports "
                f"at most {_MAX_CORE} per operand (kernel arrays have at most 3 dimensions)"
            )
    return ins, outs


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def parse_signature(sig) -> list[tuple[np.dtype, int]]:
    """(dtype, ndim) of each argument of "void(float32[:], float64[:, :], int32)" or of a
    signature object (ndim 0: a scalar)."""
    if isinstance(sig, str):
        m = _SIG.match(sig)
        if not m or m.group(1) not in (None, "void", "none"):
            raise TypeError(
                f"kapi.guvectorize: signature {sig!r} is not of the form "
                "'void(float32[:], float32[:], ...)' (results are written to output arrays)"
            )
        args = []
        for a in _split_args(m.group(2)):
            am = _ARG.match(a)
            if not am:
                raise TypeError(f"kapi.guvectorize: cannot read {a.strip()!r} in {sig!r}")
            dims = am.group(2)
            ndim = 0 if dims is None else len(dims.split(","))
            if dims is not None and ":" not in dims:
                raise TypeError(f"kapi.guvectorize: cannot read {a.strip()!r} in {sig!r}")
            args.append((_dtype_of_name(am.group(1)), ndim))
        return args
    if is_numba_signature(sig):
        params, ret = numba_signature_parts(sig)
        if ret is not None:
            raise TypeError("kapi.guvectorize: a signature returns void (results go to outputs)")
        args = []
        for t in params:
            kir = normalize_type(t)
            am = _KIR_ARRAY.match(kir)
            if am:
                args.append((KIR_TO_DTYPE[am.group(1)], int(am.group(2))))
            else:
                args.append((KIR_TO_DTYPE[kir], 0))
        return args
    raise TypeError(
        "kapi.guvectorize: signatures are strings ('void(float32[:], float32[:])') or "
        f"signature objects (kapi.void(kapi.float32[:], ...)), not {type(sig).__name__}"
    )


def _flat_loop_view(x: Array, loop_shape, core_shape) -> Array:
    """x broadcast to loop_shape + core_shape, with the loop dimensions merged into one
    (a contiguous copy where its strides cannot be merged)."""
    full = tuple(loop_shape) + tuple(core_shape)
    st = _ufunc._broadcast_strides(x, full)
    nl = len(loop_shape)
    lst = st[:nl]
    ok = all(lst[d] == lst[d + 1] * loop_shape[d + 1] for d in range(nl - 1))
    if not ok:
        c = Array._allocate(full, x.dtype, x.sycl_queue, x.usm_type)
        _ufunc.launch("l0", [x], c, "kapi.guvectorize")
        x, st = c, _ufunc._broadcast_strides(c, full)
        lst = st[:nl]
    n = 1
    for d in loop_shape:
        n *= d
    lead = lst[-1] if nl else 0
    return _ufunc._strided_view(x, (n,) + tuple(core_shape), (lead,) + tuple(st[nl:]))


class GUFunc:
    """What @kapi.guvectorize returns: call it on kapi arrays (and scalars for () inputs)."""

    def __init__(self, pyfunc, signatures, layout: str, options=None):
        from .._kernel.dispatcher import device_func

        self._pyfunc = pyfunc
        self.layout = layout
        self._ins, self._outs = parse_layout(layout)
        self.nin, self.nout = len(self._ins), len(self._outs)
        self.types = []
        cores = self._ins + self._outs
        for s in signatures:
            args = parse_signature(s)
            if len(args) != len(cores):
                raise TypeError(
                    f"kapi.guvectorize: signature {s!r} has {len(args)} arguments; layout "
                    f"{layout!r} has {len(cores)} operands"
                )
            for n, ((_, ndim), core) in enumerate(zip(args, cores, strict=True)):
                out = n >= self.nin
                if not (ndim == len(core) or (not core and ndim == 1)) or (out and ndim == 0):
                    raise TypeError(
                        f"kapi.guvectorize: argument {n} of {s!r} has {ndim} dimensions, but "
                        f"its layout '({','.join(core)})' needs "
                        + (
                            "an array (outputs are written through arrays)"
                            if out
                            else f"{len(core)}"
                        )
                    )
            self.types.append(args)
        if not self.types:
            raise TypeError("kapi.guvectorize needs at least one signature")
        self._device_func = device_func(pyfunc, **_element_options(options))
        self._kernels: dict[str, object] = {}
        functools.update_wrapper(self, pyfunc)

    def _select(self, ops):
        for exact in (True, False):
            for args in self.types:
                ins = [dt for dt, _ in args[: self.nin]]
                if exact:
                    ok = all(_ufunc.resolve_type(o) == d for o, d in zip(ops, ins, strict=True))
                else:
                    ok = all(_reaches(o, d) for o, d in zip(ops, ins, strict=True))
                if ok:
                    return args
        have = ", ".join(str(_ufunc.resolve_type(o)) for o in ops)
        sigs = "; ".join(
            "(" + ", ".join(f"{d}{'[' + ','.join(':' * n) + ']' if n else ''}" for d, n in a) + ")"
            for a in self.types
        )
        raise TypeError(
            f"gufunc '{self.__name__}' not supported for the input types ({have}), and the "
            f"inputs could not be safely coerced to any of its signatures: {sigs}"
        )

    def _operands(self, args):
        ops = []
        for x in args:
            o = _ufunc.operand(x)
            if o is None:
                raise TypeError(
                    f"{self.__name__}: arguments are kapi arrays and scalars, not "
                    f"{type(x).__name__}; copy host data with kapi.asarray(x, device=...)"
                )
            ops.append(o)
        return ops

    def _bind(self, ops, outs):
        """Core dimension sizes and the broadcast loop shape."""
        sizes: dict[str, int] = {}
        loops = []
        named = list(zip(ops, self._ins, strict=True))
        named += [(o, c) for o, c in zip(outs, self._outs, strict=True) if o is not None]
        for n, (o, core) in enumerate(named):
            shape = o.shape if isinstance(o, Array) else ()
            if len(shape) < len(core):
                raise ValueError(
                    f"{self.__name__}: operand {n} has {len(shape)} dimensions, but its core "
                    f"dimensions '({','.join(core)})' need at least {len(core)}"
                )
            split = len(shape) - len(core)
            for d, size in zip(core, shape[split:], strict=True):
                if sizes.setdefault(d, size) != size:
                    raise ValueError(
                        f"{self.__name__}: core dimension {d!r} is {sizes[d]} in one operand "
                        f"and {size} in operand {n} (layout {self.layout!r})"
                    )
            if n < len(ops):
                loops.append(shape[:split])
        return sizes, np.broadcast_shapes(*loops)

    def __call__(self, *args, out=None, **kwargs):
        if kwargs:
            raise TypeError(f"{self.__name__}: kapi.guvectorize functions take out= only")
        if len(args) == self.nin + self.nout and out is None:
            args, out = args[: self.nin], args[self.nin :]
        if len(args) != self.nin:
            raise TypeError(
                f"{self.__name__} takes {self.nin} inputs (and optionally {self.nout} "
                f"outputs), got {len(args)} arguments"
            )
        if out is None:
            outs = [None] * self.nout
        else:
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != self.nout:
            raise TypeError(f"{self.__name__} has {self.nout} outputs, got {len(outs)}")
        ops = self._operands(args)
        arrays = [o for o in ops if isinstance(o, Array)]
        if not arrays:
            raise TypeError(f"{self.__name__}: at least one argument must be a kapi array")
        for n, o in enumerate(outs):
            if o is not None and not isinstance(o, Array):
                raise TypeError(
                    f"{self.__name__}: output {n} must be a kapi array, not {type(o).__name__}"
                )
        what = f"kapi.guvectorize function {self.__name__}"
        queue = _ufunc.common_queue(arrays + [o for o in outs if o is not None], what)
        for n, (o, core) in enumerate(zip(ops, self._ins, strict=True)):
            if not isinstance(o, Array) and core:
                raise TypeError(
                    f"{self.__name__}: input {n} has core dimensions '({','.join(core)})'; "
                    "pass a kapi array, not a scalar"
                )
        sig = self._select(ops)
        sizes, loop = self._bind(ops, outs)
        usm = arrays[0].usm_type
        results = []
        for n, (o, core) in enumerate(zip(outs, self._outs, strict=True)):
            dt = sig[self.nin + n][0]
            want = tuple(loop) + tuple(sizes[d] for d in core)
            if o is None:
                o = Array._allocate(want, dt, queue, usm)
            elif o.shape != want or o.dtype != dt:
                raise ValueError(
                    f"{self.__name__}: output {n} must have shape {want} and dtype {dt}, "
                    f"not {o.shape} and {o.dtype}"
                )
            results.append(o)
        size = 1
        for d in loop:
            size *= d
        # an output whose loop dimensions do not merge into one is computed into a temporary
        targets = [
            r if r.layout == "C" else Array._allocate(r.shape, r.dtype, queue, r.usm_type)
            for r in results
        ]
        if size:
            self._launch(ops, targets, sig, sizes, loop, size)
            for r, t in zip(results, targets, strict=True):
                if t is not r:
                    _ufunc.launch("l0", [t], r, what)
        return results[0] if self.nout == 1 else tuple(results)

    def _launch(self, ops, results, sig, sizes, loop, size) -> None:
        kargs, exprs, ndims = [], [], []
        for n, (o, (dt, ndim)) in enumerate(zip(list(ops) + results, sig, strict=True)):
            core = (self._ins + self._outs)[n]
            if not isinstance(o, Array):  # a scalar for a () input
                kargs.append(_ufunc._to_dtype(o, dt))
                exprs.append(f"a{n}")
                ndims.append(0)
                continue
            if n < self.nin and o.dtype != dt:
                o = o.astype(dt)
            if n < self.nin and any(_overlaps(o, r) for r in results):
                o = o.copy()  # rows run in parallel: an input must not see outputs written
            cshape = tuple(sizes[d] for d in core)
            extra = (1,) if not core and ndim == 1 else ()  # a () operand as a 1-element row
            v = _flat_loop_view(o, loop, cshape)
            if extra:
                st = tuple(s // v.itemsize for s in v.strides)
                v = _ufunc._strided_view(v, v.shape + (1,), st + (1,))
            kargs.append(v)
            exprs.append(f"a{n}[i]")
        params = ", ".join(f"a{n}" for n in range(len(exprs)))
        call = f"_f({', '.join(exprs)})"
        src = f"def _elementwise(item, {params}):\n    i = item.get_id(0)\n    {call}\n"
        from .._kernel.launch import compiled_call_kernel as call_kernel
        from .._kernel.ranges import Range

        k = _ufunc._kernel_for(src, {"_f": self._device_func}, self._kernels)
        call_kernel(k, Range(size), *kargs)


def _overlaps(a: Array, b: Array) -> bool:
    alo, ahi = _span(a.shape, a.strides, a.itemsize)
    blo, bhi = _span(b.shape, b.strides, b.itemsize)
    return a._ptr + alo < b._ptr + bhi and b._ptr + blo < a._ptr + ahi


def guvectorize(signatures=None, layout=None, target=None, **options):
    """`@kapi.guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),(n)->()")`: a
    generalized device ufunc over kapi arrays (numba-cuda's form; `target` is accepted and
    ignored: the call runs where its arrays live)."""
    if callable(signatures) and not isinstance(signatures, (str, list, tuple)):
        raise TypeError(
            "kapi.guvectorize needs signatures and a layout: "
            "@kapi.guvectorize(['void(f8[:], f8[:])'], '(n)->()')"
        )
    if target not in _TARGETS:
        raise ValueError(f"kapi.guvectorize: unknown target {target!r}")
    unknown = set(options) - {"nopython", "cache", "fastmath", "writable_args"}
    if unknown:
        raise TypeError("kapi.guvectorize does not take " + ", ".join(sorted(unknown)))
    if not signatures:
        raise TypeError("kapi.guvectorize needs at least one signature (no lazy typing)")
    if layout is None:
        raise TypeError("kapi.guvectorize needs a layout such as '(n),(n)->()'")
    sigs = (
        [signatures]
        if isinstance(signatures, str) or is_numba_signature(signatures)
        else list(signatures)
    )
    parse_layout(layout)

    def wrap(pyfunc):
        return GUFunc(pyfunc, sigs, layout, options)

    return wrap
