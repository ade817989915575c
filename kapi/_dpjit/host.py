"""dpjit's host side: the function around the prange loops compiled by Numba's njit.

dpjit.py outlines each prange loop into a kernel and replaces the loop by a call of a launch
function; this module compiles the resulting host function with `numba.njit` (nopython), so
sequential loops, scalar arithmetic and control flow around the pranges run as machine code.
What the host code does with kapi objects goes back to Python through `numba.objmode`:

- kapi arrays get a Numba type (`KapiArrayType`): an owned reference to the Python object
  (an NRT meminfo whose destructor drops it) plus the shape, so `.shape`, `.ndim`, `.size`,
  `.dtype` and `len()` are compiled; boxing hands the same object back;
- each launch, allocation (`kapi.empty_like`, ...), operator, ufunc, reduction method,
  slicing and element access on kapi arrays is one objmode call into kapi's array library,
  which runs it on the array's device; the result's type is decided while Numba types the
  call and checked when the value comes back.

Imported on the first call of a dpjit function (importing Numba is slow).
"""

from __future__ import annotations

import inspect
import operator

import numba
import numpy as np
from numba.core import cgutils, types
from numba.core.errors import NumbaError
from numba.core.imputils import lower_constant
from numba.extending import (
    NativeValue,
    box,
    make_attribute_wrapper,
    models,
    overload,
    overload_attribute,
    overload_method,
    register_model,
    typeof_impl,
    unbox,
)
from numba.np import numpy_support

from .. import _native
from .._kernel.dispatcher import KernelDispatcher
from .._kernel.launch import call_kernel
from .._kernel.ranges import NdRange, Range
from .._memory import array as _array
from .._memory.array import Array
from .._memory.device import Device, Queue, default_device
from .dpjit import DpjitFunction

__all__ = ["KapiArrayType", "KapiObjectType", "NumbaError", "compile_host", "register_launch"]


# -- types -----------------------------------------------------------------------------------


class KapiArrayType(types.Type):
    """A kapi.Array in nopython code: dtype (a Numba scalar type) and ndim are static."""

    mutable = True  # `a += b` updates a in place (Numba uses iadd, not add, for these)

    def __init__(self, dtype, ndim: int):
        self.dtype, self.ndim = dtype, ndim
        super().__init__(name=f"kapi.Array({dtype}, {ndim}d)")

    @property
    def np_dtype(self) -> np.dtype:
        return numpy_support.as_dtype(self.dtype)


class KapiObjectType(types.Type):
    """Another kapi object (a Device, a Queue) carried through nopython code unchanged."""

    def __init__(self, cls):
        self.cls = cls
        super().__init__(name=f"kapi.{cls.__name__}")


_ARRAY_TYPES: dict = {}  # (np.dtype, ndim) -> KapiArrayType: typeof runs on every call


@typeof_impl.register(Array)
def _typeof_array(val, c):
    key = (val.dtype, val.ndim)
    t = _ARRAY_TYPES.get(key)
    if t is None:
        t = _ARRAY_TYPES[key] = KapiArrayType(numpy_support.from_dtype(val.dtype), val.ndim)
    return t


_EVENT = _native.ext().Event  # kapi.Event: what call_kernel_async returns


@typeof_impl.register(_EVENT)
@typeof_impl.register(Device)
@typeof_impl.register(Queue)
@typeof_impl.register(KernelDispatcher)
@typeof_impl.register(Range)  # a tuple subclass: without this, Numba would make it a tuple
@typeof_impl.register(NdRange)
def _typeof_object(val, c):
    return KapiObjectType(type(val))


@typeof_impl.register(DpjitFunction)
def _typeof_dpjit(val, c):
    """Another dpjit function called from host code: its host dispatcher, called natively
    (as one numba-dpex dpjit function calls another); none where its host code stays in
    CPython."""
    jit = val.host
    return types.Dispatcher(jit) if jit is not None else None


_OWNER = [("meminfo", types.MemInfoPointer(types.voidptr)), ("obj", types.pyobject)]


@register_model(KapiArrayType)
class _ArrayModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        shape = ("shape", types.UniTuple(types.intp, fe_type.ndim))
        super().__init__(dmm, fe_type, [*_OWNER, shape])


@register_model(KapiObjectType)
class _ObjectModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, list(_OWNER))


make_attribute_wrapper(KapiArrayType, "shape", "shape")


