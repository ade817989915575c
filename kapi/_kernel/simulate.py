"""The kernel simulator: a launch runs the kernel's Python function itself, work-item by
work-item, on NumPy views of its arrays, so pdb, breakpoint(), print() of any Python object
and exceptions with their tracebacks work inside kernels (KAPI_SIMULATOR=1 for every
call_kernel, kapi.simulate(kernel, index_space, *args) for one launch).

A Range launch calls the function once per work-item in the calling thread, in linear-id order
(the last dimension fastest, as numba-dpex's kernel_api.call_kernel). An NdRange launch runs
one work-group at a time, its work-items in local linear-id order; a work-item that waits at a
barrier (group_barrier or a group collective) keeps a thread of its own while the next one
runs, and exactly one thread runs kernel code at any moment (control passes at barriers, in
order), so runs are deterministic and a debugger stops the whole launch. The objects kernels
use are kapi_lang's, with the group synchronisation its module docstring describes.

Arrays: kapi arrays the host can address (all of kapi's CPU device's) are viewed in place;
others (GPU memory) are copied to the host before the launch and back after it, also when the
kernel fails. NumPy arrays are used as they are. Each work-group gets fresh NumPy arrays for
its LocalAccessor arguments. The array library's own kernels (operators, reductions, sort,
kapi.random) never come here: they launch through launch.compiled_call_kernel.
"""

from __future__ import annotations

import ctypes
import inspect
import operator
import os
import threading
import types
import warnings
from collections import deque
from itertools import product

import numpy as np

from kapi_lang import kernel_api as K

from .._errors import (
    ExecutionQueueInferenceError,
    InvalidKernelSpecializationError,
    InvalidRangeError,
    UnsupportedDtypeError,
    UnsupportedKernelArgumentError,
)
from .._memory import array as _array
from .._memory.array import Array
from .._memory.dtypes import DTYPE_TO_KIR, KERNEL_MAX_NDIM
from .ranges import NdRange, Range

__all__ = ["SimulatedEvent", "call_kernel_async", "enabled", "simulate"]

_MAX_WORK_ITEMS = 0xFFFFFFFF  # as the compiled launch (kapi/_ext/launch.c)


def enabled() -> bool:
    """Whether KAPI_SIMULATOR asks for the simulator: 1 on, 0 or unset off."""
    v = os.environ.get("KAPI_SIMULATOR", "").strip()
    if v not in ("", "0", "1"):
        raise ValueError(f"KAPI_SIMULATOR must be 0 or 1, not {v!r}")
    return v == "1"


class SimulatedEvent:
    """What call_kernel_async returns under the simulator: the launch has already completed."""

    is_complete = True

    def wait(self) -> None:
        """Nothing to wait for: the simulated launch ran before call_kernel_async returned."""

    def __repr__(self) -> str:
        return "<kapi simulated launch event (complete)>"


def simulate(kernel, index_space, *args) -> None:
    """Runs kernel over index_space (a kapi.Range or kapi.NdRange) as plain Python, on NumPy
    views of its arrays, and returns when every work-item has finished: call_kernel's
    arguments and results, without compiling. Barriers, group collectives, atomics, local and
    private memory work (sub-groups have one work-item); breakpoint(), pdb and print() work
    inside the kernel and its device functions. An exception in a work-item stops the launch
    and is raised with the kernel's traceback, noting the work-item."""
    func, name = _python_function(kernel)
    glob, loc = _space(index_space)
    params = list(inspect.signature(func).parameters)
    with_item = _arity(name, params, len(args))
    names = params[1:] if with_item else params
    values, local_shapes, copies = _arguments(args, names, loc is not None)
    try:
        if loc is None:
            _run_range(func, name, with_item, glob, values)
        else:
            _NdLaunch(func, name, with_item, glob, loc, values, local_shapes).run()
    finally:
        for a, host in copies:  # device memory: the host copies go back, whatever happened
            a._assign(host)


def call_kernel_async(kernel_fn, index_space, dependent_events, *kernel_args):
    """call_kernel_async under KAPI_SIMULATOR=1: waits for dependent_events, runs the kernel as
    Python to completion, and returns (host_event, kernel_event), both complete."""
    if dependent_events is None:
        dependent_events = ()
    if not isinstance(dependent_events, tuple | list):
        raise TypeError("call_kernel_async: dependent_events must be a tuple (or list) of events")
    for ev in dependent_events:
        ev.wait()
    simulate(kernel_fn, index_space, *kernel_args)
    ev = SimulatedEvent()
    return ev, ev


# -- what the launch runs ------------------------------------------------------------------


def _python_function(kernel):
    from .dispatcher import KernelDispatcher

    if isinstance(kernel, KernelDispatcher):
        return kernel.py_func, kernel.__name__
    if inspect.isfunction(kernel):
        return kernel, kernel.__name__
    raise TypeError(f"call_kernel takes a @kapi.kernel function, not {type(kernel).__name__}")


