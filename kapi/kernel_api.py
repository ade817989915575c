"""Pure-Python kernel API objects (numba-dpex 0.23 names, signatures and enum values).

These classes run kernels in plain CPython (the simulator) and are the names pyfront's typing
registry recognises inside kernels. No Numba here: the compiled semantics live in pyfront.
"""

from enum import IntEnum

import numpy as np

__all__ = [
    "AddressSpace",
    "AtomicRef",
    "Group",
    "Item",
    "LocalAccessor",
    "MemoryOrder",
    "MemoryScope",
    "NdItem",
    "PrivateArray",
    "atomic_fence",
    "group_barrier",
]


class MemoryOrder(IntEnum):
    """Memory orders of atomic operations and fences (values as numba-dpex)."""

    RELAXED = 0
    ACQUIRE = 1
    CONSUME_UNSUPPORTED = 2
    RELEASE = 3
    ACQ_REL = 4
    SEQ_CST = 5


class MemoryScope(IntEnum):
    """Scopes of atomic operations, fences and barriers (values as numba-dpex)."""

    WORK_ITEM = 0
    SUB_GROUP = 1
    WORK_GROUP = 2
    DEVICE = 3
    SYSTEM = 4


class AddressSpace(IntEnum):
    """Address spaces; the values are also the LLVM/SPIR address-space numbers."""

    PRIVATE = 0
    GLOBAL = 1
    CONSTANT = 2
    LOCAL = 3
    GENERIC = 4


def _linear(ids, extents):
    # SYCL row-major linearisation: the last dimension varies fastest.
    lin = 0
    for i, r in zip(ids, extents, strict=True):
        lin = lin * r + i
    return lin


def _product(values):
    out = 1
    for v in values:
        out *= v
    return out


class Item:
    """A work-item of a Range launch: its id and the range."""

    def __init__(self, extent, index):
        self._extent = tuple(extent)
        self._index = tuple(index)

    def get_id(self, idx):
        return self._index[idx]

    def get_range(self, idx):
        return self._extent[idx]

    def get_linear_id(self):
        return _linear(self._index, self._extent)

    def get_linear_range(self):
        return _product(self._extent)

    @property
    def dimensions(self):
        return len(self._extent)


class Group:
    """The work-group of an NdItem."""

    def __init__(self, global_range, local_range, group_range, index):
        self._global_range = tuple(global_range)
        self._local_range = tuple(local_range)
        self._group_range = tuple(group_range)
        self._index = tuple(index)

    def get_group_id(self, idx):
        return self._index[idx]

    def get_group_linear_id(self):
        return _linear(self._index, self._group_range)

    def get_group_range(self, idx):
        return self._group_range[idx]

    def get_group_linear_range(self):
        return _product(self._group_range)

    def get_local_range(self, idx):
        return self._local_range[idx]

    def get_local_linear_range(self):
        return _product(self._local_range)

    @property
    def leader(self):
        """True for the work-group's first work-item (set by the simulator)."""
        return getattr(self, "_leader", False)

    @property
    def dimensions(self):
        return len(self._index)


class NdItem:
    """A work-item of an NdRange launch: global item, local item and group."""

    def __init__(self, global_item, local_item, group):
        self._global_item = global_item
        self._local_item = local_item
        self._group = group

    def get_global_id(self, idx):
        return self._global_item.get_id(idx)

    def get_local_id(self, idx):
        return self._local_item.get_id(idx)

    def get_global_range(self, idx):
        return self._global_item.get_range(idx)

    def get_local_range(self, idx):
        return self._local_item.get_range(idx)

    def get_global_linear_id(self):
        return self._global_item.get_linear_id()

    def get_local_linear_id(self):
        return self._local_item.get_linear_id()

    def get_global_linear_range(self):
        return self._global_item.get_linear_range()

    def get_local_linear_range(self):
        return self._local_item.get_linear_range()

    def get_group(self):
        return self._group

    @property
    def dimensions(self):
        return self._global_item.dimensions