def _owner(typ, obj, c):
    """A struct holding a new reference to obj: the meminfo drops it when the last native copy
    of the value dies (Numba's NRT counts the copies)."""
    s = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    s.meminfo = c.pyapi.nrt_meminfo_new_from_pyobject(cgutils.voidptr_t(None), obj)
    s.obj = obj
    return s


@unbox(KapiArrayType)
def _unbox_array(typ, obj, c):
    # obj is a kapi.Array (typeof chose this type, or _expect checked it): it has a shape
    shape_obj = c.pyapi.object_getattr_string(obj, "shape")
    shape = c.unbox(types.UniTuple(types.intp, typ.ndim), shape_obj)
    c.pyapi.decref(shape_obj)
    s = _owner(typ, obj, c)
    s.shape = shape.value
    return NativeValue(s._getvalue(), is_error=shape.is_error)


@unbox(KapiObjectType)
def _unbox_object(typ, obj, c):
    return NativeValue(_owner(typ, obj, c)._getvalue())


_CONSTANTS: list = []  # kapi objects compiled into host code as constants: kept alive


@lower_constant(KapiObjectType)
def _constant(context, builder, ty, pyval):
    """A global or closure kapi object (a kernel, a device): its address, borrowed (no
    meminfo: NRT's incref/decref skip a null one)."""
    _CONSTANTS.append(pyval)
    s = cgutils.create_struct_proxy(ty)(context, builder)
    s.meminfo = cgutils.get_null_value(s.meminfo.type)
    s.obj = context.add_dynamic_addr(builder, id(pyval), info=f"kapi {ty}")
    return s._getvalue()


def _fresh_range(r):
    """A new Range/NdRange equal to r: index spaces are values in dpjit code (numba-dpex
    unboxed them into structs and boxed a new object on the way out)."""
    if isinstance(r, NdRange):
        return NdRange(r.global_range, r.local_range)
    return Range(*r)


@box(KapiArrayType)
@box(KapiObjectType)
def _box(typ, val, c):
    # boxing takes over the native reference (Numba's convention): the object gets one
    obj = cgutils.create_struct_proxy(typ)(c.context, c.builder, value=val).obj
    if isinstance(typ, KapiObjectType) and typ.cls in (Range, NdRange):
        fn = c.pyapi.unserialize(c.pyapi.serialize_object(_fresh_range))
        new = c.pyapi.call_function_objargs(fn, [obj])
        c.pyapi.decref(fn)
        c.context.nrt.decref(c.builder, typ, val)
        return new
    c.pyapi.incref(obj)
    c.context.nrt.decref(c.builder, typ, val)
    return obj


# -- coming back from objmode ----------------------------------------------------------------


def _expect(value, dtype: np.dtype, ndim: int, what: str):
    """value, which Numba typed as a kapi array of dtype/ndim before it existed."""
    if not isinstance(value, Array) or value.dtype != dtype or value.ndim != ndim:
        got = (
            f"a {value.ndim}-d {value.dtype} array"
            if isinstance(value, Array)
            else type(value).__name__
        )
        raise TypeError(
            f"dpjit host code: {what} gave {got} where its compiled code expects a {ndim}-d "
            f"{dtype} array (decided while compiling, by NumPy's rules and the default "
            f"device; give the dtype explicitly, or convert with .astype)"
        )
    return value


def _array_result(t: KapiArrayType, what: str):
    """(t, the check of the value objmode hands back for a call typed as kapi array t)."""
    return t, (lambda v: _expect(v, t.np_dtype, t.ndim, what))


def _objmode_impl(params: str, call: str, rettype, env: dict, ret_check=None):
    """An overload implementation `def impl(<params>)` whose body runs the Python expression
    `call` in object mode, its value typed as rettype (and passed through ret_check)."""
    env = dict(env, numba=numba, __rt=rettype, __check=ret_check)
    value = f"__check({call})" if ret_check is not None else call
    src = (
        f"def impl({params}):\n"
        f"    with numba.objmode(__r=__rt):\n"
        f"        __r = {value}\n"
        f"    return __r\n"
    )
    exec(compile(src, "<kapi dpjit host>", "exec"), env)
    return env["impl"]


# -- attributes and methods ------------------------------------------------------------------


@overload_attribute(KapiArrayType, "ndim")
def _ndim(a):
    n = a.ndim
    return lambda a: n


