"""Calls in kernels: Python builtins, math, numpy scalar casts, the kapi kernel API and
device functions. Item/NdItem/Group calls become index-space instructions.

A mixin of FunctionEmitter (emit.py); every call resolves to KIR here or is rejected with an
UnsupportedConstructError that names the callee.
"""

import inspect
import math
import operator

import numpy as np

from kapi_lang import kernel_api as K

from . import values as V
from ._numba import types
from .emit_group import GROUP_BUILTINS, sub_group_leader, sub_group_method
from .emit_ufuncs import UfuncEmitter
from .kir import format_const
from .ktypes import kir_scalar
from .typing_registry import cmpxchg_keywords, device_pyfunc

MATH1 = {
    getattr(math, n): n
    for n in (
        "sqrt exp expm1 log log1p log2 log10 sin cos tan asin acos atan sinh cosh tanh "
        "asinh acosh atanh fabs erf erfc"
    ).split()
}
MATH1[math.lgamma] = "lgamma"
MATH1[math.gamma] = "tgamma"  # numba-dpex lowers math.gamma to OpenCL tgamma
MATH2 = {getattr(math, n): n for n in "atan2 pow fmod hypot copysign".split()}
ROUNDING = {math.floor: "floor", math.ceil: "ceil", math.trunc: "trunc"}
PREDICATES = {
    math.isnan: ("isnan", False),
    math.isinf: ("isinf", False),
    math.isfinite: ("isfinite", True),
}
# NumPy ufuncs on scalars (numba-dpex maps dpnp/NumPy ufuncs to the same device math).
_NP_MATH1 = {
    "sqrt": "sqrt", "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p",
    "log2": "log2", "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
    "fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
}  # fmt: skip
_NP_MATH2 = {"arctan2": "atan2", "hypot": "hypot", "copysign": "copysign", "fmod": "fmod"}
_NP_OPS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div", "divide": "div",
    "floor_divide": "floordiv", "remainder": "mod", "mod": "mod", "power": "pow",
    "negative": "neg", "absolute": "abs",
}  # fmt: skip
NP_UFUNCS = {}
for _tbl, _kind in ((_NP_MATH1, "math"), (_NP_MATH2, "math"), (_NP_OPS, "op")):
    for _np_name, _kir in _tbl.items():
        NP_UFUNCS[getattr(np, _np_name)] = (_kind, _kir)
for _np_name in ("isnan", "isinf", "isfinite"):
    NP_UFUNCS[getattr(np, _np_name)] = ("predicate", _np_name)
NP_UFUNCS[np.minimum] = ("minmax", "lt")
NP_UFUNCS[np.maximum] = ("minmax", "gt")

ORDERS = {0: "relaxed", 1: "acquire", 3: "release", 4: "acq_rel", 5: "seq_cst"}
SCOPES = {0: "work_item", 1: "sub_group", 2: "work_group", 3: "device", 4: "system"}
ATOMIC_RMW = {
    "fetch_add": "add",
    "fetch_sub": "sub",
    "fetch_min": "min",
    "fetch_max": "max",
    "fetch_and": "and",
    "fetch_or": "or",
    "fetch_xor": "xor",
    "exchange": "xchg",
}
# Index-space method -> (KIR op, None) for a per-dimension builtin, or ("linear"/"product",
# op) for SYCL row-major linear ids / range products of that builtin, or ("range", op, id)
_INDEX_METHODS = {
    "Item": {
        "get_id": "global_id",
        "get_range": "global_range",
        "get_linear_id": ("linear", "global_id", "global_range"),
        "get_linear_range": ("product", "global_range"),
    },
    "NdItem": {
        "get_global_id": "global_id",
        "get_local_id": "local_id",
        "get_global_range": "global_range",
        "get_local_range": "local_range",
        "get_global_linear_id": ("linear", "global_id", "global_range"),
        "get_local_linear_id": ("linear", "local_id", "local_range"),
        "get_global_linear_range": ("product", "global_range"),
        "get_local_linear_range": ("product", "local_range"),
    },
    "Group": {
        "get_group_id": "group_id",
        "get_group_range": "group_range",
        "get_local_range": "local_range",
        "get_group_linear_id": ("linear", "group_id", "group_range"),
        "get_group_linear_range": ("product", "group_range"),
        "get_local_linear_range": ("product", "local_range"),
    },
}