def group_barrier(group, fence_scope=MemoryScope.WORK_GROUP):
    """Work-group barrier. Sequential simulation cannot honour it (as in numba-dpex)."""
    raise NotImplementedError(
        "group_barrier needs concurrent work-items; a pure Python simulation of it is not available"
    )


def atomic_fence(memory_order, memory_scope):
    """Memory fence: nothing to do when work-items run one after another."""


class AtomicRef:
    """Atomic view of one array element (sequential simulation: plain read-modify-write)."""

    _DTYPES = (np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64)

    def __init__(
        self,
        ref,
        index,
        memory_order=MemoryOrder.RELAXED,
        memory_scope=MemoryScope.DEVICE,
        address_space=None,
    ):
        if ref.dtype.type not in self._DTYPES:
            raise TypeError(f"AtomicRef does not support arrays of {ref.dtype}")
        self._ref = ref
        self._index = index
        self.memory_order = memory_order
        self.memory_scope = memory_scope
        self.address_space = AddressSpace.GLOBAL if address_space is None else address_space

    def _rmw(self, op, val):
        old = self._ref[self._index]
        self._ref[self._index] = op(old, val)
        return old

    def fetch_add(self, val):
        return self._rmw(lambda a, b: a + b, val)

    def fetch_sub(self, val):
        return self._rmw(lambda a, b: a - b, val)

    def fetch_min(self, val):
        return self._rmw(min, val)

    def fetch_max(self, val):
        return self._rmw(max, val)

    def fetch_and(self, val):
        return self._rmw(lambda a, b: a & b, val)

    def fetch_or(self, val):
        return self._rmw(lambda a, b: a | b, val)

    def fetch_xor(self, val):
        return self._rmw(lambda a, b: a ^ b, val)

    def load(self):
        return self._ref[self._index]

    def store(self, val):
        self._ref[self._index] = val

    def exchange(self, val):
        return self._rmw(lambda a, b: b, val)

    def compare_exchange(self, expected, desired, expected_idx=0):
        current = self._ref[self._index]
        if current == expected[expected_idx]:
            self._ref[self._index] = desired
            return True
        expected[expected_idx] = current
        return False


def _check_shape(shape):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not 1 <= len(shape) <= 3 or any(not isinstance(d, int) or d <= 0 for d in shape):
        raise TypeError("shape must be a positive int or a tuple of 1 to 3 positive ints")
    return shape


class LocalAccessor:
    """Work-group local memory, passed as a kernel argument (NdRange launches only)."""

    _DTYPES = (
        np.float16,  # kapi: f16 is a KIR type
        np.float32,
        np.float64,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
    )

    def __init__(self, shape, dtype):
        self._shape = _check_shape(shape)
        if np.dtype(dtype).type not in self._DTYPES:
            raise TypeError(f"LocalAccessor does not support dtype {dtype}")
        self._dtype = np.dtype(dtype)
        self._data = None

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return len(self._shape)

    def __getitem__(self, idx):
        if self._data is None:
            raise NotImplementedError("LocalAccessor elements exist only inside a kernel launch")
        return self._data[idx]

    def __setitem__(self, idx, val):
        if self._data is None:
            raise NotImplementedError("LocalAccessor elements exist only inside a kernel launch")
        self._data[idx] = val


class PrivateArray:
    """Per-work-item array of literal shape."""

    def __init__(self, shape, dtype, fill_zeros=False):
        shape = _check_shape(shape)
        self._data = np.zeros(shape, dtype) if fill_zeros else np.empty(shape, dtype)

    def __getitem__(self, idx):
        return self._data[idx]

    def __setitem__(self, idx, val):
        self._data[idx] = val


# The launch API under numba-dpex's kernel_api names (kapi/_ranges.py, kapi/_launch.py).
# Here call_kernel compiles and runs the kernel on a device, plain functions included.
from ._launch import call_kernel  # noqa: E402
from ._ranges import NdRange, Range  # noqa: E402

__all__ += ["NdRange", "Range", "call_kernel"]
