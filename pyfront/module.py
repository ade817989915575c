"""A KIR module: the kernel plus every device function it reaches, each typed once per
argument-type combination and named uniquely.
"""

from .emit import FunctionEmitter
from .kir import kir_name
from .ktypes import ItemType, NdItemType
from .typer import Typer


class ModuleEmitter:
    def __init__(
        self, boundscheck=False, max_registers=None, fastmath=frozenset(), group_size=None
    ):
        self.boundscheck = boundscheck  # check array indices (pyfront/emit_bounds.py)
        self.max_registers = max_registers  # the kernel's register cap (KIR max_registers)
        self.fastmath = frozenset(fastmath)  # the kernel's fast-math flags (KIR fastmath)
        self.group_size = group_size  # the work-group size it requires (KIR group_size)
        self.typer = Typer()
        self._names = {}  # (pyfunc, argtypes) -> KIR name
        self._used = set()
        self._pending = []
        self.raises = []  # raise sites: (exception class, constant arguments, file, line)
        self.prints = False

    def raise_site(self, cls, args, filename, line):
        """Index of a raise site (KIR `raise N`), shared by the kernel and its functions."""
        site = (cls, args, filename, line)
        if site not in self.raises:
            self.raises.append(site)
        return self.raises.index(site)

    def device_function(self, pyfunc, argtypes, views=None, fastmath=frozenset()):
        """KIR name and typed function of a device function; emitted once, after the kernel.
        `views` gives, per argument, None or (base KArray, prefix length) for a row view;
        `fastmath` is the caller's flags, which a function that sets none inherits."""
        tkey = (pyfunc, tuple(argtypes))
        tf = self.typer.done.get(tkey) or self.typer.type_function(pyfunc, argtypes)
        own = getattr(pyfunc, "__kapi_device_fastmath__", None)
        flags = frozenset(fastmath if own is None else own)
        key = (*tkey, views, flags)
        if key not in self._names:
            self._names[key] = self._unique(kir_name(pyfunc.__name__))
            self._pending.append((self._names[key], tf, views, flags))
        return self._names[key], tf

    def _unique(self, base):
        name, n = base, 1
        while name in self._used:
            name, n = f"{base}.{n}", n + 1
        self._used.add(name)
        return name

    def compile(self, pyfunc, argtypes, index):
        if index is not None:
            kind, ndim = index
            argtypes = [(ItemType if kind == "item" else NdItemType)(ndim)] + list(argtypes)
        tf = self.typer.type_function(pyfunc, argtypes)
        entry = self._unique(kir_name(pyfunc.__name__))
        parts = [_emit(tf, self, "kernel", entry, None, self.fastmath)]
        while self._pending:
            name, dtf, views, flags = self._pending.pop(0)
            parts.append(_emit(dtf, self, "func", name, views, flags))
        return entry, "kir 1\n" + "\n".join(parts) + "\n"


def fastmath_attr(flags) -> str:
    """KIR's `fastmath FLAG...` header attribute for a set of flag names ('' for none)."""
    if not flags:
        return ""
    return "fastmath " + ("fast" if "fast" in flags else " ".join(sorted(flags)))


def _emit(tf, module, kind, name, views, fastmath=frozenset()):
    """KIR text of one function. Emitted again while a slot variable assumed non-negative
    turns out to be stored a value of unknown sign (see FunctionEmitter.signed_vars); the
    set only grows, so this ends, usually after one or two rounds. Emitting has no effect on
    the module beyond idempotent look-ups (device function names, raise sites)."""
    signed = set()
    while True:
        em = FunctionEmitter(
            tf, module, kind, name, views=views, signed_vars=signed, fastmath=fastmath
        )
        b = em.run()
        attrs = [fastmath_attr(fastmath)]
        if kind == "kernel" and module.max_registers:
            attrs.append(f"max_registers {int(module.max_registers)}")
        if kind == "kernel" and module.group_size:
            attrs.append("group_size " + " ".join(str(int(d)) for d in module.group_size))
        b.attrs = " ".join(a for a in attrs if a)
        text = b.text()
        if not em.new_signed:
            return text
        signed |= em.new_signed
