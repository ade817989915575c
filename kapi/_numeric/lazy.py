"""Lazy elementwise expressions: `a * x + y` on kapi arrays as ONE kernel.

An operator or ufunc on kapi arrays (kapi/_numeric/ufunc.py), `astype` and `kapi.where` check their
operands at once (types by NumPy 2's rules, shapes, devices: errors come from the operator
that caused them) and return a *pending* array: its shape, dtype and device are known, its
value is an expression tree over concrete arrays and scalars. A pending operand of a further
operation is inlined into that operation's tree, so a chain of operators becomes one tree,
compiled into one generated kernel (cached per expression shape, the dispatcher specialises
it per dtypes) and run when the value is needed.

A pending array is an instance of `_Pending`, a subclass of Array with the same memory layout
whose memory fields (`_ptr`, `_owner`, `_host_ok`) are properties that evaluate it: it then
gets its buffer and becomes a plain Array (`__class__` assignment). Everything that touches
memory (host transfers, indexing and views, reshape, kernel arguments, reductions, DLPack and
the interface dicts, repr) reads one of those fields, so evaluation follows without a check
in every method.

Snapshot semantics: a pending expression must see its leaves as they were when it was built.
Before kapi writes memory (`_assign`, `fill`, an elementwise `out=`, any kernel launch, which
may write each array argument: the launcher calls `before_launch`), pending expressions whose
leaves overlap it are evaluated. Memory kapi cannot watch (exported as a NumPy host view, by
DLPack, the interface dicts or `data_ptr`; foreign memory wrapped by `asarray`) is never read
lazily: an expression with such a leaf is evaluated at once. KAPI_LAZY=0 turns laziness off.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref

import numpy as np

from .. import _native
from .._memory import array as _array
from .._memory import pool as _memory
from .._memory.array import Array, _contiguous_strides, _span

ENABLED = os.environ.get("KAPI_LAZY", "1") != "0"
MAX_OPS = 32  # operations in one expression; past this it is evaluated (kernel size)
MAX_LEAVES = 16  # distinct arrays and scalars; past this it is evaluated (kernel parameters)

# id(pending) -> (weakref to it, its leaves' [lo, hi) address ranges). Its size is what the
# native launcher checks before calling before_launch (kapi/_ext/launch.c).
_PENDING: dict[int, tuple] = {}
# id(exported array) -> its [lo, hi) address range, while that array lives
_EXPORTED: dict[int, tuple[int, int]] = {}
_TLS = threading.local()  # .internal > 0 while this thread's kapi code launches a kernel
# that only reads its array arguments (an evaluation, a reduction)
_BUFFER = None


class _Tree:
    """One operation: op (a ufunc name, "astype" or "where") over args (trees, concrete
    Arrays, NumPy scalars already of their loop dtype); loop: the dtype each arg is
    converted to; dtype: the result's."""

    __slots__ = ("op", "args", "loop", "dtype", "nops", "arrays", "nscalars")

    def __init__(self, op, args, loop, dtype):
        self.op, self.args, self.loop, self.dtype = op, tuple(args), tuple(loop), dtype
        self.nops = 1
        arrays: dict[int, Array] = {}
        self.nscalars = 0
        for a in self.args:
            if isinstance(a, _Tree):
                self.nops += a.nops
                arrays.update(a.arrays)
                self.nscalars += a.nscalars
            elif isinstance(a, Array):
                arrays[id(a)] = a
            else:
                self.nscalars += 1
        self.arrays = arrays  # the distinct leaf arrays, by identity

    def too_big(self) -> bool:
        return self.nops > MAX_OPS or len(self.arrays) + self.nscalars > MAX_LEAVES


def arg(x):
    """An operand as a tree argument: a pending array's tree, else x itself."""
    return x._expr if type(x) is _Pending else x


# -- code generation -----------------------------------------------------------------------


def _cast(expr: str, have: np.dtype, want: np.dtype) -> str:
    """expr of dtype have as want, as NumPy's astype converts (complex to real drops the
    imaginary part; to bool tests both)."""
    if have == want:
        return expr
    if have.kind == "c" and want.kind != "c":
        if want == np.bool_:
            return f"({expr} != 0)"
        expr, have = f"({expr}).real", np.dtype(have.char.lower())
        if have == want:
            return expr
    name = "bool_" if want == np.bool_ else want.type.__name__
    return f"np.{name}({expr})"


