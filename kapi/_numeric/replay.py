"""Recorded launch plans: the host path of an array-library call (a reduction, a scan) once,
then only its launches.

The first call of an operation on arrays of a given shape, strides, dtype and device runs the
library's general Python code (axis normalisation, scheme choice, kernel source text, views,
`NdRange`s...) under a *trace*: every temporary it allocates, every kernel it launches through
`launch` below and the arrays those launches take are recorded, each array as a view (offset,
shape, strides, dtype) of the input `x` or of one of the temporaries. Nothing of that depends
on the data or on x's address, so a later call with the same key replays the plan: it takes
its temporaries from the memory pool, makes the recorded views of x and of them, and submits
the recorded kernels with the recorded ranges and scalars, asynchronously (the queue is
in order; reading the result waits for it, as any read of a kapi array waits for its queue).
A call whose general path does anything a plan cannot repeat (a host copy, a fill, an array
other than x and its own temporaries, a lazy result) is not recorded: it keeps the general
path. kapi/_numeric/reduce.py, primitives.py and scan.py key their plans;
tests/numeric/test_replay.py checks that plans of different shapes, dtypes and axes never mix.
"""

from __future__ import annotations

import collections
import threading
import weakref

from .. import _native
from .._memory import pool as _memory

_TLS = threading.local()  # .trace: the Trace recording on this thread, if any
_MAX_PLANS = 2048  # plans kept per cache; past that the oldest goes
_IN_FLIGHT = 4  # replayed calls whose arrays may still be held by their pending launches
_IN_FLIGHT_BYTES = 1 << 28  # and the most bytes they may hold (unless it is one call's)
_RECENT: collections.deque = collections.deque()  # (events, bytes) of those, oldest first
_RECENT_BYTES = 0
_RECENT_LOCK = threading.Lock()
_TRACING_LOCK = threading.Lock()


class Untraceable(Exception):
    """The traced call did something a plan cannot repeat (internal: it just runs)."""


class Trace:
    """What one call of the general path allocated and launched."""

    def __init__(self, x: Array):
        self.x = x
        self.ok = True
        self.owners: dict[int, int] = {}  # id(owner) -> index of the temporary
        self.bufs: list[tuple[int, int, int]] = []  # (device, USM kind, nbytes) each
        self.keep: list = []  # the owners, alive until the trace ends (ids stay unique)
        self.views: list[tuple] = []
        self.view_ids: dict[tuple, int] = {}
        self.launches: list[tuple] = []

    def allocated(self, owner, device: int, kind: int, nbytes: int) -> None:
        self.owners[id(owner)] = len(self.bufs)
        self.bufs.append((device, kind, nbytes))
        self.keep.append(owner)

    def view(self, a: Array) -> int:
        """The index of a's view spec: (source: -1 for x or a temporary's index, byte offset
        from the source's address, shape, strides, dtype, usm_type)."""
        if type(a) is not Array or a._queue is not self.x._queue:
            raise Untraceable
        x = self.x
        if a._owner is x._owner:
            src, off = -1, a._ptr - x._ptr
        else:
            src = self.owners.get(id(a._owner))
            if src is None:
                raise Untraceable  # an array the call did not make
            off = a._ptr - a._owner.ptr
        spec = (src, off, a._shape, a._strides, a._dtype, a._usm_type)
        k = self.view_ids.get(spec)
        if k is None:
            k = self.view_ids[spec] = len(self.views)
            self.views.append(spec)
        return k

    def launched(self, kernel, rng, args) -> None:
        consts = list(args)
        refs = []
        for i, a in enumerate(args):
            if isinstance(a, Array):
                if id(a) in _CONSTANT_IDS:
                    continue
                refs.append((i, self.view(a)))
                consts[i] = None
        self.launches.append((kernel, rng, tuple(consts), tuple(refs)))


def tracing() -> bool:
    return getattr(_TLS, "trace", None) is not None


def untraceable() -> None:
    """Called where the general path does what a plan cannot repeat (a host copy, a fill)."""
    t = getattr(_TLS, "trace", None)
    if t is not None:
        t.ok = False


def on_allocate(owner, device: int, kind: int, nbytes: int) -> None:
    """_memory.allocate's hook (only while a trace records on this thread)."""
    t = getattr(_TLS, "trace", None)
    if t is not None:
        t.allocated(owner, device, kind, nbytes)


