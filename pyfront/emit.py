"""Typed Numba IR -> KIR for one function: statements, expressions, control flow, casts.

Variables defined once (Numba's SSA) map straight to values; the few defined more than once
(phi copies) live in KIR variable slots. Blocks are emitted in reverse post-order, so every
definition is seen before its uses. Calls are in emit_calls.py.
"""

import operator

import numpy as np

from . import values as V
from ._numba import ir, types
from .emit_bf16 import Bf16Emitter
from .emit_bounds import BoundsCheckEmitter
from .emit_calls import CallEmitter
from .emit_complex import ComplexEmitter, is_complex
from .emit_print import PrintRaiseEmitter
from .errors import (
    KernelError,
    KernelHasReturnValueError,
    KernelTypingError,
    UnsupportedConstructError,
)
from .kir import BINOPS, FunctionBuilder, format_const, kir_name
from .ktypes import IndexSpaceType, KArray, kir_array, kir_scalar

CMPOPS = {
    operator.eq: "eq",
    operator.ne: "ne",
    operator.lt: "lt",
    operator.le: "le",
    operator.gt: "gt",
    operator.ge: "ge",
}
_UNSUPPORTED_EXPRS = {
    "build_list": ("list", "lists are not supported in kernels; use a PrivateArray"),
    "build_set": ("set", "sets are not supported in kernels"),
    "build_map": ("dict", "dicts are not supported in kernels"),
    "make_function": ("closure", "functions defined inside kernels are not supported"),
    "list_comprehension": ("list", "list comprehensions are not supported in kernels"),
    "yield": ("generator", "generators are not supported in kernels"),
}


def _scalar_tuple(ty):
    """True for a tuple of scalars (a device function may return one)."""
    return isinstance(ty, types.BaseTuple) and all(kir_scalar(t) is not None for t in ty)


def _unlit(ty):
    return types.unliteral(ty)


