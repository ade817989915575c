"""Typing of kernels and device functions through Numba's front end.

One typing context per process (built on first use). Device functions met during typing are
typed here too and remembered per compilation, so emission finds their typed IR. Numba's
exceptions are turned into KernelErrors at the kernel's file:line.
"""

import re
from dataclasses import dataclass

from . import _numba as nb
from .errors import KernelError, KernelTypingError, UnsupportedConstructError
from .typing_registry import KapiTypingContext


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
    msg = str(getattr(err, "msg", err))
    lines = []
    for line in msg.splitlines():
        s = line.strip()
        if not s:
            if lines:
                break
            continue
        if s.startswith(("File ", "During:", "<source", "^", "- Resolution failure")):
            break
        lines.append(s)
    text = " ".join(lines) or type(err).__name__
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # Numba colours its messages
    return text[:400]


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
        try:
            func_ir, typemap, restype, calltypes = nb.front_end(pyfunc, argtypes, self.context())
        except KernelError as e:
            raise e.located(fname, fline) from None
        except nb.NumbaError as e:
            raise _translate(e, fname, fline) from None
        except (TypeError, ValueError, NotImplementedError, AssertionError, KeyError) as e:
            raise UnsupportedConstructError(
                f"Numba's front end cannot analyse this function ({type(e).__name__}: {e})",
                fname,
                fline,
                construct="python",
            ) from None
        return TypedFunction(pyfunc, tuple(argtypes), func_ir, typemap, restype, calltypes)


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
    if "try" in low and "except" in low or "exception" in low and "unsupported" in low:
        return UnsupportedConstructError(
            "try/except is not supported in kernels", filename, lineno, construct="try"
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
        return UnsupportedConstructError(
            f"{text}; kernels may call math functions, kapi API functions and device functions",
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
