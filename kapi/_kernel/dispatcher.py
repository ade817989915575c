"""@kernel and @device_func: the kernel dispatcher, its specialisations and their inspection.

A KernelDispatcher owns one Python function and a cache of CompiledKernel objects keyed by
(index space kind, argument KIR types). A new key compiles once: pyfront -> KIR -> compiler
(C) -> LLVM IR + SPIR-V. Device programs built from the SPIR-V are cached per device inside
each CompiledKernel by the launch path. The disk cache (kapi/_cache/store.py) sits in front of both:
a specialisation it holds skips the front end and the compiler, a device program it holds
skips the driver's build.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import warnings

from .. import _native
from .._cache import store as _cache
from .._errors import (
    InvalidKernelSpecializationError,
    KapiError,
    KernelCallError,
    KernelHasReturnValueError,
    MissingSpecializationError,
    UnsupportedKernelArgumentError,
    from_status,
)
from .numba_sig import is_numba_signature, numba_signature_parts
from .ranges import NdRange, Range

_MISSING_WITH_TYPING_ERROR: list[type] = []


def missing_specialization(message: str) -> Exception:
    """A MissingSpecializationError that `except numba.core.errors.TypingError` (numba-dpex's
    class for a call matching no declared signature) catches too. Numba is imported here, on
    an error path, never at `import kapi`."""
    try:
        from numba.core.errors import TypingError
    except ImportError:  # pragma: no cover - Numba is a dependency of the compiler
        return MissingSpecializationError(message)
    if not _MISSING_WITH_TYPING_ERROR:
        cls = type(
            "MissingSpecializationError",
            (MissingSpecializationError, TypingError),
            {"__module__": "kapi", "__doc__": MissingSpecializationError.__doc__},
        )
        _MISSING_WITH_TYPING_ERROR.append(cls)
    return _MISSING_WITH_TYPING_ERROR[0](message)


# kapi/_kernel/types.py (which imports NumPy) is imported where a signature is parsed or printed:
# @kapi.kernel on a function without signatures does not import NumPy.

_DEFAULT_OPT = 2


def _dump_flags() -> frozenset[str]:
    v = os.environ.get("KAPI_DUMP", "")
    return frozenset(p.strip().lower() for p in v.split(",") if p.strip())


class CompiledKernel:
    """One specialisation: its KIR, LLVM IR and SPIR-V, and per-device native kernels."""

    __slots__ = (
        "dispatcher",
        "index",
        "argtypes",
        "entry",
        "kir",
        "llvm_ir",
        "spirv",
        "device_kernels",
        "raises",
        "prints",
        "cache_key",
        "__weakref__",
    )

    def __init__(
        self, dispatcher, index, argtypes, entry, kir, llvm_ir, spirv, raises=(), prints=False
    ):
        self.dispatcher = dispatcher
        self.index = index
        self.argtypes = argtypes
        self.entry = entry
        self.kir = kir
        self.llvm_ir = llvm_ir
        self.spirv = spirv
        self.device_kernels = {}  # device key -> native kernel handle (filled by the launcher)
        self.raises = raises  # assert/raise sites: (class, args, file, line); see docs/kir.md
        self.prints = prints
        self.cache_key = None  # the disk cache's key (kapi/_cache/store.py), None when not cached

    def _raise_failure(self, site, ndim, x, y, z, v0=0, v1=0):
        """Raises what the kernel's assert or raise at `site` recorded for the first failing
        work-item (called by the launch path once the launch has completed). v0, v1: the
        values the raise recorded (a bounds check's index and extent)."""
        cls, args, filename, line = self.raises[site]
        gid = (x, y, z)[: max(1, ndim)]
        where = f"{filename}:{line}: in kernel '{self.dispatcher.__name__}', work-item {gid}"
        if len(args) == 2 and args[0] == BOUNDS_SITE:  # pyfront/emit_bounds.py's message
            args = (args[1].format(index=v0, extent=v1),)
        msg = _exception_text(cls, args)
        if cls is AssertionError:
            text = f"{where}: assertion failed" + (f": {msg}" if msg else "")
        else:
            text = f"{msg} ({where})" if msg else where
        try:
            exc = cls(text)
        except Exception:  # a user class whose constructor wants other arguments
            exc = KapiError(f"{cls.__name__}: {text}")
        exc.kernel_file, exc.kernel_line, exc.work_item = filename, line, gid
        raise exc

    @property
    def signature(self) -> str:
        from .types import format_signature

        return format_signature(self.index, self.argtypes)

    def _prepare_device(self, device_index: int) -> None:
        """Called by the launcher before this kernel's first use on a device (disk cache)."""
        if self.cache_key is not None:
            _cache.native_prepare(self, device_index)

    def disassemble(self) -> str:
        return _native.ext().spirv_disassemble(self.spirv)

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.dispatcher.__name__}{self.signature}>"


