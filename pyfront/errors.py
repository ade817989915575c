"""Kernel errors: every problem in a kernel is reported at the kernel's own file:line.

str(err) reads "file:line: error: what, and what to do"; no Numba traceback is attached.
"""


class KernelError(Exception):
    """A kernel that pyfront cannot compile. `.construct` names the offending construct."""

    def __init__(self, message, filename=None, lineno=None, construct=None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.construct = construct
        super().__init__(message)

    def located(self, filename, lineno):
        """Fill in a location if none is known yet; returns self for `raise err.located(..)`."""
        if self.filename is None:
            self.filename, self.lineno = filename, lineno
        return self

    def __str__(self):
        where = f"{self.filename or '<unknown>'}:{self.lineno or 0}"
        return f"{where}: error: {self.message}"


class UnsupportedConstructError(KernelError):
    """A Python construct with no kernel meaning (lists, strings, exceptions, recursion...)."""


class KernelTypingError(KernelError):
    """Typing failed: an operation on types it does not accept, or a bad argument type."""


class KernelHasReturnValueError(KernelTypingError):
    """A kernel returns a value (kapi re-raises it as kapi.KernelHasReturnValueError)."""