def _space(space):
    """(global extents, local extents or None) of an index space, checked as call_kernel does."""
    if isinstance(space, NdRange):
        glob, loc = tuple(space.global_range), tuple(space.local_range)
    elif isinstance(space, Range):
        glob, loc = tuple(space), None
    elif isinstance(space, int) and not isinstance(space, bool):
        glob, loc = tuple(Range(space)), None
    elif isinstance(space, tuple):
        if not 1 <= len(space) <= 3:
            raise InvalidRangeError("the global range must have 1 to 3 dimensions")
        glob, loc = tuple(Range(*space)), None
    else:
        raise InvalidRangeError(
            f"the index space must be a kapi.Range or kapi.NdRange, not {type(space).__name__}"
        )
    total = 1
    for d in glob:
        total *= d
    if total > _MAX_WORK_ITEMS:
        raise InvalidRangeError(
            f"the index space is too large: more than {_MAX_WORK_ITEMS} work-items in one "
            "launch; split the work into several launches"
        )
    return glob, loc


def _arity(name, params, nargs) -> bool:
    """Whether the kernel takes an item first; InvalidKernelSpecializationError if the argument
    count fits neither form (call_kernel's check and message)."""
    if len(params) == nargs + 1:
        return True
    if len(params) == nargs:
        warnings.warn(
            "Kernels without item/nd_item will be not supported in the future",
            DeprecationWarning,
            stacklevel=3,
        )
        return False
    raise InvalidKernelSpecializationError(
        f"kernel '{name}' takes {len(params) - 1} argument(s) after its item/nd_item argument, "
        f"but {nargs} were given to call_kernel; pass call_kernel(kernel, range, *arguments)"
    )


def _check_array(a, pos):
    if not 1 <= a.ndim <= KERNEL_MAX_NDIM:
        raise UnsupportedKernelArgumentError(
            f"kernel argument {pos}: kernels take arrays of 1 to {KERNEL_MAX_NDIM} dimensions, "
            f"not {a.ndim}"
        )
    if a.dtype not in DTYPE_TO_KIR:
        raise UnsupportedDtypeError(
            f"kernel argument {pos}: arrays of dtype {a.dtype} are not supported; use one of "
            f"{', '.join(str(d) for d in DTYPE_TO_KIR)}"
        )


# What call_kernel takes as it is; anything else may be another library's array (interop).
_KNOWN = (Array, np.ndarray, np.generic, K.LocalAccessor, bool, int, float, complex)


def _arguments(args, names, nd: bool):
    """(the values the kernel gets, {position: (shape, dtype)} of LocalAccessors, [(kapi array,
    host copy)] to copy back): call_kernel's argument rules, where the simulator needs them."""
    from .._memory.interop import import_foreign

    values, local_shapes, copies, seen = [], {}, [], {}
    device = device_at = None
    numpy_at = None
    for pos, a in enumerate(args):
        if not isinstance(a, _KNOWN):
            foreign = import_foreign(a)
            if foreign is None:
                raise UnsupportedKernelArgumentError(
                    f"kernel argument {pos} has type {type(a).__name__}; kernels take kapi "
                    f"arrays (kapi.asarray(x)), NumPy arrays on the CPU device, LocalAccessor "
                    f"and scalars"
                )
            a = foreign
        if isinstance(a, Array):
            _check_array(a, pos)
            if device is None:
                device, device_at = a.device, pos
            elif a.device != device:
                raise ExecutionQueueInferenceError(
                    f"arguments '{names[device_at]}' and '{names[pos]}' live on different "
                    f"devices ('{device.name}' and '{a.device.name}'); a launch runs where its "
                    f"arrays are: move one with .to_device(...) or kapi.asarray(x, device=...)"
                )
            values.append(_host_array(a, seen, copies))
        elif isinstance(a, np.ndarray):
            _check_array(a, pos)
            numpy_at = pos if numpy_at is None else numpy_at
            values.append(a)
        elif isinstance(a, K.LocalAccessor):
            if not nd:
                raise UnsupportedKernelArgumentError(
                    f"argument '{names[pos]}' is a LocalAccessor, which needs work-groups: "
                    f"launch with kapi.NdRange(global_size, local_size) instead of kapi.Range"
                )
            local_shapes[pos] = (a.shape, a.dtype)
            values.append(None)  # each work-group's own array goes here
        else:
            if isinstance(a, np.generic) and a.dtype not in DTYPE_TO_KIR:
                raise UnsupportedDtypeError(
                    f"kernel argument {pos}: scalars of dtype {a.dtype} are not supported"
                )
            values.append(a)
    if numpy_at is not None and device is not None and device.device_type != "cpu":
        raise UnsupportedKernelArgumentError(
            "NumPy arrays can only be passed to kernels running on a CPU device, and this launch "
            f"runs on '{device.name}'; copy them with kapi.asarray(x, device=...) first"
        )
    return values, local_shapes, copies


