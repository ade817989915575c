"""Coefficients of the CPU device's erf/erfc (compiler/src/finalise/host/finalise_host_explog.c).

erf(a) = a + a (P(a^2) - 1) for a = |x| below 1 (double) or 1.75 (float); erfc = 1 - erf below
0.5. Beyond, erfc(a) = exp(-a^2) R(a), R = erfcx piecewise, each piece a polynomial around its
centre c: in v = a - c for erf (which needs R only to erfc(a) times erf's ulp); for erfc, which
needs R to its own ulp up to the underflow, R = w S(w) with S a polynomial in v = w - c, w = 1/a
(S is near 1/sqrt(pi): no cancellation). Chebyshev fits (mpmath's chebyfit, near minimax) at 50
digits, rounded to the target precision; prints the C tables with each fit's worst relative
error. Run: python tools/fit_erf.py (needs mpmath), paste its output over the tables.
"""

import re
import struct

import mpmath as mp

mp.mp.dps = 50


def erfcx(a):
    return mp.erfc(a) * mp.exp(a * a)


def worst(f, poly, lo, hi, n=400):
    xs = [lo + (hi - lo) * mp.mpf(i) / n for i in range(n + 1)]
    return max(abs(mp.polyval(poly, x) / f(x) - 1) for x in xs)


def lit(v, single):
    """v rounded once to double, or to float (through double: the fits' errors dwarf it), as a
    C hex literal without trailing zeros."""
    d = float(mp.mpf(v))
    if single:
        d = struct.unpack("f", struct.pack("f", d))[0]
    return re.sub(r"\.?0*p", "p", float.hex(d))


def table(name, values, single):
    return f"static const double {name} = {{{', '.join(lit(x, single) for x in values)}}};"


def small(deg, top, single):
    def g(u):
        if u == 0:
            return 2 / mp.sqrt(mp.pi)
        r = mp.sqrt(u)
        return mp.erf(r) / r

    p = mp.chebyfit(g, [0, top * top], deg + 1)
    err = worst(g, p, mp.mpf(0), top * top)
    print(f"/* P - 1, erf(a)/a = P(a^2) for a < {mp.nstr(top, 3)}: worst relative error ", end="")
    print(f"{mp.nstr(err, 2)} */")
    p[-1] -= 1  # erf(a) = a + a (P(a^2) - 1): the last rounding is the sum's
    name = f"ERF_SMALL_{'F' if single else 'D'}[{deg + 1}]"
    print(table(name, reversed(p), single))


def emit(name, bounds, inverse, deg, single):
    rows = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        lo, hi = mp.mpf(lo), mp.mpf(hi)
        if inverse:
            c = (1 / lo + 1 / hi) / 2
            f = lambda v, c=c: erfcx(1 / (v + c)) / (v + c)  # noqa: E731
            span = (1 / hi - c, 1 / lo - c)
        else:
            c = (lo + hi) / 2
            f = lambda v, c=c: erfcx(v + c)  # noqa: E731
            span = (lo - c, hi - c)
        p = mp.chebyfit(f, list(span), deg + 1)
        err = worst(f, p, *span)
        print(f"/* [{mp.nstr(lo, 3)}, {mp.nstr(hi, 3)}): worst relative error {mp.nstr(err, 2)} */")
        rows.append((c, p))
    print(table(f"{name}_C[{len(rows)}]", [c for c, _ in rows], single))
    print(f"static const double {name}_P[{len(rows)}][{deg + 1}] = {{")
    for _, p in rows:
        print("  {" + ", ".join(lit(x, single) for x in reversed(p)) + "},")  # low to high
    print("};")


small(11, mp.mpf(1), False)
small(8, mp.mpf(1.75), True)
emit("ERF_D", ["1", "2", "3.5", "6"], False, 14, False)
emit("ERFC_D", ["0.5", "0.75", "1", "2", "4", "8", "27.5"], True, 16, False)
emit("ERF_F", ["1.75", "4"], False, 7, True)
# e^r for |r| <= ln2/2: float erf's exp(-a^2), which erfc(a) <= 2^-8 scales down
h = mp.log(2) / 2
p = mp.chebyfit(mp.exp, [-h, h], 6)
print(f"/* e^r, |r| <= ln2/2: worst relative error {mp.nstr(worst(mp.exp, p, -h, h), 2)} */")
print(table("EXP_F[6]", reversed(p), True))
emit("ERFC_F", ["0.5", "1", "2", "4", "10.5"], True, 8, True)