def launch(kernel, rng, *args, events=None) -> None:
    """call_kernel for the array library's own kernels, recorded while a trace runs; with
    events (a list), call_kernel_async instead, its Event appended to events."""
    t = getattr(_TLS, "trace", None)
    if t is not None and t.ok:
        try:
            t.launched(kernel, rng, args)
        except Untraceable:
            t.ok = False
    if _ASYNC is None:
        _bind()
    if events is None:
        _SYNC(kernel, rng, *args)
    else:
        events.append(_ASYNC(kernel, rng, (), *args)[1])


def constant(a: Array) -> Array:
    """Marks a (an array that no kernel of the library ever writes, kept for good) as one a
    plan may hold and pass as it is."""
    _CONSTANT_IDS.add(id(a))
    _CONSTANTS.append(a)
    return a


_CONSTANT_IDS: set[int] = set()
_CONSTANTS: list = []


class Plan:
    """A recorded call: replay(x) gives what the general path gave for an x of this key."""

    __slots__ = (
        "bufs", "nbytes", "xviews", "bviews", "launches", "result", "own", "dev", "_xcache",
        "__weakref__",
    )  # fmt: skip

    def __init__(self, trace: Trace, result: int, own: bool):
        # temporaries no view uses (a constant made during the trace) are not allocated
        used = sorted({v[0] for v in trace.views if v[0] >= 0})
        renum = {b: k for k, b in enumerate(used)}
        self.bufs = tuple(trace.bufs[b] for b in used)
        self.nbytes = sum(b[2] for b in self.bufs)
        args = {k for launch in trace.launches for _, k in launch[3]}
        # the views of x first, then those of the temporaries: a replay's list of views is
        # the (cached) views of x followed by the new ones, in this order
        order = sorted(range(len(trace.views)), key=lambda k: trace.views[k][0] >= 0)
        place = {k: n for n, k in enumerate(order)}
        xviews, bviews = [], []
        for k in order:
            src, off, shape, strides, dt, ut = trace.views[k]
            # a kernel argument's descriptor parts (what Array._kdesc computes), made once
            desc = _kdesc_parts(dt, shape, strides) if k in args else None
            if src < 0:
                xviews.append((off, shape, strides, dt, ut, desc))
            else:
                bviews.append((renum[src], off, shape, strides, dt, ut, desc))
        self.xviews, self.bviews = tuple(xviews), tuple(bviews)
        self.launches = tuple(
            (kernel, rng, consts, tuple((i, place[k]) for i, k in refs))
            for kernel, rng, consts, refs in trace.launches
        )
        self.result, self.own = place[result], own
        q = trace.x._queue
        self.dev = (q.device.index, q._native)
        self._xcache = None  # (weakref to the last x, its views), while that x lives

    def _x_views(self, x: Array) -> list[Array]:
        c = self._xcache
        if c is not None and c[0]() is x:
            return c[1]
        q, owner, ptr, host = x._queue, x._owner, x._ptr, x._host_ok
        dev, qn = self.dev
        views = []
        for off, shape, strides, dt, ut, desc in self.xviews:
            v = Array._make(owner, ptr + off, shape, strides, dt, q, ut, host)
            if desc is not None:
                v._kd = _ARGDESC(("A", desc[0], dev, qn, ptr + off, shape, desc[1]))
            views.append(v)
        ref = weakref.ref(x, _drop_cache(self))
        self._xcache = (ref, views)
        return views

    def replay(self, x: Array) -> Array:
        if _ASYNC is None:
            _bind()
        alloc = _memory.allocate
        blocks = [alloc(d, k, n) for d, k, n in self.bufs]
        views = list(self._x_views(x)) if self.xviews else []
        q = x._queue
        dev, qn = self.dev
        make, argdesc = Array._make, _ARGDESC
        for src, off, shape, strides, dt, ut, desc in self.bviews:
            b = blocks[src]
            ptr = b.ptr + off
            v = make(b, ptr, shape, strides, dt, q, ut, b.host_accessible)
            if desc is not None:
                v._kd = argdesc(("A", desc[0], dev, qn, ptr, shape, desc[1]))
            views.append(v)
        res = views[self.result]
        res._own = self.own
        call_kernel_async = _ASYNC
        events = []
        internal = _lazy.internal() if _lazy._PENDING else None
        if internal is not None:
            internal.__enter__()
        try:
            for kernel, rng, consts, refs in self.launches:
                args = list(consts)
                for i, k in refs:
                    args[i] = views[k]
                events.append(call_kernel_async(kernel, rng, (), *args)[1])
        finally:
            if internal is not None:
                internal.__exit__(None, None, None)
        _retire(events, self.nbytes)
        return res