def _host_array(a: Array, seen: dict, copies: list) -> np.ndarray:
    """A NumPy array with a's elements: a view of host-addressable memory, else a host copy
    (recorded in copies, to go back after the launch). The same kapi array twice is one copy."""
    got = seen.get(id(a))
    if got is not None:
        return got
    before_write = _array._on_write
    if before_write is not None:  # pending expressions that read a run first (the kernel may
        before_write(a)  # write it), and a itself if it is pending
    if a._host_ok:
        h = a._host_view()
    else:
        h = a.asnumpy()
        copies.append((a, h))
    seen[id(a)] = h
    return h


# -- Range launches ------------------------------------------------------------------------


def _run_range(func, name, with_item, glob, values):
    idx = None
    try:
        for idx in product(*map(range, glob)):
            if with_item:
                func(K.Item(glob, idx), *values)
            else:
                func(*values)
    except BaseException as e:
        _annotated(e, name, idx)
        raise


# -- NdRange launches ----------------------------------------------------------------------


class _Abort(BaseException):
    """Unwinds a work-item's thread when its launch stops (another work-item failed)."""


class _Runner:
    """A thread that runs work-items: the caller's own, or one the launch started. It runs
    only while it holds the launch's turn; `wake` is released to give it the turn."""

    __slots__ = ("wake", "thread", "lid")

    def __init__(self, thread=None):
        self.wake = threading.Lock()
        self.wake.acquire()
        self.thread = thread
        self.lid = -1  # the local linear id of the work-item it runs


class _Group:
    """One work-group's run: its local memory, and the `_sync` of its work-items' Group
    objects (kapi_lang's protocol: barrier and exchange)."""

    def __init__(self, launch, size, args):
        self.launch = launch
        self.size = size
        self.args = args  # the kernel's arguments, with this group's local arrays
        self.blocked: list[_Runner] = []  # runners whose work-item waits at a barrier
        self.finished = 0
        self.values = [None] * size

    def barrier(self) -> None:
        launch = self.launch
        me = launch.current
        self.blocked.append(me)
        self.release()
        launch.pass_turn(me)

    def release(self) -> None:
        """Once every work-item still running has arrived, they all continue, in order (one
        that has returned no longer holds the others up, as on hardware that counts only
        running work-items)."""
        if self.blocked and len(self.blocked) == self.size - self.finished:
            self.blocked.sort(key=operator.attrgetter("lid"))
            self.launch.ready.extend(self.blocked)
            self.blocked = []

    def exchange(self, lid: int, value) -> list:
        self.values[lid] = value
        self.barrier()
        values = list(self.values)
        self.barrier()  # nobody overwrites values before everyone has read them
        return values


