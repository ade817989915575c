"""print() and assert/raise in kernels: KIR `print` and `raise` (docs/kir.md).

print writes its arguments joined by sep (a space) and then end (a newline). Constants
(string literals included) are formatted here by Python; run-time values become `{}` marks of
the KIR template that the compiler formats with printf. assert and raise of a constant
exception become `raise SITE`, where SITE indexes the module's raise sites (exception class,
constant arguments, file, line), which the launch uses to raise on the host.
"""

import numpy as np

from . import values as V
from ._numba import types

_MAX_VALUES = 32  # CUDA's vprintf reads at most 32 arguments

# Characters a KIR string spells with an escape (the lexer knows \\ \" \n \t).
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}


def _kir_string(text):
    return '"' + "".join(_ESCAPES.get(c, c) for c in text) + '"'


def _literal(text):
    """Template text for literal output: braces doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def exception_class(value):
    """The exception class a raise names (a class or an instance's class), or None."""
    cls = value if isinstance(value, type) else type(value)
    return cls if issubclass(cls, BaseException) else None


class PrintRaiseEmitter:
    """Mixed into FunctionEmitter: statements ir.Print and ir.StaticRaise."""

    def _print_items(self, st):
        """(value, its type for messages) of each printed item; print(*t) spreads a tuple."""
        items = [(self.get(var), self.typemap[var.name]) for var in st.args]
        if st.vararg is not None:
            star = self.get(st.vararg)
            if not isinstance(star, V.Tuple):
                raise self.unsupported(
                    "print",
                    f"print(*x) in kernels spreads tuples only, not {self.typemap[st.vararg.name]}",
                )
            items += [(v, getattr(v, "ty", type(v).__name__)) for v in star.items]
        return items

    def print_stmt(self, st):
        parts, values = [], []
        for val, ty in self._print_items(st):
            if isinstance(val, V.Static) and isinstance(val.value, str):
                parts.append(_literal(val.value))
            elif isinstance(val, V.Const):  # formatted by Python, float32 as NumPy shows it
                text = val.value
                if val.ty == types.float32:
                    text = np.float32(text)
                parts.append(_literal(str(text)))
            elif isinstance(val, V.Scalar):
                parts.append("{}")
                values.append(val.ref)
            else:
                raise self.unsupported(
                    "print",
                    f"print takes numbers, booleans, strings and array elements in kernels, "
                    f"not {ty}",
                )
        if len(values) > _MAX_VALUES:
            raise self.unsupported(
                "print",
                f"print takes at most {_MAX_VALUES} run-time values in kernels (CUDA's printf "
                f"limit), not {len(values)}; split it into several prints",
            )
        sep = _literal(getattr(st, "kapi_sep", " "))
        text = sep.join(parts) + _literal(getattr(st, "kapi_end", "\n"))
        if any(ord(c) < 32 and c not in "\n\t" for c in text):
            raise self.unsupported(
                "print",
                "print text in kernels may hold newlines and tabs, no other control characters",
            )
        operands = " ".join([_kir_string(text), *values])
        self.b.emit(f"print {operands}", self.line)
        self.module.prints = True

    def raise_stmt(self, st):
        if st.exc_class is None:
            raise self.unsupported("raise", "a bare 'raise' (re-raise) is not supported in kernels")
        cls = exception_class(st.exc_class)
        if cls is None:
            raise self.unsupported(
                "raise", f"kernels can only raise exceptions, not {st.exc_class!r}"
            )
        args = tuple(st.exc_args or ())
        if any(a is not None and not isinstance(a, str | int | float | bool) for a in args):
            raise self.unsupported(
                "raise", "exceptions raised in kernels take constant arguments only"
            )
        site = self.module.raise_site(cls, args, self.tf.filename, self.line)
        self.b.emit(f"raise {site}", self.line)

    def exception_call(self, e):
        """`ExceptionClass(args)` feeding a raise: the raise statement carries the arguments."""
        fval = self.get(e.func)
        if isinstance(fval, V.Static) and isinstance(fval.value, type):
            if issubclass(fval.value, BaseException):
                return V.Static(None)
        return None
