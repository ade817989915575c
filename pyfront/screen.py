"""Rejects Python constructs kernels cannot have, on the untyped Numba IR, before typing.

Typing such code would fail later with a confusing message (or succeed and fail at emission);
here the construct is named at its own line.
"""

from ._numba import ir
from .errors import UnsupportedConstructError

_EXPRS = {
    "build_list": ("list", "lists are not supported in kernels; use a PrivateArray"),
    "build_set": ("set", "sets are not supported in kernels"),
    "build_map": ("dict", "dicts are not supported in kernels"),
    "make_function": ("closure", "functions and lambdas defined inside kernels are not supported"),
}


def _fail(construct, message, loc):
    raise UnsupportedConstructError(message, loc.filename, loc.line, construct=construct)


def _stmts(func_ir):
    for label in sorted(func_ir.blocks):
        yield from func_ir.blocks[label].body


def _definition(func_ir, var):
    try:
        return func_ir.get_definition(var)
    except Exception:  # several or no definitions: not a direct call of a global
        return None


def _exception_class(value):
    return isinstance(value, type) and issubclass(value, BaseException)


def _string_uses(func_ir):
    """Variables that may hold a string: print's arguments and an exception's arguments."""
    ok = set()
    for st in _stmts(func_ir):
        if isinstance(st, ir.Print):
            ok.update(v.name for v in st.args)
            ok.update(getattr(st, "kapi_keyword_vars", ()))
        elif isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and st.value.op == "call":
            fn = _definition(func_ir, st.value.func)
            if isinstance(fn, ir.Global | ir.FreeVar) and _exception_class(fn.value):
                ok.update(v.name for v in st.value.args)
    return ok


def _check_raise(st):
    if isinstance(st, ir.StaticRaise) and st.exc_class is None:
        _fail("raise", "a bare 'raise' (re-raise) is not supported in kernels", st.loc)
    if not isinstance(st, ir.StaticRaise):
        _fail(
            "raise",
            "kernels raise exceptions with constant arguments only (e.g. raise "
            'ValueError("negative input"))',
            st.loc,
        )


def screen(func_ir):
    if func_ir.is_generator:
        _fail("generator", "generators (yield) are not supported in kernels", func_ir.loc)
    for st in _stmts(func_ir):
        if isinstance(st, ir.TryRaise | ir.StaticTryRaise | ir.DynamicTryRaise | ir.EnterWith):
            kind = "with" if isinstance(st, ir.EnterWith) else "try"
            _fail(kind, f"'{kind}' blocks are not supported in kernels", st.loc)
        if isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr) and st.value.op == "call":
            fn = _definition(func_ir, st.value.func)
            if isinstance(fn, ir.Global) and fn.name in ("mark_try_block", "end_try_block"):
                _fail("try", "'try' blocks are not supported in kernels", st.loc)
    for st in _stmts(func_ir):
        if isinstance(st, ir.Raise | ir.StaticRaise | ir.DynamicRaise):
            _check_raise(st)
    strings = _string_uses(func_ir)
    for st in _stmts(func_ir):
        if not isinstance(st, ir.Assign):
            continue
        v = st.value
        if isinstance(v, ir.Expr) and v.op in _EXPRS:
            _fail(*_EXPRS[v.op], st.loc)
        if isinstance(v, ir.Const | ir.Global | ir.FreeVar) and isinstance(v.value, str | bytes):
            if isinstance(v.value, str) and st.target.name in strings:
                continue
            _fail(
                "string",
                "strings are not supported in kernels (except as print() arguments and "
                "exception messages)",
                st.loc,
            )