class Gen:
    """Source text of trees; leaves collects the kernel's inputs (numbered from first)."""

    def __init__(self, first: int = 0):
        self.first = first
        self.leaves: list = []
        self._memo: dict[int, int] = {}

    def _leaf(self, x) -> str:
        if isinstance(x, Array):
            k = self._memo.get(id(x))
            if k is None:
                k = self._memo[id(x)] = len(self.leaves)
                self.leaves.append(x)
        else:
            k = len(self.leaves)
            self.leaves.append(x)
        return f"l{self.first + k}"

    def expr(self, t) -> str:
        if not isinstance(t, _Tree):
            return self._leaf(t)
        parts = []
        for a, want in zip(t.args, t.loop, strict=True):
            have = a.dtype  # trees, arrays and NumPy scalars (trees hold no Python scalars)
            parts.append(_cast(self.expr(a), have, want))
        if t.op == "astype":
            return parts[0]
        if t.op == "where":
            return f"({parts[1]} if {parts[0]} else {parts[2]})"
        if t.op == "floor_divide" and t.loop[0].kind == "f":
            # infinite operands give a / b's infinity or signed zero, as the array API says
            # (NumPy's floor_divide gives NaN there); finite ones NumPy's floored quotient
            a, b = parts
            return (f"(np.floor({a} / {b}) if (np.isinf({a}) or np.isinf({b})) "
                    f"else np.floor_divide({a}, {b}))")  # fmt: skip
        if t.op == "sign" and t.loop[0].kind == "f":
            return f"(np.sign({parts[0]}) + {t.loop[0].type.__name__}_zero)".replace(
                f"{t.loop[0].type.__name__}_zero", f"np.{t.loop[0].type.__name__}(0)"
            )  # sign(-0.0) is +0
        if t.op in _COMPLEX_FORMS and any(d.kind == "c" for d in t.loop):
            # kernels take complex numbers through Python's operators (pyfront/emit_complex.py)
            return _COMPLEX_FORMS[t.op].format(*parts, one=f"np.{t.loop[0].type.__name__}(1)")
        return f"np.{t.op}({', '.join(parts)})"


# ufuncs on complex operands, written with the operators kernels take on complex numbers
_COMPLEX_FORMS = {
    "add": "({0} + {1})",
    "subtract": "({0} - {1})",
    "multiply": "({0} * {1})",
    "true_divide": "({0} / {1})",
    "divide": "({0} / {1})",
    "power": "({0} ** {1})",
    "equal": "({0} == {1})",
    "not_equal": "({0} != {1})",
    "negative": "(-{0})",
    "positive": "({0})",
    "square": "({0} * {0})",
    "reciprocal": "({one} / {0})",
    "absolute": "abs({0})",
    "conjugate": "np.conjugate({0})",
    "conj": "np.conjugate({0})",
    "expm1": "(np.exp({0}) - {one})",
    "log1p": "np.log({one} + {0})",
    "sign": "(({0}) / abs({0}) if {0} != 0 else {one} * 0)",
    "log2": "(np.log({0}) / np.log({one} + {one}))",
}


def evaluate_into(tree: _Tree, out: Array, what: str, fresh: bool = False) -> None:
    """out[...] = tree's value, as one kernel (fresh: out is a new array)."""
    from .ufunc import launch

    g = Gen()
    expr = g.expr(tree)
    launch(expr, g.leaves, out, what, fresh=fresh)


# -- pending arrays ------------------------------------------------------------------------


def _realize_field(name: str):
    slot = getattr(Array, name)

    def get(self):
        realize(self)
        return slot.__get__(self, Array)

    return property(get)


class _Pending(Array):
    """A kapi array whose value is not computed yet (see the module's docstring)."""

    __slots__ = ()
    _ptr = _realize_field("_ptr")
    _owner = _realize_field("_owner")
    _host_ok = _realize_field("_host_ok")


_Pending.__name__ = _Pending.__qualname__ = "Array"
_Pending.__module__ = "kapi"