class FunctionEmitter(
    CallEmitter, ComplexEmitter, Bf16Emitter, PrintRaiseEmitter, BoundsCheckEmitter
):
    """Emits one typed function (kernel or device function) into a FunctionBuilder."""

    def __init__(
        self, tf, module, kind, name, index=None, views=None, signed_vars=(), fastmath=frozenset()
    ):
        self.tf = tf
        self.fastmath = fastmath  # this function's fast-math flags; its callees inherit them
        # Variables assigned in several places live in slots; an integer one is taken as
        # non-negative (indexing with it needs no wraparound) unless named here. Every store
        # checks the assumption and records a violation in `new_signed`; the module emitter
        # then emits the function again with those names (an optimistic fixpoint, so loop
        # counters such as `stride //= 2` keep the sign their first value had).
        self.signed_vars = frozenset(signed_vars)
        self.new_signed = set()
        self.views = views  # per parameter: None, or (base KArray, prefix length) for a view
        self.module = module  # the ModuleEmitter: device functions and their names
        self.typemap = tf.typemap
        self.calltypes = tf.calltypes
        self.env = {}
        self.line = tf.lineno
        self.index = index  # ("Item"/"NdItem", ndim) for kernels with an index parameter
        self.kind = kind
        self._count_defs()
        self.block_facts = _branch_facts(tf.func_ir.blocks)
        self.facts = set()
        self.b = FunctionBuilder(kind, name, [], "void", tf.filename, tf.lineno)
        self._params()

    # ---- errors ---------------------------------------------------------------------------

    def unsupported(self, construct, message):
        return UnsupportedConstructError(message, self.tf.filename, self.line, construct)

    def typing_error(self, message):
        return KernelTypingError(message, self.tf.filename, self.line, construct="typing")

    # ---- set-up ---------------------------------------------------------------------------

    def _count_defs(self):
        self.ndefs = {}
        for blk in self.tf.func_ir.blocks.values():
            for st in blk.body:
                if isinstance(st, ir.Assign):
                    self.ndefs[st.target.name] = self.ndefs.get(st.target.name, 0) + 1

    def _params(self):
        params = []
        self.args = []
        names = self.tf.func_ir.arg_names
        for j, (pname, ty) in enumerate(zip(names, self.tf.argtypes, strict=True)):
            if isinstance(ty, IndexSpaceType):
                self.args.append(V.IndexSpace(ty.kind, ty.ndim))
                continue
            name = kir_name(pname)
            view = self.views[j] if self.views else None
            if isinstance(ty, KArray) and view is not None:
                # a row view a[i] passed by the caller: the whole array plus the fixed indices
                base, nfixed = view
                if is_complex(base.dtype):
                    params += self.complex_params(name, base)[0]
                else:
                    params.append((name, kir_array(base)))
                prefix = tuple(f"%{name}.p{k}" for k in range(nfixed))
                params += [(p[1:], "i64") for p in prefix]
                self.args.append(V.Array("%" + name, ty, prefix, base))
            elif is_complex(ty) or isinstance(ty, KArray) and is_complex(ty.dtype):
                more, val = self.complex_params(name, ty)
                params += more
                self.args.append(val)
            elif isinstance(ty, KArray):
                params.append((name, kir_array(ty)))
                self.args.append(V.Array("%" + name, ty))
            elif kir_scalar(ty) is not None:
                params.append((name, kir_scalar(ty)))
                self.args.append(V.Scalar("%" + name, _unlit(ty)))
            elif isinstance(ty, types.BaseTuple) and all(kir_scalar(t) for t in ty):
                items = []
                for j, t in enumerate(ty):
                    params.append((f"{name}.{j}", kir_scalar(t)))
                    items.append(V.Scalar(f"%{name}.{j}", _unlit(t)))
                self.args.append(V.Tuple(items))
            else:
                self.line = self.tf.lineno
                raise self.typing_error(
                    f"parameter '{pname}' has type {ty}, which a kernel cannot take; use "
                    "scalars, arrays or tuples of scalars"
                )
        self.b.params = params

    # ---- driving --------------------------------------------------------------------------

    def run(self):
        restype = self.tf.restype
        if self.kind == "kernel":
            if restype not in (types.none,):
                self.line = self.tf.lineno
                err = KernelHasReturnValueError(
                    f"a kernel cannot return a value (it returns {restype}); write results "
                    "into an array argument",
                    self.tf.filename,
                    self.line,
                    construct="typing",
                )
                err.construct = "return value"  # kapi raises KernelHasReturnValueError
                raise err
            self.b.restype = "void"
        elif _scalar_tuple(restype) or is_complex(restype):
            # a tuple result travels back through one-element private arrays the caller
            # passes after the arguments (KIR functions return one scalar at most); so does
            # a complex one, as the tuple of its parts
            self.b.restype = "void"
            for j, t in enumerate(_result_items(restype)):
                self.b.params.append((f"ret.{j}", f"array({kir_scalar(t)},1,C,private)"))
        else:
            self.b.restype = "void" if restype == types.none else kir_scalar(restype)
            if self.b.restype is None:
                raise self.unsupported(
                    "return type",
                    f"device function returns {restype}; device functions return a scalar "
                    "or nothing",
                )
        blocks = self.tf.func_ir.blocks
        self.entry_label = min(blocks)
        for label in self._rpo(blocks):
            self.label = label
            self.facts = set(self.block_facts.get(label, ()))
            self.b.block(f"b{label}")
            for st in blocks[label].body:
                self.line = st.loc.line if st.loc and st.loc.line else self.line
                try:
                    self.stmt(st)
                except KernelError as e:
                    raise e.located(self.tf.filename, self.line) from None
                except Exception as e:  # never let an internal error escape unlocated
                    raise self.unsupported(
                        "statement",
                        f"pyfront cannot compile this statement ({type(e).__name__}: {e})",
                    ) from None
            if not self.b.terminated:
                self.b.emit("unreachable")
        return self.b

    @staticmethod
    def _rpo(blocks):
        entry = min(blocks)
        seen, order = set(), []

        def succs(label):
            term = blocks[label].terminator
            if isinstance(term, ir.Branch):
                return [term.truebr, term.falsebr]
            if isinstance(term, ir.Jump):
                return [term.target]
            return []

        stack = [(entry, iter(succs(entry)))]
        seen.add(entry)
        while stack:
            label, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                order.append(label)
                stack.pop()
            elif nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(succs(nxt))))
        return order[::-1]

    # ---- statements -----------------------------------------------------------------------

    def stmt(self, st):
        if isinstance(st, ir.Assign):
            self.define(st.target, self.rvalue(st.value, st.target))
            if self.facts:  # a fact about a variable's old value says nothing about its new one
                self.facts = {f for f in self.facts if st.target.name not in f}
        elif isinstance(st, ir.SetItem | ir.StaticSetItem):
            idx = st.index if isinstance(st, ir.SetItem) else st.index_var
            self.setitem(st.target, idx, st.value, st)
        elif isinstance(st, ir.Branch):
            c = self.scalar(self.get(st.cond), types.boolean)
            self.b.emit(f"cbr {c} ^b{st.truebr} ^b{st.falsebr}", self.line)
        elif isinstance(st, ir.Jump):
            self.b.emit(f"br ^b{st.target}", self.line)
        elif isinstance(st, ir.Return):
            self.ret(st.value)
        elif isinstance(st, ir.Del):
            pass
        elif isinstance(st, ir.Print):
            self.print_stmt(st)
        elif isinstance(st, ir.StaticRaise):
            self.raise_stmt(st)
        elif isinstance(st, ir.Raise | ir.DynamicRaise):
            raise self.unsupported(
                "raise",
                "kernels raise exceptions with constant arguments only (e.g. raise "
                'ValueError("negative input"))',
            )
        elif isinstance(st, ir.TryRaise | ir.StaticTryRaise | ir.DynamicTryRaise):
            raise self.unsupported("try", "try/except is not supported in kernels")
        elif isinstance(st, ir.EnterWith | ir.PopBlock):
            raise self.unsupported("with", "'with' blocks are not supported in kernels")
        else:
            raise self.unsupported(
                type(st).__name__, f"'{st}' ({type(st).__name__}) is not supported in kernels"
            )

    def ret(self, var):
        if self.kind != "kernel" and is_complex(self.tf.restype):
            z = self.to_complex(self.get(var), self.tf.restype)
            zero = self.scalar(V.Const(0, types.int64))
            for j, part in enumerate((z.re, z.im)):
                v = self.scalar(part, self.tf.restype.underlying_float)
                self.b.emit(f"astore %ret.{j} {v} {zero}", self.line)
            self.b.emit("ret", self.line)
        elif self.kind != "kernel" and _scalar_tuple(self.tf.restype):
            val = self.get(var)
            zero = self.scalar(V.Const(0, types.int64))
            for j, (item, t) in enumerate(zip(val.items, self.tf.restype, strict=True)):
                v = self.scalar(item, _unlit(t))
                self.b.emit(f"astore %ret.{j} {v} {zero}", self.line)
            self.b.emit("ret", self.line)
        elif self.b.restype == "void":
            self.b.emit("ret", self.line)
        else:
            v = self.scalar(self.get(var), self.tf.restype)
            self.b.emit(f"ret {v}", self.line)

    # ---- variables ------------------------------------------------------------------------

    def get(self, var):
        name = var.name
        if self.ndefs.get(name, 0) > 1:
            return self._load_slots(name, self.typemap[name])
        try:
            return self.env[name]
        except KeyError:
            raise self.unsupported(
                "variable", f"variable '{var.name}' may be used before it is defined"
            ) from None

    def _load_slots(self, name, ty):
        kty = kir_scalar(ty)
        if kty is not None:
            ref = self.b.slot(name, kty)
            ty = _unlit(ty)
            nonneg = isinstance(ty, types.Integer) and name not in self.signed_vars
            return V.Scalar(self.b.op(f"load_var {kty} {ref}", self.line), ty, nonneg)
        if isinstance(ty, types.BaseTuple):
            return V.Tuple([self._load_slots(f"{name}.{i}", t) for i, t in enumerate(ty)])
        if is_complex(ty):
            return self.complex_load_slots(name, ty)
        if name in self.env:
            return self.env[name]
        raise self.unsupported(
            "variable",
            f"variable '{name}' of type {ty} is assigned on several paths; only scalars and "
            "tuples of scalars may be",
        )

    def define(self, target, val):
        name = target.name
        ty = self.typemap[name]
        if self.ndefs.get(name, 0) > 1:
            self._store_slots(name, ty, val)
        elif isinstance(val, V.Scalar | V.Const) and kir_scalar(ty) is not None:
            self.env[name] = self.convert(val, ty)
        elif is_complex(ty) and isinstance(val, V.Scalar | V.Const | V.Complex):
            self.env[name] = self.to_complex(val, ty)
        else:
            self.env[name] = val

    def _store_slots(self, name, ty, val):
        kty = kir_scalar(ty)
        if kty is not None:
            ref = self.b.slot(name, kty)
            val = self.convert(val, ty)
            if isinstance(_unlit(ty), types.Integer) and name not in self.signed_vars:
                if not _nonneg(val):
                    self.new_signed.add(name)
            self.b.emit(f"store_var {ref} {self.scalar(val)}", self.line)
        elif isinstance(ty, types.BaseTuple) and isinstance(val, V.Tuple):
            for i, (t, item) in enumerate(zip(ty, val.items, strict=True)):
                self._store_slots(f"{name}.{i}", t, item)
        elif is_complex(ty):
            self.complex_store_slots(name, ty, val)
        else:
            prev = self.env.setdefault(name, val)
            if prev != val:
                raise self.unsupported(
                    "variable",
                    f"variable '{name}' of type {ty} refers to different objects on different "
                    "paths; only scalars and tuples of scalars may",
                )

    # ---- scalars and casts ----------------------------------------------------------------

    def kty(self, ty):
        k = kir_scalar(ty)
        if k is None:
            raise self.unsupported("type", f"values of type {ty} are not supported in kernels")
        return k

    def convert(self, val, ty):
        """`val` as a Scalar/Const of Numba type `ty` (Numba's cast rules)."""
        ty = _unlit(ty)
        if isinstance(ty, types.IntEnumMember):
            ty = ty.dtype
        if isinstance(ty, types.Complex):
            return self.to_complex(val, ty)
        if isinstance(val, V.Complex):
            if isinstance(ty, types.Boolean):
                return self.complex_truth(val)
            raise self.typing_error(f"a complex number used where a {ty} is needed")
        if isinstance(val, V.Const):
            return V.Const(_py_cast(val.value, ty), ty)
        if isinstance(val, V.Scalar):
            src, dst = self.kty(val.ty), self.kty(ty)
            if src == dst:
                return V.Scalar(val.ref, ty, val.nonneg)
            return V.Scalar(
                self.b.op(f"cast {dst} {val.ref}", self.line), ty, V.cast_keeps_sign(val, ty)
            )
        raise self.unsupported("value", f"{_describe(val)} used where a number is needed")

    def scalar(self, val, ty=None):
        """The KIR value ref of `val`, converted to `ty` if given."""
        if ty is not None:
            val = self.convert(val, ty)
        if isinstance(val, V.Const):
            kty = self.kty(val.ty)
            return self.b.op(f"const {kty} {format_const(kty, val.value)}", self.line)
        if isinstance(val, V.Scalar):
            return val.ref
        if isinstance(val, V.Complex):
            raise self.typing_error("a complex number used where a real number is needed")
        raise self.unsupported("value", f"{_describe(val)} used where a number is needed")

    def const_value(self, val, what):
        """The Python value of a compile-time constant, or a KernelTypingError."""
        if isinstance(val, V.Const):
            return val.value
        if isinstance(val, V.Tuple):
            return tuple(self.const_value(v, what) for v in val.items)
        raise self.typing_error(f"{what} must be a compile-time constant")

    # ---- right-hand sides -----------------------------------------------------------------

    def rvalue(self, value, target):
        if isinstance(value, ir.Var):
            return self.get(value)
        if isinstance(value, ir.Arg):
            return self.args[value.index]
        if isinstance(value, ir.Const):
            return self.python_value(value.value, self.typemap[target.name])
        if isinstance(value, ir.Global | ir.FreeVar):
            return self.python_value(value.value, self.typemap[target.name])
        if isinstance(value, ir.Expr):
            return self.expr(value, target)
        raise self.unsupported(type(value).__name__, f"'{value}' is not supported in kernels")

    def zero_of(self, ty, e):
        """Numba's value of a variable read before any assignment on some path (lowering's
        get_constant_null): zero of its type, never an UnboundLocalError."""
        uty = _unlit(ty)
        if isinstance(uty, types.Complex):
            return self.complex_const(0j, uty)
        if isinstance(uty, types.Number | types.Boolean):
            return V.Const(_py_cast(0, uty), uty)
        if isinstance(uty, types.BaseTuple):
            return V.Tuple([self.zero_of(t, e) for t in uty])
        raise self.unsupported(
            "unassigned variable",
            f"a variable of type {uty} may be read before it is assigned; assign it on every path",
        )

    def python_value(self, pv, ty):
        if isinstance(ty, types.IntEnumMember):
            return V.Const(int(pv), ty.dtype)
        if isinstance(pv, complex | np.complexfloating):
            return self.complex_const(complex(pv), ty)
        if isinstance(pv, bool | int | float) or hasattr(pv, "dtype") and not callable(pv):
            uty = _unlit(ty)
            if isinstance(uty, types.Number | types.Boolean):
                return V.Const(_py_cast(pv, uty), uty)
        if isinstance(pv, str):  # screen.py lets strings reach print and raise only
            return V.Static(pv)
        if isinstance(pv, tuple) and isinstance(ty, types.BaseTuple):
            return V.Tuple([self.python_value(v, t) for v, t in zip(pv, ty, strict=True)])
        if isinstance(pv, list | dict | set):
            kind = type(pv).__name__
            raise self.unsupported(kind, f"{kind}s are not supported in kernels")
        return V.Static(pv)

    def expr(self, e, target):
        op = e.op
        if op in ("binop", "inplace_binop"):
            return self.binop(e)
        if op == "unary":
            return self.unary(e)
        if op == "call":
            return self.exception_call(e) or self.call(e, target)
        if op == "getattr":
            return self.getattr(self.get(e.value), e.value, e.attr, target)
        if op in ("getitem", "static_getitem"):
            idx = e.index if op == "getitem" else e.index_var
            return self.getitem(e.value, idx, e, target)
        if op == "build_tuple":
            return V.Tuple([self.get(v) for v in e.items])
        if op == "exhaust_iter":
            val = self.get(e.value)
            if isinstance(val, V.Tuple) and len(val.items) == e.count:
                return val
            raise self.unsupported("unpacking", "only tuples can be unpacked in kernels")
        if op == "getiter":
            return self.getiter(self.get(e.value))
        if op == "iternext":
            return self.iternext(self.get(e.value))
        if op == "pair_first":
            return self.get(e.value).first
        if op == "pair_second":
            return self.get(e.value).second
        if op == "cast":
            return self.get(e.value)
        if op in ("null", "undef"):  # a variable read where it may be unassigned: zero, as Numba
            return self.zero_of(self.typemap[target.name], e)
        if op in _UNSUPPORTED_EXPRS:
            construct, msg = _UNSUPPORTED_EXPRS[op]
            raise self.unsupported(construct, msg)
        raise self.unsupported(op, f"the operation '{op}' is not supported in kernels")

    # ---- operators ------------------------------------------------------------------------

    def binop(self, e):
        sig = self.calltypes[e]
        fn = e.fn
        lhs, rhs = self.get(e.lhs), self.get(e.rhs)
        if is_complex(sig.return_type) or any(is_complex(t) for t in sig.args):
            return self.complex_binop(fn, lhs, rhs, sig)
        if fn in CMPOPS:
            a0, a1 = _unlit(sig.args[0]), _unlit(sig.args[1])
            if not _is_num(a0) or not _is_num(a1):
                raise self.unsupported(
                    "comparison", f"comparing {a0} with {a1} is not supported in kernels"
                )
            common = a0 if a0 == a1 else self._unify(a0, a1)
            a, b = self.scalar(lhs, common), self.scalar(rhs, common)
            return V.Scalar(self.b.op(f"cmp bool {CMPOPS[fn]} {a} {b}", self.line), types.boolean)
        kop = BINOPS.get(fn)
        if kop is None:
            raise self.unsupported("operator", f"the operator {fn.__name__} is not supported")
        ret = _unlit(sig.return_type)
        if not _is_num(ret):
            raise self.unsupported(
                "operator", f"'{fn.__name__}' on {sig.args} is not supported in kernels"
            )
        if (
            isinstance(lhs, V.Const)
            and isinstance(rhs, V.Const)
            and isinstance(ret, types.Integer)
            and fn in _FOLDABLE
        ):
            # integer arithmetic on constants (closure variables, globals) stays constant, so
            # e.g. PrivateArray(dims * k, ...) has a compile-time shape
            x, y = _py_cast(lhs.value, ret), _py_cast(rhs.value, ret)
            return V.Const(_py_cast(_FOLDABLE[fn](x, y), ret), ret)
        # KIR wants both operands of the result type (Numba computes in it too; `/` on ints
        # and float ** int convert to the float result first, as Numba's lowering does).
        a, b = self.scalar(lhs, ret), self.scalar(rhs, ret)
        if kop == "div" and not isinstance(ret, types.Float):
            raise self.unsupported("operator", f"true division giving {ret}")
        nonneg = _nonneg_result(kop, lhs, rhs) or (
            kop == "sub" and (e.lhs.name, e.rhs.name) in self.facts
        )
        return V.Scalar(self.b.op(f"{kop} {self.kty(ret)} {a} {b}", self.line), ret, nonneg)

    def _unify(self, a, b):
        from .typer import Typer

        u = Typer.context().unify_types(a, b)
        if u is None:
            raise self.typing_error(f"cannot compare {a} with {b}")
        return u

    def unary(self, e):
        sig = self.calltypes[e]
        val = self.get(e.value)
        ret = _unlit(sig.return_type)
        fn = e.fn
        if is_complex(ret) or any(is_complex(t) for t in sig.args):
            return self.complex_unary(fn, val, ret)
        if fn is operator.pos:
            return self.convert(val, ret)
        aty = _unlit(sig.args[0])
        if fn in (operator.neg, operator.invert) and isinstance(aty, types.Integer) and aty != ret:
            # Numba negates and inverts before widening (int_negate_impl): -uint8(3) is 253
            v = self.scalar(val, aty)
            op = "neg" if fn is operator.neg else "not"
            return self.convert(
                V.Scalar(self.b.op(f"{op} {self.kty(aty)} {v}", self.line), aty), ret
            )
        if fn is operator.neg:
            v = self.scalar(val, ret)
            return V.Scalar(self.b.op(f"neg {self.kty(ret)} {v}", self.line), ret)
        if fn is operator.not_:
            v = self.scalar(val, types.boolean)
            return V.Scalar(self.b.op(f"not bool {v}", self.line), types.boolean)
        if fn is operator.invert:
            v = self.scalar(val, ret)
            return V.Scalar(self.b.op(f"not {self.kty(ret)} {v}", self.line), ret)
        raise self.unsupported("operator", f"the unary operator {fn} is not supported")

    # ---- loops over range -----------------------------------------------------------------

    def getiter(self, val):
        if not isinstance(val, V.RangeVal):
            raise self.unsupported(
                "iteration", "kernels can only loop over range(...); use an index loop"
            )
        kty = self.kty(val.ty)
        cur = self.b.slot(f"iter.{self.b.value()[1:]}", kty)
        self.b.emit(f"store_var {cur} {self.scalar(val.start, val.ty)}", self.line)
        stop = V.Scalar(self.scalar(val.stop, val.ty), val.ty)
        step = (
            val.step
            if isinstance(val.step, V.Const)
            else V.Scalar(self.scalar(val.step, val.ty), val.ty)
        )
        return V.RangeIter(cur, stop, step, val.ty, _nonneg(val.start))

    def iternext(self, it):
        if not isinstance(it, V.RangeIter):
            raise self.unsupported("iteration", "kernels can only loop over range(...)")
        kty = self.kty(it.ty)
        cur = self.b.op(f"load_var {kty} {it.cur}", self.line)
        stop = it.stop.ref
        if isinstance(it.step, V.Const):
            if it.step.value == 0:
                raise self.typing_error("range() step must not be zero")
            pred = "lt" if it.step.value > 0 else "gt"
            ok = self.b.op(f"cmp bool {pred} {cur} {stop}", self.line)
        else:
            zero = self.b.op(f"const {kty} 0", self.line)
            pos = self.b.op(f"cmp bool gt {it.step.ref} {zero}", self.line)
            up = self.b.op(f"cmp bool lt {cur} {stop}", self.line)
            down = self.b.op(f"cmp bool gt {cur} {stop}", self.line)
            ok = self.b.op(f"select bool {pos} {up} {down}", self.line)
        step = self.scalar(it.step)
        nxt = self.b.op(f"add {kty} {cur} {step}", self.line)
        self.b.emit(f"store_var {it.cur} {nxt}", self.line)
        # Counting up from a non-negative start never goes negative: no index wraparound.
        up = isinstance(it.step, V.Const) and it.step.value > 0
        return V.Pair(V.Scalar(cur, it.ty, up and it.nonneg), V.Scalar(ok, types.boolean))

    # ---- arrays and tuples ----------------------------------------------------------------

    def array_indices(self, arr, idxval, idxty, allow_view=False):
        """i64 index refs of the underlying array for arr[idx], with Numba's wraparound for
        signed indices. With allow_view, fewer indices than dimensions fix a leading prefix."""
        if isinstance(idxval, V.Tuple):
            items = idxval.items
            tys = list(idxty) if isinstance(idxty, types.BaseTuple) else [None] * len(items)
        else:
            items, tys = [idxval], [idxty]
        if len(items) > arr.ty.ndim or (len(items) < arr.ty.ndim and not allow_view):
            raise self.unsupported(
                "slicing",
                f"{len(items)} indices for a {arr.ty.ndim}-D array; kernels index arrays "
                "element by element or take rows (a[i]) of them",
            )
        out = list(arr.prefix)
        for v, t in zip(items, tys, strict=True):
            i = self.index_ref(arr, len(out), v, t)
            if getattr(self.module, "boundscheck", False):
                self.check_index(arr, len(out), i, self.raw_index(v, i))
            out.append(i)
        return out

    def raw_index(self, v, i):
        """i64 ref of index v before the negative-index wraparound (i: after it)."""
        if isinstance(v, V.Const):
            return self.scalar(V.Const(int(v.value), types.int64))
        return self.scalar(v, types.int64) if isinstance(v, V.Scalar) else i

    def index_ref(self, arr, d, v, t):
        ty = _unlit(t) if t is not None else getattr(v, "ty", None)
        if isinstance(v, V.Const) and isinstance(v.value, int | bool):
            if v.value >= 0:
                return self.scalar(V.Const(int(v.value), types.int64))
            i = self.scalar(V.Const(int(v.value), types.int64))
            return self.b.op(f"wrapidx i64 {arr.ref} {d} {i}", self.line)
        if not isinstance(ty, types.Integer | types.Boolean) or not isinstance(
            v, V.Scalar | V.Const
        ):
            raise self.unsupported(
                "slicing", f"index of type {t} (kernels index arrays with integers only)"
            )
        i = self.scalar(v, types.int64)
        if isinstance(ty, types.Integer) and ty.signed and not getattr(v, "nonneg", False):
            i = self.b.op(f"wrapidx i64 {arr.ref} {d} {i}", self.line)
        return i

    def getitem(self, var, idxvar, e, target):
        val = self.get(var)
        ty = self.typemap[var.name]
        if isinstance(val, V.Array):
            if isinstance(e.index, slice) or isinstance(self.typemap[idxvar.name], types.SliceType):
                raise self.unsupported("slicing", "array slicing is not supported in kernels")
            idx = self.array_indices(val, self.get(idxvar), self.typemap[idxvar.name], True)
            tty = self.typemap[target.name]
            if isinstance(tty, KArray):  # a[i] of an N-D array: a view of the rest
                return V.Array(val.ref, tty, tuple(idx), val.base or val.ty)
            if is_complex(val.ty.dtype):
                return self.complex_aload(val, idx)
            if getattr(val.ty, "storage", None) == "bf16":
                return self.bf16_aload(val, idx)
            kty = self.kty(val.ty.dtype)
            ref = self.b.op(f"aload {kty} {val.ref} {' '.join(idx)}", self.line)
            return V.Scalar(ref, val.ty.dtype)
        if isinstance(val, V.Tuple):
            i = e.index if e.op == "static_getitem" else None
            if i is None:
                iv = self.get(idxvar)
                if not isinstance(iv, V.Const):
                    return self.tuple_runtime_item(val, ty, iv, self.typemap[idxvar.name])
                i = iv.value
            if isinstance(i, slice):
                return V.Tuple(val.items[i])
            if not isinstance(i, int) or not -len(val.items) <= i < len(val.items):
                raise self.typing_error(f"tuple index {i} out of range")
            return val.items[i]
        if isinstance(val, V.Static) and isinstance(val.value, np.ndarray):
            return self.constant_array_item(val.value, e, idxvar, target)
        raise self.unsupported("indexing", f"indexing a {ty} is not supported in kernels")

    def constant_array_item(self, arr, e, idxvar, target):
        """An element of a module-level NumPy array (Numba freezes it as a constant): a
        constant for constant indices, a select chain over a small 1-D array otherwise."""
        ety = _unlit(self.typemap[target.name])
        if not isinstance(ety, types.Number | types.Boolean):
            raise self.unsupported(
                "indexing", "constant (global) NumPy arrays are indexed element by element"
            )
        idx = e.index if e.op == "static_getitem" else None
        if idx is None:
            iv = self.get(idxvar)
            if isinstance(iv, V.Const | V.Tuple):
                try:
                    idx = self.const_value(iv, "index")
                except KernelError:
                    idx = None
        if isinstance(idx, int | tuple):
            return V.Const(_py_cast(arr[idx].item(), ety), ety)
        if arr.ndim != 1 or arr.size > 64:
            raise self.unsupported(
                "indexing",
                f"a global NumPy array of shape {arr.shape} indexed at run time; pass it to "
                "the kernel as an array argument (kapi.asarray(...)) instead",
            )
        items = [V.Const(_py_cast(v.item(), ety), ety) for v in arr]
        return self.tuple_runtime_item(
            V.Tuple(items),
            types.UniTuple(ety, len(items)),
            self.get(idxvar),
            self.typemap[idxvar.name],
        )

    def tuple_runtime_item(self, tup, tty, iv, ity):
        """t[i] with a run-time i, as Numba allows for tuples of one scalar type: a select
        chain over the items (negative i wraps around; out-of-range i gives the last item,
        where Numba would raise IndexError)."""
        etys = {types.unliteral(t) for t in tty} if isinstance(tty, types.BaseTuple) else ()
        ety = next(iter(etys)) if len(etys) == 1 else None
        if not isinstance(ety, types.Number | types.Boolean) or not isinstance(ity, types.Integer):
            raise self.unsupported(
                "tuple indexing",
                "tuples of mixed types can only be indexed by constants in kernels",
            )
        n = len(tup.items)
        i = self.scalar(iv, types.int64)
        if ity.signed and not getattr(iv, "nonneg", False):
            neg = self.b.op(f"cmp bool lt {i} {self.scalar(V.Const(0, types.int64))}", self.line)
            up = self.b.op(f"add i64 {i} {self.scalar(V.Const(n, types.int64))}", self.line)
            i = self.b.op(f"select i64 {neg} {up} {i}", self.line)
        kty = self.kty(ety)
        acc = self.scalar(tup.items[n - 1], ety)
        for k in range(n - 2, -1, -1):
            hit = self.b.op(f"cmp bool eq {i} {self.scalar(V.Const(k, types.int64))}", self.line)
            acc = self.b.op(f"select {kty} {hit} {self.scalar(tup.items[k], ety)} {acc}", self.line)
        return V.Scalar(acc, ety)

    def setitem(self, target, idxvar, valvar, st):
        arr = self.get(target)
        if not isinstance(arr, V.Array):
            ty = self.typemap[target.name]
            raise self.unsupported("item assignment", f"assigning items of {ty} in a kernel")
        ity = self.typemap[idxvar.name]
        if isinstance(ity, types.SliceType) or (
            isinstance(ity, types.BaseTuple) and any(isinstance(t, types.SliceType) for t in ity)
        ):
            raise self.unsupported("slicing", "array slicing is not supported in kernels")
        self.store_element(arr, self.get(idxvar), ity, self.get(valvar))

    def store_element(self, arr, index, ity, val, op="astore"):
        """arr[index] = val by KIR's `op`: astore, or astore_nt (store_nontemporal)."""
        idx = self.array_indices(arr, index, ity)
        if is_complex(arr.ty.dtype):
            return self.complex_astore(arr, idx, val, op)
        if getattr(arr.ty, "storage", None) == "bf16":
            return self.bf16_astore(arr, idx, val, op)
        v = self.scalar(val, arr.ty.dtype)
        self.b.emit(f"{op} {arr.ref} {v} {' '.join(idx)}", self.line)

    def getattr(self, val, var, attr, target):
        tty = self.typemap[target.name]
        if isinstance(tty, types.BoundFunction):
            return V.Bound(val, attr)
        if isinstance(tty, types.NumberClass | types.DType):
            return V.Static(tty)
        if isinstance(val, V.Static):
            try:
                pv = getattr(val.value, attr)
            except AttributeError:
                raise self.unsupported("attribute", f"'{attr}' is not supported here") from None
            return self.python_value(pv, tty)
        if isinstance(val, V.Array):
            return self.array_attr(val, attr)
        if isinstance(val, V.Complex):
            return self.complex_attr(val, attr)
        if isinstance(val, V.IndexSpace):
            return self.index_attr(val, attr)
        raise self.unsupported(
            "attribute", f"attribute '{attr}' of {self.typemap[var.name]} is not supported"
        )

    def array_attr(self, arr, attr):
        n = arr.ty.ndim
        if attr == "shape":
            return V.Tuple([self.dim(arr, d) for d in range(n)])
        if attr == "strides":
            strides = [
                self.b.op(f"stride i64 {arr.ref} {d + len(arr.prefix)}", self.line)
                for d in range(n)
            ]
            if is_complex(arr.ty.dtype):  # the KIR arrays' strides are in parts
                one = self.scalar(V.Const(1, types.int64))
                strides = [self.b.op(f"shr i64 {s} {one}", self.line) for s in strides]
            return V.Tuple([V.Scalar(s, types.int64) for s in strides])
        if attr == "ndim":
            return V.Const(n, types.int64)
        if attr == "size":
            size = self.dim(arr, 0)
            for d in range(1, n):
                size = V.Scalar(
                    self.b.op(f"mul i64 {size.ref} {self.dim(arr, d).ref}", self.line), types.int64
                )
            return size
        if attr == "dtype":
            return V.Static(types.DType(arr.ty.dtype))
        raise self.unsupported("attribute", f"array attribute '{attr}' is not supported in kernels")

    def dim(self, arr, d):
        d += len(arr.prefix)
        return V.Scalar(self.b.op(f"dim i64 {arr.ref} {d}", self.line), types.int64)


