"""dpjit's asynchronous launches: which prange loops go to the queue without a wait
(_async_loops, by _AsyncRules over the host code between loops), and the per-call context of
pending launches (_Calls, _submit, _settle) that launching.py's launchers share."""

from __future__ import annotations

import ast
import contextlib
import threading
import types

import numpy as np

from .._kernel.launch import call_kernel, call_kernel_async, wait_all
from .._memory.array import Array
from .analysis import _SCOPES, _Loop, _Resolver

# A loop whose results the host does not read (no reduction, no last value) is submitted
# without a wait when the host code after it, up to the next prange loop of the same block,
# cannot see the arrays' contents: then that next launch is queued behind it and the host waits
# once, at the first launch that is not followed so (or that has results). What the host may
# run in between: assignments of sizes and metadata (`n = a.shape[0] // 2`, `dt = a.dtype`),
# of plain names, and of new arrays (`kapi.empty_like(a)`, `np.zeros((n, 3))`); the next
# loop's bounds must be such sizes too. Anything else (a call, reading an element, an array
# expression, the end of the block, a return) waits first.

_METADATA = {"shape", "dtype", "size", "ndim", "itemsize", "strides", "device", "sycl_queue"}
_SIZE_CALLS = {"len", "min", "max", "int", "abs"}
_ALLOCS = {"empty", "zeros", "ones", "full"}  # and their _like forms
_CONSTANTS = (int, float, complex, np.generic, np.dtype, type)


class _AsyncRules:
    """Which host statements and loop bounds read no array contents (see above)."""

    def __init__(self, resolver: _Resolver, scalars: set[str]):
        self.resolver = resolver
        self.scalars = scalars  # names the host only ever assigns sizes to

    def _resolves(self, node, test) -> bool:
        try:
            obj, _ = self.resolver._value(node)
        except (LookupError, AttributeError, ValueError):
            return False
        return test(obj)

    def _is_module_value(self, node) -> bool:
        """`np.float64`, `math.pi`: a number or type that is an attribute of a module the
        function sees (not an array a module holds)."""
        return (
            isinstance(node, ast.Attribute)
            and self._resolves(node.value, lambda o: isinstance(o, types.ModuleType))
            and self._resolves(node, lambda o: isinstance(o, _CONSTANTS))
        )

    def size(self, e, names_ok: bool = False) -> bool:
        """An integer/float expression of constants, sizes and metadata (Names: only those
        known to hold sizes, or any when names_ok: loop bounds, which range() reads as ints)."""
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.Name):
            return names_ok or e.id in self.scalars
        if isinstance(e, ast.Attribute):
            return self.metadata(e) or self._is_module_value(e)
        if isinstance(e, ast.Subscript):
            return self.metadata(e.value) and self.size(e.slice, names_ok)
        if isinstance(e, ast.BinOp):
            return self.size(e.left, names_ok) and self.size(e.right, names_ok)
        if isinstance(e, ast.UnaryOp):
            return self.size(e.operand, names_ok)
        if isinstance(e, ast.Tuple):
            return all(self.size(x, names_ok) for x in e.elts)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and not e.keywords:
            return (
                e.func.id in _SIZE_CALLS
                and self.resolver.is_builtin(e.func.id)
                and (
                    all(self.size(a, names_ok) for a in e.args)
                    # len(x) reads x's length only
                    or (e.func.id == "len" and all(isinstance(a, ast.Name) for a in e.args))
                )
            )
        return False

    def metadata(self, e) -> bool:
        return isinstance(e, ast.Attribute) and e.attr in _METADATA and _is_name_chain(e.value)

    def _allocation(self, e) -> bool:
        if not isinstance(e, ast.Call) or any(isinstance(a, ast.Starred) for a in e.args):
            return False

        def is_alloc(obj):
            mod = getattr(obj, "__module__", "") or ""
            name = getattr(obj, "__name__", "")
            base = name[: -len("_like")] if name.endswith("_like") else name
            return base in _ALLOCS and (mod.startswith("kapi") or mod.startswith("numpy"))

        if not self._resolves(e.func, is_alloc):
            return False
        like = e.func.attr if isinstance(e.func, ast.Attribute) else e.func.id
        args = list(e.args)
        if like.endswith("_like"):
            if not args or not isinstance(args[0], ast.Name):
                return False
        elif args and not self.size(args[0], names_ok=True):  # a shape, read as integers
            return False
        kws = [k.value for k in e.keywords if k.arg != "shape"]
        shapes = [k.value for k in e.keywords if k.arg == "shape"]
        return all(self.size(v) for v in args[1:] + kws) and all(
            self.size(v, names_ok=True) for v in shapes
        )

    def statement(self, s) -> bool:
        if isinstance(s, ast.Pass):
            return True
        if not isinstance(s, ast.Assign):
            return False
        targets_ok = all(
            isinstance(t, ast.Name)
            or (isinstance(t, ast.Tuple) and all(isinstance(x, ast.Name) for x in t.elts))
            for t in s.targets
        )
        v = s.value
        return targets_ok and (
            isinstance(v, ast.Name) or self.size(v) or self.metadata(v) or self._allocation(v)
        )

    def bounds(self, loop: _Loop) -> bool:
        return all(self.size(a, names_ok=True) for lp in loop.loops for a in lp.iter.args)


