"""A caching memory pool for kapi arrays, in the manner of CuPy's MemoryPool.

Every array kapi allocates (kapi.empty/zeros/asarray/..., operator and reduction results)
takes a Block from the pool. When the last reference to a Block goes, its runtime Buffer is
kept in the pool's free list for its (device, USM kind, size class) instead of being freed,
and the next allocation of that class takes it back: in steady state a fresh result array
costs no driver allocation (cuMemAlloc/cuMemFree on CUDA, which also synchronise).

Asynchronous work: a pending launch holds its array arguments (their Event keeps them until
the launch is known complete, see kapi/_ext/rt_event.c), and so the Block; a block therefore
returns to the pool only after every queued command using it has finished. An allocation that
runs out of device memory frees the pool's cached blocks of that device and tries once more
before raising OutOfDeviceMemoryError. `KAPI_MEMORY_POOL=0` in the environment disables the
pool: every array then allocates and frees its own Buffer.
"""

from __future__ import annotations

import gc
import os
import threading

from .. import _native
from .._errors import OutOfDeviceMemoryError

_SMALL = 512  # allocation granularity (CuPy's), and the size class step below _LARGE
_LARGE = 1 << 20  # from here a class spans 1/16 of its power of two (at most 6.25% unused)


def _size_class(nbytes: int) -> int:
    """The rounded size a request of nbytes is served from (so that near sizes share)."""
    n = max(nbytes, 1)
    if n < _LARGE:
        return -(-n // _SMALL) * _SMALL
    step = (1 << (n.bit_length() - 1)) // 16
    return -(-n // step) * step


class Block:
    """One allocation of the pool: what an Array's memory belongs to (its owner). Returns
    its Buffer to the pool when no array, view, DLPack capsule or pending launch holds it."""

    __slots__ = ("buf", "ptr", "nbytes", "host_accessible", "_pool", "_key", "_gen")

    def __init__(self, buf, pool, key):
        self._gen = pool._gen
        self.buf = buf
        self.ptr = buf.ptr
        self.nbytes = key[2]
        self.host_accessible = buf.host_accessible
        self._pool = pool
        self._key = key

    def detach(self):
        """The Buffer, which the caller may keep beyond this Block (Array.base): it leaves the
        pool then and is freed, not cached, once its last holder goes."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool._forget(self._key[2])
        return self.buf

    def __del__(self):
        pool = self._pool
        if pool is not None:
            pool._give_back(self._key, self.buf, self._gen)


class MemoryPool:
    """Cached device (and host, shared) memory of every device: `kapi.get_default_memory_pool()`."""

    def __init__(self):
        self._lock = threading.RLock()  # RLock: a Block's __del__ may run inside malloc (GC)
        self._free: dict[tuple[int, int, int], list] = {}
        self._used = 0  # bytes of blocks handed out and alive
        self._cached = 0  # bytes of buffers in the free lists
        self._gen = 0  # bumped in a forked child: its parent's blocks are not cached

    def malloc(self, device: int, kind: int, nbytes: int) -> Block:
        """A Block of at least nbytes of USM kind `kind` (kr_mem_kind_t) on runtime device
        `device`: a cached buffer of its size class, else a new one."""
        key = (device, kind, _size_class(nbytes))
        with self._lock:
            free = self._free.get(key)
            buf = free.pop() if free else None
            if buf is not None:
                self._cached -= key[2]
            self._used += key[2]
        if buf is None:
            try:
                buf = self._allocate(key)
            except BaseException:
                with self._lock:
                    self._used -= key[2]
                raise
        return Block(buf, self, key)

    def _allocate(self, key):
        ext = _native.ext()
        try:
            return ext.Buffer(key[0], key[1], key[2])
        except OutOfDeviceMemoryError:
            pass
        # out of memory: blocks kept by dead cycles, then the cache of this device, go first
        gc.collect()
        self.free_all_blocks(device=key[0])
        return ext.Buffer(key[0], key[1], key[2])

    def _give_back(self, key, buf, gen) -> None:
        with self._lock:
            self._used -= key[2]
            if gen != self._gen:
                return  # memory a forked child inherited: freed, never reused
            self._free.setdefault(key, []).append(buf)
            self._cached += key[2]

    def _forget(self, nbytes: int) -> None:
        with self._lock:
            self._used -= nbytes

    def used_bytes(self) -> int:
        """Bytes of the pool's blocks that arrays (or pending launches) still use."""
        return self._used

    def free_bytes(self) -> int:
        """Bytes held in the pool's free lists, ready for reuse."""
        return self._cached

    def total_bytes(self) -> int:
        """used_bytes() + free_bytes(): all the memory the pool holds."""
        return self._used + self._cached

    def n_free_blocks(self) -> int:
        """Buffers in the free lists."""
        with self._lock:
            return sum(len(v) for v in self._free.values())

    def free_all_blocks(self, device: int | None = None) -> None:
        """Frees the cached buffers (of one runtime device index, or all): the memory goes
        back to the driver. Blocks in use stay as they are."""
        with self._lock:
            keys = [k for k in self._free if device is None or k[0] == device]
            dropped = [self._free.pop(k) for k in keys]
            self._cached -= sum(k[2] * len(v) for k, v in zip(keys, dropped, strict=True))
        del dropped  # freed here, outside the lock

    def _after_fork(self) -> None:
        # a fresh lock: another thread of the parent may have held the old one at the fork
        # (os.register_at_fork below takes it first, but a child must never wait on it)
        self._lock = threading.RLock()
        _LEAKED.append(self._free)  # the parent's memory: a child frees none of it
        self._free = {}
        self._cached = 0
        self._gen += 1


_LEAKED: list = []


def _enabled() -> bool:
    return os.environ.get("KAPI_MEMORY_POOL", "1").strip().lower() not in ("0", "false", "off")


_POOL: MemoryPool | None = MemoryPool() if _enabled() else None


def _before_fork():
    if _POOL is not None:
        _POOL._lock.acquire()  # no thread is inside the pool while the process forks


def _parent():
    if _POOL is not None:
        _POOL._lock.release()


def _child():
    if _POOL is not None:
        _POOL._after_fork()


os.register_at_fork(before=_before_fork, after_in_parent=_parent, after_in_child=_child)


def get_default_memory_pool() -> MemoryPool | None:
    """The pool every kapi array allocates from; None when KAPI_MEMORY_POOL=0 disabled it."""
    return _POOL


# Threads recording a launch plan (kapi._numeric.replay, which sits above arrays and sets the
# two hooks below when it loads): the recorder sees allocations and host transfers.
_TRACING = 0
on_allocate = None  # (owner, device, kind, nbytes)
untraceable = None  # () a host copy or fill, which a plan cannot repeat


def allocate(device: int, kind: int, nbytes: int):
    """The owner of a new array's memory: a pool Block, or a Buffer of its own when the pool
    is disabled. Both have .ptr and .host_accessible."""
    if _POOL is None:
        owner = _native.ext().Buffer(device, kind, nbytes)
    else:
        owner = _POOL.malloc(device, kind, nbytes)
    if _TRACING:
        on_allocate(owner, device, kind, nbytes)
    return owner
