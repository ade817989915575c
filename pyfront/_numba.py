"""The one door to Numba: every Numba internal pyfront uses is imported here.

A future Numba release should only touch this file. It re-exports the IR, the type system and
the typing machinery, and runs the lean front end: bytecode -> IR -> rewrites -> SSA -> type
inference -> phi stripping. Numba's lowering is never used.
"""

import inspect
import warnings

from numba.core import bytecode, errors, interpreter, ir, postproc, target_extension, types
from numba.core.analysis import dead_branch_prune, rewrite_semantic_constants
from numba.core.extending import typeof_impl
from numba.core.ir_utils import build_definitions
from numba.core.rewrites import rewrite_registry
from numba.core.ssa import reconstruct_ssa
from numba.core.typed_passes import PreLowerStripPhis, type_inference_stage
from numba.core.typing import cmathdecl, enumdecl, mathdecl, npydecl, templates
from numba.core.typing import context as _typing_context
from numba.core.typing.templates import (
    AbstractTemplate,
    AttributeTemplate,
    ConcreteTemplate,
    Registry,
    bound_function,
    signature,
)
from numba.core.utils import UniqueDict
from numba.np import numpy_support

__all__ = [
    "AbstractTemplate",
    "AttributeTemplate",
    "BaseContext",
    "LeanContext",
    "ConcreteTemplate",
    "NumbaError",
    "Registry",
    "TypingError",
    "UnsupportedError",
    "UniqueDict",
    "bound_function",
    "front_end",
    "ir",
    "jitable_pyfunc",
    "make_function_type",
    "numpy_support",
    "signature",
    "typeof_impl",
    "types",
]

NumbaError = errors.NumbaError
TypingError = errors.TypingError
UnsupportedError = errors.UnsupportedError
BaseContext = _typing_context.BaseContext
STANDARD_REGISTRIES = (mathdecl.registry, npydecl.registry, enumdecl.registry, cmathdecl.registry)


_jitable_cache = {}


def jitable_pyfunc(value):
    """`value` if it is a plain function registered with numba.extending.register_jitable
    (Numba then compiles the function itself wherever it is called), else None."""
    if not inspect.isfunction(value):
        return None
    hit = _jitable_cache.get(value)
    if hit is None:
        hit = False
        for v, ty in reversed(templates.builtin_registry.globals):
            if v is value and isinstance(ty, types.Function):
                ovf = getattr(ty.templates[0], "_overload_func", None)
                hit = "register_jitable" in getattr(ovf, "__qualname__", "")
                break
        _jitable_cache[value] = hit
    return value if hit else None


def make_function_type(template):
    """A Numba Function type whose calls are typed by `template`."""
    return types.Function(template)


class _TargetStub:
    # type_inference_stage only reads `.target`, the hardware class that orders typing templates
    # by target specificity; Generic keeps CPU-only templates out.
    target = target_extension.Generic


class _RewriteState(dict):
    # Numba's rewrite registry reads the pass state both as a mapping and by attribute.
    __getattr__ = dict.__getitem__


_PRINT_KEYWORDS = ("sep", "end")


def _print_statement(func_ir, inst):
    """ir.Print for `print(..., sep=S, end=E)` with constant strings S and E (Numba's own
    rewrite rejects every keyword), carrying them as .kapi_sep/.kapi_end; None for a call
    without keywords, which Numba's rewrite handles."""
    expr = inst.value
    if not expr.kws:
        return None
    found = {}
    for name, var in expr.kws:
        try:
            value = func_ir.infer_constant(var) if name in _PRINT_KEYWORDS else None
        except errors.ConstantInferenceError:
            value = None
        if not isinstance(value, str):
            raise errors.UnsupportedError(
                "print() in kernels takes only sep= and end= keywords, as string constants",
                inst.loc,
            )
        found[name] = (value, var.name)
    st = ir.Print(args=expr.args, vararg=expr.vararg, loc=inst.loc)
    st.kapi_sep = found.get("sep", (" ", None))[0]
    st.kapi_end = found.get("end", ("\n", None))[0]
    st.kapi_keyword_vars = {v for _, v in found.values()}
    return st