def _unlit(ty):
    return types.unliteral(ty)


class CallEmitter(UfuncEmitter):
    """Call lowering for FunctionEmitter."""

    def call(self, e, target):
        if e.vararg or getattr(e, "varkwarg", None):
            raise self.unsupported("*args", "*args and **kwargs calls are not supported")
        fval = self.get(e.func)
        fnty = self.typemap[e.func.name]
        sig = self.calltypes[e]
        args = [self.get(a) for a in e.args]
        kws = {k: self.get(v) for k, v in e.kws}
        if isinstance(fval, V.Bound):
            return self.method_call(fval, args, kws, sig)
        pyf0 = fval.value if isinstance(fval, V.Static) else None
        if device_pyfunc(pyf0) is None and pyf0 is not K.store_nontemporal:  # (stores parts)
            z = self.complex_call(pyf0, fnty, args, sig)  # emit_complex.py
            if z is not None:
                return z
        if isinstance(fnty, types.NumberClass):
            return self.convert(args[0], fnty.instance_type)
        pyf = fval.value if isinstance(fval, V.Static) else None
        if isinstance(pyf, types.DType | types.NumberClass):
            return self.convert(args[0], pyf.dtype)
        if device_pyfunc(pyf) is not None:
            pyfunc = device_pyfunc(pyf)
            if kws or len(args) < len(sig.args):  # keywords and defaults, in parameter order
                bound = inspect.signature(pyfunc).bind(*args, **kws)
                bound.apply_defaults()
                args = [  # defaults are plain Python values; passed arguments are V.*
                    v if type(v).__module__ == V.__name__ else self.python_value(v, t)
                    for v, t in zip(bound.arguments.values(), sig.args, strict=True)
                ]
            return self.device_call(pyfunc, args, sig)
        handler = _BUILTINS.get(pyf) if _hashable(pyf) else None
        if handler is not None:
            return handler(self, args, kws, sig)
        if pyf is math.ldexp:  # x * 2**n; the exponent is an i32 as in OpenCL
            ret = _unlit(sig.return_type)
            x, n = self.scalar(args[0], ret), self.scalar(args[1], types.int32)
            return V.Scalar(self.b.op(f"math {self.kty(ret)} ldexp {x} {n}", self.line), ret)
        if pyf in MATH1 or pyf in MATH2:
            return self.math_call(MATH1.get(pyf) or MATH2[pyf], args, sig)
        if pyf in ROUNDING:
            return self.rounding(ROUNDING[pyf], args[0], sig)
        if pyf in PREDICATES:
            return self.predicate(*PREDICATES[pyf], args[0], sig)
        if isinstance(pyf, np.ufunc):
            out = self.np_ufunc(pyf, args, sig)
            if out is not None:
                return out
        if _hashable(pyf) and pyf in NP_UFUNCS:
            return self.ufunc_call(*NP_UFUNCS[pyf], args, sig)
        name = getattr(pyf, "__qualname__", None) or getattr(pyf, "__name__", None) or str(fnty)
        raise self.unsupported(
            "call",
            f"call to unsupported function '{name}'; kernels may call math functions, "
            "builtins on numbers, the kapi kernel API and @kapi.device_func functions",
        )

    # ---- builtins -------------------------------------------------------------------------

    def math_call(self, name, args, sig):
        ret = _unlit(sig.return_type)
        kty = self.kty(ret)
        if name == "hypot" and all(_unlit(t) == types.uint64 for t in sig.args):
            # Numba's hypot_u64_impl converts its uint64 arguments with sitofp: hypot(200,
            # uint64(10) - uint64(200)) is hypot(200, -190), not hypot(200, 1.8e19)
            args = [V.Scalar(self.scalar(a, types.int64), types.int64) for a in args]
        ops = " ".join(self.scalar(a, ret) for a in args)
        return V.Scalar(self.b.op(f"math {kty} {name} {ops}", self.line), ret)

    def ufunc_call(self, kind, name, args, sig):
        ret = _unlit(sig.return_type)
        if not all(isinstance(a, V.Scalar | V.Const) for a in args):
            raise self.unsupported("call", "NumPy functions are supported on scalars only")
        if kind == "predicate":
            return self.predicate(name, name == "isfinite", args[0], sig)
        if kind == "math":
            if not isinstance(ret, types.Float):
                raise self.unsupported("call", f"numpy {name} on integers")
            return self.math_call(name, args, sig)
        if kind == "minmax":
            if not isinstance(ret, types.Float):
                return self.bin_op("min" if name == "lt" else "max", args[0], args[1], ret)
            # NumPy's minimum/maximum propagate NaN: pick a if a wins or a is NaN.
            a, b = self.scalar(args[0], ret), self.scalar(args[1], ret)
            wins = self.b.op(f"cmp bool {name} {a} {b}", self.line)
            nan = self.b.op(f"math bool isnan {a}", self.line)
            pick = self.b.op(f"or bool {wins} {nan}", self.line)
            return V.Scalar(self.b.op(f"select {self.kty(ret)} {pick} {a} {b}", self.line), ret)
        if name in ("neg", "abs"):
            if name == "abs" and isinstance(ret, types.Integer) and not ret.signed:
                return self.convert(args[0], ret)
            return self.unary_op(name, args[0], ret)
        if name == "div" and not isinstance(ret, types.Float):
            raise self.unsupported("call", "numpy true division giving an integer")
        return self.bin_op(name, args[0], args[1], ret)

    def rounding(self, name, arg, sig):
        src = _unlit(sig.args[0])
        if isinstance(src, types.Integer):
            return self.convert(arg, sig.return_type)
        r = self.b.op(f"math {self.kty(src)} {name} {self.scalar(arg, src)}", self.line)
        return self.convert(V.Scalar(r, src), sig.return_type)

    def predicate(self, name, int_result, arg, sig):
        src = _unlit(sig.args[0])
        if isinstance(src, types.Integer):
            return V.Const(int_result, types.boolean)
        r = self.b.op(f"math bool {name} {self.scalar(arg, src)}", self.line)
        return V.Scalar(r, types.boolean)

    def unary_op(self, op, arg, ty):
        return V.Scalar(self.b.op(f"{op} {self.kty(ty)} {self.scalar(arg, ty)}", self.line), ty)

    def bin_op(self, op, a, b, ty):
        ra, rb = self.scalar(a, ty), self.scalar(b, ty)
        # min/max of integers known >= 0 (in ty: after the casts) are too: no index wraparound
        nonneg = (
            op in ("min", "max")
            and isinstance(ty, types.Integer)
            and all(V.nonneg_as(x, ty, self.kty) for x in (a, b))
        )
        return V.Scalar(self.b.op(f"{op} {self.kty(ty)} {ra} {rb}", self.line), ty, nonneg)

    def _abs(self, args, kws, sig):
        ret = _unlit(sig.return_type)
        if isinstance(ret, types.Integer) and not ret.signed:
            return self.convert(args[0], ret)
        return self.unary_op("abs", args[0], ret)

    def _minmax(self, op):
        def emit(self, args, kws, sig):
            ret = _unlit(sig.return_type)
            items = args[0].items if len(args) == 1 and isinstance(args[0], V.Tuple) else args
            acc = self.convert(items[0], ret)
            for item in items[1:]:
                if isinstance(ret, types.Float):
                    # Python's (and Numba's) max/min: the later item wins only when it compares
                    # greater (less), so max(nan, 1.0) is nan and max(1.0, nan) is 1.0
                    x = self.scalar(item, ret)
                    pred = "gt" if op == "max" else "lt"
                    wins = self.b.op(f"cmp bool {pred} {x} {self.scalar(acc, ret)}", self.line)
                    sel = f"select {self.kty(ret)} {wins} {x} {self.scalar(acc, ret)}"
                    acc = V.Scalar(self.b.op(sel, self.line), ret)
                else:
                    acc = self.bin_op(op, acc, item, ret)
            return acc

        return emit

    def _convert_to_ret(self, args, kws, sig):
        return self.convert(args[0], sig.return_type)

    def _pow(self, args, kws, sig):
        return self.bin_op("pow", args[0], args[1], _unlit(sig.return_type))

    def _range(self, args, kws, sig):
        ty = sig.return_type.dtype
        if len(args) == 1:
            return V.RangeVal(V.Const(0, ty), args[0], V.Const(1, ty), ty)
        step = args[2] if len(args) == 3 else V.Const(1, ty)
        return V.RangeVal(args[0], args[1], step, ty)

    def rint(self, val, fty):
        """Round half to even (Python's round) from floor: KIR has no rint."""
        k, ln = self.kty(fty), self.line
        x = self.scalar(val, fty)
        fl = self.b.op(f"math {k} floor {x}", ln)
        d = self.b.op(f"sub {k} {x} {fl}", ln)
        half = self.scalar(V.Const(0.5, fty))
        two, zero, one = (self.scalar(V.Const(c, fty)) for c in (2.0, 0.0, 1.0))
        gt = self.b.op(f"cmp bool gt {d} {half}", ln)
        eq = self.b.op(f"cmp bool eq {d} {half}", ln)
        rem = self.b.op(f"mod {k} {fl} {two}", ln)
        odd = self.b.op(f"cmp bool ne {rem} {zero}", ln)
        tie = self.b.op(f"and bool {eq} {odd}", ln)
        up = self.b.op(f"or bool {gt} {tie}", ln)
        fl1 = self.b.op(f"add {k} {fl} {one}", ln)
        return V.Scalar(self.b.op(f"select {k} {up} {fl1} {fl}", ln), fty)

    def _round(self, args, kws, sig):
        fty = _unlit(sig.args[0])
        if len(args) == 1:
            return self.convert(self.rint(args[0], fty), sig.return_type)
        nd = self.const_value(args[1], "round() ndigits")
        scale = V.Const(10.0 ** abs(nd), fty)
        y = self.bin_op("mul" if nd >= 0 else "div", args[0], scale, fty)
        return self.bin_op("div" if nd >= 0 else "mul", self.rint(y, fty), scale, fty)

    def _len(self, args, kws, sig):
        (a,) = args
        if isinstance(a, V.Tuple):
            return V.Const(len(a.items), types.int64)
        if isinstance(a, V.Array):
            return self.dim(a, 0)
        raise self.unsupported("call", "len() of this value is not supported in kernels")

    def _degrees(self, factor):
        def emit(self, args, kws, sig):
            ret = _unlit(sig.return_type)
            return self.bin_op("mul", args[0], V.Const(factor, ret), ret)

        return emit

    def _exp2(self, args, kws, sig):
        ret = _unlit(sig.return_type)
        return self.math_call("pow", [V.Const(2.0, ret), args[0]], sig)

    # ---- index space ----------------------------------------------------------------------

    def index_attr(self, obj, attr):
        if attr == "dimensions":
            return V.Const(obj.ndim, types.int64)
        if attr == "leader" and obj.kind == "SubGroup":
            return sub_group_leader(self)
        if attr == "leader" and obj.kind == "Group":
            lin = self.linear(obj.ndim, "local_id", "local_range")
            zero = self.scalar(V.Const(0, types.int64))
            return V.Scalar(self.b.op(f"cmp bool eq {lin.ref} {zero}", self.line), types.boolean)
        raise self.unsupported("attribute", f"{obj.kind} has no attribute '{attr}' in kernels")

    def index_builtin(self, op, ndim, dval):
        if isinstance(dval, V.Const):
            d = int(dval.value)
            if not 0 <= d < ndim:
                raise self.typing_error(f"dimension {d} out of range for a {ndim}-D index space")
            return V.Scalar(self.b.op(f"{op} i64 {d}", self.line), types.int64, True)
        # A run-time dimension: pick among the valid ones.
        dref = self.scalar(dval, types.int64)
        acc = self.b.op(f"{op} i64 0", self.line)
        for d in range(1, ndim):
            v = self.b.op(f"{op} i64 {d}", self.line)
            k = self.b.op(f"const i64 {d}", self.line)
            c = self.b.op(f"cmp bool eq {dref} {k}", self.line)
            acc = self.b.op(f"select i64 {c} {v} {acc}", self.line)
        return V.Scalar(acc, types.int64, True)

    def linear(self, ndim, id_op, range_op):
        # SYCL row-major: id0*r1*r2 + id1*r2 + id2 (the last dimension varies fastest).
        acc = self.b.op(f"{id_op} i64 0", self.line)
        for d in range(1, ndim):
            r = self.b.op(f"{range_op} i64 {d}", self.line)
            i = self.b.op(f"{id_op} i64 {d}", self.line)
            acc = self.b.op(f"mul i64 {acc} {r}", self.line)
            acc = self.b.op(f"add i64 {acc} {i}", self.line)
        return V.Scalar(acc, types.int64, True)

    def product(self, ndim, range_op):
        acc = self.b.op(f"{range_op} i64 0", self.line)
        for d in range(1, ndim):
            r = self.b.op(f"{range_op} i64 {d}", self.line)
            acc = self.b.op(f"mul i64 {acc} {r}", self.line)
        return V.Scalar(acc, types.int64)

    def index_method(self, obj, attr, args):
        if obj.kind == "NdItem" and attr == "get_group":
            return V.IndexSpace("Group", obj.ndim)
        if obj.kind == "SubGroup" or attr == "get_sub_group":
            return sub_group_method(self, obj, attr)
        spec = _INDEX_METHODS[obj.kind].get(attr)
        if spec is None:
            raise self.unsupported("call", f"{obj.kind}.{attr}() is not supported in kernels")
        if isinstance(spec, str):
            return self.index_builtin(spec, obj.ndim, args[0])
        if spec[0] == "linear":
            return self.linear(obj.ndim, spec[1], spec[2])
        return self.product(obj.ndim, spec[1])

    # ---- methods --------------------------------------------------------------------------

    def method_call(self, bound, args, kws, sig):
        this = bound.this
        if isinstance(this, V.IndexSpace):  # the one dim argument may come as dim=/idx=
            return self.index_method(this, bound.attr, args + list(kws.values()))
        if isinstance(this, V.AtomicRefVal):
            return self.atomic_method(this, bound.attr, args, kws, sig)
        if isinstance(this, V.Complex):
            return self.complex_method(this, bound.attr, args)
        raise self.unsupported("call", f"method '{bound.attr}' is not supported in kernels")

    # ---- kapi API -------------------------------------------------------------------------

    def bind_values(self, pyfunc, args, kws, skip_self=False):
        sig = inspect.signature(pyfunc)
        if skip_self:
            sig = sig.replace(parameters=list(sig.parameters.values())[1:])
        ba = sig.bind(*args, **kws)
        out = dict(ba.arguments)
        for name, p in sig.parameters.items():
            if name not in out:
                d = p.default
                out[name] = V.Const(int(d), types.int64) if isinstance(d, int) else V.Static(d)
        return out

    def enum_const(self, val, names, what):
        v = self.const_value(val, what)
        if v not in names:
            known = ", ".join(n.upper() for n in names.values())
            enum = K.MemoryOrder if names is ORDERS else K.MemoryScope
            try:
                label = enum(v).name
            except ValueError:
                label = str(v)
            raise self.typing_error(f"{what}: {label} is not supported; use one of {known}")
        return names[v]

    def _group_barrier(self, args, kws, sig):
        b = self.bind_values(K.group_barrier, args, kws)
        scope = self.enum_const(b["fence_scope"], SCOPES, "group_barrier fence_scope")
        if b["group"].kind == "SubGroup":  # SYCL 2020's group_barrier(sub_group)
            self.b.emit("sg_barrier", self.line)
            return V.Static(None)
        self.b.emit(f"barrier {scope}", self.line)
        return V.Static(None)

    def _popcount(self, args, kws, sig):
        x = self.bind_values(K.popcount, args, kws)["x"]
        return self.unary_op("popcount", x, _unlit(sig.return_type))

    def _store_nontemporal(self, args, kws, sig):
        b = self.bind_values(K.store_nontemporal, args, kws)
        self.store_element(b["array"], b["index"], sig.args[1], b["value"], op="astore_nt")
        return V.Static(None)

    def _atomic_fence(self, args, kws, sig):
        b = self.bind_values(K.atomic_fence, args, kws)
        order = self.enum_const(b["memory_order"], ORDERS, "atomic_fence memory_order")
        scope = self.enum_const(b["memory_scope"], SCOPES, "atomic_fence memory_scope")
        self.b.emit(f"fence {order} {scope}", self.line)
        return V.Static(None)

    def _atomic_ref(self, args, kws, sig):
        b = self.bind_values(K.AtomicRef.__init__, args, kws, skip_self=True)
        arr = b["ref"]
        if getattr(getattr(arr, "ty", None), "storage", None) == "bf16":
            raise self.unsupported("AtomicRef", "AtomicRef on a bfloat16 array is not supported")
        order = self.enum_const(b["memory_order"], ORDERS, "AtomicRef memory_order")
        scope = self.enum_const(b["memory_scope"], SCOPES, "AtomicRef memory_scope")
        space = b["address_space"]
        if not (isinstance(space, V.Static) and space.value is None):
            want = {"global": K.AddressSpace.GLOBAL, "local": K.AddressSpace.LOCAL}
            got = self.const_value(space, "AtomicRef address_space")
            if got != want[arr.ty.addrspace]:
                raise self.typing_error(
                    f"AtomicRef address_space={K.AddressSpace(got).name} does not match the "
                    f"array's address space ({arr.ty.addrspace})"
                )
        idxty = sig.args[1] if len(sig.args) > 1 else None
        idx = self.array_indices(arr, b["index"], idxty)
        return V.AtomicRefVal(arr, idx, order, scope)

    def atomic_method(self, ref, attr, args, kws, sig):
        arr = ref.array
        kty = self.kty(arr.ty.dtype)
        tail = f"{ref.order} {ref.scope} {arr.ref}"
        idx = " ".join(ref.indices)
        if attr in ATOMIC_RMW:
            v = self.scalar(args[0], arr.ty.dtype)
            op = ATOMIC_RMW[attr]
            r = self.b.op(f"atomic_rmw {kty} {op} {tail} {v} {idx}", self.line)
            return V.Scalar(r, arr.ty.dtype)
        if attr == "load":
            return V.Scalar(self.b.op(f"atomic_load {kty} {tail} {idx}", self.line), arr.ty.dtype)
        if attr == "store":
            v = self.scalar(args[0], arr.ty.dtype)
            self.b.emit(f"atomic_store {tail} {v} {idx}", self.line)
            return V.Static(None)
        if attr == "compare_exchange":
            return self.compare_exchange(ref, args, kws, sig)
        raise self.unsupported("call", f"AtomicRef.{attr}() is not supported in kernels")

    def compare_exchange(self, ref, args, kws, sig):
        b = self.bind_values(
            K.AtomicRef.compare_exchange, [None] + args, cmpxchg_keywords(kws), skip_self=False
        )
        exp_arr, desired, eidx = b["expected_ref"], b["desired"], b["expected_idx"]
        arr, dty = ref.array, ref.array.ty.dtype
        kty = self.kty(dty)
        eidx_ty = sig.args[2] if len(sig.args) > 2 else types.int64
        ei = self.array_indices(exp_arr, eidx, eidx_ty)
        expected = self.b.op(f"aload {kty} {exp_arr.ref} {' '.join(ei)}", self.line)
        d = self.scalar(desired, dty)
        old = self.b.op(
            f"atomic_cmpxchg {kty} {ref.order} {ref.scope} {arr.ref} {expected} {d} "
            f"{' '.join(ref.indices)}",
            self.line,
        )
        ok = self.b.op(f"cmp bool eq {old} {expected}", self.line)
        # On success `old` equals the expected value, so writing it back unconditionally
        # gives numba-dpex's "store the current value on failure" without a branch.
        self.b.emit(f"astore {exp_arr.ref} {old} {' '.join(ei)}", self.line)
        return V.Scalar(ok, types.boolean)

    def _private_array(self, args, kws, sig):
        b = self.bind_values(K.PrivateArray.__init__, args, kws, skip_self=True)
        shape = self.const_value(b["shape"], "PrivateArray shape")
        shape = (shape,) if isinstance(shape, int) else shape
        if any(not isinstance(s, int) or s <= 0 for s in shape):
            raise self.typing_error(f"PrivateArray shape {shape} must be positive integers")
        fill = b["fill_zeros"]
        fill = False if isinstance(fill, V.Static) else self.const_value(fill, "fill_zeros")
        ty = sig.return_type
        # a complex array is two arrays of its part type (emit_complex.py): `ref`, `ref.im`
        cplx = isinstance(ty.dtype, types.Complex)
        ekty = self.kty(ty.dtype.underlying_float if cplx else ty.dtype)
        kty = f"array({ekty},{len(shape)},C,private)"
        dims = " ".join(str(s) for s in shape)
        # The storage is allocated once, in the entry block; an array created further on
        # (in a loop, say) is zeroed where it is created, as numba-dpex's alloca+memset is.
        in_entry = self.label == self.entry_label
        fill_kw = "zero" if fill and in_entry else "undef"
        ref = self.b.hoist(f"private_array {kty} {fill_kw} {dims}", self.line)
        refs = [ref]
        if cplx:
            self.b._hoisted.append(f"{ref}.im = private_array {kty} {fill_kw} {dims} #{self.line}")
            refs.append(f"{ref}.im")
        if fill and not in_entry:
            for r in refs:
                self.zero_fill(r, shape, ekty)
        return V.Array(ref, ty)

    def zero_fill(self, ref, shape, kty):
        """A loop storing zero into every element of private array `ref`."""
        ln, n = self.line, self.b.value()[1:]
        total = 1
        for s in shape:
            total *= s
        lin = self.b.slot(f"zero.{n}", "i64")
        self.b.emit(f"store_var {lin} {self.b.op('const i64 0', ln)}", ln)
        self.b.emit(f"br ^zero.{n}.head", ln)
        self.b.block(f"zero.{n}.head")
        cur = self.b.op(f"load_var i64 {lin}", ln)
        more = self.b.op(f"cmp bool lt {cur} {self.b.op(f'const i64 {total}', ln)}", ln)
        self.b.emit(f"cbr {more} ^zero.{n}.body ^zero.{n}.done", ln)
        self.b.block(f"zero.{n}.body")
        idx, rest = [], cur
        for d in range(len(shape)):
            inner = 1
            for s in shape[d + 1 :]:
                inner *= s
            k = self.b.op(f"const i64 {inner}", ln)
            idx.append(self.b.op(f"floordiv i64 {rest} {k}", ln))
            rest = self.b.op(f"mod i64 {rest} {k}", ln)
        zero = self.b.op(f"const {kty} {format_const(kty, 0)}", ln)
        self.b.emit(f"astore {ref} {zero} {' '.join(idx)}", ln)
        one = self.b.op("const i64 1", ln)
        self.b.emit(f"store_var {lin} {self.b.op(f'add i64 {cur} {one}', ln)}", ln)
        self.b.emit(f"br ^zero.{n}.head", ln)
        self.b.block(f"zero.{n}.done")

    # ---- device functions -----------------------------------------------------------------

    def device_call(self, pyfunc, args, sig):
        ret = sig.return_type
        complex_ret = isinstance(ret, types.Complex)  # comes back as the tuple of its parts
        tuple_ret = complex_ret or (
            isinstance(ret, types.BaseTuple) and all(kir_scalar(t) for t in ret)
        )
        if ret != types.none and kir_scalar(ret) is None and not tuple_ret:
            raise self.unsupported(
                "return type",
                f"device function '{pyfunc.__name__}' returns {ret}; device functions return "
                "a scalar or nothing (write other results into an array argument)",
            )
        views = tuple(
            (a.base, len(a.prefix)) if isinstance(a, V.Array) and a.prefix else None for a in args
        )
        name, tf = self.module.device_function(
            pyfunc, tuple(sig.args), views if any(views) else None, self.fastmath
        )
        refs = []
        for a, ty in zip(args, sig.args, strict=True):
            if isinstance(a, V.Array) and a.prefix:  # a row view: the array and fixed indices
                im = [a.ref + ".im"] if isinstance(a.ty.dtype, types.Complex) else []
                refs += [a.ref, *im, *a.prefix]
                continue
            refs += self.flatten_arg(a, ty)
        ret = tf.restype
        if tuple_ret:  # results come back through one-element private arrays
            outs = []
            for t in (ret.underlying_float,) * 2 if complex_ret else ret:
                k = kir_scalar(t)
                outs.append(
                    (self.b.op(f"private_array array({k},1,C,private) undef 1", self.line), k, t)
                )
            ops = " ".join(refs + [o for o, _, _ in outs])
            self.b.emit(f"call void @{name} {ops}", self.line)
            zero = self.scalar(V.Const(0, types.int64))
            items = [
                V.Scalar(self.b.op(f"aload {k} {o} {zero}", self.line), _unlit(t))
                for o, k, t in outs
            ]
            return V.Complex(*items, ret) if complex_ret else V.Tuple(items)
        ops = " ".join(refs)
        if ret == types.none:
            self.b.emit(f"call void @{name} {ops}".rstrip(), self.line)
            return V.Static(None)
        r = self.b.op(f"call {self.kty(ret)} @{name} {ops}".rstrip(), self.line)
        return V.Scalar(r, _unlit(ret))

    def flatten_arg(self, a, ty):
        if isinstance(a, V.IndexSpace):
            return []
        if (
            isinstance(a, V.Complex)
            or isinstance(a, V.Array)
            and isinstance(a.ty.dtype, types.Complex)
        ):
            return self.complex_flatten(a, ty)
        if isinstance(ty, types.Complex):
            return self.complex_flatten(a, ty)
        if isinstance(a, V.Array):
            if a.prefix:
                raise self.unsupported(
                    "argument",
                    "passing an array row (a[i]) to a device function; pass the "
                    "array and the index",
                )
            return [a.ref]
        if isinstance(a, V.Tuple):
            out = []
            for item, t in zip(a.items, ty, strict=True):
                out += self.flatten_arg(item, t)
            return out
        if isinstance(a, V.Scalar | V.Const):
            return [self.scalar(a, ty)]
        raise self.unsupported("argument", f"passing {ty} to a device function")


def _hashable(v):
    try:
        hash(v)
    except TypeError:
        return False
    return True


_BUILTINS = {
    abs: CallEmitter._abs,
    min: CallEmitter._minmax(None, "min"),
    max: CallEmitter._minmax(None, "max"),
    int: CallEmitter._convert_to_ret,
    float: CallEmitter._convert_to_ret,
    bool: CallEmitter._convert_to_ret,
    operator.truth: CallEmitter._convert_to_ret,
    pow: CallEmitter._pow,
    range: CallEmitter._range,
    len: CallEmitter._len,
    round: CallEmitter._round,
    math.degrees: CallEmitter._degrees(None, 180.0 / math.pi),
    math.radians: CallEmitter._degrees(None, math.pi / 180.0),
    math.exp2: CallEmitter._exp2,
    K.group_barrier: CallEmitter._group_barrier,
    K.atomic_fence: CallEmitter._atomic_fence,
    K.popcount: CallEmitter._popcount,
    K.store_nontemporal: CallEmitter._store_nontemporal,
    K.AtomicRef: CallEmitter._atomic_ref,
    K.PrivateArray: CallEmitter._private_array,
}
_BUILTINS.update(GROUP_BUILTINS)
__all__ = ["CallEmitter", "format_const"]