@overload_attribute(KapiArrayType, "size")
def _size(a):
    def impl(a):
        n = 1
        for d in a.shape:
            n *= d
        return n

    return impl


@overload_attribute(KapiArrayType, "dtype")
def _dtype(a):
    dt = a.np_dtype
    return lambda a: dt


@overload_attribute(KapiArrayType, "strides")
def _strides(a):
    # in bytes, as NumPy's (kapi arrays keep them: one objmode call)
    return _objmode_impl("a", "a.strides", types.UniTuple(types.intp, a.ndim), {})


@overload(len)
def _len(a):
    if isinstance(a, KapiArrayType):
        if a.ndim == 0:
            return None
        return lambda a: a.shape[0]
    return None


def _attr_object(name, cls):
    def typer(a):
        return _objmode_impl("a", f"a.{name}", KapiObjectType(cls), {})

    overload_attribute(KapiArrayType, name)(typer)


for _n in ("device", "sycl_device"):
    _attr_object(_n, Device)
for _n in ("sycl_queue", "queue"):
    _attr_object(_n, Queue)


@overload_method(KapiArrayType, "asnumpy")
def _asnumpy(a):
    t = types.Array(a.dtype, a.ndim, "C")
    return _objmode_impl("a", "__np.ascontiguousarray(a.asnumpy())", t, {"__np": np})


@overload_method(KapiArrayType, "astype")
def _astype(a, dtype):
    t, check = _array_result(
        KapiArrayType(numpy_support.from_dtype(_dtype_of(dtype)), a.ndim), "astype"
    )
    return _objmode_impl("a, dtype", "a.astype(dtype)", t, {}, check)


@overload_attribute(KapiArrayType, "T")
def _transpose(a):
    t, check = _array_result(a, "`.T`")
    return _objmode_impl("a", "a.T", t, {}, check)


@overload_method(KapiArrayType, "reshape")
def _reshape(a, *shape):
    # a.reshape(n, m) or a.reshape((n, m)): a view (kapi copies nothing)
    if len(shape) == 1 and isinstance(shape[0], (types.StarArgTuple, types.StarArgUniTuple)):
        shape = tuple(shape[0])  # how overload_method hands over *args
    if len(shape) == 1 and isinstance(shape[0], types.BaseTuple):
        ndim = _ndim_of(shape[0])
    else:
        ndim = len(shape) if all(isinstance(d, types.Integer) for d in shape) else -1
    if ndim < 0:
        raise numba.core.errors.TypingError(
            f"dpjit host code: reshape takes integers or a tuple of integers, not {shape}"
        )
    t, check = _array_result(KapiArrayType(a.dtype, ndim), "reshape")
    return _objmode_impl("a, *shape", "a.reshape(*shape)", t, {}, check)


@overload_method(KapiObjectType, "wait")
def _event_wait(e):
    """event.wait() on a kapi.Event (dpctl's SyclEvent.wait in numba-dpex's dpjit)."""
    if e.cls is _EVENT:
        return _objmode_impl("e", "e.wait()", types.none, {})
    return None


@overload(np.reshape)
def _np_reshape(a, shape):
    """np.reshape(a, shape) of a kapi array: a.reshape(shape) (a view where strides allow)."""
    if not isinstance(a, KapiArrayType):
        return None
    t, check = _array_result(KapiArrayType(a.dtype, _ndim_of(shape)), "numpy.reshape")
    return _objmode_impl("a, shape", "a.reshape(shape)", t, {}, check)


@overload(np.transpose)
def _np_transpose(a, axes=None):
    """np.transpose(a, axes=...) of a kapi array: the view with its axes permuted."""
    if not isinstance(a, KapiArrayType):
        return None
    from .._numeric.npcompat import transpose

    t, check = _array_result(KapiArrayType(a.dtype, a.ndim), "numpy.transpose")
    return _objmode_impl("a, axes=None", "__tr(a, axes)", t, {"__tr": transpose}, check)


