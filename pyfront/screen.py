"""Rejects Python constructs kernels cannot have, before typing.

Typing such code would fail later with a confusing message (or succeed and fail at emission);
here the construct is named at its own line. `screen_code` reads the bytecode before Numba
does (Numba's own errors for comprehensions and `with ... as` name no line, or the wrong
construct); `screen` reads the untyped Numba IR.
"""

import dis

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


_NESTED_CODE = {  # co_name of a nested code object -> (construct, message)
    "<listcomp>": (
        "comprehension",
        "list comprehensions are not supported in kernels (kernels have no lists); write a "
        "for loop, into a kapi.kernel_api.PrivateArray if the values must be kept",
    ),
    "<setcomp>": ("comprehension", "set comprehensions are not supported in kernels"),
    "<dictcomp>": ("comprehension", "dict comprehensions are not supported in kernels"),
    "<genexpr>": (
        "comprehension",
        "generator expressions are not supported in kernels; write a for loop that "
        "accumulates the result",
    ),
    "<lambda>": (
        "closure",
        "lambdas are not supported in kernels; define the function at module level with "
        "@kapi.device_func and call it",
    ),
}
# Python 3.12 inlines comprehensions (PEP 709): what remains is the append in the loop
_INLINED_COMPREHENSION = {
    "LIST_APPEND": _NESTED_CODE["<listcomp>"],
    "SET_ADD": _NESTED_CODE["<setcomp>"],
    "MAP_ADD": _NESTED_CODE["<dictcomp>"],
}
_WITH_OPS = ("BEFORE_WITH", "SETUP_WITH", "BEFORE_ASYNC_WITH", "SETUP_ASYNC_WITH")


def _code_failure(ins):
    """(construct, message) for a bytecode instruction kernels cannot have, else None."""
    if ins.opname in _WITH_OPS:
        return (
            "with",
            "'with' blocks are not supported in kernels; enter the context around "
            "call_kernel instead, outside the kernel",
        )
    # An inlined comprehension appends to a list below its loop's iterator (arg >= 2); a call
    # of many arguments or a long literal appends to the list on top (arg 1): not a comprehension.
    if ins.opname in _INLINED_COMPREHENSION and ins.arg >= 2:
        return _INLINED_COMPREHENSION[ins.opname]
    if ins.opname == "LOAD_CONST" and hasattr(ins.argval, "co_name"):
        name = ins.argval.co_name
        return _NESTED_CODE.get(name) or (
            "closure",
            f"functions defined inside kernels are not supported ('def {name}'); define it "
            "at module level with @kapi.device_func and call it",
        )
    return None


def screen_code(code):
    """Rejects, at its own line, a construct that Numba's bytecode analysis would reject
    without a usable location or would report as another construct."""
    line = code.co_firstlineno
    for ins in dis.get_instructions(code):
        pos = ins.positions  # Python 3.11+
        line = pos.lineno if pos is not None and pos.lineno else line
        failure = _code_failure(ins)
        if failure is not None:
            construct, message = failure
            raise UnsupportedConstructError(message, code.co_filename, line, construct=construct)


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
