"""kapi.array_api.fft off the host path: kapi's FFT kernels (radix-2 Stockham stages for
powers of two, a direct DFT for other short lengths, Bluestein's chirp-z for long ones),
forced on the CPU device with KAPI_FFT=kernel, and cuFFT on NVIDIA GPUs, each function
against numpy.fft."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
import kapi.array_api as xp

DEVICES = devices_or_skip()
CPU = [d for d in DEVICES if d.device_type == "cpu"]
CUDA = [d for d in DEVICES if d.backend == "cuda"]
TOL = {np.complex64: 2e-5, np.complex128: 1e-12}


@pytest.fixture
def cpu_kernels(monkeypatch):
    if not CPU:
        pytest.skip("needs kapi's CPU device, which KAPI_DRIVERS leaves out in this run")
    monkeypatch.setenv("KAPI_FFT", "kernel")
    return CPU[0]


def close(got, want, ctype, scale=1.0):
    assert isinstance(got, kapi.Array), type(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    want_dt = np.dtype(ctype) if want.dtype.kind == "c" else np.dtype(ctype(0).real.dtype)
    assert got.dtype == want_dt, (got.dtype, want_dt)
    g = got.asnumpy()
    err = np.abs(g - want).max() if g.size else 0.0
    assert err <= TOL[ctype] * max(1.0, np.abs(want).max() if want.size else 1.0) * scale, err


def data(shape, ctype, seed=0, real=False):
    r = np.random.default_rng(seed)
    a = r.standard_normal(shape)
    if real:
        return a.astype(np.float32 if ctype == np.complex64 else np.float64)
    return (a + 1j * r.standard_normal(shape)).astype(ctype)


CT = [np.complex64, np.complex128]
ctid = {"ids": lambda d: np.dtype(d).name}


def _one_d(dev, ctype):
    for n in (1, 2, 8, 64, 6, 7, 15, 65, 97, 1000):  # 65 and up: Bluestein
        a = data((3, n), ctype, n)
        for norm in ("backward", "ortho", "forward"):
            close(xp.fft.fft(xp.asarray(a, device=dev), norm=norm), np.fft.fft(a, norm=norm), ctype)
            close(
                xp.fft.ifft(xp.asarray(a, device=dev), norm=norm), np.fft.ifft(a, norm=norm), ctype
            )
    a = data((5, 4, 6), ctype, 1)
    for n, axis in ((None, 0), (8, 1), (3, -1), (10, 0)):
        got = xp.fft.fft(xp.asarray(a, device=dev), n=n, axis=axis)
        close(got, np.fft.fft(a, n=n, axis=axis), ctype)


@pytest.mark.parametrize("ctype", CT, **ctid)
def test_fft_ifft_kernels_match_numpy(cpu_kernels, ctype):
    _one_d(cpu_kernels, ctype)


@pytest.mark.parametrize("ctype", CT, **ctid)
def test_real_and_hermitian_kernels_match_numpy(cpu_kernels, ctype):
    dev = cpu_kernels
    f = data((4, 10), ctype, 2, real=True)
    for n in (None, 16, 7, 1):
        for norm in ("backward", "ortho", "forward"):
            close(xp.fft.rfft(xp.asarray(f, device=dev), n=n, norm=norm),
                  np.fft.rfft(f, n=n, norm=norm), ctype)  # fmt: skip
            close(xp.fft.ihfft(xp.asarray(f, device=dev), n=n, norm=norm),
                  np.fft.ihfft(f, n=n, norm=norm), ctype)  # fmt: skip
    c = np.fft.rfft(f.astype(np.float64), axis=0).astype(ctype)
    for n in (None, 8, 7, 2, 1):
        for norm in ("backward", "ortho", "forward"):
            close(xp.fft.irfft(xp.asarray(c, device=dev), n=n, axis=0, norm=norm),
                  np.fft.irfft(c, n=n, axis=0, norm=norm), ctype)  # fmt: skip
            close(xp.fft.hfft(xp.asarray(c, device=dev), n=n, axis=0, norm=norm),
                  np.fft.hfft(c, n=n, axis=0, norm=norm), ctype, scale=8)  # fmt: skip


@pytest.mark.parametrize("ctype", CT, **ctid)
def test_n_dimensional_kernels_match_numpy(cpu_kernels, ctype):
    dev = cpu_kernels
    g = data((3, 4, 5), ctype, 3)
    r = data((3, 4, 5), ctype, 4, real=True)
    for s, axes in ((None, None), (None, (0, 2)), ((4, 6), (1, 2)), ((2, 8, 3), (0, 1, 2))):
        close(xp.fft.fftn(xp.asarray(g, device=dev), s=s, axes=axes),
              np.fft.fftn(g, s=s, axes=axes), ctype)  # fmt: skip
        close(xp.fft.ifftn(xp.asarray(g, device=dev), s=s, axes=axes, norm="ortho"),
              np.fft.ifftn(g, s=s, axes=axes, norm="ortho"), ctype)  # fmt: skip
        close(xp.fft.rfftn(xp.asarray(r, device=dev), s=s, axes=axes),
              np.fft.rfftn(r, s=s, axes=axes), ctype)  # fmt: skip
        h = np.fft.rfftn(r.astype(np.float64), s=s, axes=axes).astype(ctype)
        close(xp.fft.irfftn(xp.asarray(h, device=dev), s=s, axes=axes),
              np.fft.irfftn(h, s=s, axes=axes), ctype)  # fmt: skip


def test_kernel_path_errors_name_the_facts(cpu_kernels):
    dev = cpu_kernels
    a = xp.asarray(data((4,), np.complex128), device=dev)
    with pytest.raises(ValueError, match="n must be at least 1"):
        xp.fft.fft(a, n=0)
    with pytest.raises(ValueError, match="norm must be"):
        xp.fft.fft(a, norm="sideways")
    with pytest.raises(TypeError, match="real-valued"):
        xp.fft.rfft(a)


def test_kernel_path_stays_on_the_device(cpu_kernels, monkeypatch):
    """With KAPI_FFT=kernel the transform is kapi's kernels, not numpy.fft."""
    called = []
    monkeypatch.setattr(np.fft, "fft", lambda *a, **k: called.append(1))
    got = xp.fft.fft(xp.asarray(data((2, 8), np.complex128), device=cpu_kernels))
    assert not called and isinstance(got, kapi.Array)


