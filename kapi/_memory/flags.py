"""`kapi.Array.flags`: NumPy's flagsobj for kapi arrays (attributes, key access, repr), read
only. Code written for NumPy or dpnp arrays (`a.flags.c_contiguous`, `a.flags["F"]`) reads
kapi arrays the same way."""

from __future__ import annotations

# NumPy's keys (case matters, as in NumPy) -> attribute
_KEYS = {
    "C_CONTIGUOUS": "c_contiguous",
    "C": "c_contiguous",
    "CONTIGUOUS": "c_contiguous",
    "F_CONTIGUOUS": "f_contiguous",
    "F": "f_contiguous",
    "FORTRAN": "f_contiguous",
    "OWNDATA": "owndata",
    "O": "owndata",
    "WRITEABLE": "writeable",
    "W": "writeable",
    "ALIGNED": "aligned",
    "A": "aligned",
    "WRITEBACKIFCOPY": "writebackifcopy",
    "X": "writebackifcopy",
    "BEHAVED": "behaved",
    "B": "behaved",
    "CARRAY": "carray",
    "CA": "carray",
    "FARRAY": "farray",
    "FA": "farray",
    "FNC": "fnc",
    "FORC": "forc",
}
# NumPy's NPY_ARRAY_* bits, for `num`
_BITS = {
    "c_contiguous": 0x1,
    "f_contiguous": 0x2,
    "owndata": 0x4,
    "aligned": 0x100,
    "writeable": 0x400,
    "writebackifcopy": 0x2000,
}
_SHOWN = ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED", "WRITEBACKIFCOPY")


class ArrayFlags:
    """The memory layout flags of one kapi array, as NumPy's `ndarray.flags`."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata", "aligned")

    writeable = True  # USM memory is always writeable
    writebackifcopy = False

    def __init__(self, c_contiguous: bool, f_contiguous: bool, owndata: bool, aligned: bool):
        object.__setattr__(self, "c_contiguous", bool(c_contiguous))
        object.__setattr__(self, "f_contiguous", bool(f_contiguous))
        object.__setattr__(self, "owndata", bool(owndata))
        object.__setattr__(self, "aligned", bool(aligned))

    contiguous = property(lambda self: self.c_contiguous)
    fortran = property(lambda self: self.f_contiguous)
    fnc = property(lambda self: self.f_contiguous and not self.c_contiguous)
    forc = property(lambda self: self.f_contiguous or self.c_contiguous)
    behaved = property(lambda self: self.aligned and self.writeable)
    carray = property(lambda self: self.behaved and self.c_contiguous)
    # NumPy tests any of the FARRAY bits here (aligned, writeable, F), not all: kept as NumPy
    farray = property(
        lambda self: (self.aligned or self.writeable or self.f_contiguous) and not self.c_contiguous
    )

    @property
    def num(self) -> int:
        return sum(bit for name, bit in _BITS.items() if getattr(self, name))

    def __getitem__(self, key):
        name = _KEYS.get(key) if isinstance(key, str) else None
        if name is None:
            raise KeyError("Unknown flag")
        return getattr(self, name)

    def __setattr__(self, name, value):
        raise AttributeError(
            f"kapi array flags are read-only (setting {name!r}); kapi arrays are always "
            "writeable and their layout is fixed by their strides"
        )

    __setitem__ = __setattr__

    def __eq__(self, other):
        if not isinstance(other, ArrayFlags):
            return NotImplemented
        return self.num == other.num

    def __hash__(self):
        return hash(self.num)

    def __repr__(self) -> str:
        return "".join(f"  {k} : {self[k]}\n" for k in _SHOWN)
