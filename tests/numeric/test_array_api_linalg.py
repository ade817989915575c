"""kapi.array_api.linalg's device solvers: solve, inv, det, slogdet and cholesky as kapi kernels
(LU with partial pivoting, Cholesky; one work-item per matrix), forced on the CPU device with
KAPI_LINALG=kernel, and on NVIDIA GPUs through cuSOLVER and as kernels, against numpy.linalg."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
import kapi.array_api as xp

DEVICES = devices_or_skip()
CPU = [d for d in DEVICES if d.device_type == "cpu"]
CUDA = [d for d in DEVICES if d.backend == "cuda"]
DT = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-5, np.complex64: 2e-5, np.float64: 1e-12, np.complex128: 1e-12}
dtid = {"ids": lambda d: np.dtype(d).name}


@pytest.fixture
def cpu_kernels(monkeypatch):
    if not CPU:
        pytest.skip("needs kapi's CPU device, which KAPI_DRIVERS leaves out in this run")
    monkeypatch.setenv("KAPI_LINALG", "kernel")
    from kapi._numeric.array_api import linear_algebra

    def no_lapack(name, *args, **kw):
        raise AssertionError(f"linalg.{name} went to LAPACK, not the kernels")

    monkeypatch.setattr(linear_algebra, "_lapack", no_lapack)
    return CPU[0]


def close(got, want, dt, scale=1.0):
    assert isinstance(got, kapi.Array), type(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    err = np.abs(got.asnumpy() - want).max() if want.size else 0.0
    assert err <= TOL[dt] * scale * max(1.0, np.abs(want).max() if want.size else 1.0), err


def mats(shape, dt, seed=0):
    r = np.random.default_rng(seed)
    n = shape[-1]
    a = r.standard_normal(shape) + 3 * np.eye(n)
    if np.dtype(dt).kind == "c":
        a = a + 1j * r.standard_normal(shape)
    p = np.arange(n)[::-1]  # rows reversed: pivoting needed
    return a[..., p, :].astype(dt)


def _check_solvers(dev, dt):
    A = mats((2, 3, 5, 5), dt, 1)
    B = mats((3, 5, 5), dt, 2)[..., :2]
    v = mats((5, 5), dt, 3)[0]
    X = xp.asarray(A, device=dev)
    close(xp.linalg.solve(X, xp.asarray(B, device=dev)), np.linalg.solve(A, B), dt, 10)
    ref = np.linalg.solve(A, np.broadcast_to(v[:, None], A.shape[:-1] + (1,)))[..., 0]
    close(xp.linalg.solve(X, xp.asarray(v, device=dev)), ref, dt, 10)
    close(xp.linalg.inv(X), np.linalg.inv(A), dt, 10)
    d = np.linalg.det(A)
    close(xp.linalg.det(X), d, dt, 10 * np.abs(d).max())
    s, la = xp.linalg.slogdet(X)
    s0, la0 = np.linalg.slogdet(A)
    close(s, s0, dt, 10)
    close(la, la0, dt, 10)
    spd = A @ np.conj(np.swapaxes(A, -1, -2))
    L = np.linalg.cholesky(spd.astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64))
    L = L.astype(dt)
    close(xp.linalg.cholesky(xp.asarray(spd, device=dev)), L, dt, 100)
    U = np.conj(np.swapaxes(L, -1, -2))
    close(xp.linalg.cholesky(xp.asarray(spd, device=dev), upper=True), U, dt, 100)
    two = xp.asarray(np.eye(3, dtype=dt) * 2, device=dev)
    close(xp.linalg.matrix_power(two, -2), np.eye(3, dtype=dt) / 4, dt)


@pytest.mark.parametrize("dt", DT, **dtid)
def test_solvers_as_kernels_match_numpy(cpu_kernels, dt):
    _check_solvers(cpu_kernels, dt)


def test_singular_and_indefinite_matrices(cpu_kernels):
    dev = cpu_kernels
    sing = xp.asarray(np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]]), device=dev)
    np.testing.assert_array_equal(xp.linalg.det(sing).asnumpy(), [1.0, 0.0])
    s, la = xp.linalg.slogdet(sing)
    np.testing.assert_array_equal(s.asnumpy(), [1.0, 0.0])
    np.testing.assert_array_equal(la.asnumpy(), [0.0, -np.inf])
    with pytest.raises(np.linalg.LinAlgError, match=r"Singular matrix \(linalg.solve, matrix 1\)"):
        xp.linalg.solve(sing, xp.ones(2, dtype=xp.float64, device=dev))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        xp.linalg.inv(sing)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        xp.linalg.cholesky(xp.asarray(-np.eye(2), device=dev))
    with pytest.raises(ValueError, match=r"square matrices, not of shape \(2, 3\)"):
        xp.linalg.inv(xp.ones((2, 3), device=dev))
    with pytest.raises(ValueError, match="does not fit"):
        xp.linalg.solve(xp.eye(3, device=dev), xp.ones(2, device=dev))


# ---- NVIDIA GPUs (run on the GPU machine) ---------------------------------------------------


@pytest.mark.skipif(not CUDA, reason="needs kapi's CUDA device (GPU)")
@pytest.mark.parametrize("dt", DT, **dtid)
def test_solvers_on_cuda_match_numpy(dt):
    """solve, inv and cholesky through cuSOLVER (det and slogdet: the kernels)."""
    from kapi._numeric.array_api import _vendor, cusolver

    assert cusolver.available(), "libcusolver did not load: " + _vendor.why_not("libcusolver")
    del cusolver.FAILURES[:]
    _check_solvers(CUDA[0], dt)
    assert cusolver.FAILURES == [], cusolver.FAILURES


@pytest.mark.skipif(not CUDA, reason="needs kapi's CUDA device (GPU)")
def test_cusolver_reports_singular_and_indefinite_matrices():
    dev = CUDA[0]
    sing = xp.asarray(np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]]), device=dev)
    with pytest.raises(np.linalg.LinAlgError, match=r"Singular matrix \(linalg.solve, matrix 1\)"):
        xp.linalg.solve(sing, xp.ones(2, dtype=xp.float64, device=dev))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        xp.linalg.cholesky(xp.asarray(-np.eye(2), device=dev))


@pytest.mark.skipif(not CUDA, reason="needs kapi's CUDA device (GPU)")
@pytest.mark.parametrize("dt", DT, **dtid)
def test_solver_kernels_on_cuda_match_numpy(dt, monkeypatch):
    monkeypatch.setenv("KAPI_LINALG", "kernel")
    _check_solvers(CUDA[0], dt)


@pytest.mark.skipif(not CUDA, reason="needs kapi's CUDA device (GPU)")
def test_decompositions_without_cusolver_raise_type_error(monkeypatch):
    """Where cuSOLVER is absent, svd has no device path: TypeError, no copy to the host."""
    from kapi._numeric.array_api import _vendor

    monkeypatch.setitem(_vendor._LIBS, "libcusolver", None)
    a = xp.eye(3, device=CUDA[0])
    with pytest.raises(TypeError, match="kapi.asnumpy"):
        xp.linalg.svd(a)


@pytest.mark.skipif(not CUDA, reason="needs kapi's CUDA device (GPU)")
@pytest.mark.parametrize("dt", DT, **dtid)
def test_eigh_through_cusolver(dt):
    from kapi._numeric.array_api import cusolver

    del cusolver.FAILURES[:]
    a = mats((3, 6, 6), dt, 5)
    h = a + np.conj(np.swapaxes(a, -1, -2))  # Hermitian
    w0 = np.linalg.eigvalsh(h)
    X = xp.asarray(h, device=CUDA[0])
    w, v = xp.linalg.eigh(X)
    close(w, w0, dt, 10)
    close(xp.linalg.eigvalsh(X), w0, dt, 10)
    v = v.asnumpy()
    assert v.dtype == np.dtype(dt)
    # eigenvectors are unique up to a phase: check h v = v diag(w) and v^H v = 1
    tol = TOL[dt] * 100 * np.abs(w0).max()
    assert np.abs(h @ v - v * w0[..., None, :]).max() <= tol
    eye = np.conj(np.swapaxes(v, -1, -2)) @ v
    assert np.abs(eye - np.eye(6)).max() <= TOL[dt] * 100
    assert cusolver.FAILURES == [], cusolver.FAILURES


@pytest.mark.skipif(not CUDA, reason="needs kapi's CUDA device (GPU)")
@pytest.mark.parametrize("dt", DT, **dtid)
@pytest.mark.parametrize("shape", [(2, 6, 4), (2, 4, 6), (5, 5)], ids=str)
def test_svd_through_cusolver(dt, shape):
    from kapi._numeric.array_api import cusolver

    del cusolver.FAILURES[:]
    r = np.random.default_rng(6)
    a = r.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * r.standard_normal(shape)
    a = a.astype(dt)
    X = xp.asarray(a, device=CUDA[0])
    s0 = np.linalg.svd(a, compute_uv=False)
    close(xp.linalg.svdvals(X), s0, dt, 10)
    for full in (True, False):
        u0, _, vh0 = np.linalg.svd(a, full_matrices=full)
        u, s, vh = xp.linalg.svd(X, full_matrices=full)
        assert u.shape == u0.shape and vh.shape == vh0.shape, (u.shape, vh.shape)
        close(s, s0, dt, 10)
        u, s, vh = u.asnumpy(), s.asnumpy(), vh.asnumpy()
        k = s.shape[-1]
        back = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
        assert np.abs(back - a).max() <= TOL[dt] * 100 * np.abs(a).max()
    assert cusolver.FAILURES == [], cusolver.FAILURES


def _check_norms_rank_pinv(dev, dt):
    r = np.random.default_rng(7)
    a = r.standard_normal((2, 5, 3))
    if np.dtype(dt).kind == "c":
        a = a + 1j * r.standard_normal((2, 5, 3))
    a = a.astype(dt)
    a[1, :, 2] = a[1, :, 0]  # rank 2
    X = xp.asarray(a, device=dev)
    for o in (1, -1, 2, -2, "nuc", np.inf, -np.inf):
        got = xp.linalg.matrix_norm(X, ord=o, keepdims=True)
        want = NP_NORM(a, ord=o, axis=(-2, -1), keepdims=True)
        close(got, want, TOL_REAL[dt], 10)
    rank = xp.linalg.matrix_rank(X)
    np.testing.assert_array_equal(rank.asnumpy(), [3, 2])
    close(xp.linalg.pinv(X), np.linalg.pinv(a), dt, 100)


NP_NORM = np.linalg.norm  # the reference, kept from the test that patches it away
TOL_REAL = {np.float32: np.float32, np.complex64: np.float32}
TOL_REAL |= {np.float64: np.float64, np.complex128: np.float64}


@pytest.mark.parametrize("dt", DT, **dtid)
def test_norms_rank_pinv_from_the_svd(dt, monkeypatch):
    """matrix_norm's orders as reductions or from svdvals, matrix_rank and pinv from the SVD,
    as they run off host memory (KAPI_LINALG=kernel: the SVD itself is LAPACK's here)."""
    if not CPU:
        pytest.skip("needs kapi's CPU device, which KAPI_DRIVERS leaves out in this run")
    monkeypatch.setenv("KAPI_LINALG", "kernel")
    monkeypatch.setattr(np.linalg, "norm", None)  # not NumPy's norm on the host
    _check_norms_rank_pinv(CPU[0], dt)


@pytest.mark.skipif(not CUDA, reason="needs kapi's CUDA device (GPU)")
@pytest.mark.parametrize("dt", DT, **dtid)
def test_norms_rank_pinv_on_cuda(dt):
    _check_norms_rank_pinv(CUDA[0], dt)


@pytest.mark.skipif(not CUDA, reason="needs kapi's CUDA device (GPU)")
@pytest.mark.parametrize("dt", DT, **dtid)
@pytest.mark.parametrize("shape", [(2, 6, 4), (2, 4, 6), (5, 5)], ids=str)
def test_qr_through_cusolver(dt, shape):
    from kapi._numeric.array_api import cusolver

    del cusolver.FAILURES[:]
    r = np.random.default_rng(8)
    a = r.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * r.standard_normal(shape)
    a = a.astype(dt)
    X = xp.asarray(a, device=CUDA[0])
    for mode in ("reduced", "complete"):
        q0, r0 = np.linalg.qr(a, mode=mode)
        q, rr = xp.linalg.qr(X, mode=mode)
        assert q.shape == q0.shape and rr.shape == r0.shape, (mode, q.shape, rr.shape)
        assert q.dtype == np.dtype(dt) and rr.dtype == np.dtype(dt)
        q, rr = q.asnumpy(), rr.asnumpy()
        tol = TOL[dt] * 100 * np.abs(a).max()
        assert np.abs(q @ rr - a).max() <= tol
        eye = np.conj(np.swapaxes(q, -1, -2)) @ q
        assert np.abs(eye - np.eye(q.shape[-1])).max() <= TOL[dt] * 100
        assert np.all(np.tril(rr, -1) == 0)
    assert cusolver.FAILURES == [], cusolver.FAILURES


def _fake_getrf(a3):
    """cuSOLVER's getrf as LAPACK defines it, in Python on a CPU-device array's host memory:
    P M = L U of the column-major M = a3[z]^T, in place, 1-based pivots."""
    from kapi._numeric.array_api.linear_algebra import _np_view

    buf = _np_view(a3)
    bsz, n, _ = buf.shape
    ipiv = np.zeros((bsz, n), np.int32)
    for z in range(bsz):
        m = buf[z].T  # a view: the column-major matrix
        for k in range(n):
            p = k + int(np.argmax(np.abs(m[k:, k])))
            ipiv[z, k] = p + 1
            m[[k, p]] = m[[p, k]]
            if m[k, k] != 0:
                m[k + 1 :, k] /= m[k, k]
                m[k + 1 :, k + 1 :] -= np.outer(m[k + 1 :, k], m[k, k + 1 :])
    return xp.asarray(ipiv, device=a3.device), np.zeros(bsz, np.int32)


@pytest.mark.parametrize("dt", DT, **dtid)
def test_det_from_getrf_pivots_and_diagonal(dt, monkeypatch):
    """det and slogdet from getrf's factors (the path cuSOLVER takes), getrf emulated on the
    CPU device: U's diagonal phases and log-moduli, the parity of the row swaps, zero pivots."""
    if not CPU:
        pytest.skip("needs kapi's CPU device, which KAPI_DRIVERS leaves out in this run")
    from kapi._numeric.array_api import _linalg_kernels as LK
    from kapi._numeric.array_api import cusolver

    monkeypatch.setenv("KAPI_LINALG", "kernel")
    monkeypatch.setattr(LK, "_vendor_ok", lambda a: True)
    monkeypatch.setattr(cusolver, "getrf", _fake_getrf)
    a = mats((2, 3, 5, 5), dt, 9)
    a[1, 2, 3] = 0  # singular: an exactly zero pivot
    X = xp.asarray(a, device=CPU[0])
    s, la = xp.linalg.slogdet(X)
    s0, la0 = np.linalg.slogdet(a)
    assert s.dtype == np.dtype(dt) and la.dtype == np.dtype(la0.dtype)
    ok = np.isfinite(la0)
    close(s, np.where(ok, s0, s.asnumpy()), dt, 10)
    assert not ok.all()
    np.testing.assert_allclose(la.asnumpy()[ok], la0[ok], rtol=TOL[dt] * 10, atol=TOL[dt] * 10)
    np.testing.assert_array_equal(s.asnumpy()[~ok], 0)
    np.testing.assert_array_equal(la.asnumpy()[~ok], -np.inf)
    d = xp.linalg.det(X)
    close(d, np.linalg.det(a), dt, 10 * np.abs(np.linalg.det(a)).max())


# ---- the cuSOLVER glue's layouts, with cuSOLVER emulated on the CPU device -------------------
# Each fake does what the cuSOLVER routine does to the column-major matrices in host memory
# (NumPy on transposed views), so the row-major/column-major handling around the calls is
# checked here; the calls themselves run in the GPU tests above.


def _col(a):
    """The host memory of a CPU-device array (B, cols, rows), as column-major (rows, cols)
    matrix views."""
    from kapi._numeric.array_api.linear_algebra import _np_view

    return [m.T for m in _np_view(a)]


@pytest.fixture
def fake_cusolver(monkeypatch):
    if not CPU:
        pytest.skip("needs kapi's CPU device, which KAPI_DRIVERS leaves out in this run")
    from kapi._numeric.array_api import _linalg_kernels as LK
    from kapi._numeric.array_api import cusolver

    dev = CPU[0]
    monkeypatch.setenv("KAPI_LINALG", "kernel")
    monkeypatch.setattr(LK, "_vendor_ok", lambda a: True)

    def solve(a3, bt3):  # getrf + getrs(trans=T): A^T stored, solve (A^T)^T X = B
        for m, b in zip(_col(a3), _col(bt3), strict=True):
            b[...] = np.linalg.solve(m.T, b)
        return np.zeros(a3.shape[0], np.int32)

    def cholesky(a3):  # potrf(upper): M = U^H U, U written on and above the diagonal
        for m in _col(a3):
            u = np.conj(np.linalg.cholesky(m)).T
            iu = np.triu_indices(m.shape[0])
            m[iu] = u[iu]
        return np.zeros(a3.shape[0], np.int32)

    def eigh(a3, vectors):  # syevd(upper)
        ws = []
        for m in _col(a3):
            h = np.triu(m) + np.conj(np.triu(m, 1)).T
            w, v = np.linalg.eigh(h)
            ws.append(w)
            if vectors:
                m[...] = v
        return xp.asarray(np.array(ws), device=dev), np.zeros(a3.shape[0], np.int32)

    def gesvd(buf3, m, n, jobu, jobvt):
        us, ss, vts = [], [], []
        for a in _col(buf3):
            assert a.shape == (m, n) and m >= n
            u, s, vt = np.linalg.svd(a, full_matrices=jobu == b"A")
            us.append(u.T)
            ss.append(s)
            vts.append(vt.T)
        u = xp.asarray(np.array(us), device=dev) if jobu != b"N" else None
        vt = xp.asarray(np.array(vts), device=dev) if jobvt != b"N" else None
        return xp.asarray(np.array(ss), device=dev), u, vt, np.zeros(buf3.shape[0], np.int32)

    saved = {}

    def geqrf(buf3, m, n):  # R on and above the diagonal; Q kept for orgqr
        for z, a in enumerate(_col(buf3)):
            q, r = np.linalg.qr(a, mode="complete")
            saved[z] = q
            iu = np.triu_indices(m, 0, n)
            a[iu] = r[iu]
        return None, np.zeros(buf3.shape[0], np.int32)

    def orgqr(qbuf, m, ncols, k, tau):
        for z, a in enumerate(_col(qbuf)):
            a[...] = saved[z][:, :ncols]
        return np.zeros(qbuf.shape[0], np.int32)

    for name, f in dict(solve=solve, cholesky=cholesky, eigh=eigh, gesvd=gesvd, geqrf=geqrf,
                        orgqr=orgqr).items():  # fmt: skip
        monkeypatch.setattr(cusolver, name, f)
    monkeypatch.setattr(cusolver, "getrf", _fake_getrf)
    return dev


@pytest.mark.parametrize("dt", DT, **dtid)
def test_cusolver_layouts_emulated(fake_cusolver, dt):
    dev = fake_cusolver
    _check_solvers(dev, dt)
    _check_norms_rank_pinv(dev, dt)
    r = np.random.default_rng(10)
    for shape in ((2, 6, 4), (2, 4, 6), (5, 5)):
        a = r.standard_normal(shape)
        if np.dtype(dt).kind == "c":
            a = a + 1j * r.standard_normal(shape)
        a = a.astype(dt)
        X = xp.asarray(a, device=dev)
        for full in (True, False):
            u0, s0, vh0 = np.linalg.svd(a, full_matrices=full)
            u, s, vh = xp.linalg.svd(X, full_matrices=full)
            assert u.shape == u0.shape and vh.shape == vh0.shape
            k = s0.shape[-1]
            back = (u.asnumpy()[..., :k] * s.asnumpy()[..., None, :]) @ vh.asnumpy()[..., :k, :]
            assert np.abs(back - a).max() <= TOL[dt] * 100
        for mode in ("reduced", "complete"):
            q0, r0 = np.linalg.qr(a, mode=mode)
            q, rr = xp.linalg.qr(X, mode=mode)
            assert q.shape == q0.shape and rr.shape == r0.shape
            close(q, q0, dt, 100)
            close(rr, r0, dt, 100)
        if shape[-1] == shape[-2]:
            h = a + np.conj(np.swapaxes(a, -1, -2))
            w, v = xp.linalg.eigh(xp.asarray(h, device=dev))
            w0, v0 = np.linalg.eigh(h)
            close(w, w0, dt, 100)
            vv = v.asnumpy()
            assert np.abs(h @ vv - vv * w0[..., None, :]).max() <= TOL[dt] * 1e3