# ---- NVIDIA GPUs: cuFFT, and the kernels there (run on the GPU machine) --------------------

needs_cuda = pytest.mark.skipif(not CUDA, reason="needs kapi's CUDA device (GPU)")


@needs_cuda
@pytest.mark.parametrize("ctype", CT, **ctid)
def test_cufft_matches_numpy(ctype):
    from kapi._numeric.array_api import cufft

    assert cufft.available(), "libcufft did not load: " + __import__(
        "kapi._numeric.array_api._vendor", fromlist=["why_not"]
    ).why_not("libcufft")
    del cufft.FAILURES[:]
    _one_d(CUDA[0], ctype)
    f = data((4, 10), ctype, 2, real=True)
    close(xp.fft.rfft(xp.asarray(f, device=CUDA[0])), np.fft.rfft(f), ctype)
    c = np.fft.rfft(f.astype(np.float64)).astype(ctype)
    close(xp.fft.irfft(xp.asarray(c, device=CUDA[0])), np.fft.irfft(c), ctype)
    g = data((3, 4, 5), ctype, 3)
    close(xp.fft.fftn(xp.asarray(g, device=CUDA[0])), np.fft.fftn(g), ctype)
    assert cufft.FAILURES == [], cufft.FAILURES


@needs_cuda
@pytest.mark.parametrize("ctype", CT, **ctid)
def test_fft_kernels_on_cuda_match_numpy(ctype, monkeypatch):
    monkeypatch.setenv("KAPI_FFT", "kernel")
    _one_d(CUDA[0], ctype)
