"""@kapi.dpjit: numba-dpex's prange offload. Each `for x in prange(...)` loop of the function is
outlined into a @kapi.kernel over a Range (nested pranges give 2-D/3-D ranges) and the loop is
replaced by a launch (done once, on the first call); the function around the loops is then
compiled by Numba's njit per argument types (host.py); where Numba cannot compile it,
the call raises HostCompileError, or (fallback=True) runs in CPython. Each loop's kernel is
generated per shape on the first launch needing it (_kernel_def).
Loops with reductions or last values run over the linearised nest: on GPUs as a 1-D nd-range
kernel (a grid-stride loop, a work-group tree per reduction, one partial per group, in host
memory), on the CPU device as a barrier-free Range kernel of contiguous blocks (one partial
per work-item); small bodies fold into several independent accumulators (_fold_loop); the
host combines the partials, from a per-loop plan (_Plan) and kept arrays (_Buffers). Small
trip counts of the body's range() loops are compiled into per-value kernels (_trip_vars,
_ShapeBounds). The others run one work-item per iteration. Loops whose
results the host does not read go to the queue without a wait (_async_loops): the pending
launches live in a per-call context (_Calls) that the launchers share, outside the launch's
Numba-typed signature.

The steps live in modules of their own, each importing only those before it: analysis.py
(prange loops, names, reductions), kernels.py (the kernels' code), asynchronous.py (launches
without a wait), launching.py (the launch functions). This module rewrites the host function
(_transform; NumPy allocations follow their argument's type) and holds the public names:
dpjit, DpjitFunction, and the errors and warning it raises."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types
import warnings

import numpy as np

from .._errors import KapiError
from .._kernel.dispatcher import _fastmath as _check_fastmath
from .._memory import array as _array
from .._memory.array import Array
from .analysis import (
    _SCOPES,
    UnsupportedPrangeError,
    _analyse,
    _check_body,
    _collect_nest,
    _comprehension_names,
    _Loop,
    _names,
    _Resolver,
    _stores_loads,
    _walk_scope,
    _where,
)
from .arrayexpr import expand_array_statements
from .asynchronous import _async_loops, _AsyncRules, _Calls, _scalar_names, _Stats
from .kernels import (
    _API,
    _GOP,
    _LINALG,
    _NP,
    _factory,
    _kernel_body,
    _linalg_module,
    _located,
    _make_function,
    _name,
    _shape_bounds,
    _trip_vars,
)
from .launching import _Kernels, _launcher

_LAUNCH = "__kapi_launch"
# Options meaning what dpjit always does (numba.jit's nopython/parallel); others are ignored.
_IMPLIED = {"nopython": True, "parallel": True}
# numba.jit options dpjit honours: given to every prange kernel (@kapi.kernel takes the same
# values) and to numba.njit for the host code.
_PASSED = ("fastmath",)


# -- NumPy allocation following the argument's type ----------------------------------------


def _np_like(np_fn, kapi_fn):
    """np.empty_like & co. in host code: a kapi array for a kapi array (on its device, as
    numba-dpex's dpjit gives a dpnp array), NumPy's result for anything else."""

    def like(a, *args, **kwargs):
        return (kapi_fn if isinstance(a, Array) else np_fn)(a, *args, **kwargs)

    like.__name__ = like.__qualname__ = np_fn.__name__
    like.np_function = np_fn
    return like


NP_LIKE = {
    id(getattr(np, n)): _np_like(getattr(np, n), getattr(_array, n))
    for n in ("empty_like", "zeros_like", "ones_like", "full_like")
}


class _RouteNumpy(ast.NodeTransformer):
    """Host code's references to NP_LIKE's NumPy functions become their kapi-aware versions
    (cells named __kapi_np_<name>)."""

    def __init__(self, resolver, cells):
        self.resolver = resolver
        self.cells = cells

    def _route(self, node):
        if not isinstance(node.ctx, ast.Load):
            return node
        try:
            obj, _ = self.resolver._value(node)
        except (LookupError, AttributeError, ValueError):
            return None
        like = NP_LIKE.get(id(obj))
        if like is None:
            return None
        name = f"__kapi_np_{like.__name__}"
        self.cells[name] = types.CellType(like)
        return ast.copy_location(_name(name), node)

    def visit_Name(self, node):
        return self._route(node) or node

    def visit_Attribute(self, node):
        return self._route(node) or self.generic_visit(node)

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


def _route_numpy(fdef, resolver, cells) -> None:
    fdef.body = [_RouteNumpy(resolver, cells).visit(s) for s in fdef.body]


# -- the host function -----------------------------------------------------------------------


class _HostRewriter(ast.NodeTransformer):
    def __init__(self, resolver, filename, fdef):
        self.resolver = resolver
        self.filename = filename
        self.fdef = fdef
        self.nests: list[tuple[ast.For, _Loop]] = []

    def visit_For(self, node):
        if self.resolver.is_prange(node):
            nest = _collect_nest(node, self.resolver, self.filename)
            outside = {
                n.id
                for n in _walk_host(self.fdef.body, {id(node)})
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            }
            nest.body = nest.loops[-1].body = expand_array_statements(
                nest.body, outside, nest.targets
            )
            _check_body(nest.body, self.filename)
            self.nests.append((node, nest))
            return node  # replaced in a second pass, after the host-wide analysis
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


def _launch_stmts(k: int, loop: _Loop, node: ast.For) -> list[ast.stmt]:
    bounds = ast.Tuple(
        elts=[ast.Tuple(elts=list(lp.iter.args), ctx=ast.Load()) for lp in loop.loops],
        ctx=ast.Load(),
    )

    def names(ns):
        return ast.Tuple(elts=[_name(n) for n in ns], ctx=ast.Load())

    call = ast.Call(
        func=_name(f"{_LAUNCH}{k}"),
        args=[bounds, names(loop.free), names(loop.reductions), names(loop.lasts)],
        keywords=[],
    )
    out = "__kapi_out"
    stmts = [ast.copy_location(ast.Assign(targets=[_name(out, ast.Store())], value=call), node)]
    after = []
    # the protocol of _launcher's launch; written so that Numba types it too (no None)
    if loop.reductions:
        after.append(f"({', '.join(loop.reductions)},) = {out}[0]\n")
    if loop.lasts:
        after.append(f"if {out}[1]:\n    ({', '.join(loop.lasts)},) = {out}[2]\n")
    for d, t in enumerate(loop.targets):
        if t in loop.last_targets:
            after.append(f"if {out}[3][{d}]:\n    {t} = {out}[4][{d}]\n")
    return stmts + _located("".join(after), node)


class _Replace(ast.NodeTransformer):
    def __init__(self, replacements):
        self.replacements = replacements

    def visit_For(self, node):
        new = self.replacements.get(id(node))
        return new if new is not None else self.generic_visit(node)

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


def _walk_host(nodes, skip):
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if id(n) in skip:
            continue
        yield n
        if not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))


def _transform(fn, kernel_options=None):
    """kernel_options: @kapi.kernel options every prange kernel of fn is made with."""
    filename = fn.__code__.co_filename
    if fn.__name__ == "<lambda>":
        return fn, [], [], _Calls(_Stats(), False)  # a lambda holds no loop: nothing to offload
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError) as e:
        raise UnsupportedPrangeError(
            f"{filename}:{fn.__code__.co_firstlineno}: dpjit needs the source of "
            f"{fn.__qualname__} to offload its prange loops, and it is not available ({e})"
        ) from None
    tree = ast.parse(textwrap.dedent(src))
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__code__.co_name:
        raise UnsupportedPrangeError(
            f"{filename}:{fn.__code__.co_firstlineno}: dpjit decorates functions defined "
            f"with `def`, not {fn.__qualname__}"
        )
    fdef.decorator_list = []
    code = fn.__code__
    host_locals = set(code.co_varnames) | set(code.co_cellvars)
    host_locals -= _comprehension_names(fdef.body)
    resolver = _Resolver(fn, host_locals)
    finder = _HostRewriter(resolver, filename, fdef)
    for s in fdef.body:
        finder.visit(s)
    nests = finder.nests

    # what host code (everything but the prange bodies and loop variables) assigns and reads
    skip = set()
    for _, nest in nests:
        skip |= {id(s) for s in nest.body} | {id(lp.target) for lp in nest.loops}
    host_stores, host_loads = _names(_walk_host(fdef.body, skip))
    for _, nest in nests:  # the inner loops' bounds are evaluated by the host too
        host_loads |= _stores_loads([lp.iter for lp in nest.loops[1:]])[1]
    nparams = code.co_argcount + code.co_kwonlyargcount
    nparams += bool(code.co_flags & inspect.CO_VARARGS)
    nparams += bool(code.co_flags & inspect.CO_VARKEYWORDS)
    host_assigned = (host_stores | set(code.co_varnames[:nparams])) & host_locals
    # names the body may not assign: the function's nonlocal/global names and closure cells
    fixed = {
        name
        for n in _walk_scope(fdef.body)
        if isinstance(n, (ast.Global, ast.Nonlocal))
        for name in n.names
    }
    fixed |= set(code.co_freevars) | set(code.co_cellvars)
    for _, nest in nests:
        nest.last_targets = [t for t in nest.targets if t in host_loads]
    cells = dict(zip(code.co_freevars, fn.__closure__ or (), strict=True))
    cells[_API] = types.CellType(_kernel_api())
    cells[_GOP] = types.CellType(_kernel_api().GroupOp)
    cells[_NP] = types.CellType(np)
    cells[_LINALG] = types.CellType(_linalg_module())
    for _, nest in nests:
        _analyse(nest, host_assigned, host_loads, fixed, filename, resolver)
    rules = _AsyncRules(resolver, set())
    params = set(code.co_varnames[:nparams])
    _scalar_names(list(_walk_host(fdef.body, skip)), params, rules)
    no_wait = _async_loops(fdef.body, nests, rules) if not _is_generator(fn) else set()
    # the call's launches not waited for yet, settled by DpjitFunction however the call ends
    calls = _Calls(_Stats(), bool(no_wait))
    replacements = {}
    kernels = []
    launches = []  # (launch function, loop dimensions): the host function calls them
    for k, (node, nest) in enumerate(nests):
        nest.kbody = _kernel_body(nest, resolver, filename)
        nest.trip_vars = _trip_vars(nest, resolver)
        _shape_bounds(nest, resolver)
        kname, qualname = f"{fn.__name__}__prange{k}", f"{fn.__qualname__}.<prange{k}>"
        kerns = _Kernels(nest, kname, qualname, fn, cells, filename, kernel_options)
        kernels.append(kerns)
        wait = id(node) not in no_wait
        launch = _launcher(kerns, nest, _where(filename, node), calls, wait)
        launches.append((launch, len(nest.loops)))
        cells[f"{_LAUNCH}{k}"] = types.CellType(launch)
        replacements[id(node)] = _launch_stmts(k, nest, node)
    fdef.body = [_Replace(replacements).visit(s) for s in fdef.body]
    flat = []
    for s in fdef.body:
        flat.extend(s if isinstance(s, list) else [s])
    fdef.body = flat
    _route_numpy(fdef, resolver, cells)
    hcode = _factory(fdef, list(cells), filename)
    host = _make_function(hcode, fn, cells, fn.__name__, fn.__defaults__, fn.__kwdefaults__)
    host.__qualname__ = fn.__qualname__
    return host, kernels, launches, calls


def _kernel_api():
    from kapi_lang import kernel_api

    return kernel_api


class HostFallbackWarning(UserWarning):
    """A `@dpjit(fallback=True)` function's host code (the code around its prange loops) could
    not be compiled by Numba for these argument types, so it runs in CPython; its prange loops
    are still offloaded. Turn it into an error with
    `warnings.simplefilter("error", kapi.HostFallbackWarning)`."""

    __module__ = "kapi"


class HostCompileError(KapiError, TypeError):
    """Numba cannot compile a dpjit function's host code (the code around its prange loops)
    for these argument types (numba-dpex raised Numba's TypingError): the message names the
    function's file:line, Numba's reason and the line it stopped at. `@dpjit(fallback=True)`
    runs such host code in CPython instead, with a HostFallbackWarning. The error raised is
    also a numba.core.errors.TypingError, so `except TypingError` in ported code catches it."""

    __module__ = "kapi"


@functools.cache
def _host_compile_error_class():
    # Numba is imported by now (its compile failed): no import cost at `import kapi`
    from numba.core.errors import TypingError

    return type("HostCompileError", (HostCompileError, TypingError), {"__module__": "kapi"})


def _host_compile_error(message: str) -> HostCompileError:
    err = _host_compile_error_class()(message)
    err.args = (message,)
    return err


class DpjitFunction:
    """What @kapi.dpjit returns: calls run the function with its prange loops offloaded and
    the rest compiled by Numba's njit; where Numba cannot compile it, the call raises
    HostCompileError (or, with fallback=True, runs it in CPython with a HostFallbackWarning).
    Called in a prange body (kernel code), it is a device function: its Python function is
    compiled into the kernel, as numba-dpex compiles a dpjit function there."""

    __kapi_device_func__ = True

    def __init__(self, pyfunc, options, fallback: bool = False):
        if not inspect.isfunction(pyfunc):
            raise ValueError(f"@kapi.dpjit decorates a Python function, not {type(pyfunc)}")
        functools.update_wrapper(self, pyfunc)
        self.py_func = pyfunc
        self.options = dict(options)
        self.fallback = fallback
        # options that reach the prange kernels and Numba's host compile alike
        self._kernel_options = {k: v for k, v in options.items() if k in _PASSED}
        self._host = None
        self._jit = None  # the Numba dispatcher of the host function
        self._sig = inspect.signature(pyfunc)
        self._nparams = pyfunc.__code__.co_argcount
        self._python: dict = {}  # argument types Numba refused -> the message saying why
        self._loops: list[_Kernels] = []
        self._calls = _Calls(_Stats(), False)

    @property
    def kernels(self) -> list:
        """The @kapi.kernel dispatchers launched so far, by loop: one per loop and kernel
        shape (prange.md: one work-item per iteration, a work-group tree, or blocks)."""
        return [k for loop in self._loops for k in loop.made.values()]

    @property
    def _stats(self) -> _Stats:
        """Kernels launched and host waits for them over every call (tests read these)."""
        return self._calls.stats

    def _compile(self):
        if self._host is None:
            host, self._loops, launches, self._calls = _transform(
                self.py_func, self._kernel_options
            )
            if _njit_able(self.py_func):
                from . import host as _dpjit_host

                for launch, ndims in launches:
                    _dpjit_host.register_launch(launch, ndims)
                self._jit = _dpjit_host.compile_host(host, self._kernel_options)
                self._numba_error = _dpjit_host.NumbaError
            self._host = host
        return self._host

    @property
    def host(self):
        """The Numba dispatcher compiling the host code (`.signatures`, `.inspect_types()`),
        or None where the function's form keeps it in CPython (a generator, keyword-only,
        *args or **kwargs parameters)."""
        self._compile()
        return self._jit

    @property
    def python_signatures(self) -> dict:
        """Argument types Numba cannot compile the host code for -> the message saying why
        (with fallback=True, their host code runs in CPython)."""
        return dict(self._python)

    def __call__(self, *args, **kwargs):
        host = self._host if self._host is not None else self._compile()
        if not self._calls.asynchronous:  # every launch waits: no pending ones to settle
            return self._run(host, args, kwargs)
        # the call's pending launches are settled however it ends (_Calls.running)
        with self._calls.running():
            return self._run(host, args, kwargs)

    def _run(self, host, args, kwargs):
        jit = self._jit
        if jit is None:
            return host(*args, **kwargs)
        if kwargs or len(args) != self._nparams:
            bound = self._sig.bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        if self._python and self._key(args) in self._python:
            return self._refused(host, args)
        try:
            return jit(*args)
        except self._numba_error as e:
            key = self._key(args)
            if key in jit.overloads:
                raise  # compiled: an error of the run (an objmode call), not of the compile
            self._python[key] = _refusal_message(self.py_func, key, e)
        return self._refused(host, args)

    def _key(self, args) -> tuple:
        return tuple(self._jit.typeof_pyval(a) for a in args)

    def _refused(self, host, args):
        """A call whose argument types Numba cannot compile the host code for: an error, or
        with fallback=True a run in CPython. Every such call warns (Python's filters show it
        once per call site), so an "error" filter refuses each one."""
        reason = self._python[self._key(args)]
        if not self.fallback:
            raise _host_compile_error(
                f"{reason} (`@kapi.dpjit(fallback=True)` runs such host code in CPython)"
            )
        warnings.warn(
            f"{reason}; it runs in CPython (its prange loops are still offloaded)",
            HostFallbackWarning,
            3,
        )
        return host(*args)

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<kapi dpjit {self.__qualname__}>"


def _is_generator(fn) -> bool:
    flags = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
    return bool(fn.__code__.co_flags & flags)


def _njit_able(fn) -> bool:
    """Whether Numba's dispatcher can take the function's calls: not a generator, and no
    keyword-only, *args or **kwargs parameters (calls are bound to positional arguments)."""
    code = fn.__code__
    if _is_generator(fn):
        return False
    varargs = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
    return not (code.co_kwonlyargcount or code.co_flags & varargs)


def _refusal_message(fn, key, err) -> str:
    """The function's file:line, the argument types, Numba's reason and the line it stopped
    at (kapi's own typing reason where it gave one)."""
    where = f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    # Numba's message: a "Failed in ... pipeline" header, the reason, the source location
    reasons = [ln for ln in lines if not ln.startswith(("Failed in", "During:", "File "))]
    # a reason kapi's own typing gave (a dtype= it cannot read, ...) says more than Numba's
    # "No implementation of function ..." around it
    ours = [ln[ln.index("dpjit host code:") :] for ln in reasons if "dpjit host code:" in ln]
    first = (ours or reasons or [type(err).__name__])[0]
    at = [ln for ln in lines if ln.startswith("File ")]
    return (
        f"{where}: dpjit: Numba cannot compile the host code of {fn.__qualname__} for "
        f"arguments ({', '.join(map(str, key))}): {first}" + (f" ({at[-1]})" if at else "")
    )


def dpjit(*args, fallback: bool = False, **options):
    """numba-dpex's @dpjit: the function's prange loops are compiled as kernels and launched on
    the device of their arrays (compute follows data); the rest is compiled by Numba's njit.
    Where Numba cannot compile it, a call raises HostCompileError; with `fallback=True` (kapi's
    own option) it runs in CPython instead, with a HostFallbackWarning.

    Forms: `@dpjit`, `@dpjit(**options)`. `fastmath=` (Numba's values) applies to the prange
    kernels and the host code alike; signatures and the other numba.jit options are accepted
    and ignored with a warning (forceobj and pipeline_class are dropped, as numba-dpex did).
    """
    if not isinstance(fallback, bool):
        raise TypeError(f"dpjit's fallback= takes True or False, not {fallback!r}")
    if "fastmath" in options:
        _check_fastmath(options["fastmath"])  # a bad flag is an error here, not at a call
    for key, value in options.items():
        if _IMPLIED.get(key) is value or key in _PASSED:
            continue
        warnings.warn(
            f"dpjit option {key}={value!r} is ignored by kapi (prange loops are compiled as "
            f"kernels, the rest with numba.njit's defaults)",
            UserWarning,
            stacklevel=2,
        )
    if len(args) == 1 and inspect.isfunction(args[0]):
        return DpjitFunction(args[0], options, fallback)
    if args:
        warnings.warn(
            "dpjit signatures are ignored by kapi: prange kernels compile per argument types",
            UserWarning,
            stacklevel=2,
        )

    def wrap(pyfunc):
        return DpjitFunction(pyfunc, options, fallback)

    return wrap
