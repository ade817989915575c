"""Typing of kernels and device functions through Numba's front end.

One typing context per process (built on first use). Device functions met during typing are
typed here too and remembered per compilation, so emission finds their typed IR. Numba's
exceptions are turned into KernelErrors at the kernel's file:line.
"""

import linecache
import re
from dataclasses import dataclass

from . import _numba as nb
from .errors import KernelError, KernelTypingError, UnsupportedConstructError
from .ktypes import IndexSpaceType
from .literals import fold_literal_getattr
from .screen import screen, screen_code
from .typing_registry import MARK, KapiTypingContext


@dataclass
class TypedFunction:
    pyfunc: object
    argtypes: tuple
    func_ir: object
    typemap: dict
    restype: object
    calltypes: dict
    name: str = ""

    @property
    def filename(self):
        return self.func_ir.loc.filename

    @property
    def lineno(self):
        return self.func_ir.loc.line


_UNSUPPORTED_PATTERNS = (
    (re.compile(r"reflected list|list\(|List\(|build_list"), "list"),
    (re.compile(r"DictType|dict\(|build_map"), "dict"),
    (re.compile(r"set\("), "set"),
    (re.compile(r"unicode_type|Literal\[str\]|StringLiteral|\bstr\b"), "string"),
    (re.compile(r"print"), "print"),
)


def _short_message(err):
    """The useful first lines of a Numba error message, without its source excerpt."""
    msg = re.sub(r"\x1b\[[0-9;]*m", "", str(err))  # Numba colours its messages
    if MARK in msg:
        return msg.rsplit(MARK, 1)[1].splitlines()[0].strip()
    m = re.search(r"No implementation of function .*? found for signature:\s*>>> ([^\n]+)", msg)
    if m:
        return f"{m.group(1).strip()} is not supported for these argument types"
    lines = []
    for line in msg.splitlines():
        s = line.strip()
        if not s or s.startswith("- Resolution failure"):
            if lines:
                break
            continue
        if s.startswith(("File ", "During:", "<source", "^")):
            break
        lines.append(s)
    return (" ".join(lines) or type(err).__name__)[:400]


class Typer:
    """Types one kernel and the device functions it reaches."""

    _context = None

    def __init__(self):
        self.done = {}  # (pyfunc, argtypes) -> TypedFunction, device functions included
        self.order = []  # device functions in the order they were typed
        self._stack = []

    @classmethod
    def context(cls):
        if cls._context is None:
            cls._context = KapiTypingContext(_CurrentTyper.type_device_function)
            cls._context.refresh()
        return cls._context

    def type_function(self, pyfunc, argtypes):
        key = (pyfunc, tuple(argtypes))
        if key in self.done:
            return self.done[key]
        if any(f is pyfunc for f in self._stack):
            code = pyfunc.__code__
            raise UnsupportedConstructError(
                f"recursion: device function '{pyfunc.__name__}' calls itself (directly or "
                "through other device functions); rewrite it as a loop",
                code.co_filename,
                code.co_firstlineno,
                construct="recursion",
            )
        self._stack.append(pyfunc)
        prev = _CurrentTyper.current
        _CurrentTyper.current = self
        try:
            tf = self._run(pyfunc, argtypes)
        finally:
            _CurrentTyper.current = prev
            self._stack.pop()
        self.done[key] = tf
        if len(self._stack) > 0:
            self.order.append(tf)
        return tf

    def _run(self, pyfunc, argtypes):
        code = getattr(pyfunc, "__code__", None)
        if code is None:
            raise UnsupportedConstructError(
                f"{pyfunc!r} is not a Python function", construct="non-function kernel"
            )
        fname, fline = code.co_filename, code.co_firstlineno
        screen_code(code)
        try:
            func_ir, typemap, restype, calltypes = nb.front_end(
                pyfunc, argtypes, self.context(), _prepare
            )
        except KernelError as e:
            raise e.located(fname, fline) from None
        except nb.NumbaError as e:
            err = _translate(e, fname, fline)
            if isinstance(err, KernelTypingError):
                err.message += _arguments_on_line(pyfunc, argtypes, err)
            raise err from None
        except Exception as e:  # Numba internals: never let them escape
            raise UnsupportedConstructError(
                f"Numba's front end cannot analyse this function ({type(e).__name__}: {e})",
                fname,
                fline,
                construct="python",
            ) from None
        return TypedFunction(pyfunc, tuple(argtypes), func_ir, typemap, restype, calltypes)


def _prepare(func_ir):
    """The untyped IR's rewrites and checks before typing."""
    fold_literal_getattr(func_ir)
    screen(func_ir)


def _arguments_on_line(pyfunc, argtypes, err):
    """' (argument 'x' is float32)' for the parameters that the failing source line mentions
    and whose type the message names: the argument the error is about, never a bystander.
    An unknown attribute names only the parameters the line takes that attribute of."""
    if err.filename != pyfunc.__code__.co_filename or not err.lineno:
        return ""
    line = linecache.getline(err.filename, err.lineno)
    names = set(re.findall(r"[A-Za-z_]\w*", line))
    attr = re.match(r"Unknown attribute '(\w+)'", err.message)
    if attr:
        names &= set(re.findall(rf"([A-Za-z_]\w*)\s*\.\s*{attr.group(1)}\b", line))
    params = pyfunc.__code__.co_varnames[: pyfunc.__code__.co_argcount]
    used = [
        f"'{p}' is {t}"
        for p, t in zip(params, argtypes, strict=False)
        if p in names and not isinstance(t, IndexSpaceType) and str(t) in err.message
    ]
    return f" (argument {', '.join(used)})" if used else ""


def _translate(err, fname, fline):
    loc = getattr(err, "loc", None)
    filename = getattr(loc, "filename", None) or fname
    lineno = getattr(loc, "line", None) or fline
    text = _short_message(err)
    low = text.lower()
    if "generator" in low or "yield" in low:
        return UnsupportedConstructError(
            "generators are not supported in kernels", filename, lineno, construct="generator"
        )
    if "try_block" in low or "try" in low and "except" in low:
        return UnsupportedConstructError(
            "try/except is not supported in kernels", filename, lineno, construct="try"
        )
    if "unsupported numpy function" in low:
        return UnsupportedConstructError(
            f"{text}; kernels may call math functions, numpy scalar types, the kapi API and "
            "device functions",
            filename,
            lineno,
            construct="call",
        )
    if isinstance(err, nb.UnsupportedError):
        return UnsupportedConstructError(
            f"unsupported construct: {text}", filename, lineno, construct="python"
        )
    for pat, construct in _UNSUPPORTED_PATTERNS:
        if pat.search(text):
            return UnsupportedConstructError(
                f"{construct}s are not supported in kernels ({text})",
                filename,
                lineno,
                construct=construct,
            )
    if "untyped global name" in low or "cannot determine numba type" in low:
        hint = ""
        if "<class 'function'>" in text:
            hint = " (decorate a Python helper with @kapi.device_func to call it from a kernel)"
        return UnsupportedConstructError(
            f"{text}; kernels may call math functions, kapi API functions and device "
            f"functions{hint}",
            filename,
            lineno,
            construct="call",
        )
    return KernelTypingError(text, filename, lineno, construct="typing")


class _CurrentTyper:
    """Routes device-function typing from the shared context to the active Typer."""

    current = None

    @staticmethod
    def type_device_function(pyfunc, argtypes):
        typer = _CurrentTyper.current
        if typer is None:
            typer = Typer()
        return typer.type_function(pyfunc, argtypes).restype
