"""Pure-Python kernel API objects (numba-dpex 0.23 names, signatures and enum values).

These classes run kernels in plain CPython (the simulator, kapi/_kernel/simulate.py) and are
the names pyfront's typing registry recognises inside kernels. No Numba here: the compiled
semantics live in pyfront. Users reach them as kapi.kernel_api, which adds the launch API
(call_kernel, Range, NdRange).

Work-group synchronisation needs work-items that run together, which the simulator provides:
it gives each work-item's Group a `_sync` object (one per work-group) with `barrier()` (every
work-item of the group waits there) and `exchange(local_linear_id, value)` (a list of every
work-item's value, in local linear id order), and `_lid`, the work-item's local linear id.
A Group made by hand has neither, and barriers and collectives over it raise
NotImplementedError. A sub-group is always one work-item here.
"""

import operator
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
# Sub-groups and group algorithms (SYCL 2020 names; kapi's own, numba-dpex 0.23 has none).
__all__ += [
    "GroupOp",
    "SubGroup",
    "all_of_group",
    "any_of_group",
    "exclusive_scan_over_group",
    "group_broadcast",
    "inclusive_scan_over_group",
    "none_of_group",
    "permute_group_by_xor",
    "reduce_over_group",
    "select_from_group",
    "shift_group_left",
    "shift_group_right",
    "shuffle",
    "shuffle_down",
    "shuffle_up",
    "shuffle_xor",
    "sub_group_barrier",
]
# Integer builtins (SYCL's names; kapi's own, numba-dpex 0.23 has none).
__all__ += ["popcount"]
# Memory hints (kapi's own).
__all__ += ["store_nontemporal"]


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

    _sync = None  # the simulator's synchronisation of the group's work-items (module docstring)
    _lid = 0  # the work-item's local linear id, where _sync is set

    def __init__(self, global_range, local_range, group_range, index):
        self._global_range = tuple(global_range)
        self._local_range = tuple(local_range)
        self._group_range = tuple(group_range)
        self._index = tuple(index)

    def get_group_id(self, dim):
        return self._index[dim]

    def get_group_linear_id(self):
        return _linear(self._index, self._group_range)

    def get_group_range(self, dim):
        return self._group_range[dim]

    def get_group_linear_range(self):
        return _product(self._group_range)

    def get_local_range(self, dim):
        return self._local_range[dim]

    def get_local_linear_range(self):
        return _product(self._local_range)

    @property
    def leader(self):
        """True for the work-group's first work-item (an NdItem with local id 0 sets it, as
        in numba-dpex)."""
        return getattr(self, "_leader", False)

    @leader.setter
    def leader(self, value):
        self._leader = value

    @property
    def dimensions(self):
        return len(self._index)


class NdItem:
    """A work-item of an NdRange launch: global item, local item and group."""

    def __init__(self, global_item, local_item, group):
        self._global_item = global_item
        self._local_item = local_item
        self._group = group
        if local_item.get_linear_id() == 0:
            group.leader = True

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

    def get_sub_group(self):
        """This work-item's sub-group: in plain CPython a sub-group is one work-item."""
        return SubGroup(self.get_local_linear_id(), self.get_local_linear_range())

    @property
    def dimensions(self):
        return self._global_item.dimensions


_NEEDS_SIMULATOR = (
    "needs the work-items of the group running together: launch the kernel with "
    "kapi.simulate(kernel, index_space, *args) or KAPI_SIMULATOR=1 to run it in Python"
)


def group_barrier(group, fence_scope=MemoryScope.WORK_GROUP):
    """Barrier over a Group (or a SubGroup, as sub_group_barrier): every work-item of the group
    waits here until all have arrived."""
    if isinstance(group, SubGroup):
        return sub_group_barrier(group)
    sync = getattr(group, "_sync", None)
    if sync is None:
        raise NotImplementedError(f"group_barrier {_NEEDS_SIMULATOR}")
    sync.barrier()


class SubGroup:
    """A sub-group of an NdItem's work-group (SYCL 2020 `sub_group`; one-dimensional).

    Compiled kernels get the device's sub-group size (32 on NVIDIA GPUs, 1 on the CPU driver,
    see `Device.sub_group_sizes`); in plain CPython each work-item is its own sub-group.
    """

    def __init__(self, group_id, group_range, local_id=0, local_range=1):
        self._group_id, self._group_range = group_id, group_range
        self._local_id, self._local_range = local_id, local_range

    def get_local_id(self):
        return self._local_id

    def get_local_linear_id(self):
        return self._local_id

    def get_local_range(self):
        return self._local_range

    def get_local_linear_range(self):
        return self._local_range

    def get_max_local_range(self):
        return self._local_range

    def get_group_id(self):
        return self._group_id

    def get_group_linear_id(self):
        return self._group_id

    def get_group_range(self):
        return self._group_range

    def get_group_linear_range(self):
        return self._group_range

    @property
    def leader(self):
        return self._local_id == 0

    @property
    def dimensions(self):
        return 1


