"""A light KIR checker for pyfront's own tests and debugging (the compiler's verifier is the
real one): values defined once and before use in text order, blocks terminated, branch targets
and slots declared, and operand types equal to the result type where docs/kir.md says so.
"""

import re

_DEF = re.compile(r"^(%[\w.]+) = (\w+)(.*)$")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_TERMS = ("br", "cbr", "ret", "unreachable", "raise")
_SAME_TYPE_OPS = {
    "add",
    "sub",
    "mul",
    "div",
    "floordiv",
    "mod",
    "pow",
    "min",
    "max",
    "and",
    "or",
    "xor",
    "shl",
    "shr",
    "neg",
    "abs",
    "not",
    "popcount",
}


class KirCheckError(AssertionError):
    pass


def _tokens(rest):
    rest = rest.split("#")[0]
    return [t for t in re.split(r"[\s,]+", rest.strip()) if t]


def check(text):
    """Raise KirCheckError on the first problem; returns {function: {value: type}}."""
    lines = [_STRING.sub('""', ln).split(";")[0].rstrip() for ln in text.splitlines()]
    if not lines or lines[0].strip() != "kir 1":
        raise KirCheckError("first line must be 'kir 1'")
    out, fn = {}, None
    for ln in lines[1:]:
        s = ln.strip()
        if not s:
            continue
        if s.startswith(("kernel ", "func ")):
            fn = _Function(s)
            out[fn.name] = fn.types
        elif s == "}":
            fn.finish()
            fn = None
        else:
            fn.line(s)
    return out


class _Function:
    def __init__(self, header):
        m = re.match(r"(kernel|func) @([\w.]+)\((.*)\) -> (\S+) file \".*\" line \d+ \{$", header)
        if not m:
            raise KirCheckError(f"bad function header: {header}")
        self.name = m.group(2)
        self.types = {}
        for p in filter(None, (x.strip() for x in re.split(r",\s*(?=%)", m.group(3)))):
            name, ty = p.split(":", 1)
            self.types[name.strip()] = ty.strip()
        self.slots, self.blocks, self.targets = {}, [], set()
        self.open = False

    def line(self, s):
        if s.startswith("var "):
            _, ref, ty = s.split()
            self.slots[ref] = ty
            return
        if s.startswith("^"):
            if self.open:
                raise KirCheckError(f"{self.name}: block before {s} has no terminator")
            self.blocks.append(s[1:-1])
            self.open = True
            return
        if not self.open:
            raise KirCheckError(f"{self.name}: instruction after a terminator: {s}")
        m = _DEF.match(s)
        if m:
            res, op, rest = m.groups()
            toks = _tokens(rest)
            if res in self.types:
                raise KirCheckError(f"{self.name}: {res} defined twice")
            self._uses(toks)
            self.types[res] = "bool" if op == "cmp" else toks[0]
            if op in _SAME_TYPE_OPS:
                for t in toks[1:]:
                    if t.startswith("%") and self.types[t] != toks[0]:
                        raise KirCheckError(f"{self.name}: operand {t} of '{s}' is {self.types[t]}")
            if op == "cmp":
                a, b = toks[2], toks[3]
                if self.types[a] != self.types[b]:
                    raise KirCheckError(f"{self.name}: cmp operands differ in type: {s}")
            if op == "load_var" and self.slots.get(toks[1]) != toks[0]:
                raise KirCheckError(f"{self.name}: load_var of undeclared/mistyped slot: {s}")
            return
        toks = _tokens(s)
        op = toks[0]
        self._uses(toks[1:])
        if op == "store_var" and self.types[toks[2]] != self.slots.get(toks[1]):
            raise KirCheckError(f"{self.name}: store_var type mismatch: {s}")
        for t in toks:
            if t.startswith("^"):
                self.targets.add(t[1:])
        if op in _TERMS:
            self.open = False

    def _uses(self, toks):
        for t in toks:
            if t.startswith("%") and t not in self.types:
                raise KirCheckError(f"{self.name}: {t} used before definition")

    def finish(self):
        if self.open:
            raise KirCheckError(f"{self.name}: last block has no terminator")
        missing = self.targets - set(self.blocks)
        if missing:
            raise KirCheckError(f"{self.name}: branch to unknown blocks {missing}")