def _result_items(restype):
    """The scalar items a tuple or complex device-function result travels back as."""
    if is_complex(restype):
        return (restype.underlying_float,) * 2
    return tuple(restype)


_ORDER = {operator.ge: 1, operator.gt: 1, operator.le: -1, operator.lt: -1}


def _branch_facts(blocks):
    """Per block label, pairs of variable names (hi, lo) with hi >= lo on entry: the block is
    the only successor-by-one-edge of a branch on `hi >= lo` (or >, <=, <, either edge) taken
    in its predecessor, neither variable reassigned after the comparison. So `lid - d` under
    `if lid >= d:` (a scan's step) indexes without wraparound."""
    preds = {}
    for blk in blocks.values():
        term = blk.terminator
        succ = [term.truebr, term.falsebr] if isinstance(term, ir.Branch) else []
        succ += [term.target] if isinstance(term, ir.Jump) else []
        for t in succ:
            preds[t] = preds.get(t, 0) + 1
    facts = {}
    for blk in blocks.values():
        term = blk.terminator
        if not isinstance(term, ir.Branch) or term.truebr == term.falsebr:
            continue
        cmp = _branch_compare(blk.body, term.cond.name)
        if cmp is None:
            continue
        hi, lo = cmp  # on the true edge; the false edge knows the opposite
        for target, pair in ((term.truebr, (hi, lo)), (term.falsebr, (lo, hi))):
            if preds.get(target) == 1:
                facts.setdefault(target, set()).add(pair)
    return facts