class _NdLaunch:
    """Runs the work-groups of an NdRange launch one after another (module docstring)."""

    def __init__(self, func, name, with_item, glob, loc, values, local_shapes):
        self.func, self.name, self.with_item = func, name, with_item
        self.glob, self.loc = glob, loc
        self.group_range = tuple(g // lo for g, lo in zip(glob, loc, strict=True))
        self.values, self.local_shapes = values, local_shapes
        self.group_ids = product(*map(range, self.group_range))
        self.local_ids = list(product(*map(range, loc)))
        self.group: _Group | None = None
        self.group_id = None
        self.next_local = len(self.local_ids)  # no group started yet
        self.ready: deque[_Runner] = deque()  # runners whose barrier has opened, in order
        self.idle: list[_Runner] = []
        self.threads: list[threading.Thread] = []
        self.current: _Runner | None = None
        self.stopping = False
        self.failure = None  # (exception, global id of its work-item)

    def run(self) -> None:
        me = self.current = _Runner(threading.current_thread())
        try:
            self.work(me)
        except BaseException as e:  # Ctrl-C while another thread ran the kernel
            self.fail(e, None, me)
        finally:
            for t in self.threads:
                t.join(timeout=5.0)
        if self.failure is not None:
            e, gid = self.failure
            raise _annotated(e, self.name, gid)

    # -- the turn --------------------------------------------------------------------------

    def work(self, me: _Runner) -> None:
        """Runs work-items while any is left; called with the turn."""
        while not self.stopping:
            if self.ready:  # work-items past a barrier go before new ones
                nxt = self.ready.popleft()
                self.idle.append(me)
                self.hand_over(me, nxt)
                continue
            item = self.next_item()
            if item is None:
                self.finish()
                return
            self.run_item(me, *item)

    def pass_turn(self, me: _Runner) -> None:
        """me's work-item waits at a barrier: the next work-item runs; returns when me's turn
        comes again (raises _Abort if the launch stopped meanwhile)."""
        if self.ready:
            nxt = self.ready.popleft()
            if nxt is not me:
                self.hand_over(me, nxt)
        else:  # the group's later work-items have not started: a runner starts the next
            self.hand_over(me, self.idle.pop() if self.idle else self.spawn())
        if self.stopping:
            raise _Abort

    def hand_over(self, me: _Runner, other: _Runner) -> None:
        self.current = other
        other.wake.release()
        me.wake.acquire()

    def spawn(self) -> _Runner:
        r = _Runner()
        r.thread = threading.Thread(
            target=self.thread_main, args=(r,), name=f"kapi-simulate-{self.name}", daemon=True
        )
        self.threads.append(r.thread)
        r.thread.start()
        return r

    def thread_main(self, r: _Runner) -> None:
        r.wake.acquire()
        try:
            if not self.stopping:
                self.work(r)
        except _Abort:  # raised into this thread when the caller was interrupted
            pass

    def finish(self) -> None:
        """Every work-item has run: the idle runners leave."""
        self.stopping = True
        for r in self.idle:
            r.wake.release()
        self.idle = []

    # -- work-items ------------------------------------------------------------------------

    def next_item(self):
        """(group, local id, local linear id) of the next work-item to start, or None."""
        if self.next_local == len(self.local_ids):
            gid = next(self.group_ids, None)
            if gid is None:
                return None
            args = list(self.values)
            for pos, (shape, dtype) in self.local_shapes.items():
                args[pos] = np.empty(shape, dtype)  # uninitialised, as on devices
            self.group = _Group(self, len(self.local_ids), args)
            self.group_id = gid
            self.next_local = 0
        lin = self.next_local
        self.next_local += 1
        return self.group, self.local_ids[lin], lin

    def run_item(self, me: _Runner, group: _Group, lid, lin: int) -> None:
        me.lid = lin
        gid = self.group_id
        glob_id = tuple(g * n + i for g, n, i in zip(gid, self.loc, lid, strict=True))
        try:
            if self.with_item:
                grp = K.Group(self.glob, self.loc, self.group_range, gid)
                grp._sync, grp._lid = group, lin
                nd = K.NdItem(K.Item(self.glob, glob_id), K.Item(self.loc, lid), grp)
                self.func(nd, *group.args)
            else:
                self.func(*group.args)
        except _Abort:
            return
        except BaseException as e:
            self.fail(e, glob_id, me)
            return
        group.finished += 1
        group.release()

    def fail(self, e: BaseException, gid, me: _Runner) -> None:
        """Stops the launch: every waiting runner wakes and unwinds (_Abort)."""
        if self.failure is None:
            self.failure = (e, gid)
        self.stopping = True
        holder = self.current
        if holder is not me and holder is not None and holder.thread is not None:
            _raise_in(holder.thread, _Abort)  # Ctrl-C reached the caller, not the kernel's thread
        waiting = [*self.ready, *self.idle, *(self.group.blocked if self.group else ())]
        self.ready.clear()
        self.idle = []
        for r in waiting:
            if r is not me:
                try:
                    r.wake.release()
                except RuntimeError:  # already woken
                    pass


def _raise_in(thread: threading.Thread, exc_type) -> None:
    """Raises exc_type in another Python thread at its next bytecode."""
    if thread.ident is not None and thread is not threading.current_thread():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(thread.ident), ctypes.py_object(exc_type)
        )


# -- errors --------------------------------------------------------------------------------

_HIDDEN = (os.path.normcase(__file__), os.path.normcase(threading.__file__))


def _annotated(e: BaseException, name: str, gid) -> BaseException:
    """e with the kernel's frames only (KAPI_TRACEBACK=1 keeps the simulator's), a note naming
    the kernel and work-item, and compiled failures' kernel_file, kernel_line, work_item."""
    tb = e.__traceback__
    frames = []
    while tb is not None:
        if os.path.normcase(tb.tb_frame.f_code.co_filename) not in _HIDDEN:
            frames.append(tb)
        tb = tb.tb_next
    if not os.environ.get("KAPI_TRACEBACK"):
        new = None
        for t in reversed(frames):
            new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
        e = e.with_traceback(new)
    if gid is None or isinstance(e, KeyboardInterrupt | SystemExit):
        return e
    user = [t for t in frames if "kapi_lang" not in t.tb_frame.f_code.co_filename]
    if user:
        try:
            e.kernel_file = user[-1].tb_frame.f_code.co_filename
            e.kernel_line = user[-1].tb_lineno
            e.work_item = tuple(gid)
        except AttributeError:  # an exception class with __slots__
            pass
    if hasattr(e, "add_note"):
        e.add_note(f"in kernel '{name}', work-item {tuple(gid)} (run by kapi's simulator)")
    return e