def _rewrite_print_keywords(func_ir):
    for block in func_ir.blocks.values():
        body = []
        for inst in block.body:
            st = None
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr):
                if inst.value.op == "call":
                    try:
                        callee = func_ir.infer_constant(inst.value.func)
                    except errors.ConstantInferenceError:
                        callee = None
                    st = _print_statement(func_ir, inst) if callee is print else None
            if st is None:
                body.append(inst)
            else:
                body += [st, ir.Assign(ir.Const(None, inst.loc), inst.target, inst.loc)]
        block.body = body


def _untyped_ir(pyfunc, argtypes):
    func_id = bytecode.FunctionIdentity.from_function(pyfunc)
    func_ir = interpreter.Interpreter(func_id).interpret(bytecode.ByteCode(func_id=func_id))
    if len(argtypes) != func_ir.arg_count:
        raise TypeError(f"{len(argtypes)} argument types for {func_ir.arg_count} parameters")
    postproc.PostProcessor(func_ir).run()
    rewrite_semantic_constants(func_ir, argtypes)
    dead_branch_prune(func_ir, argtypes)
    _rewrite_print_keywords(func_ir)
    state = _RewriteState(func_ir=func_ir, args=argtypes, typemap=None, calltypes=None)
    rewrite_registry.apply("before-inference", state)
    func_ir = reconstruct_ssa(func_ir)
    func_ir._definitions = build_definitions(func_ir.blocks)
    postproc.PostProcessor(func_ir).run(emit_dels=False)
    return func_ir


def front_end(pyfunc, argtypes, typingctx, screen=None):
    """Numba IR and typing of `pyfunc` for `argtypes`: (func_ir, typemap, restype, calltypes).

    `screen(func_ir)` may reject the untyped IR before typing. Raises Numba's own errors; the
    caller translates them.
    """
    argtypes = tuple(argtypes)
    func_ir = _untyped_ir(pyfunc, argtypes)
    if screen is not None:
        screen(func_ir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = type_inference_stage(typingctx, _TargetStub, func_ir, argtypes, None)
    func_ir = PreLowerStripPhis()._strip_phi_nodes(func_ir)
    func_ir._definitions = build_definitions(func_ir.blocks)
    return func_ir, res.typemap, res.return_type, res.calltypes


_JITTED_TEMPLATES = (
    templates._OverloadFunctionTemplate,
    templates._IntrinsicTemplate,
    templates._OverloadAttributeTemplate,
)


def _is_jitted(template):
    # @overload / @intrinsic templates type a call by compiling its implementation for a Numba
    # target; pyfront cannot lower those implementations, so it does not type them either.
    # (an MRO scan: issubclass on these ABCs costs ~60 ms over Numba's registry)
    return isinstance(template, type) and any(c in _JITTED_TEMPLATES for c in template.__mro__)


class LeanContext(BaseContext):
    """Typing context with Numba's declarative typing only (no @overload/@intrinsic).

    Subclasses add their own registries in `load_additional_registries`; they never reach
    Numba's CPU typing context, which is a different object.
    """

    def load_additional_registries(self):
        for reg in STANDARD_REGISTRIES:
            self.install_registry(reg)

    def insert_function(self, ft):
        if not _is_jitted(type(ft)):
            super().insert_function(ft)

    def insert_attributes(self, at):
        if not _is_jitted(type(at)):
            super().insert_attributes(at)

    def _insert_global(self, gv, gty):
        if isinstance(gty, types.Function):
            kept = [t for t in gty.templates if not _is_jitted(t)]
            if not kept:
                return
            if len(kept) != len(gty.templates):
                gty = types.Function(kept[0])
                for t in kept[1:]:
                    gty = gty.augment(types.Function(t))
        super()._insert_global(gv, gty)