@overload(np.histogram)
def _np_histogram(a, bins=10, range=None, density=None, weights=None):
    """np.histogram of a kapi array: kapi's histogram on its device, (hist, bin_edges) as
    kapi arrays (hist int64, or the weights' dtype; float64 where density=True)."""
    if not isinstance(a, KapiArrayType):
        return None
    from .._numeric.npcompat import histogram

    given = not isinstance(density, types.NoneType | types.Omitted) and density is not None
    if isinstance(weights, KapiArrayType):
        hdt = np.result_type(weights.np_dtype, np.float64) if given else weights.np_dtype
    else:
        hdt = np.dtype(np.float64) if given else np.dtype(np.int64)
    edt = a.np_dtype if a.np_dtype.kind == "f" else np.dtype(np.float64)
    ht = KapiArrayType(numpy_support.from_dtype(hdt), 1)
    et = KapiArrayType(numpy_support.from_dtype(edt), 1)

    def check(r):
        return (_expect(r[0], hdt, 1, "numpy.histogram"), _expect(r[1], edt, 1, "numpy.histogram"))

    return _objmode_impl(
        "a, bins=10, range=None, density=None, weights=None",
        "__h(a, bins, range, density, weights)",
        types.Tuple((ht, et)),
        {"__h": histogram},
        check,
    )


@overload_method(KapiArrayType, "copy")
def _copy(a):
    t, check = _array_result(KapiArrayType(a.dtype, a.ndim), "copy()")
    return _objmode_impl("a", "a.copy()", t, {}, check)


# reductions of a whole array give a scalar (what Numba gives for NumPy arrays)
_REDUCTIONS = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "mean": np.mean}


def _reduction_type(name, a: KapiArrayType):
    fn = _REDUCTIONS[name]
    return numpy_support.from_dtype(fn(np.ones(1, a.np_dtype)).dtype)


def _reduction_method(name):
    def typer(a, axis=None):
        if axis is None or isinstance(axis, (types.NoneType, types.Omitted)):
            t = _reduction_type(name, a)
            return _objmode_impl("a, axis=None", f"a.{name}().asnumpy()[()]", t, {})
        if not isinstance(axis, types.Integer) or a.ndim < 2:
            raise numba.core.errors.TypingError(
                f"dpjit host code: {name}(axis=) takes one integer axis of an array of 2 or "
                f"more dimensions, not {axis} on a {a.ndim}-d array"
            )
        # along one axis: an array of one dimension less, on the array's device
        t, check = _array_result(
            KapiArrayType(_reduction_type(name, a), a.ndim - 1), f"{name}(axis=)"
        )
        return _objmode_impl("a, axis=None", f"a.{name}(axis=axis)", t, {}, check)

    overload_method(KapiArrayType, name)(typer)

    def np_typer(a, axis=None):
        if isinstance(a, KapiArrayType):
            return typer(a, axis)
        return None

    overload(_REDUCTIONS[name])(np_typer)


for _n in _REDUCTIONS:
    _reduction_method(_n)


# -- allocation ------------------------------------------------------------------------------


def _dtype_of(t):
    """The np.dtype a Numba-typed dtype= argument names, or None when it is None/omitted."""
    if t is None or isinstance(t, (types.NoneType, types.Omitted)):
        if isinstance(t, types.Omitted) and t.value is not None:
            return np.dtype(t.value)
        return None
    if isinstance(t, types.NumberClass):
        return numpy_support.as_dtype(t.instance_type)
    if isinstance(t, types.DType):
        return numpy_support.as_dtype(t.dtype)
    if isinstance(t, types.StringLiteral):
        return np.dtype(t.literal_value)
    if isinstance(t, types.Function) and t.typing_key in (bool, int, float, complex):
        return np.dtype(t.typing_key)
    raise numba.core.errors.TypingError(
        f"dpjit host code: dtype= must be a NumPy type, an array's .dtype or a string, not {t}"
    )


def _ndim_of(shape) -> int:
    if isinstance(shape, types.Integer):
        return 1
    if isinstance(shape, types.BaseTuple) and all(isinstance(x, types.Integer) for x in shape):
        return len(shape)
    raise numba.core.errors.TypingError(
        f"dpjit host code: a shape is an integer or a tuple of integers, not {shape}"
    )


def _default_float() -> np.dtype:
    return _array._default_dtype(default_device().default_queue)


def _fill_dtype(t) -> np.dtype:
    if isinstance(t, types.Boolean):
        return np.dtype(np.bool_)
    if isinstance(t, types.Integer):
        return np.dtype(np.int64) if t.bitwidth == 64 else numpy_support.as_dtype(t)
    return _default_float()