# The first argument of a bounds check's raise site: the second is a message with {index} and
# {extent}, filled from the values the failing work-item recorded (pyfront/emit_bounds.py).
BOUNDS_SITE = "kapi.boundscheck"


def _exception_text(cls, args) -> str:
    """str() of the exception a kernel raises, as Python would show it."""
    try:
        return str(cls(*args))
    except Exception:
        return ", ".join(map(str, args))


def _boundscheck(option) -> bool:
    """Whether a kernel checks its array indices: the boundscheck option when given (Numba's
    name), else KAPI_BOUNDSCHECK (Numba's NUMBA_BOUNDSCHECK): 1 on, 0 or unset off. Read once,
    when the kernel is decorated: it is part of every specialisation the kernel compiles."""
    if option is not None:
        return bool(option)
    env = os.environ.get("KAPI_BOUNDSCHECK", "").strip()
    if env not in ("", "0", "1"):
        raise ValueError(f"KAPI_BOUNDSCHECK must be 0 or 1, not {env!r}")
    return env == "1"


# ptxas's range for a per-entry register cap (.maxnreg, -maxrregcount); KIR checks it too.
MIN_REGISTERS, MAX_REGISTERS = 16, 255


def _max_registers(option) -> int | None:
    """The max_registers option (numba-cuda's name): None, or an int in 16..255 that caps the
    registers per work-item on GPUs that have such a cap (kapi's CUDA driver); other devices
    accept and ignore it."""
    if option is None:
        return None
    if isinstance(option, bool) or not hasattr(option, "__index__"):
        raise TypeError(f"max_registers must be an int, not {type(option).__name__}")
    option = option.__index__()
    if not MIN_REGISTERS <= option <= MAX_REGISTERS:
        raise ValueError(
            f"max_registers must be {MIN_REGISTERS}..{MAX_REGISTERS} (registers per work-item), "
            f"not {option}"
        )
    return int(option)


# The largest extent of required_group_size in one dimension (KIR's group_size checks it too).
MAX_GROUP_EXTENT = 65536


def _required_group_size(option) -> tuple[int, int, int] | None:
    """The required_group_size option: None, or the work-group size (an int, or 1 to 3 ints
    in the order of an NdRange's local size) that every launch of the kernel must have, as
    SYCL's reqd_work_group_size; padded with 1s to three. A launch with another size is
    refused. On NVIDIA GPUs a size whose work-items are a multiple of 32 lets the sub-group
    operations name all 32 lanes of a warp, without a check for partial warps."""
    if option is None:
        return None
    dims = option if isinstance(option, tuple) else (option,)
    if not 1 <= len(dims) <= 3 or any(
        isinstance(d, bool) or not hasattr(d, "__index__") for d in dims
    ):
        raise TypeError(
            f"required_group_size must be an int or a tuple of 1 to 3 ints, not {option!r}"
        )
    dims = tuple(int(d.__index__()) for d in dims)
    if any(not 1 <= d <= MAX_GROUP_EXTENT for d in dims):
        raise ValueError(
            f"required_group_size must be 1..{MAX_GROUP_EXTENT} in each dimension, not {option!r}"
        )
    return dims + (1,) * (3 - len(dims))


# LLVM's fast-math flags, the names Numba and numba-cuda accept in `fastmath={...}`.
FASTMATH_FLAGS = frozenset(("fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"))


def _fastmath(option) -> frozenset:
    """The fastmath option as Numba reads it: True is {'fast'} (every flag), False or None
    none, a set (or frozenset) of flag names, or a dict of flag name -> bool. A name that is
    no LLVM fast-math flag is a ValueError naming it."""
    if option is None or option is False:
        return frozenset()
    if option is True:
        return frozenset(("fast",))
    if isinstance(option, dict):
        names, flags = set(option), {k for k, on in option.items() if on}
    elif isinstance(option, (set, frozenset)):
        names = flags = set(option)
    else:
        raise ValueError(
            f"fastmath must be a bool, a set or a dict of flag names, not {type(option).__name__}"
        )
    bad = sorted(repr(n) for n in names if n not in FASTMATH_FLAGS)
    if bad:
        raise ValueError(
            f"unrecognized fastmath flag{'s' if len(bad) > 1 else ''} {', '.join(bad)}: "
            f"the flags are {', '.join(sorted(FASTMATH_FLAGS))}"
        )
    return frozenset(flags)