class GroupOp(IntEnum):
    """The combining operation of reduce_over_group and the scans (SYCL's plus, multiplies,
    minimum, maximum, bit_and, bit_or, bit_xor)."""

    ADD = 0
    MUL = 1
    MIN = 2
    MAX = 3
    AND = 4
    OR = 5
    XOR = 6


_IDENTITIES = {GroupOp.ADD: 0, GroupOp.MUL: 1, GroupOp.AND: -1, GroupOp.OR: 0, GroupOp.XOR: 0}


def _one_item(group, what):
    # Sub-groups are one work-item here; a work-group of several needs the simulator's _sync.
    n = group.get_local_linear_range()
    if n != 1:
        raise NotImplementedError(f"{what} over a group of {n} work-items {_NEEDS_SIMULATOR}")


def _values(group, x, what):
    """x of every work-item of the group, in local linear id order, and this one's id."""
    sync = getattr(group, "_sync", None)
    if sync is None:
        _one_item(group, what)
        return [x], 0
    return sync.exchange(group._lid, x), group._lid


_COMBINE = {
    GroupOp.ADD: operator.add,
    GroupOp.MUL: operator.mul,
    GroupOp.MIN: min,
    GroupOp.MAX: max,
    GroupOp.AND: operator.and_,
    GroupOp.OR: operator.or_,
    GroupOp.XOR: operator.xor,
}


def _fold(op, values):
    combine = _COMBINE[op]
    acc = values[0]
    for v in values[1:]:
        acc = combine(acc, v)
    return acc


def sub_group_barrier(sub_group):
    """Barrier over the sub-group's work-items (`group_barrier(sub_group)` in SYCL)."""
    _one_item(sub_group, "sub_group_barrier")


def select_from_group(sub_group, x, remote_local_id):
    """x of the sub-group's work-item remote_local_id."""
    _one_item(sub_group, "select_from_group")
    return x


def shift_group_left(sub_group, x, delta=1):
    """x of work-item local_id + delta (unspecified past the sub-group's end)."""
    _one_item(sub_group, "shift_group_left")
    return x


def shift_group_right(sub_group, x, delta=1):
    """x of work-item local_id - delta (unspecified before the sub-group's start)."""
    _one_item(sub_group, "shift_group_right")
    return x


def permute_group_by_xor(sub_group, x, mask):
    """x of work-item local_id ^ mask."""
    _one_item(sub_group, "permute_group_by_xor")
    return x


def shuffle(sub_group, x, src_local_id):
    """select_from_group under its CUDA-style name."""
    return select_from_group(sub_group, x, src_local_id)


def shuffle_down(sub_group, x, delta):
    """shift_group_left under its CUDA-style name."""
    return shift_group_left(sub_group, x, delta)


def shuffle_up(sub_group, x, delta):
    """shift_group_right under its CUDA-style name."""
    return shift_group_right(sub_group, x, delta)


def shuffle_xor(sub_group, x, mask):
    """permute_group_by_xor under its CUDA-style name."""
    return permute_group_by_xor(sub_group, x, mask)


def group_broadcast(group, x, local_linear_id=0):
    """x of the group's work-item local_linear_id, for every work-item of a Group or SubGroup."""
    values, _ = _values(group, x, "group_broadcast")
    return values[local_linear_id] if len(values) > 1 else x


def reduce_over_group(group, x, op):
    """op (a GroupOp) over x of every work-item of the group."""
    op = GroupOp(op)
    values, _ = _values(group, x, "reduce_over_group")
    return _fold(op, values)


def inclusive_scan_over_group(group, x, op):
    """op over x of the work-items with linear ids up to and including this one's."""
    op = GroupOp(op)
    values, lid = _values(group, x, "inclusive_scan_over_group")
    return _fold(op, values[: lid + 1])


def exclusive_scan_over_group(group, x, op):
    """op over x of the work-items with lower linear ids; op's identity for the first."""
    op = GroupOp(op)
    values, lid = _values(group, x, "exclusive_scan_over_group")
    if lid > 0:
        return _fold(op, values[:lid])
    return _identity(op, x)


