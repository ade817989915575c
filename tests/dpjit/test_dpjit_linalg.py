"""Per-iteration linear algebra and array reductions in prange bodies: np.linalg.inv / solve
of an iteration's own matrix (kapi/_dpjit/linalg.py, complex and float), private complex
arrays updated in place (`X = -X`), branches binding one name to results of different
shapes, and `P += X` reductions into arrays from before the loop. Each function also runs
as plain Python (kapi.prange is range there) for the expected result."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi import prange

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


def _contour(NR, NM, slab, Ham, pts, Y):
    P0 = np.zeros((NR, NM), dtype=np.complex128)
    P1 = np.zeros((NR, NM), dtype=np.complex128)
    for i in prange(len(pts)):
        z = pts[i]
        Tz = np.zeros((NR, NR), dtype=np.complex128)
        for n in prange(slab + 1):
            Tz += np.power(z, slab / 2 - n) * Ham[n]
        if NR == NM:
            X = np.linalg.inv(Tz)
        else:
            X = np.linalg.solve(Tz, Y)
        if abs(z) < 1.0:
            X = -X
        P0 += X
        P1 += z * X
    return P0, P1


@pytest.mark.parametrize("nr,nm", [(6, 6), (5, 7)])
def test_contour_integral_inv_and_solve(dev, nr, nm):
    rng = np.random.default_rng(nr + nm)
    Ham = rng.random((3, nr, nr)) + 1j * rng.random((3, nr, nr))
    pts = (rng.random(9) + 1j * rng.random(9)) * 1.5
    Y = rng.random((nr, nm)) + 1j * rng.random((nr, nm))
    want = _contour(nr, nm, 2, Ham, pts, Y)
    args = [kapi.asarray(a, device=dev) for a in (Ham, pts, Y)]
    got = kapi.dpjit(_contour)(nr, nm, 2, *args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(kapi.asnumpy(g)), w, rtol=1e-10, atol=1e-12)


def _float_solves(A, b, out):
    for i in prange(A.shape[0]):
        M = np.zeros((3, 3))
        v = np.zeros(3)
        for r in range(3):
            v[r] = b[r]
            for c in range(3):
                M[r, c] = A[i, r, c]
        x = np.linalg.solve(M, v)  # a 1-d right-hand side: a 1-d result
        for r in range(3):
            out[i, r] = x[r]


def test_float_solve_with_pivoting(dev):
    rng = np.random.default_rng(3)
    A = rng.random((8, 3, 3))
    A[:, 0, 0] = 0.0  # the first pivot needs a row swap
    b = rng.random(3)
    want = np.zeros((8, 3))
    _float_solves(A, b, want)
    np.testing.assert_allclose(want, np.linalg.solve(A, b[None, :, None])[..., 0], rtol=1e-12)
    got = kapi.zeros((8, 3), device=dev)
    kapi.dpjit(_float_solves)(kapi.asarray(A, device=dev), kapi.asarray(b, device=dev), got)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10)


def _sum_rows(x, acc, prod):
    for i in prange(x.shape[0]):
        acc += x[i]
        acc -= 0.5 * x[i]
        prod *= x[i] + 1.0
    return acc, prod


def test_array_reductions_in_place(dev):
    rng = np.random.default_rng(4)
    x = rng.random((37, 5))
    want_acc, want_prod = np.ones(5), np.full(5, 2.0)
    _sum_rows(x, want_acc, want_prod)
    acc = kapi.ones(5, device=dev)
    prod = kapi.full(5, 2.0, device=dev)
    got = kapi.dpjit(_sum_rows)(kapi.asarray(x, device=dev), acc, prod)
    assert got[0] is acc and got[1] is prod  # updated in place, as NumPy's `+=`
    np.testing.assert_allclose(acc.asnumpy(), want_acc, rtol=1e-12)
    np.testing.assert_allclose(prod.asnumpy(), want_prod, rtol=1e-12)


def _max_rows(x, acc):
    for i in prange(x.shape[0]):
        acc = max(acc, x[i, 0])
    return acc


def test_array_reduction_refuses_other_operators(dev):
    x = kapi.ones((4, 2), device=dev)
    with pytest.raises(TypeError, match="reduction variable `acc` holds an array"):
        kapi.dpjit(_max_rows)(x, kapi.zeros(2, device=dev))
