"""A kernel's identity for the disk cache, computed from its code object without the front end.

The identity covers what pyfront reads to produce KIR: the bytecode and constants (nested code
objects included), names, the values of the globals and closure cells the code reads, and the
device functions it calls (transitively, by their own identity). Values are hashed by content:
numbers, strings, bytes, tuples, enums, NumPy dtypes, scalars and small arrays; modules by
name (with the attributes the code reads from them hashed by value); kapi's, NumPy's, math's
and the builtins' own objects by qualified name (kapi's version and the interpreter's are in
the key anyway). Anything else makes the kernel uncacheable: `Uncacheable` says which name and
why, and the kernel then compiles in memory as before.
"""

from __future__ import annotations

import builtins
import dis
import enum
import os
import sys
import types

import numpy as np

from .store import _sha256

_MAX_ARRAY_BYTES = 1 << 20  # global arrays are compile-time constants; bigger ones: no cache
_STABLE_MODULES = ("kapi", "numpy", "math", "cmath", "builtins", "operator", "numba", "pyfront")
_ATTR_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


class Uncacheable(Exception):
    """The kernel reads a value whose content cannot be hashed; the message says which."""


def _stable_module(name: str | None) -> bool:
    return bool(name) and name.split(".")[0] in _STABLE_MODULES


def module_name(name: str | None) -> str | None:
    """A module's name as the cache knows it: a script run as `python app.py` (or
    `python -m pkg.app`) is `__main__` to Python but `app` (`pkg.app`) to `python -m kapi
    compile app.py`, which imported it by that name; both must find the same entries."""
    if name != "__main__":
        return name
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and getattr(spec, "name", None) not in (None, "__main__"):
        return spec.name
    path = getattr(main, "__file__", None)
    return os.path.splitext(os.path.basename(path))[0] if path else name


def main_module_for(name: str):
    """The running `__main__` module when `name` is what module_name gives it, else None."""
    if name in sys.modules or module_name("__main__") != name:
        return None
    return sys.modules.get("__main__")