def _identity(op, x):
    """op's identity in x's type."""
    if isinstance(x, float | np.floating):
        fid = {GroupOp.MIN: np.inf, GroupOp.MAX: -np.inf, GroupOp.MUL: 1.0}.get(op, 0.0)
        return type(x)(fid)
    info = np.iinfo(np.asarray(x).dtype)
    ids = {
        GroupOp.MIN: info.max,
        GroupOp.MAX: info.min,
        GroupOp.AND: info.max if info.min == 0 else -1,
    }
    return type(x)(ids.get(op, _IDENTITIES.get(op, 0)))


def any_of_group(group, pred):
    values, _ = _values(group, bool(pred), "any_of_group")
    return any(values)


def all_of_group(group, pred):
    values, _ = _values(group, bool(pred), "all_of_group")
    return all(values)


def none_of_group(group, pred):
    values, _ = _values(group, bool(pred), "none_of_group")
    return not any(values)


def popcount(x):
    """The number of set bits of the integer x, as x's type (SYCL's `sycl::popcount`): a
    negative value counts the bits of its two's complement in x's width (a Python int is
    an int64, as in kernels)."""
    if isinstance(x, bool | np.bool_) or not isinstance(x, int | np.integer):
        raise TypeError(f"popcount(x): x must be an integer, not {type(x).__name__}")
    dt = x.dtype if isinstance(x, np.integer) else np.dtype(np.int64)
    bits = int(x) & ((1 << (8 * dt.itemsize)) - 1)
    return dt.type(bin(bits).count("1"))


def store_nontemporal(array, index, value):
    """array[index] = value, with a hint that the element will not be read again soon (a
    streaming store: on CPUs it goes to memory without reading its cache line first and without
    taking a place in the caches; a GPU treats it as a plain store, or as a cache hint). For
    large outputs written once, in whole cache lines. It orders like an ordinary store: other
    work-items see it after a release (AtomicRef with RELEASE or stronger order, or
    atomic_fence) or when the kernel has ended."""
    array[index] = value


def atomic_fence(memory_order, memory_scope):
    """Memory fence: nothing to do when one work-item runs at a time."""


class AtomicRef:
    """Atomic view of one array element. The simulator runs one work-item at a time, so a plain
    read-modify-write of the NumPy element is atomic."""

    _DTYPES = (np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64)

    def __init__(
        self,
        ref,
        index,
        memory_order=MemoryOrder.RELAXED,
        memory_scope=MemoryScope.DEVICE,
        address_space=None,
    ):
        if not hasattr(ref, "dtype"):  # numba-dpex's class and message for a scalar or the like
            raise TypeError("Cannot create an AtomicRef from an unsupported ref type.")
        if ref.dtype.type not in self._DTYPES:
            raise TypeError(f"AtomicRef does not support arrays of {ref.dtype}")
        self._ref = ref
        self._index = index
        self._memory_order = memory_order
        self._memory_scope = memory_scope
        self._address_space = address_space

    @property
    def ref(self):
        """The referenced element's value (numba-dpex's AtomicRef.ref)."""
        return self._ref[self._index]

    @property
    def memory_order(self):
        return self._memory_order

    @property
    def memory_scope(self):
        return self._memory_scope

    @property
    def address_space(self):
        """As given to the constructor (None: the array's own address space)."""
        return self._address_space

    def _rmw(self, op, val):
        old = self._ref[self._index]
        if getattr(old, "ndim", None) == 0 and not isinstance(old, np.generic):
            # a 0-d view of the element (a kapi array's indexing): the fetch returns the value
            # before the update, not a view that then shows the new one
            old = old.copy()
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

    def compare_exchange(self, expected_ref, desired, expected_idx=0):
        """numba-dpex's compiled signature (its pure-Python mock named the first parameter
        `expected`; kernels accept that keyword too)."""
        current = self._ref[self._index]
        if current == expected_ref[expected_idx]:
            self._ref[self._index] = desired
            return True
        expected_ref[expected_idx] = current
        return False


def _check_shape(shape):
    """A tuple of 1 to 3 positive ints from an int, a sequence of them or a NumPy array (as
    numba-dpex's LocalAccessor takes), or TypeError."""
    if hasattr(shape, "tolist") and callable(shape.tolist):
        shape = shape.tolist()
    shape = tuple(shape) if isinstance(shape, list | tuple) else (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        shape = ()
    if not 1 <= len(shape) <= 3 or any(d <= 0 for d in shape):
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
