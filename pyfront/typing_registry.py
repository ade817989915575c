"""kapi's typing registry and typing context.

The context is a LeanContext (Numba's declarative typing, no @overload) plus this registry:
the kapi kernel API (index space, barriers, atomics, private arrays), the few Python builtins
Numba types through @overload (int, min, max, truth) and math.fmod. Device functions are typed
on demand by running the front end on them. Nothing here is installed into Numba's CPU context.
"""

import inspect
import math
import operator

from kapi_lang import kernel_api as K

from . import _numba as nb
from .errors import KernelError, UnsupportedConstructError
from .ktypes import (
    AtomicRefType,
    GroupType,
    IndexSpaceType,
    ItemType,
    KArray,
    NdItemType,
    SubGroupType,
)

types = nb.types
registry = nb.Registry()
_global = registry.register_global
_attr = registry.register_attr

ATOMIC_DTYPES = (types.int32, types.uint32, types.int64, types.uint64, types.float32, types.float64)
SCALAR_DTYPES = (types.boolean,) + tuple(types.integer_domain) + (types.float32, types.float64)
SCALAR_DTYPES += (types.float16,)  # PrivateArray of float16: f16 is a KIR type


def bind(pyfunc, args, kws, skip_self=False):
    """Bind call arguments to `pyfunc`'s parameters: {name: value}, defaults left out.

    Raises a TypingError naming the function if the arguments do not fit.
    """
    sig = inspect.signature(pyfunc)
    if skip_self:
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    try:
        return dict(sig.bind(*args, **dict(kws)).arguments)
    except TypeError as e:
        raise nb.TypingError(f"{MARK}{pyfunc.__qualname__}(): {e}") from None


MARK = "kapi-typing: "  # lets the typer find our message inside Numba's nested report


def _fail(msg):
    raise nb.TypingError(MARK + msg)


def _sig_of(ret, bound):
    return nb.signature(ret, *bound.values())


# ---- Python builtins that Numba types with @overload ------------------------------------------


def _is_scalar(ty):
    return isinstance(ty, types.Number | types.Boolean)


@_global(int)
class IntBuiltin(nb.AbstractTemplate):
    def generic(self, args, kws):
        if kws or len(args) != 1:
            return None
        (x,) = args
        if isinstance(x, types.Integer):
            return nb.signature(x, x)
        if isinstance(x, types.Boolean | types.Float):
            return nb.signature(types.intp, x)
        return None


class _MinMax(nb.AbstractTemplate):
    def generic(self, args, kws):
        if kws or not args:
            return None
        tys = args
        if len(args) == 1 and isinstance(args[0], types.BaseTuple):
            tys = tuple(args[0])
        if not tys or not all(_is_scalar(t) for t in tys):
            return None
        ret = self.context.unify_types(*tys)
        return nb.signature(ret, *args) if ret is not None else None


@_global(min)
class MinBuiltin(_MinMax):
    pass


@_global(max)
class MaxBuiltin(_MinMax):
    pass


