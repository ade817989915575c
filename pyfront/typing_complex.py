"""Typing of the cmath functions Numba types through @overload (which pyfront's lean typing
context leaves out): their signatures, as Numba's cmathimpl gives them. The others (exp, log,
sqrt, sin, cos, tan, isnan, isinf, isfinite) are Numba's declarative cmathdecl templates."""

import cmath

from . import _numba as nb

types = nb.types
registry = nb.Registry()


class _ComplexUnary(nb.ConcreteTemplate):
    cases = [nb.signature(tp, tp) for tp in sorted(types.complex_domain)]


for _fn in (cmath.sinh, cmath.cosh, cmath.tanh, cmath.log10, cmath.acosh):
    registry.register_global(_fn)(type(f"Cmath_{_fn.__name__}", (_ComplexUnary,), {}))


@registry.register_global(cmath.phase)
class CmathPhase(nb.ConcreteTemplate):
    cases = [nb.signature(tp.underlying_float, tp) for tp in sorted(types.complex_domain)]


@registry.register_global(cmath.polar)
class CmathPolar(nb.ConcreteTemplate):
    cases = [
        nb.signature(types.UniTuple(tp.underlying_float, 2), tp)
        for tp in sorted(types.complex_domain)
    ]


@registry.register_global(cmath.rect)
class CmathRect(nb.AbstractTemplate):
    # Numba: rect(float, float) -> complex of the float type (ints convert to float64)
    def generic(self, args, kws):
        if kws or len(args) != 2:
            return None
        if not all(isinstance(a, types.Float | types.Integer | types.Boolean) for a in args):
            return None
        ft = self.context.unify_types(*args)
        if not isinstance(ft, types.Float) or ft.bitwidth < 32:
            ft = types.float64
        return nb.signature(types.complex64 if ft == types.float32 else types.complex128, ft, ft)