def _signature(fn):
    """(params, call): fn's parameters as an overload takes them (keyword-only ones become
    ordinary ones with their defaults) and the call passing them on."""
    params, call = [], []
    for p in inspect.signature(fn).parameters.values():
        params.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
        call.append(p.name if p.kind != p.KEYWORD_ONLY else f"{p.name}={p.name}")
    return ", ".join(params), ", ".join(call)


def _given(t) -> bool:
    """Whether an overload's argument type t is a value the call gave (not None/omitted)."""
    if t is None or isinstance(t, types.NoneType):
        return False
    if isinstance(t, types.Omitted):
        return t.value is not None
    return isinstance(t, types.Type)


def _allocator(name: str):
    fn = getattr(_array, name)
    params, call = _signature(fn)
    names = list(inspect.signature(fn).parameters)

    def typer(*args, **kwargs):
        bound = dict(zip(names, args, strict=False))
        bound.update(kwargs)
        if _given(bound.get("device")) and _given(bound.get("sycl_queue")):
            # numba-dpex's refusal (its wording): the two name one queue twice
            raise numba.core.errors.TypingError(
                f"dpjit host code: kapi.{name}(): `device` and `sycl_queue` are exclusive "
                f"keywords, i.e. use one or other."
            )
        dt = _dtype_of(bound.get("dtype"))
        first = bound[names[0]]
        if name.endswith("_like") or name == "asarray":
            if not isinstance(first, (KapiArrayType, types.Array)):
                return None
            ndim = first.ndim
            shape = bound.get("shape")
            if shape is not None and not isinstance(shape, (types.NoneType, types.Omitted)):
                ndim = _ndim_of(shape)  # NumPy's shape=: another shape, a's dtype
            dt = dt if dt is not None else numpy_support.as_dtype(first.dtype)
        elif name == "arange":
            ndim = 1
            if dt is None:
                bounds = [bound.get(k) for k in ("start", "stop", "step")]
                # an argument left out arrives as its default value, not as a type
                # an argument left out arrives as its default value, not as a type
                ints = all(
                    isinstance(b, (types.Integer, types.NoneType, types.Omitted))
                    or not isinstance(b, types.Type)
                    for b in bounds
                )
                dt = np.dtype(np.int64) if ints else _default_float()
        else:
            ndim = _ndim_of(first)
            if dt is None:
                fill = bound.get("fill_value")
                dt = _fill_dtype(fill) if name == "full" else _default_float()
        t, check = _array_result(KapiArrayType(numpy_support.from_dtype(dt), ndim), name)
        return _objmode_impl(params, f"__fn({call})", t, {"__fn": fn}, check)

    # the typer's signature must be the function's (Numba folds the call's arguments by it)
    env = {"typer": typer}
    exec(f"def ol({params}):\n    return typer({call})\n", env)
    overload(fn)(env["ol"])


for _n in (
    "empty",
    "zeros",
    "ones",
    "full",
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
    "asarray",
    "arange",
):
    _allocator(_n)


# -- operators and ufuncs --------------------------------------------------------------------


def _operand_sample(t):
    """A NumPy value standing for operand type t when predicting a result dtype: kapi arrays
    as arrays; scalars as Python scalars (what objmode hands kapi: weakly typed)."""
    if isinstance(t, KapiArrayType):
        return np.ones((1,) * max(t.ndim, 1), t.np_dtype)
    if isinstance(t, types.Boolean):
        return True
    if isinstance(t, types.Integer):
        return 1
    if isinstance(t, types.Float):
        return 1.0
    if isinstance(t, types.Complex):
        return 1.0j
    return None


def _elementwise_type(ufunc, operands):
    """The kapi array type of ufunc(*operands), or None when no operand is a kapi array or
    one is of a type kapi arrays do not combine with here."""
    if not any(isinstance(t, KapiArrayType) for t in operands):
        return None
    samples = [_operand_sample(t) for t in operands]
    if any(s is None for s in samples):
        return None
    with np.errstate(all="ignore"):
        out = ufunc(*samples)
    ndim = max(t.ndim for t in operands if isinstance(t, KapiArrayType))
    return KapiArrayType(numpy_support.from_dtype(np.asarray(out).dtype), ndim)