@_global(operator.truth)
class TruthBuiltin(nb.AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 1 and _is_scalar(args[0]):
            return nb.signature(types.boolean, args[0])
        return None


@_global(math.fmod)
class MathFmod(nb.ConcreteTemplate):
    cases = [
        nb.signature(types.float64, types.int64, types.int64),
        nb.signature(types.float64, types.uint64, types.uint64),
        nb.signature(types.float32, types.float32, types.float32),
        nb.signature(types.float64, types.float64, types.float64),
    ]


# ---- index space ------------------------------------------------------------------------------


def _dim_method(kind, name, nargs):
    """A bound-method resolver for Item/NdItem/Group `name`, taking `nargs` (0/1) dims."""

    @nb.bound_function(f"{kind}.{name}")
    def resolve(self, ty, args, kws):
        args, kws = _dim_keyword(args, kws)
        if kws or len(args) != nargs:
            _fail(f"{kind}.{name}() takes {nargs} argument{'s' if nargs != 1 else ''}")
        if nargs:
            d = args[0]
            if not isinstance(d, types.Integer):
                _fail(f"{kind}.{name}(dim): dim must be an integer, not {d}")
            if isinstance(d, types.IntegerLiteral) and not 0 <= d.literal_value < ty.ndim:
                _fail(f"{kind}.{name}({d.literal_value}): dimension out of range for {ty}")
        return nb.signature(types.int64, *args)

    return resolve


def _dim_keyword(args, kws):
    """`dim=` (numba-dpex's parameter name; its Item mock says `idx`) as the positional dim."""
    kws = dict(kws)
    for name in ("dim", "idx"):
        if name in kws and not args:
            args = (kws.pop(name),)
    return tuple(args), kws


_METHODS = {
    ItemType: {"get_id": 1, "get_range": 1, "get_linear_id": 0, "get_linear_range": 0},
    NdItemType: {
        "get_global_id": 1,
        "get_local_id": 1,
        "get_global_range": 1,
        "get_local_range": 1,
        "get_global_linear_id": 0,
        "get_local_linear_id": 0,
        "get_global_linear_range": 0,
        "get_local_linear_range": 0,
    },
    GroupType: {
        "get_group_id": 1,
        "get_group_range": 1,
        "get_local_range": 1,
        "get_group_linear_id": 0,
        "get_group_linear_range": 0,
        "get_local_linear_range": 0,
    },
}


def _index_space_template(tycls, methods):
    body = {"key": tycls}
    for name, nargs in methods.items():
        body[f"resolve_{name}"] = _dim_method(tycls.kind, name, nargs)

    def resolve_dimensions(self, ty):
        return types.IntegerLiteral(ty.ndim)

    body["resolve_dimensions"] = resolve_dimensions
    if tycls is NdItemType:

        @nb.bound_function("NdItem.get_group")
        def resolve_get_group(self, ty, args, kws):
            if args or kws:
                _fail("NdItem.get_group() takes no arguments")
            return nb.signature(GroupType(ty.ndim))

        body["resolve_get_group"] = resolve_get_group
    if tycls is GroupType:
        body["resolve_leader"] = lambda self, ty: types.boolean
    return _attr(type(f"{tycls.kind}Attributes", (nb.AttributeTemplate,), body))


for _cls, _methods in _METHODS.items():
    _index_space_template(_cls, _methods)


def _is_enum(ty, enum_cls):
    return isinstance(ty, types.IntEnumMember) and ty.instance_class is enum_cls


@_global(K.group_barrier)
class GroupBarrier(nb.AbstractTemplate):
    def generic(self, args, kws):
        b = bind(K.group_barrier, args, kws)
        if not isinstance(b["group"], GroupType | SubGroupType):
            _fail(
                f"group_barrier(group, ...): group must be a Group, not {b['group']}; pass "
                "nd_item.get_group() (barriers need an NdRange launch)"
            )
        if "fence_scope" in b and not _is_enum(b["fence_scope"], K.MemoryScope):
            _fail("group_barrier(group, fence_scope): fence_scope must be a MemoryScope")
        return _sig_of(types.none, b)


@_global(K.atomic_fence)
class AtomicFence(nb.AbstractTemplate):
    def generic(self, args, kws):
        b = bind(K.atomic_fence, args, kws)
        if not _is_enum(b["memory_order"], K.MemoryOrder):
            _fail("atomic_fence(memory_order, memory_scope): memory_order must be a MemoryOrder")
        if not _is_enum(b["memory_scope"], K.MemoryScope):
            _fail("atomic_fence(memory_order, memory_scope): memory_scope must be a MemoryScope")
        return _sig_of(types.none, b)


@_global(K.popcount)
class Popcount(nb.AbstractTemplate):
    def generic(self, args, kws):
        b = bind(K.popcount, args, kws)
        x = types.unliteral(b["x"])
        if not isinstance(x, types.Integer):
            _fail(f"popcount(x): x must be an integer (of any width and signedness), not {x}")
        return nb.signature(x, x)


@_global(K.store_nontemporal)
class StoreNontemporal(nb.AbstractTemplate):
    def generic(self, args, kws):
        what = "store_nontemporal(array, index, value)"
        b = bind(K.store_nontemporal, args, kws)
        arr = b["array"]
        if not isinstance(arr, KArray):
            _fail(f"{what}: array must be an array, not {arr}")
        if not arr.mutable:
            _fail(f"{what}: the array is read-only")
        _check_index(arr, b["index"], what)
        val = types.unliteral(b["value"])
        if not _is_scalar(val) or self.context.can_convert(val, arr.dtype) is None:
            _fail(f"{what}: cannot store {val} in an array of {arr.dtype}")
        return _sig_of(types.none, b)


# ---- AtomicRef --------------------------------------------------------------------------------


def _check_index(arr, index, what):
    if isinstance(index, types.Integer):
        if arr.ndim != 1:
            _fail(f"{what}: a {arr.ndim}-D array needs a tuple of {arr.ndim} indices")
        return
    if isinstance(index, types.BaseTuple) and all(isinstance(t, types.Integer) for t in index):
        if len(index) != arr.ndim:
            _fail(f"{what}: {len(index)} indices for a {arr.ndim}-D array")
        return
    _fail(f"{what}: the index must be an integer or a tuple of integers, not {index}")


@_global(K.AtomicRef)
class AtomicRefCtor(nb.AbstractTemplate):
    def generic(self, args, kws):
        b = bind(K.AtomicRef.__init__, args, kws, skip_self=True)
        ref = b["ref"]
        if not isinstance(ref, KArray):
            _fail(f"AtomicRef(ref, ...): ref must be an array, not {ref}")
        if ref.addrspace == "private":
            _fail("AtomicRef cannot refer to a private array (PrivateArray)")
        if ref.dtype not in ATOMIC_DTYPES:
            _fail(
                f"AtomicRef does not support {ref.dtype} arrays: use int32, uint32, int64, "
                "uint64, float32 or float64"
            )
        _check_index(ref, b["index"], "AtomicRef(ref, index)")
        for name, enum in (
            ("memory_order", K.MemoryOrder),
            ("memory_scope", K.MemoryScope),
            ("address_space", K.AddressSpace),
        ):
            if name in b and not _is_enum(b[name], enum):
                _fail(f"AtomicRef(..., {name}=...) must be a {enum.__name__} member")
        return _sig_of(AtomicRefType(ref), b)


def _atomic_value_method(name, ints_only=False, returns_old=True):
    @nb.bound_function(f"AtomicRef.{name}")
    def resolve(self, ty, args, kws):
        if kws or len(args) != 1:
            _fail(f"AtomicRef.{name}(val) takes one argument")
        if ints_only and not isinstance(ty.dtype, types.Integer):
            _fail(f"AtomicRef.{name} is defined for integer arrays only, not {ty.dtype}")
        val = types.unliteral(args[0])
        if val != ty.dtype:
            _fail(
                f"AtomicRef.{name}(val): val has type {val} but the array holds {ty.dtype}; "
                f"convert it, e.g. with arr.dtype.type(val)"
            )
        return nb.signature(ty.dtype if returns_old else types.none, *args)

    return resolve


class AtomicRefAttributes(nb.AttributeTemplate):
    key = AtomicRefType

    resolve_fetch_add = _atomic_value_method("fetch_add")
    resolve_fetch_sub = _atomic_value_method("fetch_sub")
    resolve_fetch_min = _atomic_value_method("fetch_min")
    resolve_fetch_max = _atomic_value_method("fetch_max")
    resolve_fetch_and = _atomic_value_method("fetch_and", ints_only=True)
    resolve_fetch_or = _atomic_value_method("fetch_or", ints_only=True)
    resolve_fetch_xor = _atomic_value_method("fetch_xor", ints_only=True)
    resolve_exchange = _atomic_value_method("exchange")
    resolve_store = _atomic_value_method("store", returns_old=False)

    @nb.bound_function("AtomicRef.load")
    def resolve_load(self, ty, args, kws):
        if args or kws:
            _fail("AtomicRef.load() takes no arguments")
        return nb.signature(ty.dtype)

    @nb.bound_function("AtomicRef.compare_exchange")
    def resolve_compare_exchange(self, ty, args, kws):
        b = bind(K.AtomicRef.compare_exchange, args, cmpxchg_keywords(kws), skip_self=True)
        exp = b["expected_ref"]
        if not isinstance(exp, KArray) or exp.dtype != ty.dtype:
            _fail(
                "AtomicRef.compare_exchange(expected_ref, ...): expected_ref must be an array "
                f"of {ty.dtype}"
            )
        if types.unliteral(b["desired"]) != ty.dtype:
            _fail(
                f"AtomicRef.compare_exchange(expected_ref, desired): desired has type "
                f"{types.unliteral(b['desired'])} but the array holds {ty.dtype}"
            )
        if "expected_idx" in b:
            _check_index(exp, b["expected_idx"], "compare_exchange(..., expected_idx)")
        return _sig_of(types.boolean, b)


_attr(AtomicRefAttributes)


def cmpxchg_keywords(kws):
    """compare_exchange's keywords with numba-dpex's pure-Python name `expected` read as its
    compiled name `expected_ref`."""
    kws = dict(kws)
    if "expected" in kws and "expected_ref" not in kws:
        kws["expected_ref"] = kws.pop("expected")
    return kws


# ---- PrivateArray -----------------------------------------------------------------------------


def dtype_of(ty):
    """The scalar type a dtype argument (np.float32, a.dtype, a.dtype.type) denotes, or None."""
    if isinstance(ty, types.NumberClass):
        return ty.instance_type
    if isinstance(ty, types.DType):
        return ty.dtype
    return None


@_global(K.PrivateArray)
class PrivateArrayCtor(nb.AbstractTemplate):
    def generic(self, args, kws):
        b = bind(K.PrivateArray.__init__, args, kws, skip_self=True)
        shape = b["shape"]
        if isinstance(shape, types.Integer):
            ndim = 1
        elif isinstance(shape, types.BaseTuple) and all(
            isinstance(t, types.Integer) for t in shape
        ):
            ndim = len(shape)
        else:
            _fail("PrivateArray(shape, ...): shape must be an int or a tuple of ints")
        if not 1 <= ndim <= 3:
            _fail("PrivateArray(shape, ...): 1 to 3 dimensions")
        dtype = dtype_of(b["dtype"])
        if dtype not in SCALAR_DTYPES and dtype not in (types.complex64, types.complex128):
            _fail(f"PrivateArray(shape, dtype): unsupported dtype {b['dtype']}")
        if "fill_zeros" in b and not isinstance(b["fill_zeros"], types.Boolean):
            _fail("PrivateArray(..., fill_zeros): fill_zeros must be a bool")
        return _sig_of(KArray(dtype, ndim, "C", "private"), b)


# ---- device functions and the context ---------------------------------------------------------


def device_pyfunc(value):
    """The Python function behind a kapi device function, or None if `value` is not one.
    Functions registered with Numba's register_jitable are device functions too, as in
    numba-dpex."""
    if getattr(value, "__kapi_device_func__", False) is not True:
        return nb.jitable_pyfunc(value)
    return getattr(value, "py_func", value)


def _marked_device(value) -> bool:
    try:
        return getattr(value, "__kapi_device_func__", False) is True
    except Exception:  # an object whose attribute lookup fails is not one
        return False


class KapiTypingContext(nb.LeanContext):
    """Numba typing context for kernels: Numba's generic typing plus kapi's registry."""

    def __init__(self, typer):
        self._typer = typer  # callable(pyfunc, argtypes) -> return type; types device functions
        self._device_types = {}
        self._call_cache = {}
        super().__init__()

    def load_additional_registries(self):
        super().load_additional_registries()
        self.install_registry(registry)
        from .typing_complex import registry as complex_registry

        self.install_registry(complex_registry)

    def resolve_function_type(self, func, args, kws):
        # Call typing is a pure function of the types for every template kapi installs, except
        # device functions (their typing also records them for emission): memoise the rest.
        # It is most of the typing time of a small kernel.
        if _is_device_function_type(func):
            return super().resolve_function_type(func, args, kws)
        try:
            key = (func, tuple(args), tuple(sorted(kws.items())) if kws else ())
            hash(key)
        except TypeError:
            return super().resolve_function_type(func, args, kws)
        sig = self._call_cache.get(key)
        if sig is None:
            sig = super().resolve_function_type(func, args, kws)
            if sig is not None:
                self._call_cache[key] = sig
        return sig

    def resolve_value_type(self, val):
        # an object marked a device function is one in kernels, whatever Numba's typeof
        # makes of it on the host (a dpjit function: its host dispatcher)
        if _marked_device(val):
            return self._get_global_type(val)
        # Python's own classes (bool and range, which Numba's bytecode front end puts in every
        # branch and loop; int, float...): Numba's typeof has no type for them, but first
        # imports numba.typed to rule out its containers (~25 ms of CPU, a sixth of a small kernel's
        # first build in a fresh process); their type is the registry's, where typeof's
        # ValueError leads anyway
        if type(val) is type and val.__module__ == "builtins":
            if not issubclass(val, BaseException):
                ty = self._get_global_type(val)
                if ty is not None:
                    return ty
        return super().resolve_value_type(val)

    def _get_global_type(self, gv):
        ty = None if _marked_device(gv) else super()._get_global_type(gv)
        if ty is None and device_pyfunc(gv) is not None:
            # Keyed by id, holding the object so the id cannot be reused by another one.
            obj, ty = self._device_types.get(id(gv), (None, None))
            if obj is not gv:
                ty = nb.make_function_type(self._device_template(gv))
                self._device_types[id(gv)] = (gv, ty)
        return ty

    def _device_template(self, value):
        pyfunc = device_pyfunc(value)
        typer = self._typer

        class DeviceFunction(nb.AbstractTemplate):
            key = value
            kapi_device_function = True

            def generic(self, args, kws):
                b = bind(pyfunc, args, kws)
                params = inspect.signature(pyfunc).parameters
                full = []
                for name, p in params.items():  # left-out arguments take their defaults
                    ty = b[name] if name in b else _default_type(self.context, pyfunc, p)
                    full.append(types.unliteral(ty))
                argtys = tuple(full)
                declared = _declared_signature(self.context, pyfunc, argtys)
                if declared is not None:
                    argtys, restype = declared
                    return nb.signature(restype or typer(pyfunc, argtys), *argtys)
                return nb.signature(typer(pyfunc, argtys), *argtys)

        return DeviceFunction


def _declared_signature(context, pyfunc, argtys):
    """For a device function declared with signatures (@device_func(int64(int64, int64))):
    (argument types, declared result type or None) of the one a call selects, by Numba's
    overload resolution (exact, then safe, then unsafe conversions), as numba-dpex calls the
    declared specialisations only; None for a function declared without signatures."""
    from .ktypes import parse_type

    sigs = getattr(pyfunc, "__kapi_device_signatures__", None)
    if not sigs:
        return None
    rets = getattr(pyfunc, "__kapi_device_restypes__", None) or [None] * len(sigs)
    cases = [nb.signature(types.none, *(parse_type(t) for t in s)) for s in sigs]
    restypes = {c: (parse_type(r) if r else None) for c, r in zip(cases, rets, strict=True)}
    known = ", ".join("(" + ", ".join(map(str, c.args)) + ")" for c in cases)
    call = "(" + ", ".join(map(str, argtys)) + ")"
    try:
        chosen = context.resolve_overload(pyfunc, cases, argtys, {})
    except nb.TypingError:
        chosen = None
    if chosen is None:
        _fail(
            f"device function '{pyfunc.__name__}' was declared with signatures {known}; it "
            f"cannot be called with {call}"
        )
    for got, want in zip(argtys, chosen.args, strict=True):
        if isinstance(got, types.Array) and got != want:
            _fail(
                f"device function '{pyfunc.__name__}' declares {want} where the call passes "
                f"{got}; array arguments must match a declared signature exactly"
            )
    return tuple(chosen.args), restypes[chosen]


def _default_type(context, pyfunc, param):
    ty = context.resolve_value_type(param.default)
    if not isinstance(types.unliteral(ty), types.Number | types.Boolean):
        raise UnsupportedConstructError(
            f"device function '{pyfunc.__name__}': the default of parameter '{param.name}' is "
            f"{param.default!r}; defaults must be numbers or bools (or pass the argument)",
            construct="default argument",
        )
    return ty


def _is_device_function_type(func):
    templates = getattr(func, "templates", ())
    return any(getattr(t, "kapi_device_function", False) for t in templates)


def is_index_space(ty):
    return isinstance(ty, IndexSpaceType)


__all__ = ["KapiTypingContext", "KernelError", "bind", "device_pyfunc", "dtype_of", "registry"]


# Sub-groups and group algorithms live in their own module; importing it registers them here.
from . import typing_group  # noqa: E402,F401
