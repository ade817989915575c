"""KIR text builder: one FunctionBuilder per kernel or device function (format in docs/kir.md).

It only formats; what to emit is decided by the emitter. Values are named %0, %1...; variable
slots are declared up front; `hoist` puts an instruction at the top of the entry block.
"""

import math
import operator
import re

import numpy as np

_NAME_BAD = re.compile(r"[^A-Za-z0-9_.]")


def kir_name(text):
    """A KIR name (`[A-Za-z0-9_.]+`) for any Python or Numba identifier."""
    if text.startswith("$"):
        text = "t." + text[1:]
    return _NAME_BAD.sub("_", text) or "_"


def format_const(kty, value):
    """The literal for `value` as a constant of KIR type `kty`."""
    if kty == "bool":
        return "1" if value else "0"
    if kty in ("f32", "f64", "f16"):
        v = float(value)
        if kty == "f32":
            v = float(np.float32(v))
        elif kty == "f16":
            v = float(np.float16(v))
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v.hex()
    bits = int(kty[1:])
    v = int(value)
    if kty[0] == "u":
        return str(v % (1 << bits))
    v %= 1 << bits
    return str(v - (1 << bits) if v >= 1 << (bits - 1) else v)


def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class FunctionBuilder:
    """Collects one function's variable slots, blocks and instructions."""

    def __init__(self, kind, name, params, restype, filename, lineno):
        self.kind = kind  # "kernel" or "func"
        self.name = name
        self.params = params  # [(name, kir type)]
        self.restype = restype
        self.filename = filename
        self.lineno = lineno
        self.attrs = ""  # kernel attributes after the header's line, e.g. "max_registers 64"
        self.slots = {}
        self.blocks = []  # [(label, [lines])]
        self._hoisted = []
        self._next = 0
        self._cur = None

    def value(self):
        v = f"%{self._next}"
        self._next += 1
        return v

    def slot(self, name, kty):
        """Declare (once) a variable slot; returns its `$name`."""
        ref = "$" + kir_name(name)
        prev = self.slots.setdefault(ref, kty)
        assert prev == kty, (ref, prev, kty)
        return ref

    def block(self, label):
        self._cur = []
        self.blocks.append((label, self._cur))

    @property
    def terminated(self):
        return bool(self._cur) and self._cur[-1].split()[0] in (
            "br",
            "cbr",
            "ret",
            "unreachable",
            "raise",
        )

    def emit(self, text, line=None):
        self._cur.append(f"{text} #{line}" if line else text)

    def op(self, text, line=None):
        """Emit `%r = text` and return %r."""
        r = self.value()
        self.emit(f"{r} = {text}", line)
        return r

    def hoist(self, text, line=None):
        r = self.value()
        self._hoisted.append(f"{r} = {text} #{line}" if line else f"{r} = {text}")
        return r

    def text(self):
        params = ", ".join(f"%{n}: {t}" for n, t in self.params)
        out = [
            f"{self.kind} @{self.name}({params}) -> {self.restype} "
            f"file {_quote(self.filename)} line {self.lineno}"
            f"{' ' + self.attrs if self.attrs else ''} {{"
        ]
        out += [f"  var {ref} {kty}" for ref, kty in self.slots.items()]
        for i, (label, lines) in enumerate(self.blocks):
            out.append(f"^{label}:")
            if i == 0:
                out += ["  " + s for s in self._hoisted]
            out += ["  " + s for s in lines]
        out.append("}")
        return "\n".join(out)


# Python operators -> KIR arithmetic, bitwise and shift opcodes (the front end's emitters share it).
BINOPS = {
    operator.add: "add",
    operator.iadd: "add",
    operator.sub: "sub",
    operator.isub: "sub",
    operator.mul: "mul",
    operator.imul: "mul",
    operator.truediv: "div",
    operator.itruediv: "div",
    operator.floordiv: "floordiv",
    operator.ifloordiv: "floordiv",
    operator.mod: "mod",
    operator.imod: "mod",
    operator.pow: "pow",
    operator.ipow: "pow",
    operator.and_: "and",
    operator.iand: "and",
    operator.or_: "or",
    operator.ior: "or",
    operator.xor: "xor",
    operator.ixor: "xor",
    operator.lshift: "shl",
    operator.ilshift: "shl",
    operator.rshift: "shr",
    operator.irshift: "shr",
}
