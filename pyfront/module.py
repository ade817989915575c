"""A KIR module: the kernel plus every device function it reaches, each typed once per
argument-type combination and named uniquely.
"""

from .emit import FunctionEmitter
from .kir import kir_name
from .ktypes import ItemType, NdItemType
from .typer import Typer


class ModuleEmitter:
    def __init__(self):
        self.typer = Typer()
        self._names = {}  # (pyfunc, argtypes) -> KIR name
        self._used = set()
        self._pending = []

    def device_function(self, pyfunc, argtypes):
        """KIR name and typed function of a device function; emitted once, after the kernel."""
        key = (pyfunc, tuple(argtypes))
        tf = self.typer.done.get(key) or self.typer.type_function(pyfunc, argtypes)
        if key not in self._names:
            self._names[key] = self._unique(kir_name(pyfunc.__name__))
            self._pending.append((self._names[key], tf))
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
        parts = [FunctionEmitter(tf, self, "kernel", entry).run().text()]
        while self._pending:
            name, dtf = self._pending.pop(0)
            parts.append(FunctionEmitter(dtf, self, "func", name).run().text())
        return entry, "kir 1\n" + "\n".join(parts) + "\n"