_SYNC = _ASYNC = _ARGDESC = None


def _bind() -> None:
    """The launch functions, looked up once (kapi/_kernel/launch.py imports after this module)."""
    global _SYNC, _ASYNC, _ARGDESC
    from .._kernel.launch import compiled_call_kernel, compiled_call_kernel_async

    _SYNC, _ASYNC = compiled_call_kernel, compiled_call_kernel_async
    _ARGDESC = _native.ext().ArgDesc


def _kdesc_parts(dt, shape, strides):
    """(type key, strides in elements) of an array argument, as Array._kdesc makes them;
    None where Array._kdesc raises (at the launch, with its words)."""
    from .._memory.array import _desc_parts
    from .._memory.dtypes import KERNEL_MAX_NDIM

    if not 1 <= len(shape) <= KERNEL_MAX_NDIM:
        return None
    return _desc_parts(dt, shape, strides)


def _drop_cache(plan: Plan):
    pref = weakref.ref(plan)

    def drop(ref):
        p = pref()
        if p is not None and p._xcache is not None and p._xcache[0] is ref:
            p._xcache = None

    return drop


def _retire(events, nbytes: int) -> None:
    """Keeps the events of the last _IN_FLIGHT replayed calls (_IN_FLIGHT_BYTES of arrays at
    most); older ones are waited for (done by then, as a rule), which lets their arrays go
    back to the pool at once rather than when the queue next prunes its pending events."""
    global _RECENT_BYTES
    old = []
    with _RECENT_LOCK:
        _RECENT.append((events, nbytes))
        _RECENT_BYTES += nbytes
        while len(_RECENT) > _IN_FLIGHT or (len(_RECENT) > 1 and _RECENT_BYTES > _IN_FLIGHT_BYTES):
            evs, n = _RECENT.popleft()
            _RECENT_BYTES -= n
            old.extend(evs)
    for ev in old:
        ev.wait()


_CACHES: list[dict] = []


def plans() -> dict:
    """A new cache of plans (a module's: its keys say what the general path depends on)."""
    d: dict = {}
    _CACHES.append(d)
    return d


def clear_plans() -> None:
    """Drops every recorded plan (tests that patch a module's scheme choices call this)."""
    for d in _CACHES:
        d.clear()


def call(key, cache: dict, x: Array, fn, *args):
    """fn(*args) through cache's plan for key: replayed where one was recorded, recorded on
    the key's first call, fn itself where the key keeps the general path or cannot be hashed
    (a device function among its parts)."""
    try:
        plan = cache.get(key, False)
    except TypeError:
        return fn(*args)
    if plan is False:
        return record(key, cache, x, fn, *args)
    return fn(*args) if plan is None else plan.replay(x)


def record(key, cache: dict, x: Array, fn, *args):
    """fn(*args), the general path of a call whose only array input is x; recorded as
    cache[key]'s plan if it can be repeated. The result as fn gave it (a lazy result is
    computed first)."""
    if getattr(_TLS, "trace", None) is not None:  # a nested library call: no plan of its own
        return fn(*args)
    t = _TLS.trace = Trace(x)
    with _TRACING_LOCK:
        _memory._TRACING += 1
    try:
        res = fn(*args)
        if type(res) is _lazy._Pending:
            res = _lazy.realize(res)
    finally:
        _TLS.trace = None
        with _TRACING_LOCK:
            _memory._TRACING -= 1
    plan = None
    if t.ok and type(res) is Array:
        try:
            result = t.view(res)
        except Untraceable:
            result = None
        if result is not None and t.views[result][0] >= 0:  # never x itself or its view
            plan = Plan(t, result, res._own)
    while len(cache) >= _MAX_PLANS:
        cache.pop(next(iter(cache)))
    cache[key] = plan  # None: this key keeps the general path (and is not traced again)
    return res


_memory.on_allocate = on_allocate
_memory.untraceable = untraceable

# Last: the reductions, which make their cache of plans here, load with the array library.
from .._memory.array import Array  # noqa: E402
from . import lazy as _lazy  # noqa: E402