def _compile_kir(text: str, opt_level: int):
    native = _native.ext()
    try:
        return native.compile_kir(text, opt_level)
    except native.CompileError as e:
        status = _native.compile_status_name(getattr(e, "status", None))
        raise from_status(status, str(e)) from None


_KERNEL_ERRORS: dict[tuple, type] = {}

# Prefix of the type key of a read-only NumPy array argument (kapi/_kernel/launch.py adds it).
READONLY_MARK = "readonly "
# KIR instructions that only read an array operand; any other use may store through it.
_READ_ONLY_OPS = frozenset(("aload", "atomic_load", "dim", "stride", "wrapidx"))


def stored_params(kir: str, entry: str) -> set[int]:
    """Positions of the array parameters of kernel `entry` that its KIR may write: stores
    and atomics on them, or any use but a read (device function calls included)."""
    lines = iter(kir.splitlines())
    for line in lines:
        if line.startswith(f"kernel @{entry}("):
            break
    else:
        return set(range(256))  # unknown: every parameter may be written
    head = line[line.index("(") + 1 : line.rindex(") ->")]
    names = {m.group(1): i for i, m in enumerate(re.finditer(r"(%[\w.]+): ", head))}
    written: set[int] = set()
    for line in lines:
        if line.startswith("}"):
            break
        words = line.split("#")[0].split()
        if len(words) > 1 and words[1] == "=":
            words = words[2:]
        if not words or words[0] in _READ_ONLY_OPS:
            continue
        written.update(names[w] for w in words[1:] if w in names)
    return written


def _as_kapi_error(e):
    """pyfront's error, re-classed to also derive from KapiError: `except kapi.KapiError`
    then catches kernel typing errors too, and `except pyfront.KernelTypingError` still works.
    It is a Numba TypingError as well: numba-dpex compiled kernels inside call_kernel, so its
    kernel errors reached users as TypingErrors (pyfront has imported Numba by now)."""
    from numba.core.errors import TypingError

    cls = type(e)
    returns = (
        getattr(e, "construct", None) == "return value"
        or cls.__name__ == "KernelHasReturnValueError"
    )
    k = _KERNEL_ERRORS.get((cls, returns))
    if k is None:  # a kernel returning a value is numba-dpex's KernelHasReturnValueError
        bases = (cls, KernelHasReturnValueError if returns else KapiError, TypingError)
        k = _KERNEL_ERRORS[(cls, returns)] = type(cls.__name__, bases, {"__module__": "kapi"})
    new = k.__new__(k)
    new.__dict__.update(e.__dict__)
    new.args = e.args
    return new


def _pyfront_compile(
    pyfunc,
    argtypes,
    index,
    boundscheck=False,
    max_registers=None,
    fastmath=frozenset(),
    group_size=None,
):
    import pyfront

    try:
        return pyfront.compile_kernel(
            pyfunc,
            list(argtypes),
            index=index,
            boundscheck=boundscheck,
            max_registers=max_registers,
            fastmath=fastmath,
            group_size=group_size,
        )
    except pyfront.KernelError as e:
        raise _as_kapi_error(e) from None


