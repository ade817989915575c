"""Numba types for kapi objects, and the mapping between KIR type strings and Numba types.

Arrays carry their address space in the type (KArray) so typing can check AtomicRef and
LocalAccessor rules; Item/NdItem/Group are opaque types that never become KIR values.
"""

import re

from ._numba import types

SCALARS = {
    "bool": types.boolean,
    "i8": types.int8,
    "i16": types.int16,
    "i32": types.int32,
    "i64": types.int64,
    "u8": types.uint8,
    "u16": types.uint16,
    "u32": types.uint32,
    "u64": types.uint64,
    "f32": types.float32,
    "f64": types.float64,
    "f16": types.float16,
}
_KIR_OF = {v: k for k, v in SCALARS.items()}
# Complex argument types: not KIR types, pyfront expands them into their parts (emit_complex.py)
COMPLEX = {"c64": types.complex64, "c128": types.complex128}
ADDRSPACES = ("global", "local", "private")
_ARRAY_RE = re.compile(
    r"^array\(\s*(\w+)\s*,\s*(\d)\s*,\s*([CFA])\s*,\s*(\w+)\s*((?:,\s*\d+\s*)*)\)$"
)
MAX_STATIC_EXTENT = 1 << 20  # as the compiler's KIR_MAX_STATIC_EXTENT
MAX_NDIM = 8  # a global array's most dimensions: the compiler's KIR_MAX_NDIM


class KArray(types.Array):
    """A Numba array type that also records the KIR address space, and for a local array
    (LocalAccessor) optionally its static shape: a specialisation per shape, whose index math
    the compiler does with constant extents."""

    def __init__(
        self,
        dtype,
        ndim,
        layout,
        addrspace="global",
        readonly=False,
        aligned=True,
        shape=None,
        storage=None,
    ):
        self.addrspace = addrspace
        self.static_shape = tuple(shape) if shape else None
        # "bf16": bfloat16 elements, typed as float32 (read as float32, stored rounded)
        self.storage = storage
        dims = "".join(f", {d}" for d in self.static_shape or ())
        shown = "bfloat16 as float32" if storage == "bf16" else dtype
        name = f"array({shown}, {ndim}d, {layout}, {addrspace}{dims})"
        super().__init__(dtype, ndim, layout, readonly=readonly, name=name, aligned=aligned)

    def copy(self, dtype=None, ndim=None, layout=None, readonly=None):
        ndim = self.ndim if ndim is None else ndim
        layout = self.layout if layout is None else layout
        same = ndim == self.ndim and layout == self.layout
        return KArray(
            self.dtype if dtype is None else dtype,
            ndim,
            layout,
            self.addrspace,
            readonly=(not self.mutable) if readonly is None else readonly,
            aligned=self.aligned,
            shape=self.static_shape if same else None,
            storage=self.storage if dtype is None or dtype == self.dtype else None,
        )

    @property
    def key(self):
        return super().key + (self.addrspace, self.static_shape, self.storage)

    def unify(self, typingctx, other):
        if isinstance(other, KArray) and other.addrspace != self.addrspace:
            return None
        if isinstance(other, KArray) and other.static_shape != self.static_shape:
            return None
        if isinstance(other, KArray) and other.storage != self.storage:
            return None
        res = super().unify(typingctx, other)
        if res is not None:
            res = KArray(
                res.dtype,
                res.ndim,
                res.layout,
                self.addrspace,
                not res.mutable,
                shape=self.static_shape if res.layout == self.layout else None,
                storage=self.storage,
            )
        return res

    def can_convert_to(self, typingctx, other):
        if isinstance(other, KArray) and other.addrspace != self.addrspace:
            return None
        if isinstance(other, KArray) and other.static_shape != self.static_shape:
            return None
        if isinstance(other, KArray) and other.storage != self.storage:
            return None
        return super().can_convert_to(typingctx, other)


class IndexSpaceType(types.Opaque):
    """Item, NdItem or Group of a given dimensionality (no run-time value)."""

    kind = ""

    def __init__(self, ndim):
        self.ndim = ndim
        super().__init__(name=f"{self.kind}<{ndim}>")

    @property
    def key(self):
        return self.ndim


class ItemType(IndexSpaceType):
    kind = "Item"


class NdItemType(IndexSpaceType):
    kind = "NdItem"


class GroupType(IndexSpaceType):
    kind = "Group"


class SubGroupType(IndexSpaceType):
    """NdItem.get_sub_group(): always one-dimensional; ndim is the NdItem's."""

    kind = "SubGroup"


class AtomicRefType(types.Opaque):
    """An AtomicRef over one element of an array; order/scope are resolved at emission."""

    def __init__(self, array):
        self.array = array
        self.dtype = array.dtype
        super().__init__(name=f"AtomicRef({array})")

    @property
    def key(self):
        return self.array


def kir_scalar(ty):
    """KIR name of a Numba scalar type, or None if it has none."""
    if isinstance(ty, types.Literal):
        ty = ty.literal_type if not isinstance(ty, types.BooleanLiteral) else types.boolean
    if isinstance(ty, types.IntEnumMember):
        ty = ty.dtype
    return _KIR_OF.get(ty)


def kir_array(ty):
    dims = "".join(f",{d}" for d in getattr(ty, "static_shape", None) or ())
    elem = "u16" if getattr(ty, "storage", None) == "bf16" else kir_scalar(ty.dtype)
    return f"array({elem},{ty.ndim},{ty.layout},{ty.addrspace}{dims})"


def parse_type(text):
    """Numba type of a KIR type string; ValueError with a short reason if malformed."""
    text = text.strip()
    if text in SCALARS:
        return SCALARS[text]
    if text in COMPLEX:
        return COMPLEX[text]
    if text == "bf16":
        raise ValueError("bfloat16 scalars are passed as float32 ('f32'); kapi converts them")
    m = _ARRAY_RE.match(text)
    if not m:
        raise ValueError(
            f"'{text}' is not a KIR argument type (a scalar, array(T,N,L,S) or "
            f"array(T,N,C,local,E0,..))"
        )
    dtype, ndim, layout, space, dims = m.groups()
    if dtype in (*COMPLEX, "bf16") and space != "global":
        raise ValueError(f"{dtype} arrays must be global arrays, not '{space}' ones")
    if dtype == "bf16":
        return KArray(types.float32, int(ndim), layout, space, storage="bf16")
    if dtype not in SCALARS and dtype not in COMPLEX:
        raise ValueError(f"'{dtype}' is not a KIR scalar type")
    if not 1 <= int(ndim) <= (MAX_NDIM if space == "global" else 3):
        raise ValueError(
            f"global arrays have 1 to {MAX_NDIM} dimensions, local arrays 1 to 3; not {ndim}"
        )
    if space not in ADDRSPACES or space == "private":
        raise ValueError(f"array arguments live in 'global' or 'local' memory, not '{space}'")
    if space == "local" and layout != "C":
        raise ValueError("local arrays (LocalAccessor) have layout C")
    shape = tuple(int(d) for d in dims.replace(",", " ").split())
    if shape and space != "local":
        raise ValueError("only local arrays (LocalAccessor) may have a static shape")
    if shape and len(shape) != int(ndim):
        raise ValueError(f"an array of rank {ndim} needs {ndim} static extents, not {len(shape)}")
    if any(not 1 <= d <= MAX_STATIC_EXTENT for d in shape):
        raise ValueError(f"static array extents must be 1..{MAX_STATIC_EXTENT}")
    etype = SCALARS.get(dtype) or COMPLEX[dtype]
    return KArray(etype, int(ndim), layout, space, shape=shape or None)