_BINARY_OPS = {
    operator.add: np.add,
    operator.sub: np.subtract,
    operator.mul: np.multiply,
    operator.truediv: np.true_divide,
    operator.floordiv: np.floor_divide,
    operator.mod: np.remainder,
    operator.pow: np.power,
    operator.and_: np.bitwise_and,
    operator.or_: np.bitwise_or,
    operator.xor: np.bitwise_xor,
    operator.lshift: np.left_shift,
    operator.rshift: np.right_shift,
    operator.lt: np.less,
    operator.le: np.less_equal,
    operator.gt: np.greater,
    operator.ge: np.greater_equal,
    operator.eq: np.equal,
    operator.ne: np.not_equal,
}
_INPLACE_OPS = {
    operator.iadd: operator.add,
    operator.isub: operator.sub,
    operator.imul: operator.mul,
    operator.itruediv: operator.truediv,
    operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod,
    operator.ipow: operator.pow,
    operator.iand: operator.and_,
    operator.ior: operator.or_,
    operator.ixor: operator.xor,
    operator.ilshift: operator.lshift,
    operator.irshift: operator.rshift,
}
_UNARY_OPS = {operator.neg: np.negative, operator.pos: np.positive, operator.invert: np.invert}
_UFUNCS = [
    np.sqrt, np.exp, np.log, np.log2, np.log10, np.sin, np.cos, np.tan, np.arcsin, np.arccos,
    np.arctan, np.sinh, np.cosh, np.tanh, np.absolute, np.fabs, np.floor, np.ceil, np.trunc,
    np.square, np.negative, np.sign, np.isnan, np.isinf, np.isfinite, np.expm1, np.log1p,
    np.add, np.subtract, np.multiply, np.divide, np.true_divide, np.floor_divide, np.power,
    np.remainder, np.maximum, np.minimum, np.fmax, np.fmin, np.arctan2, np.hypot, np.copysign,
    np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
    np.logical_and, np.logical_or, np.logical_not,
]  # fmt: skip


def _register_elementwise(fn, ufunc, nargs: int, what: str):
    params = ", ".join(f"x{i}" for i in range(nargs))

    def typer(*operands):
        t = _elementwise_type(ufunc, operands)
        if t is None:
            return None
        _, check = _array_result(t, what)
        return _objmode_impl(params, f"__fn({params})", t, {"__fn": fn}, check)

    env = {"typer": typer}
    exec(f"def ol({params}):\n    return typer({params})\n", env)
    overload(fn)(env["ol"])


for _op, _uf in _BINARY_OPS.items():
    _register_elementwise(_op, _uf, 2, f"`{_uf.__name__}`")
for _op, _uf in _UNARY_OPS.items():
    _register_elementwise(_op, _uf, 1, f"`{_uf.__name__}`")
for _uf in _UFUNCS:
    _register_elementwise(_uf, _uf, _uf.nin, f"numpy.{_uf.__name__}")
_register_elementwise(abs, np.absolute, 1, "abs")


def _matmul(a, b):
    return a @ b


def _register_dot(fn, what: str):
    """np.dot / `@` of two kapi arrays of 1 or 2 dimensions: kapi's matmul on their device; a
    vector with a vector gives a scalar (as NumPy's dot does)."""

    def ol(a, b):
        if not (isinstance(a, KapiArrayType) and isinstance(b, KapiArrayType)):
            return None
        if not (1 <= a.ndim <= 2 and 1 <= b.ndim <= 2):
            return None
        dt = np.result_type(a.np_dtype, b.np_dtype)
        ndim = a.ndim + b.ndim - 2
        if ndim == 0:
            t = numpy_support.from_dtype(dt)
            return _objmode_impl("a, b", "__mm(a, b).asnumpy()[()]", t, {"__mm": _matmul})
        t, check = _array_result(KapiArrayType(numpy_support.from_dtype(dt), ndim), what)
        return _objmode_impl("a, b", "__mm(a, b)", t, {"__mm": _matmul}, check)

    overload(fn)(ol)


_register_dot(np.dot, "numpy.dot")
_register_dot(operator.matmul, "`@`")


def _register_inplace(iop, op):
    uf = _BINARY_OPS[op]

    def ol(a, b):
        if not isinstance(a, KapiArrayType):
            return None
        if _elementwise_type(uf, (a, b)) is None:
            return None
        # the operator writes into a (kapi casts to a's dtype) and hands a back
        return _objmode_impl("a, b", "__iop(a, b)", a, {"__iop": iop})

    overload(iop)(ol)


for _iop, _op in _INPLACE_OPS.items():
    _register_inplace(_iop, _op)


# -- indexing --------------------------------------------------------------------------------