class KernelDispatcher:
    """What @kapi.kernel returns. Launch it with kapi.call_kernel(kernel, range, *args)."""

    def __init__(self, pyfunc, signatures=None, options=None):
        if not inspect.isfunction(pyfunc):
            raise ValueError(
                f"@kapi.kernel decorates a Python function, not {type(pyfunc).__name__}"
            )
        self.py_func = pyfunc
        self.__name__ = pyfunc.__name__
        self.__qualname__ = pyfunc.__qualname__
        self.__doc__ = pyfunc.__doc__
        self.__module__ = pyfunc.__module__
        self.__wrapped__ = pyfunc
        self.options = dict(options or {})
        if "_compilation_mode" in self.options:
            warnings.warn(
                "the _compilation_mode option is internal and ignored", UserWarning, stacklevel=3
            )
            self.options.pop("_compilation_mode")
        opt = self.options.get("opt_level")
        if opt is None:
            opt = int(os.environ.get("KAPI_OPT", _DEFAULT_OPT))
        if self.options.get("debug"):
            opt = 0
        if not 0 <= int(opt) <= 3:
            raise ValueError(f"opt_level must be 0..3, got {opt}")
        self.opt_level = int(opt)
        self.boundscheck = _boundscheck(self.options.get("boundscheck"))
        self.max_registers = _max_registers(self.options.get("max_registers"))
        self.fastmath = _fastmath(self.options.get("fastmath"))
        self.required_group_size = _required_group_size(self.options.get("required_group_size"))
        params = inspect.signature(pyfunc).parameters.values()
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params):
            raise InvalidKernelSpecializationError(
                f"kernel {pyfunc.__name__} must take positional parameters only"
            )
        self.nparams = len(inspect.signature(pyfunc).parameters)
        self.overloads: dict[tuple, CompiledKernel] = {}
        self._launcher = None  # the native launcher (kapi/_kernel/launch.py creates it)
        self._signatures = None
        self._cache_refusal = None  # why the disk cache refused this kernel (KAPI_DEBUG=cache)
        if signatures is not None:
            self._set_signatures(signatures)

    # -- signatures and compilation ------------------------------------------------------

    def _set_signatures(self, signatures):
        from .types import parse_signature

        for s in signatures if isinstance(signatures, list) else [signatures]:
            if is_numba_signature(s) and numba_signature_parts(s)[1] is not None:
                raise KernelHasReturnValueError(
                    f'Specialized kernel signature "{s}" has a return value of type '
                    f'"{s.return_type}". A kernel must have a void return type.'
                )
        if isinstance(signatures, list):
            sigs = [parse_signature(s) for s in signatures]
        else:
            sigs = [parse_signature(signatures)]
        self._signatures = frozenset(argtypes for _, argtypes in sigs)
        for index, argtypes in sigs:
            # a signature may leave out the item/nd_item type: the launch supplies it, and
            # the kernel compiles then (the signature still restricts the argument types)
            implied = index is None and self.nparams == len(argtypes) + 1
            self._check_arity(len(argtypes), index is not None or implied)
            if index is not None or not implied:  # a kernel without an item argument too
                self.compile(argtypes, index)

    def _check_arity(self, nargs: int, with_index: bool) -> None:
        want = nargs + (1 if with_index else 0)
        if self.nparams != want:
            raise InvalidKernelSpecializationError(
                f"kernel {self.__name__} takes {self.nparams} parameter(s) but the signature "
                f"gives {want}"
            )

    @property
    def compile_enabled(self) -> bool:
        return self._signatures is None

    def compile(self, argtypes, index=None) -> CompiledKernel:
        """Compiles (once) the specialisation for KIR argument types and index space.

        `index` is ("item", ndim), ("nditem", ndim) or None (kernel without an item argument).
        """
        from .types import declared_match, format_signature, without_local_shapes

        argtypes = tuple(argtypes)
        key = (index, argtypes)
        ck = self.overloads.get(key)
        if ck is not None:
            return ck
        if self._signatures is not None and argtypes not in self._signatures:
            # a LocalAccessor launch names its shape; a declared signature may leave it out
            dynamic = without_local_shapes(argtypes)
            if dynamic in self._signatures:
                return self.compile(dynamic, index)
            declared = declared_match(dynamic, self._signatures)
            if declared is not None:
                return self.compile(declared, index)
            known = ", ".join(sorted(format_signature(None, s) for s in self._signatures))
            raise missing_specialization(
                f"kernel {self.__name__} was declared with signatures {known}; it cannot be "
                f"called with {format_signature(None, argtypes)}. Add that signature to "
                f"@kapi.kernel or convert the arguments"
            )
        disk_key, hit = _cache.spirv_lookup(self, index, argtypes)
        if hit is not None:  # no front end, no LLVM: the disk cache had it
            ck = CompiledKernel(
                self,
                index,
                argtypes,
                hit["entry"],
                hit["kir"],
                hit["llvm_ir"],
                hit["spirv"],
                hit["raises"],
                hit["prints"],
            )
        else:
            mod = _pyfront_compile(
                self.py_func,
                argtypes,
                index,
                self.boundscheck,
                max_registers=self.max_registers,
                fastmath=self.fastmath,
                group_size=self.required_group_size,
            )
            entry, llvm_ir, spirv = _compile_kir(mod.text, self.opt_level)
            raises, prints = getattr(mod, "raises", ()), getattr(mod, "prints", False)
            ck = CompiledKernel(
                self, index, argtypes, entry, mod.text, llvm_ir, spirv, raises, prints
            )
            _cache.spirv_store(disk_key, ck)
        ck.cache_key = disk_key
        self.overloads[key] = ck
        _dump(ck)
        return ck

    def _specialize(self, index, argtypes) -> CompiledKernel:
        """Called by the native launcher on a dispatch-cache miss."""
        readonly = [i for i, t in enumerate(argtypes) if t.startswith(READONLY_MARK)]
        if readonly:
            argtypes = tuple(t.removeprefix(READONLY_MARK) for t in argtypes)
        ck = self.compile(argtypes, tuple(index) if index is not None else None)
        written = stored_params(ck.kir, ck.entry)
        for i in readonly:
            if i in written:
                raise UnsupportedKernelArgumentError(
                    f"kernel argument {i} of {self.__name__} is a read-only NumPy array, and "
                    f"the kernel may write to it; pass a writable copy (numpy.array(x)) or "
                    f"set x.flags.writeable = True if the memory allows it"
                )
        return ck

    # -- inspection (as Numba's dispatchers: a dict without a signature) -------------------

    def _find(self, signature) -> CompiledKernel:
        from .types import format_signature, parse_signature

        if isinstance(signature, CompiledKernel):
            return signature
        index, argtypes = parse_signature(signature)
        for (idx, at), ck in self.overloads.items():
            if at == argtypes and (index is None or idx == index):
                return ck
        if index is not None or self.nparams == len(argtypes):
            return self.compile(argtypes, index)
        known = ", ".join(ck.signature for ck in self.overloads.values()) or "none yet"
        raise KeyError(
            f"kernel {self.__name__} has no specialisation {format_signature(index, argtypes)} "
            f"(compiled: {known}); give the index space as the first entry, e.g. 'item(1)'"
        )

    def _inspect(self, what, signature):
        if signature is not None:
            return what(self._find(signature))
        return {ck.signature: what(ck) for ck in self.overloads.values()}

    def inspect_kir(self, signature=None):
        """KIR text of one specialisation, or {signature: text} of all compiled ones."""
        return self._inspect(lambda ck: ck.kir, signature)

    def inspect_llvm(self, signature=None):
        """Optimised LLVM IR (text) before SPIR-V emission."""
        return self._inspect(lambda ck: ck.llvm_ir, signature)

    def inspect_spirv(self, signature=None):
        """The SPIR-V module (bytes) handed to the devices."""
        return self._inspect(lambda ck: ck.spirv, signature)

    def inspect_asm(self, signature=None):
        """SPIR-V disassembly (SPIRV-Tools) as text."""
        return self._inspect(lambda ck: ck.disassemble(), signature)

    inspect_spirv_asm = inspect_asm

    @property
    def signatures(self) -> list[str]:
        return [ck.signature for ck in self.overloads.values()]

    # -- what numba-dpex forbids -------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        raise KernelCallError(
            f"kernel {self.__name__} cannot be called like a Python function; launch it with "
            f"kapi.call_kernel({self.__name__}, kapi.Range(...), *args) "
            f"(or kapi.NdRange(global, local) for work-groups)"
        )

    def __getitem__(self, index_space):
        raise KernelCallError(_bracket_launch_advice(self.__name__, index_space))

    def __repr__(self) -> str:
        return f"<kapi kernel {self.__qualname__}>"


