"""Compile-time strings in kernels: `getattr(obj, name)` with `name` a literal, a global or a
variable of the enclosing function (`getattr(ref, op)(val)` in a kernel factory).

Numba types builtin getattr through @overload, which pyfront does not use, and kernels have no
string values; so before typing, on the untyped IR, each such call becomes the attribute
access `obj.name` it denotes, and the string and `getattr` themselves are dropped when nothing
else uses them. Other string uses are left for the screen to reject.
"""

from ._numba import ir
from .errors import UnsupportedConstructError


def _definition(func_ir, var):
    try:
        return func_ir.get_definition(var)
    except Exception:  # several or no definitions
        return None


def _literal_string(func_ir, var):
    """The string `var` holds at compile time: a constant, global or captured string, or an
    item of a constant tuple of them (`OPS[1]`); None otherwise."""
    d = _definition(func_ir, var)
    if isinstance(d, ir.Expr) and d.op == "static_getitem" and isinstance(d.index, int):
        t = _definition(func_ir, d.value)
        if isinstance(t, ir.Const | ir.Global | ir.FreeVar) and isinstance(t.value, tuple):
            try:
                d = ir.Const(t.value[d.index], d.loc)
            except IndexError:
                return None
    if isinstance(d, ir.Const | ir.Global | ir.FreeVar) and isinstance(d.value, str):
        return d.value
    return None


def _getattr_call(func_ir, st):
    if not (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)):
        return None
    e = st.value
    if e.op != "call":
        return None
    fn = _definition(func_ir, e.func)
    return e if isinstance(fn, ir.Global | ir.FreeVar) and fn.value is getattr else None


def _fold(func_ir, st, e):
    if e.kws or e.vararg or len(e.args) != 2:
        raise UnsupportedConstructError(
            "getattr(obj, name) takes two arguments in kernels (no default, no keywords)",
            st.loc.filename,
            st.loc.line,
            construct="getattr",
        )
    name = _literal_string(func_ir, e.args[1])
    if name is None:
        raise UnsupportedConstructError(
            "getattr(obj, name): name must be a string known at compile time (a literal, a "
            "global or a variable of the enclosing function)",
            st.loc.filename,
            st.loc.line,
            construct="getattr",
        )
    value = ir.Expr.getattr(e.args[0], name, e.loc)
    func_ir._definitions[st.target.name] = [value]
    return ir.Assign(value, st.target, st.loc)


def fold_literal_getattr(func_ir):
    """Rewrite getattr(obj, <compile-time string>) into obj.<string>, in place, then drop the
    compile-time strings nothing uses any more (also those of branches Numba pruned, as in
    `if mode == "add":` with `mode` captured)."""
    for blk in func_ir.blocks.values():
        for i, st in enumerate(blk.body):
            e = _getattr_call(func_ir, st)
            if e is not None:
                blk.body[i] = _fold(func_ir, st, e)
    while _drop_dead_strings(func_ir):
        pass


def _has_string(value):
    if isinstance(value, str):
        return True
    return isinstance(value, tuple) and any(_has_string(v) for v in value)


def _compile_time_string(func_ir, value):
    """True for a right-hand side that is only a compile-time string (or tuple holding one),
    an item of one, or the builtin getattr."""
    if isinstance(value, ir.Const | ir.Global | ir.FreeVar):
        return _has_string(value.value) or value.value is getattr
    if isinstance(value, ir.Expr) and value.op == "static_getitem":
        d = _definition(func_ir, value.value)
        return isinstance(d, ir.Const | ir.Global | ir.FreeVar) and _has_string(d.value)
    return False


def _drop_dead_strings(func_ir):
    used = set()
    for blk in func_ir.blocks.values():
        for st in blk.body:
            target = st.target if isinstance(st, ir.Assign) else None
            used |= {v.name for v in st.list_vars() if v is not target}
    dead = set()
    for blk in func_ir.blocks.values():
        keep = []
        for st in blk.body:
            if (
                isinstance(st, ir.Assign)
                and st.target.name not in used
                and _compile_time_string(func_ir, st.value)
            ):
                dead.add(st.target.name)
            else:
                keep.append(st)
        blk.body = keep
    for name in dead:
        func_ir._definitions.pop(name, None)
    return bool(dead)