def _branch_compare(body, cond):
    """(hi, lo) names when `cond` is `bool(hi >= lo)`-like, computed in this block and with
    neither operand assigned after it; else None."""
    defs = {st.target.name: (i, st.value) for i, st in enumerate(body) if isinstance(st, ir.Assign)}
    if cond not in defs:
        return None
    i, val = defs[cond]
    if isinstance(val, ir.Expr) and val.op == "call" and len(val.args) == 1 and not val.kws:
        fn = defs.get(val.func.name)
        if fn is None or not isinstance(fn[1], ir.Global) or fn[1].value is not bool:
            return None
        if val.args[0].name not in defs:
            return None
        i, val = defs[val.args[0].name]
    if not isinstance(val, ir.Expr) or val.op != "binop" or val.fn not in _ORDER:
        return None
    a, b = val.lhs.name, val.rhs.name
    if any(isinstance(st, ir.Assign) and st.target.name in (a, b) for st in body[i + 1 :]):
        return None
    return (a, b) if _ORDER[val.fn] > 0 else (b, a)


def _nonneg_result(kop, lhs, rhs):
    """Whether integer `lhs kop rhs` is known >= 0 (Python's floor division and modulo)."""
    if kop in ("add", "mul", "floordiv", "shr", "or", "max", "min"):
        return _nonneg(lhs) and _nonneg(rhs)
    if kop == "and":
        return _nonneg(lhs) or _nonneg(rhs)
    if kop == "mod":  # takes the sign of the divisor
        return _nonneg(rhs)
    return False


def _nonneg(val):
    if isinstance(val, V.Const):
        return isinstance(val.value, int | bool) and val.value >= 0
    return isinstance(val, V.Scalar) and (val.nonneg or isinstance(val.ty, types.Boolean))


def _is_num(ty):
    return isinstance(ty, types.Number | types.Boolean) and not isinstance(ty, types.Complex)


_FOLDABLE = {
    operator.add: operator.add,
    operator.iadd: operator.add,
    operator.sub: operator.sub,
    operator.isub: operator.sub,
    operator.mul: operator.mul,
    operator.imul: operator.mul,
}


def _py_cast(value, ty):
    """Python-side constant conversion following Numba's cast rules."""
    if isinstance(ty, types.Boolean):
        return bool(value)
    if isinstance(ty, types.Integer):
        if isinstance(value, float) and value != value:
            return 0
        v = int(value)
        bits = ty.bitwidth
        v %= 1 << bits
        if ty.signed and v >= 1 << (bits - 1):
            v -= 1 << bits
        return v
    if isinstance(ty, types.Float):
        return float(value)
    return value


def _describe(val):
    if isinstance(val, V.Static):
        return f"'{getattr(val.value, '__name__', val.value)}'"
    return type(val).__name__.lower()
