"""@kapi.guvectorize in numba-cuda's form: core dimensions, loop dimensions broadcast across
the inputs, out= and positional outputs, several outputs, signature selection and the errors
of bad layouts, signatures and shapes; on every device, against NumPy."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi._numeric import guvectorize as _guvectorize

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


def _rand(shape, seed, dtype=np.float64):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


@kapi.guvectorize(
    ["void(float32[:], float32[:], float32[:])", "void(float64[:], float64[:], float64[:])"],
    "(n),(n)->()",
)
def dot(a, b, out):
    acc = 0.0
    for k in range(a.shape[0]):
        acc += a[k] * b[k]
    out[0] = acc


@kapi.guvectorize(
    [kapi.void(kapi.float64[:, :], kapi.float64[:, :], kapi.float64[:, :])],
    "(m,n),(n,p)->(m,p)",
    target="cuda",
)
def matmul(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s


@kapi.guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->(n)")
def scale(x, a, out):
    for k in range(x.shape[0]):
        out[k] = a * x[k]


@kapi.guvectorize(["void(f8[:], f8[:], f8[:])", "void(i8[:], i8[:], i8[:])"], "(n)->(),()")
def minmax(x, lo, hi):
    lo[0] = x[0]
    hi[0] = x[0]
    for k in range(1, x.shape[0]):
        lo[0] = min(lo[0], x[k])
        hi[0] = max(hi[0], x[k])


@kapi.guvectorize(["void(float64[:], float64[:])"], "(n)->(n)")
def reverse(x, out):
    n = x.shape[0]
    for k in range(n):
        out[k] = x[n - 1 - k]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_broadcasts_loop_dimensions(dev, dtype):
    a, b = _rand((5, 4, 7), 1, dtype), _rand((4, 7), 2, dtype)
    r = dot(kapi.asarray(a, device=dev), kapi.asarray(b, device=dev))
    assert r.shape == (5, 4) and r.dtype == dtype and r.device == dev
    np.testing.assert_allclose(r.asnumpy(), (a * b).sum(-1), rtol=1e-5)


def test_loop_dimensions_that_do_not_merge(dev):
    a, b = _rand((3, 4, 6), 3), _rand((4, 6), 4)
    # b's loop dimensions (broadcast, then 4) cannot be one stride: it is copied first
    r = dot(kapi.asarray(b, device=dev), kapi.asarray(a, device=dev)[:, ::-1])
    np.testing.assert_allclose(r.asnumpy(), (b * a[:, ::-1]).sum(-1), rtol=1e-12)
    one = dot(kapi.asarray(a[0, 0], device=dev), kapi.asarray(b[0], device=dev))
    assert one.shape == () and float(one) == pytest.approx(a[0, 0] @ b[0])


def test_matmul_with_out(dev):
    A, B = _rand((6, 3, 4), 5), _rand((4, 2), 6)
    Ak, Bk = kapi.asarray(A, device=dev), kapi.asarray(B, device=dev)
    np.testing.assert_allclose(matmul(Ak, Bk).asnumpy(), A @ B, rtol=1e-12)
    out = kapi.empty((6, 3, 2), dtype=np.float64, device=dev)
    assert matmul(Ak, Bk, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), A @ B, rtol=1e-12)
    out2 = kapi.zeros((6, 3, 2), dtype=np.float64, device=dev)
    assert matmul(Ak, Bk, out2) is out2  # the output positionally, as Numba takes it
    np.testing.assert_allclose(out2.asnumpy(), A @ B, rtol=1e-12)
    t = kapi.zeros((2, 3, 6), dtype=np.float64, device=dev).T  # not C-contiguous
    matmul(Ak, Bk, out=t)
    np.testing.assert_allclose(t.asnumpy(), A @ B, rtol=1e-12)


def test_scalar_core_inputs(dev):
    x = _rand((2, 5), 7)
    xk = kapi.asarray(x, device=dev)
    np.testing.assert_allclose(scale(xk, 2.5).asnumpy(), x * 2.5)
    f = np.array([1.0, -3.0])
    np.testing.assert_allclose(scale(xk, kapi.asarray(f, device=dev)).asnumpy(), x * f[:, None])


def test_several_outputs_and_signature_selection(dev):
    x = _rand((4, 9), 8)
    lo, hi = minmax(kapi.asarray(x, device=dev))
    np.testing.assert_array_equal(lo.asnumpy(), x.min(-1))
    np.testing.assert_array_equal(hi.asnumpy(), x.max(-1))
    i = (x * 100).astype(np.int64)
    lo, hi = minmax(kapi.asarray(i, device=dev))
    assert lo.dtype == np.int64
    np.testing.assert_array_equal(hi.asnumpy(), i.max(-1))
    i32 = i.astype(np.int32)  # no int32 signature: float64 is the first it reaches safely
    lo, _ = minmax(kapi.asarray(i32, device=dev))
    assert lo.dtype == np.float64
    np.testing.assert_array_equal(lo.asnumpy(), i32.min(-1))


def test_output_overlapping_input(dev):
    x = _rand((3, 8), 9)
    xk = kapi.asarray(x, device=dev)
    reverse(xk, out=xk)
    np.testing.assert_array_equal(xk.asnumpy(), x[:, ::-1])


def test_lazy_inputs(dev):
    a, b = _rand((4, 5), 10), _rand(5, 11)
    ak, bk = kapi.asarray(a, device=dev), kapi.asarray(b, device=dev)
    r = dot(ak * 2 + 1, bk)
    np.testing.assert_allclose(r.asnumpy(), ((a * 2 + 1) * b).sum(-1), rtol=1e-12)


def test_errors(dev):
    a = kapi.asarray(_rand((3, 4), 12), device=dev)
    with pytest.raises(ValueError, match="core dimension 'n'"):
        dot(a, kapi.asarray(_rand(5, 13), device=dev))
    with pytest.raises(TypeError, match="could not be safely coerced"):
        dot(a.astype(np.complex128), a.astype(np.complex128))
    with pytest.raises(TypeError, match="kapi arrays and scalars"):
        dot(a, np.ones((3, 4)))
    with pytest.raises(ValueError, match="must have shape"):
        dot(a, a, out=kapi.empty(4, device=dev))
    with pytest.raises(TypeError, match="pass a kapi array"):
        dot(a, 1.0)
    with pytest.raises(ValueError, match="at least 1"):
        dot(a, kapi.asarray(np.float64(2.0), device=dev))
    with pytest.raises(TypeError, match="takes 2 inputs"):
        dot(a)


def test_definition_errors():
    with pytest.raises(ValueError, match="not of the form"):
        kapi.guvectorize(["void(f8[:], f8[:])"], "(n)")
    with pytest.raises(ValueError, match="output dimension 'm'"):
        kapi.guvectorize(["void(f8[:], f8[:])"], "(n)->(m)")
    with pytest.raises(ValueError, match="at most 2"):
        kapi.guvectorize(["void(f8[:,:,:], f8[:])"], "(a,b,c)->()")
    with pytest.raises(TypeError, match="needs at least one signature"):
        kapi.guvectorize([], "(n)->()")
    with pytest.raises(TypeError, match="needs a layout"):
        kapi.guvectorize(["void(f8[:], f8[:])"])
    with pytest.raises(TypeError, match="has 2 arguments"):
        kapi.guvectorize(["void(f8[:], f8[:])"], "(n),(n)->()")(lambda a, b, c: None)
    with pytest.raises(TypeError, match="needs 1"):
        kapi.guvectorize(["void(f8[:,:], f8[:])"], "(n)->()")(lambda a, b: None)
    with pytest.raises(TypeError, match="outputs are written through arrays"):
        kapi.guvectorize(["void(f8[:], f8)"], "(n)->()")(lambda a, b: None)
    with pytest.raises(TypeError, match="not of the form"):
        kapi.guvectorize(["f8(f8[:])"], "(n)->()")(lambda a, b: None)


def test_layout_and_signature_parsing():
    assert _guvectorize.parse_layout("(m, n),(n,p) -> (m,p)") == (
        [("m", "n"), ("n", "p")],
        [("m", "p")],
    )
    assert _guvectorize.parse_layout("(),(n)->(),(n)") == ([(), ("n",)], [(), ("n",)])
    got = _guvectorize.parse_signature("void(float32[:, ::1], int64, b1[:])")
    assert got == [(np.dtype(np.float32), 2), (np.dtype(np.int64), 0), (np.dtype(bool), 1)]
    got = _guvectorize.parse_signature("(f8[:], f8[:])")
    assert got == [(np.dtype(np.float64), 1)] * 2


def test_gufunc_kernels_finalise_to_ptx(tmp_path):
    """The generated gufunc kernels go through the NVPTX finaliser; ptxas assembles them."""
    import shutil
    import subprocess
    from pathlib import Path

    from nvptx_util import ptx_of

    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    libdevice = Path(ptxas).resolve().parents[1] / "nvvm" / "libdevice" / "libdevice.10.bc"
    if not libdevice.is_file():
        pytest.skip(f"the CUDA toolkit (ptxas, libdevice) is not installed: {libdevice}")
    cpu = DEVICES[0]
    a = kapi.asarray(_rand((3, 4), 14), device=cpu)
    dot(a, a)
    matmul(a, a.T.copy())
    scale(a, 2.0)
    minmax(a)
    spirvs = [
        ck.spirv
        for f in (dot, matmul, scale, minmax)
        for k in f._kernels.values()
        for ck in k.overloads.values()
    ]
    assert len(spirvs) >= 4
    for n, spirv in enumerate(spirvs):
        path = tmp_path / f"k{n}.ptx"
        path.write_text(ptx_of(spirv, libdevice))
        r = subprocess.run(
            [ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / f"k{n}.cubin")],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