def _extents(v):
    """v as a tuple of ints (an int or a plain tuple/list of ints), else None."""
    v = (v,) if isinstance(v, int) else v
    if type(v) in (tuple, list) and 1 <= len(v) <= 3 and all(isinstance(x, int) for x in v):
        return tuple(v)
    return None


def _sizes(t: tuple) -> str:
    return str(t[0]) if len(t) == 1 else str(t)


def _bracket_launch_advice(name: str, index_space) -> str:
    """The message for `k[...](...)`: the call_kernel that means what the brackets meant."""
    head = f"kernel {name}[...](...): kernels are launched with kapi.call_kernel, not brackets"
    call = f"kapi.call_kernel({name}, {{}}, *args)"
    if isinstance(index_space, Range | NdRange):
        return f"{head}; use {call.format('kapi.' + repr(index_space))}"
    if type(index_space) is tuple and len(index_space) == 2:
        grid, block = (_extents(v) for v in index_space)
        if grid and block and len(grid) == len(block):
            total = tuple(g * b for g, b in zip(grid, block, strict=True))
            nd = call.format(f"kapi.NdRange({_sizes(total)}, {_sizes(block)})")
            msg = (
                f"{head}. For numba-cuda's {name}[blocks, threads] (blocks={_sizes(grid)}, "
                f"threads={_sizes(block)}) use {nd}: NdRange takes the global size "
                f"(blocks * threads) and the work-group size"
            )
            if all(g % b == 0 for g, b in zip(grid, block, strict=True)):
                old = call.format(f"kapi.NdRange({_sizes(grid)}, {_sizes(block)})")
                msg += f". numba-dpex's older {name}[global_size, local_size] is {old}"
            return msg
        return f"{head}; use {call.format('kapi.NdRange(global_size, local_size)')}"
    ext = _extents(index_space)
    if ext is not None:
        return f"{head}; use {call.format('kapi.' + repr(Range(*ext)))}"
    return f"{head}; use {call.format('kapi.Range(...)')} or kapi.NdRange(global, local)"


