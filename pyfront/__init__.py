"""pyfront: Python kernel + argument types -> KIR module (docs/kir.md).

Numba's bytecode analysis and type inference (with kapi's own typing registry) produce typed
Numba IR; pyfront walks it and writes KIR. Numba's lowering is never used.

    compile_kernel(pyfunc, argtypes, *, index=("item", ndim) | ("nditem", ndim) | None)
        -> KirModule(.text, .entry, .raises, .prints)

`raises` lists the module's raise sites (exception class, constant arguments, file, line),
indexed by KIR `raise N`; a kernel with any takes the status buffer (docs/kir.md). `prints`
says whether it prints.
"""

import inspect
import threading
from dataclasses import dataclass

from .errors import KernelError, KernelTypingError, UnsupportedConstructError

__all__ = [
    "KernelError",
    "KernelTypingError",
    "KirModule",
    "UnsupportedConstructError",
    "compile_kernel",
]


@dataclass(frozen=True)
class KirModule:
    text: str
    entry: str
    raises: tuple = ()
    prints: bool = False


def _where(pyfunc):
    code = getattr(pyfunc, "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code else (None, None)


def _check_signature(pyfunc, argtypes, index):
    fname, line = _where(pyfunc)
    if fname is None:
        raise UnsupportedConstructError(
            f"{pyfunc!r} is not a Python function; kernels are plain 'def' functions",
            construct="kernel",
        )
    if index is not None:
        if (
            not isinstance(index, tuple)
            or len(index) != 2
            or index[0] not in ("item", "nditem")
            or index[1] not in (1, 2, 3)
        ):
            raise ValueError(f"index must be ('item'|'nditem', 1..3) or None, not {index!r}")
    params = list(inspect.signature(pyfunc).parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise UnsupportedConstructError(
            "kernel parameters must be plain positional parameters (no *args, **kwargs or "
            "keyword-only)",
            fname,
            line,
            construct="parameters",
        )
    want = len(argtypes) + (index is not None)
    if len(params) != want:
        extra = " plus the item/nd_item parameter" if index is not None else ""
        raise KernelTypingError(
            f"kernel '{pyfunc.__name__}' has {len(params)} parameters but {len(argtypes)} "
            f"argument types were given{extra}",
            fname,
            line,
            construct="arguments",
        )
    return [p.name for p in params[1 if index is not None else 0 :]]


# Numba's typing machinery and pyfront's typing context are shared, process-wide state.
_lock = threading.RLock()


def compile_kernel(
    pyfunc,
    argtypes,
    *,
    index=None,
    boundscheck=False,
    max_registers=None,
    fastmath=frozenset(),
    group_size=None,
):
    """Compile `pyfunc` for `argtypes` (KIR type strings, without the index parameter).

    With `boundscheck`, every array element access checks its indices and raises IndexError
    (KIR `raise`) when one is out of range. `max_registers` (an int) becomes the kernel's
    KIR attribute of that name: a cap on registers per work-item for GPU back ends.
    `fastmath` (a set of LLVM fast-math flag names, already checked) becomes the kernel's KIR
    `fastmath` attribute, and that of each device function it calls that sets none itself
    (`__kapi_device_fastmath__`: None inherits the caller's flags, as in Numba).
    `group_size` (three ints, already checked) becomes the kernel's KIR `group_size`
    attribute: the work-group size every launch must have.

    Thread-safe (compilations are serialised). Raises KernelError subclasses for bad kernels
    and ValueError for a malformed `index`.
    """
    with _lock:
        return _compile(pyfunc, argtypes, index, boundscheck, max_registers, fastmath, group_size)


def _compile(
    pyfunc,
    argtypes,
    index,
    boundscheck=False,
    max_registers=None,
    fastmath=frozenset(),
    group_size=None,
):
    from .ktypes import parse_type
    from .module import ModuleEmitter

    names = _check_signature(pyfunc, argtypes, index)
    fname, line = _where(pyfunc)
    ntypes = []
    for name, text in zip(names, argtypes, strict=True):
        try:
            ntypes.append(parse_type(text) if isinstance(text, str) else _not_a_string(text))
        except ValueError as e:
            raise KernelTypingError(
                f"argument '{name}': {e}", fname, line, construct="argument"
            ) from None
    emitter = ModuleEmitter(boundscheck, max_registers, fastmath, group_size)
    entry, text = emitter.compile(pyfunc, ntypes, index)
    return KirModule(text, entry, tuple(emitter.raises), emitter.prints)


def _not_a_string(value):
    raise ValueError(f"argument types are KIR type strings, not {type(value).__name__}")