class _Hasher:
    def __init__(self):
        self.h = _sha256()
        self.active: set[int] = set()  # functions being hashed (recursion between them)

    def put(self, *parts) -> None:
        for p in parts:
            b = p if isinstance(p, bytes) else str(p).encode()
            self.h.update(len(b).to_bytes(8, "little"))
            self.h.update(b)

    # -- code objects ------------------------------------------------------------------------

    def code(self, co: types.CodeType) -> None:
        self.put(
            "code",
            co.co_name,
            # the file's name, not its folder: a bundle serves an application installed
            # elsewhere (the path appears only in the KIR's diagnostics; the module's name and
            # the function's qualified name are hashed too)
            os.path.basename(co.co_filename),
            co.co_firstlineno,
            getattr(co, "co_linetable", b""),  # line numbers in diagnostics
            co.co_flags,
            co.co_argcount,
            co.co_posonlyargcount,
            co.co_kwonlyargcount,
            co.co_code,
            co.co_names,
            co.co_varnames,
            co.co_freevars,
            co.co_cellvars,
        )
        for c in co.co_consts:
            if isinstance(c, types.CodeType):
                self.code(c)
            else:
                self.value("<const>", c)

    # -- functions: code, defaults, closure, the globals they read ---------------------------

    def function(self, fn: types.FunctionType, what: str) -> None:
        if id(fn) in self.active:
            self.put("recursive", fn.__qualname__)
            return
        self.active.add(id(fn))
        try:
            self.put("function", module_name(fn.__module__), fn.__qualname__)
            # device functions' markers change how pyfront treats the function
            self.put(bool(getattr(fn, "__kapi_device_func__", False)))
            self.value(f"{what} options", _plain(getattr(fn, "__kapi_device_options__", None)))
            self.code(fn.__code__)
            self.value(f"{what} defaults", fn.__defaults__)
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
                try:
                    v = cell.cell_contents
                except ValueError:
                    raise Uncacheable(f"closure variable {name!r} of {what} is unset") from None
                self.put("cell", name)
                self.value(f"closure variable {name!r} of {what}", v)
            for path, v in _globals_read(fn):
                self.put("global", path)
                self.value(f"global {path!r} read by {what}", v)
        finally:
            self.active.discard(id(fn))

    # -- values --------------------------------------------------------------------------

    def value(self, what: str, v) -> None:
        t = type(v)
        if v is None or t in (bool, int, float, complex, str, bytes):
            self.put("v", t.__name__, repr(v))
        elif t is tuple:
            self.put("tuple", len(v))
            for x in v:
                self.value(what, x)
        elif t is frozenset:  # `x in {1, 2}` makes one a constant
            self.put("frozenset", len(v))
            for x in sorted(v, key=repr):
                self.value(what, x)
        elif v is Ellipsis:
            self.put("ellipsis")
        elif t is slice:
            self.put("slice")
            self.value(what, (v.start, v.stop, v.step))
        elif isinstance(v, enum.Enum):
            self.put("enum", module_name(t.__module__), t.__qualname__, v.name)
            self.value(what, v.value)
        elif isinstance(v, np.generic):
            self.put("npscalar", v.dtype.str, v.tobytes())
        elif isinstance(v, np.dtype):
            self.put("dtype", v.str)
        elif isinstance(v, np.ndarray):
            if v.nbytes > _MAX_ARRAY_BYTES or v.dtype.hasobject:
                raise Uncacheable(f"{what} is a large or object array")
            self.put("ndarray", v.dtype.str, v.shape, np.ascontiguousarray(v).tobytes())
        elif isinstance(v, types.ModuleType):
            self.put("module", v.__name__)
        elif isinstance(v, types.FunctionType):
            if _stable_module(v.__module__) and not getattr(v, "__kapi_device_func__", False):
                self.put("libfunc", v.__module__, v.__qualname__)
            else:
                self.function(v, f"function {v.__qualname__!r}")
        elif hasattr(v, "py_func") and isinstance(v.py_func, types.FunctionType):
            # a kapi kernel or a Numba dispatcher: its Python function is what pyfront reads
            self.put("dispatcher", module_name(t.__module__), t.__qualname__)
            self.function(v.py_func, f"function {v.py_func.__qualname__!r}")
        elif isinstance(v, (types.BuiltinFunctionType, type, np.ufunc)) or callable(v):
            mod = getattr(v, "__module__", None) or getattr(type(v), "__module__", None)
            name = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
            if isinstance(v, type) and issubclass(v, enum.Enum):
                self.put("enumclass", module_name(v.__module__), v.__qualname__)
                for m in v:
                    self.value(what, m)
            elif (_stable_module(mod) or isinstance(v, np.ufunc)) and name:
                self.put("libobj", mod, name)
            else:
                raise Uncacheable(f"{what} is a {t.__qualname__} defined outside kapi")
        else:
            raise Uncacheable(f"{what} is a {t.__qualname__}, whose content is not hashed")


def _plain(v):
    """Options dicts as sorted tuples (dicts are not hashed as values)."""
    if isinstance(v, dict):
        return tuple(sorted((str(k), _plain(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_plain(x) for x in v)
    return v


def _code_objects(co: types.CodeType):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from _code_objects(c)


def _globals_read(fn: types.FunctionType):
    """(dotted path, value) for each global the function's code reads, following attribute
    reads on modules (`np.float32`, `kapi.group_barrier`, `mymodule.CONSTANT`)."""
    g = fn.__globals__
    seen = set()
    for co in _code_objects(fn.__code__):
        ins = list(dis.get_instructions(co))
        for i, op in enumerate(ins):
            if op.opname not in ("LOAD_GLOBAL", "LOAD_NAME"):
                continue
            name = op.argval
            if name in g:
                v = g[name]
            elif hasattr(builtins, name):
                v = getattr(builtins, name)
            else:
                raise Uncacheable(f"global {name!r} read by {fn.__qualname__!r} is not defined")
            path = name
            j = i + 1
            while isinstance(v, types.ModuleType) and j < len(ins) and ins[j].opname in _ATTR_OPS:
                attr = ins[j].argval
                if not hasattr(v, attr):
                    break
                v = getattr(v, attr)
                path = f"{path}.{attr}"
                j += 1
            if path not in seen:
                seen.add(path)
                yield path, v


def identity(fn: types.FunctionType) -> bytes:
    """SHA-256 of the kernel function's identity; Uncacheable when a value it reads cannot be
    hashed by content."""
    h = _Hasher()
    h.function(fn, f"kernel {fn.__qualname__!r}")
    return h.h.digest()