def _index_parts(idx):
    """(components, ndim removed, source of each component in the impl) for an index type,
    or None: integers and slices (Numba cannot box slices: they travel as (start, stop,
    step) and are rebuilt in Python)."""
    items = list(idx) if isinstance(idx, types.BaseTuple) else [idx]
    src, removed = [], 0
    for k, t in enumerate(items):
        ref = f"idx[{k}]" if isinstance(idx, types.BaseTuple) else "idx"
        if isinstance(t, types.Integer):
            src.append(f"({ref},)")
            removed += 1
        elif isinstance(t, types.SliceType):
            src.append(f"({ref}.start, {ref}.stop, {ref}.step)")
        else:
            return None
    return src, removed


def _rebuild(parts):
    return tuple(p[0] if len(p) == 1 else slice(*p) for p in parts)


def _index_impl(params, idx, body_call, rettype, env, check=None):
    parts = _index_parts(idx)
    lines = [f"def impl({params}):\n", f"    __k = ({', '.join(parts[0])},)\n"]
    lines.append("    with numba.objmode(__r=__rt):\n")
    lines.append(f"        __r = __check({body_call})\n")
    lines.append("    return __r\n")
    env = dict(env, numba=numba, __rt=rettype, __check=check or (lambda v: v), __rebuild=_rebuild)
    exec(compile("".join(lines), "<kapi dpjit host>", "exec"), env)
    return env["impl"]


@overload(operator.getitem)
def _getitem(a, idx):
    if not isinstance(a, KapiArrayType):
        return None
    parts = _index_parts(idx)
    if parts is None:
        return None
    ndim = a.ndim - parts[1]
    if ndim < 0:
        raise numba.core.errors.TypingError(
            f"dpjit host code: too many indices for a {a.ndim}-d kapi array"
        )
    if ndim == 0:
        # one element: kapi reads it from wherever the array lives
        # (a 0-d kapi array, as the array API says, read as the scalar Numba expects)
        return _index_impl("a, idx", idx, "a[__rebuild(__k)].asnumpy()[()]", a.dtype, {})
    t, check = _array_result(KapiArrayType(a.dtype, ndim), "slicing")
    return _index_impl("a, idx", idx, "a[__rebuild(__k)]", t, {}, check)


@overload(operator.getitem)
def _getitem_array(a, idx):
    """a[mask] (a boolean kapi array: the chosen elements, 1-D) and a[ix] (an integer kapi
    array: a gather along the first axis), kapi's indexing on a's device."""
    if not (isinstance(a, KapiArrayType) and isinstance(idx, KapiArrayType)):
        return None
    if isinstance(idx.dtype, types.Boolean):
        ndim = a.ndim - idx.ndim + 1
    elif isinstance(idx.dtype, types.Integer):
        ndim = idx.ndim + a.ndim - 1
    else:
        return None
    t, check = _array_result(KapiArrayType(a.dtype, ndim), "array indexing")
    return _objmode_impl("a, idx", "a[idx]", t, {}, check)


@overload(operator.setitem)
def _setitem_array(a, idx, v):
    """a[mask] = v and a[ix] = v with a boolean or integer kapi array."""
    if not (isinstance(a, KapiArrayType) and isinstance(idx, KapiArrayType)):
        return None
    if not isinstance(idx.dtype, (types.Boolean, types.Integer)):
        return None
    if not isinstance(v, (KapiArrayType, types.Number, types.Boolean)):
        return None
    return _objmode_impl("a, idx, v", "__set(a, idx, v)", types.none, {"__set": _set})


@overload(operator.setitem)
def _setitem(a, idx, v):
    if not isinstance(a, KapiArrayType) or _index_parts(idx) is None:
        return None
    if not isinstance(v, (KapiArrayType, types.Number, types.Boolean, types.Array)):
        return None
    return _index_impl("a, idx, v", idx, "__set(a, __rebuild(__k), v)", types.none, {"__set": _set})


def _set(a, key, v):
    a[key] = v


# -- launches --------------------------------------------------------------------------------

_PY_SCALARS = (types.int64, types.float64, types.boolean, types.complex128)


def _converter(ts):
    """A function giving values (of Numba types ts, boxed) the types kapi must see, or None
    where none needs converting."""
    conv = [(k, numpy_support.as_dtype(t).type) for k, t in enumerate(ts) if _needs_numpy(t)]
    if not conv:
        return None

    def convert(values):
        values = list(values)
        for k, make in conv:
            values[k] = make(values[k])
        return values

    return convert