def _dump(ck: CompiledKernel) -> None:
    flags = _dump_flags()
    if not flags:
        return
    name = f"{ck.dispatcher.__name__}{ck.signature}"
    out = sys.stderr
    if "kir" in flags or "all" in flags:
        out.write(f"---- KIR {name} ----\n{ck.kir}\n")
    if "llvm" in flags or "all" in flags:
        out.write(f"---- LLVM IR {name} ----\n{ck.llvm_ir}\n")
    if "spirv" in flags or "all" in flags:
        out.write(f"---- SPIR-V {name} ----\n{ck.disassemble()}\n")
    out.flush()


def kernel(function_or_signature=None, **options):
    """Decorator: compile a Python function as a kernel.

    Forms: `@kernel`, `@kernel(opt_level=3)`, `@kernel(signature)` and
    `@kernel([signature, ...], **options)`. A signature is a tuple of KIR types or NumPy
    dtypes, optionally led by the index space ("item(1)", "nditem(2)"), or a string such as
    "(item(1), array(f32,1), f32)". With signatures the kernel compiles eagerly where the index
    space is given, and calls with other argument types are errors. `cache=False` keeps this
    kernel out of the disk cache (docs/guide/environment.md, "Disk cache").
    """
    if inspect.isfunction(function_or_signature):
        return KernelDispatcher(function_or_signature, None, options)
    if function_or_signature is not None and not _is_signature(function_or_signature):
        raise ValueError(
            f"@kapi.kernel takes a function or a signature, not "
            f"{type(function_or_signature).__name__}"
        )
    signatures = function_or_signature

    def wrap(pyfunc):
        return KernelDispatcher(pyfunc, signatures, options)

    return wrap


def device_func(function_or_signature=None, **options):
    """Decorator: a function callable from kernels (and from other device functions).

    The function itself is returned, marked for pyfront, so it stays callable from Python.
    Signatures are accepted for numba-dpex compatibility; device functions are specialised
    (and inlined) at each call site anyway.
    """

    def mark(pyfunc):
        if not inspect.isfunction(pyfunc):
            raise ValueError(
                f"@kapi.device_func decorates a Python function, not {type(pyfunc).__name__}"
            )
        pyfunc.__kapi_device_func__ = True
        pyfunc.__kapi_device_options__ = dict(options)
        # None: the caller's flags (Numba's rule: a callee without the option inherits it)
        fm = options.get("fastmath")
        pyfunc.__kapi_device_fastmath__ = None if "fastmath" not in options else _fastmath(fm)
        if function_or_signature is not None:
            from .types import parse_signature

            sigs = function_or_signature
            sigs = sigs if isinstance(sigs, list) else [sigs]
            pyfunc.__kapi_device_signatures__ = [parse_signature(s)[1] for s in sigs]
            pyfunc.__kapi_device_restypes__ = [_declared_return(s) for s in sigs]
        return pyfunc

    if inspect.isfunction(function_or_signature):
        f, function_or_signature = function_or_signature, None
        return mark(f)
    if function_or_signature is not None and not _is_signature(function_or_signature):
        raise ValueError(
            f"@kapi.device_func takes a function or a signature, not "
            f"{type(function_or_signature).__name__}"
        )
    return mark


def _is_signature(obj) -> bool:
    """A signature form the decorators accept: tuple, list of them, string, Numba signature."""
    return isinstance(obj, (str, tuple, list)) or is_numba_signature(obj)


def _declared_return(sig) -> str | None:
    """The KIR result type a Numba signature object declares (None: not declared, or void)."""
    from .types import normalize_type

    if not is_numba_signature(sig):
        return None
    ret = numba_signature_parts(sig)[1]
    return None if ret is None else normalize_type(ret)