def _is_name_chain(e) -> bool:
    """`x`, `np.float64`, `a.dtype`: names and attributes of names (no calls, no subscripts)."""
    while isinstance(e, ast.Attribute):
        e = e.value
    return isinstance(e, ast.Name)


def _scalar_names(host_nodes, params: set[str], rules: _AsyncRules) -> set[str]:
    """Names whose every host assignment is a size expression (a fixpoint, so `m = n // 2`
    counts when `n = a.shape[0]` does); parameters may hold anything, so are not."""
    stores: dict[str, list] = {}
    simple = set()  # the Name targets of `name = value` statements
    for n in host_nodes:
        if isinstance(n, ast.Assign) and all(isinstance(t, ast.Name) for t in n.targets):
            for t in n.targets:
                stores.setdefault(t.id, []).append(n.value)
                simple.add(id(t))
    bad = set(params)  # and names bound otherwise: tuple, for, with targets, `+=`, ...
    bad |= {
        n.id
        for n in host_nodes
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and id(n) not in simple
    }
    cand = set(stores) - bad
    while True:
        rules.scalars = cand
        keep = {name for name in cand if all(rules.size(v) for v in stores[name])}
        if keep == cand:
            return cand
        cand = keep


def _statement_lists(nodes):
    """Every statement list of the function's body (not entering nested scopes)."""
    todo = [list(nodes)]
    while todo:
        block = todo.pop()
        yield block
        for s in block:
            if isinstance(s, _SCOPES):
                continue
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(s, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    todo.append(sub)
            for h in getattr(s, "handlers", ()):
                todo.append(h.body)
            for c in getattr(s, "cases", ()):
                todo.append(c.body)


def _async_loops(body, nests, rules: _AsyncRules) -> set[int]:
    """ids of the prange For nodes launched without a wait (see the rules above)."""
    by_id = {id(node): nest for node, nest in nests}
    out = set()
    for block in _statement_lists(body):
        for i, s in enumerate(block):
            nest = by_id.get(id(s))
            if nest is None or nest.ndrange:
                continue
            for t in block[i + 1 :]:
                nxt = by_id.get(id(t))
                if nxt is not None:
                    if rules.bounds(nxt):
                        out.add(id(s))
                    break
                if not rules.statement(t):
                    break
    return out


class _Stats:
    """Per dpjit function: kernels launched and host waits for them (tests read these)."""

    def __init__(self):
        self.launches = 0
        self.waits = 0


class _Calls(threading.local):
    """Per dpjit function and thread: the launches not waited for yet of each running call
    (a stack: a call may run inside another, by recursion). The Python-side wrapper around
    the host function opens a call's list and settles it however the call ends (`running`);
    the launchers take the innermost one. A function without asynchronous loops keeps none:
    its launches wait at once."""

    def __init__(self, stats: _Stats, asynchronous: bool):
        self.stats = stats
        self.asynchronous = asynchronous
        self.stack: list[list] = []

    def pending(self):
        return self.stack[-1] if self.asynchronous and self.stack else None

    @contextlib.contextmanager
    def running(self):
        if not self.asynchronous:
            yield
            return
        pending: list = []
        self.stack.append(pending)
        try:
            yield
        finally:
            self.stack.pop()
            _settle(pending, self.stats)


def _queue_key(args):
    """The queue a launch with these arguments runs on, as call_kernel picks it."""
    for a in args:
        if isinstance(a, Array):
            q = a.sycl_queue
            return getattr(q, "_native", q)
    if any(isinstance(a, np.ndarray) for a in args):
        return "cpu"
    return "default"


def _settle(pending: list, stats: _Stats, event=None) -> None:
    """Waits for every pending launch (and `event`): one host wait. Waiting on each event
    raises what its kernel raised (a failed assert)."""
    events = [e for _, e in pending]
    if event is not None:
        events.append(event)
    pending.clear()
    if events:
        stats.waits += 1
        wait_all(events)


def _submit(kern, rng, args, pending, wait: bool, stats: _Stats) -> None:
    """Launches kern; without `wait` (pending is a list) queued behind the pending launches."""
    stats.launches += 1
    if pending is None:
        stats.waits += 1
        call_kernel(kern, rng, *args)
        return
    key = _queue_key(args)
    if pending and pending[0][0] != key:  # another queue: no order between them
        _settle(pending, stats)
    _, ev = call_kernel_async(kern, rng, (), *args)
    pending.append((key, ev))
    if wait:
        _settle(pending, stats)