def _needs_numpy(t) -> bool:
    """Whether a scalar of Numba type t must reach kapi as a NumPy scalar: an int32 boxes
    to a Python int, and the kernel must still see int32 (int64/float64 stay Python's, as
    when called from Python)."""
    return isinstance(t, (types.Integer, types.Float, types.Complex)) and t not in _PY_SCALARS


def register_launch(launch, ndims: int):
    """Types launch(bounds, free, reds, lasts) (one prange loop) in nopython code: an objmode
    call returning (reduction values, ran, last values, loop variables set, their values)
    with the types the variables had before the loop."""

    def ol(bounds, free, reds, lasts):
        # the variables' types, not the constants a first typing pass may see (`s = 0`)
        free_t, reds_t, lasts_t = (tuple(map(types.unliteral, ts)) for ts in (free, reds, lasts))
        convs = [_converter(ts) for ts in (free_t, reds_t, lasts_t)]
        if any(convs):
            ident = [c or (lambda v: v) for c in convs]

            def call(bounds, free, reds, lasts):
                return launch(bounds, ident[0](free), ident[1](reds), ident[2](lasts))
        else:
            call = launch

        rettype = types.Tuple(
            (
                types.Tuple(reds_t),
                types.boolean,
                types.Tuple(lasts_t),
                types.UniTuple(types.boolean, ndims),
                types.UniTuple(types.int64, ndims),
            )
        )
        return _objmode_impl(
            "bounds, free, reds, lasts",
            "__call(bounds, free, reds, lasts)",
            rettype,
            {"__call": call},
        )

    overload(launch)(ol)


# -- kernels launched from host code (numba-dpex's call_kernel inside dpjit) -----------------


@overload(Range)
def _range(dim0, dim1=None, dim2=None):
    params = "dim0, dim1=None, dim2=None"
    return _objmode_impl(params, "__cls(dim0, dim1, dim2)", KapiObjectType(Range), {"__cls": Range})


@overload(NdRange)
def _ndrange(global_size, local_size):
    params = "global_size, local_size"
    return _objmode_impl(params, f"__cls({params})", KapiObjectType(NdRange), {"__cls": NdRange})


@overload(call_kernel)
def _call_kernel(kernel, index_space, *args):
    if not (isinstance(kernel, KapiObjectType) and kernel.cls is KernelDispatcher):
        return None
    conv = _converter(tuple(map(types.unliteral, args)))

    def launch(kernel, index_space, args):
        call_kernel(kernel, index_space, *(conv(args) if conv is not None else args))

    return _objmode_impl(
        "kernel, index_space, *args",
        "__launch(kernel, index_space, args)",
        types.none,
        {"__launch": launch},
    )


def compile_host(host, options=None):
    """The nopython dispatcher of the host function (compiles lazily, per argument types);
    options: the numba.jit options dpjit passes on (fastmath=)."""
    return numba.njit(host, **(options or {}))


# -- np.empty_like & co. ----------------------------------------------------------------------


def _register_np_like(like):
    """like (a _dpjit.NP_LIKE function): kapi's allocation for a kapi array, NumPy's (as Numba
    compiles it) for anything else."""
    name = like.__name__
    np_fn = like.np_function
    kapi_fn = getattr(_array, name)
    params = "a, fill_value, dtype=None" if name == "full_like" else "a, dtype=None"
    call = params.replace("=None", "")

    def ol(*args):
        a = args[0]
        if isinstance(a, KapiArrayType):
            dt = _dtype_of(args[-1] if len(args) > (2 if name == "full_like" else 1) else None)
            dt = dt if dt is not None else a.np_dtype
            t, check = _array_result(KapiArrayType(numpy_support.from_dtype(dt), a.ndim), name)
            return _objmode_impl(params, f"__fn({call})", t, {"__fn": kapi_fn}, check)
        env = {"__np_fn": np_fn}
        exec(f"def impl({params}):\n    return __np_fn({call})\n", env)
        return env["impl"]

    env = {"ol": ol}
    exec(f"def typer({params}):\n    return ol({call})\n", env)
    overload(like)(env["typer"])


def _register_np_likes():
    from .dpjit import NP_LIKE

    for like in NP_LIKE.values():
        _register_np_like(like)


_register_np_likes()