def _unwatched(a: Array) -> bool:
    """Whether a's memory may change without kapi seeing it (foreign or exported)."""
    global _BUFFER
    if _BUFFER is None:
        _BUFFER = _native.ext().Buffer
    if type(a._owner) is not _BUFFER and type(a._owner) is not _memory.Block:
        return True
    if not _EXPORTED:
        return False
    lo, hi = _range(a)
    return any(lo < e and s < hi for s, e in _EXPORTED.values())


def _range(a: Array) -> tuple[int, int]:
    lo, hi = _span(a._shape, a._strides, a.itemsize)
    return a._ptr + lo, a._ptr + hi


def _forget(pid: int, ref) -> None:
    entry = _PENDING.get(pid)
    if entry is not None and entry[0] is ref:
        del _PENDING[pid]


def make(tree: _Tree, shape, queue, usm_type: str) -> Array:
    """The result of tree: pending, or evaluated at once where laziness is off, the tree is
    too big, or a new leaf's memory is not watched."""
    shape = tuple(shape)
    dt = tree.dtype
    arrays = tree.arrays.values()
    eager = not ENABLED or tree.too_big()
    if not eager:
        eager = any(_unwatched(a) for a in arrays)
    if eager:
        out = Array._allocate(shape, dt, queue, usm_type)
        evaluate_into(tree, out, "kapi elementwise expression", fresh=True)
        return out
    p = object.__new__(_Pending)
    p._shape, p._strides, p._dtype = shape, _contiguous_strides(shape, dt.itemsize, "C"), dt
    p._queue, p._usm_type, p._kd, p._own, p._expr = queue, usm_type, None, True, tree
    pid = id(p)
    ref = weakref.ref(p, functools.partial(_forget, pid))
    _PENDING[pid] = (ref, tuple(_range(a) for a in arrays))
    return p


def realize(p: Array) -> Array:
    """p with its value computed (p itself becomes a plain Array)."""
    if type(p) is not _Pending:
        return p
    pid = id(p)
    entry = _PENDING.pop(pid, None)
    try:
        out = Array._allocate(p._shape, p._dtype, p._queue, p._usm_type)
        evaluate_into(p._expr, out, "kapi elementwise expression", fresh=True)
    except BaseException:
        if entry is not None:
            _PENDING[pid] = entry
        raise
    p.__class__ = Array
    p._owner, p._ptr, p._host_ok, p._expr = out._owner, out._ptr, out._host_ok, None
    return p


def pending_count() -> int:
    """How many pending arrays are alive (for tests and debugging)."""
    return len(_PENDING)


# -- hooks: writes and exports -------------------------------------------------------------


def before_write(a: Array) -> None:
    """Evaluates the pending expressions that read memory a is about to have written."""
    if not _PENDING:
        return
    lo, hi = _range(a)  # a itself, if pending, is evaluated here
    for ref, ranges in list(_PENDING.values()):
        if any(lo < e and s < hi for s, e in ranges):
            p = ref()
            if p is not None:
                realize(p)


def on_export(a: Array) -> None:
    """a's memory leaves kapi's sight (host view, DLPack, interface): expressions reading it
    evaluate now, and none reads it lazily while a lives."""
    before_write(a)
    key = id(a)
    if key not in _EXPORTED:
        _EXPORTED[key] = _range(a)
        weakref.finalize(a, _EXPORTED.pop, key, None)


def before_launch(args) -> None:
    """Called by the native launcher (while anything is pending) with a launch's arguments:
    a kernel may write every array it gets."""
    if getattr(_TLS, "internal", 0):
        return
    for a in args:
        if isinstance(a, Array):
            before_write(realize(a))


class internal:
    """`with internal():` a launch of kapi's own that only reads its inputs."""

    def __enter__(self):
        _TLS.internal = getattr(_TLS, "internal", 0) + 1

    def __exit__(self, *exc):
        _TLS.internal -= 1


def _install() -> None:
    _array._on_write = before_write
    _array._on_export = on_export
    try:
        _native.ext().rt_lazy_configure(_PENDING, before_launch)
    except (ImportError, AttributeError):  # no native library: nothing launches anyway
        pass


_install()
