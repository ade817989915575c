"""The array API's fft extension. Transforms of host-memory arrays (kapi's CPU device) run
through NumPy's pocketfft on the arrays in place (read without a copy). On other devices they
run where the array lives: through cuFFT on NVIDIA GPUs when libcufft can be loaded
(cufft.py), else as kapi kernels (radix-2 Stockham stages for lengths that are powers of two,
a direct DFT for other lengths up to 64, Bluestein's chirp-z over Stockham stages beyond),
never copying to the host. KAPI_FFT=kernel runs the kernels on every device, the CPU device
included. fftfreq, rfftfreq, fftshift and ifftshift are kernels on any device."""

from __future__ import annotations

import math
import operator
import os

import numpy as np

from ..._memory.array import Array
from . import _core as C


def _complex_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex64 if dt in (np.float32, np.complex64) else np.complex128)


def _real_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dt in (np.float32, np.complex64) else np.float64)


_DFT = """
def _dft(it, x, y, n, sign):
    b = it.get_id(0)
    k = it.get_id(1)
    acc = ZERO
    j = 0
    while j < n:
        t = (k * j) % n
        ang = sign * TWO_PI * FT(t) / FT(n)
        acc += x[b, j] * (FT(math.cos(ang)) + FT(math.sin(ang)) * IM)
        j += 1
    y[b, k] = acc
"""

# one radix-2 Stockham stage (autosort: no bit reversal), n/2 butterflies per transform
_STAGE = """
def _stage(it, src, dst, half, ns, sign):
    b = it.get_id(0)
    j = it.get_id(1)
    k = j % ns
    ang = sign * PI * FT(k) / FT(ns)
    w = FT(math.cos(ang)) + FT(math.sin(ang)) * IM
    v0 = src[b, j]
    v1 = src[b, j + half] * w
    d = (j // ns) * ns * 2 + k
    dst[b, d] = v0 + v1
    dst[b, d + ns] = v0 - v1
"""


def _kernel_mode() -> bool:
    return os.environ.get("KAPI_FFT", "") == "kernel"


_DIRECT_MAX = 64  # lengths up to this that are not powers of two: the direct DFT


def _c2c_rows(x: Array, inverse: bool) -> Array:
    """The unnormalised DFT of each row of x (B, n), C-contiguous complex: cuFFT on NVIDIA
    GPUs where it loads, else kapi's kernels (radix-2 Stockham stages for powers of two, a
    direct DFT for other short lengths, Bluestein's chirp-z over Stockham stages for other
    long ones)."""
    from . import cufft

    batch, n = x.shape
    out = Array._allocate((batch, n), x.dtype, x.sycl_queue, "device")
    if batch == 0 or n == 0:
        return out
    if not _kernel_mode() and cufft.c2c(x, out, inverse):
        return out
    if n & (n - 1) == 0:
        return _stockham(x, out, inverse)
    if n <= _DIRECT_MAX:
        return _direct(x, out, inverse)
    return _bluestein(x, inverse)


def _env(dt: np.dtype):
    ft = _real_of(dt).type
    env = dict(ZERO=dt.type(0), IM=dt.type(1j), FT=ft, math=math)
    tag = f"# {dt.name}\n"  # C.kernel keeps one kernel per source text: one per precision
    return ft, env, tag


def _stockham(x: Array, out: Array, inverse: bool) -> Array:
    """Radix-2 Stockham stages over rows of x (B, n), n a power of two; x is left as it was."""
    from ..._kernel.ranges import Range
    from ..replay import launch

    batch, n = x.shape
    if n == 1:
        return C.concrete(x.astype(x.dtype, copy=True))
    ft, env, tag = _env(x.dtype)
    k = C.kernel(_STAGE + tag, "_stage", PI=ft(math.pi), **env)
    sign = ft(1.0 if inverse else -1.0)
    src, dst = x, out
    spare = Array._allocate((batch, n), x.dtype, x.sycl_queue, "device")
    ns = 1
    while ns < n:
        launch(k, Range(batch, n // 2), src, dst, np.int64(n // 2), np.int64(ns), sign)
        src = dst
        dst = spare if dst is out else out
        ns *= 2
    return src


def _direct(x: Array, out: Array, inverse: bool) -> Array:
    from ..._kernel.ranges import Range
    from ..replay import launch

    batch, n = x.shape
    ft, env, tag = _env(x.dtype)
    k = C.kernel(_DFT + tag, "_dft", TWO_PI=ft(2 * math.pi), **env)
    launch(k, Range(batch, n), x, out, np.int64(n), ft(1.0 if inverse else -1.0))
    return out


def _bluestein(x: Array, inverse: bool) -> Array:
    """Bluestein's chirp-z: with c_j = exp(+-i pi j^2 / n), X_k = c_k sum_j (x_j c_j)
    conj(c_(k-j)), a circular convolution of length m (a power of two >= 2n - 1) done with
    three Stockham transforms. The chirp (n values) is computed on the host in float64, j^2
    reduced mod 2n, and copied to the device."""
    from .creation import asarray, zeros
    from .manipulation import concat

    batch, n = x.shape
    m = 1 << (2 * n - 2).bit_length()
    q = x.sycl_queue
    j = np.arange(n, dtype=np.int64)
    chirp = np.exp((1j if inverse else -1j) * np.pi * ((j * j) % (2 * n)) / n)
    b = np.zeros(m, np.complex128)
    b[:n] = np.conj(chirp)
    b[m - n + 1 :] = np.conj(chirp[1:][::-1])
    c = asarray(chirp.astype(x.dtype), device=q)
    fb = _stockham(asarray(b.reshape(1, m).astype(x.dtype), device=q),
                   Array._allocate((1, m), x.dtype, q, "device"), False)  # fmt: skip
    a = concat([x * c, zeros((batch, m - n), dtype=x.dtype, device=q)], axis=1)
    fa = _stockham(C.contiguous(a), Array._allocate((batch, m), x.dtype, q, "device"), False)
    conv = _stockham(C.contiguous(fa * fb), Array._allocate((batch, m), x.dtype, q, "device"),
                     True)  # fmt: skip
    scale = asarray((chirp / m).astype(x.dtype), device=q)
    return C.contiguous(conv[:, :n] * scale)


def _resized(x: Array, n: int, axis: int) -> Array:
    """x with its last axis truncated or zero-padded to n."""
    from .creation import zeros
    from .manipulation import concat

    m = x.shape[-1]
    if n == m:
        return x
    if n < m:
        return x[..., :n]
    pad = zeros(x.shape[:-1] + (n - m,), dtype=x.dtype, device=x.sycl_queue)
    return concat([x, pad], axis=-1)


def _scale(norm: str, n: int, inverse: bool):
    if norm == "backward":
        return 1.0 / n if inverse else None
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if norm == "forward":
        return None if inverse else 1.0 / n
    raise ValueError(f'fft: norm must be "backward", "ortho" or "forward", not {norm!r}')


def _swap(norm: str) -> str:
    return {"backward": "forward", "forward": "backward"}.get(norm, norm)


def _c2c_axis(x: Array, n, axis: int, norm: str, inverse: bool, name: str) -> Array:
    """The (i)DFT of complex x along axis, resized to n, normalised by norm."""
    from .manipulation import moveaxis, reshape

    axis = C.normalise_axis(axis, x.ndim)
    n = x.shape[axis] if n is None else operator.index(n)
    if n < 1:
        raise ValueError(f"fft.{name}: n must be at least 1, not {n}")
    _scale(norm, 1, inverse)  # checks norm
    v = _resized(moveaxis(x, axis, -1), n, -1)
    lead = v.shape[:-1]
    rows = reshape(C.concrete(v.astype(v.dtype, copy=True)), (math.prod(lead), n))
    r = reshape(_c2c_rows(rows, inverse), lead + (n,))
    f = _scale(norm, n, inverse)
    if f is not None:
        r = r * f
    return moveaxis(r, -1, axis)


def _device_fft(x, n, axis, norm, inverse, name):
    return _c2c_axis(x.astype(_complex_of(x.dtype)), n, axis, norm, inverse, name)


def _device_rfft(x, n, axis, norm, name="rfft"):
    from .manipulation import moveaxis

    if x.dtype.kind == "c":
        raise TypeError(f"fft.{name} takes a real-valued array, not {x.dtype}")
    axis = C.normalise_axis(axis, x.ndim)
    r = _c2c_axis(x.astype(_complex_of(x.dtype)), n, axis, norm, False, name)
    m = r.shape[axis] // 2 + 1
    return moveaxis(moveaxis(r, axis, -1)[..., :m], -1, axis)


def _device_irfft(x, n, axis, norm, name="irfft"):
    from .elementwise import conj, real
    from .manipulation import concat, flip, moveaxis

    axis = C.normalise_axis(axis, x.ndim)
    x = x.astype(_complex_of(x.dtype))
    n = 2 * (x.shape[axis] - 1) if n is None else operator.index(n)
    if n < 1:
        raise ValueError(f"fft.{name}: n must be at least 1, not {n}")
    # the Hermitian spectrum of length n: h[0..n//2], then conj(h[n-k]) for k > n//2
    h = _resized(moveaxis(x, axis, -1), n // 2 + 1, -1)
    tail = conj(flip(h[..., 1 : n - n // 2], axis=-1))
    full = concat([h, tail], axis=-1)
    r = _c2c_axis(full, n, -1, norm, True, name)
    return moveaxis(real(r), -1, axis)


def _run(name: str, fn, x: Array, out_dtype, device_fn) -> Array:
    from .creation import asarray
    from .linear_algebra import _np_view

    C.check(x, f"fft.{name}")
    if not x._host_ok or _kernel_mode():
        return C.concrete(device_fn(x))
    r = np.asarray(fn(_np_view(x)))  # norm=None is NumPy's "backward"
    return asarray(r.astype(out_dtype, copy=False), device=x.sycl_queue)


def _axes_and_sizes(x: Array, s, axes, name: str):
    if axes is None:
        axes = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    axes = [C.normalise_axis(a, x.ndim) for a in axes]
    if s is None:
        s = [None] * len(axes)
    elif len(s) != len(axes):
        raise ValueError(f"fft.{name}: s and axes must have the same length")
    return axes, [None if v is None or v == -1 else v for v in s]


def _device_fftn(x, s, axes, norm, inverse, name):
    axes, s = _axes_and_sizes(x, s, axes, name)
    r = x.astype(_complex_of(x.dtype))
    for a, n in zip(axes, s, strict=True):
        r = _c2c_axis(r, n, a, norm, inverse, name)
    return r


def _device_rfftn(x, s, axes, norm):
    axes, s = _axes_and_sizes(x, s, axes, "rfftn")
    if not axes:
        return x.astype(_complex_of(x.dtype))
    r = _device_rfft(x, s[-1], axes[-1], norm, "rfftn")
    for a, n in zip(axes[:-1], s[:-1], strict=True):
        r = _c2c_axis(r, n, a, norm, False, "rfftn")
    return r


def _device_irfftn(x, s, axes, norm):
    axes, s = _axes_and_sizes(x, s, axes, "irfftn")
    r = x.astype(_complex_of(x.dtype))
    if not axes:
        return r
    for a, n in zip(axes[:-1], s[:-1], strict=True):
        r = _c2c_axis(r, n, a, norm, True, "irfftn")
    return _device_irfft(r, s[-1], axes[-1], norm, "irfftn")


def _c(name, inverse):
    def f(x, /, n=None, axis=-1, norm="backward"):
        fn = getattr(np.fft, name)
        return _run(name, lambda a: fn(a, n=n, axis=axis, norm=norm), x, _complex_of(x.dtype),
                    lambda a: _device_fft(a, n, axis, norm, inverse, name))  # fmt: skip

    f.__name__ = name
    return f


def _cn(name, inverse):
    def f(x, /, s=None, axes=None, norm="backward"):
        fn = getattr(np.fft, name)
        return _run(name, lambda a: fn(a, s=s, axes=axes, norm=norm), x, _complex_of(x.dtype),
                    lambda a: _device_fftn(a, s, axes, norm, inverse, name))  # fmt: skip

    f.__name__ = name
    return f


fft = _c("fft", False)
ifft = _c("ifft", True)
fftn = _cn("fftn", False)
ifftn = _cn("ifftn", True)


def rfft(x, /, n=None, axis=-1, norm="backward"):
    return _run("rfft", lambda a: np.fft.rfft(a, n=n, axis=axis, norm=norm), x,
                _complex_of(x.dtype), lambda a: _device_rfft(a, n, axis, norm))  # fmt: skip


def ihfft(x, /, n=None, axis=-1, norm="backward"):
    from .elementwise import conj

    return _run("ihfft", lambda a: np.fft.ihfft(a, n=n, axis=axis, norm=norm), x,
                _complex_of(x.dtype),
                lambda a: conj(_device_rfft(a, n, axis, _swap(norm), "ihfft")))  # fmt: skip


def rfftn(x, /, s=None, axes=None, norm="backward"):
    return _run("rfftn", lambda a: np.fft.rfftn(a, s=s, axes=axes, norm=norm), x,
                _complex_of(x.dtype), lambda a: _device_rfftn(a, s, axes, norm))  # fmt: skip


def irfft(x, /, n=None, axis=-1, norm="backward"):
    return _run("irfft", lambda a: np.fft.irfft(a, n=n, axis=axis, norm=norm), x,
                _real_of(x.dtype), lambda a: _device_irfft(a, n, axis, norm))  # fmt: skip


def hfft(x, /, n=None, axis=-1, norm="backward"):
    from .elementwise import conj

    return _run("hfft", lambda a: np.fft.hfft(a, n=n, axis=axis, norm=norm), x,
                _real_of(x.dtype),
                lambda a: _device_irfft(conj(a.astype(_complex_of(a.dtype))), n, axis,
                                        _swap(norm), "hfft"))  # fmt: skip


def irfftn(x, /, s=None, axes=None, norm="backward"):
    return _run("irfftn", lambda a: np.fft.irfftn(a, s=s, axes=axes, norm=norm), x,
                _real_of(x.dtype), lambda a: _device_irfftn(a, s, axes, norm))  # fmt: skip


def _freq(n, d, real: bool, dtype, device):
    from .. import ufunc as _ufunc

    n = operator.index(n)
    if n <= 0:
        raise ValueError("fftfreq: n must be positive")
    q = C.queue_of(device)
    dt = C.dtype_of(dtype) if dtype is not None else C.default_float(q)
    m = n // 2 + 1 if real else n
    out = Array._allocate((m,), dt, q, "device")
    half = (n - 1) // 2 + 1
    conv = dt.type.__name__
    # k = i for i < half, else i - n (fftfreq); divided by n * d
    expr = f"np.{conv}((i if i < l0 else i - l1) / l2)"
    if real:
        expr = f"np.{conv}(i / l2)"
    _ufunc.launch(expr, [np.int64(half), np.int64(n), np.float64(n * d)], out, "fftfreq",
                  fresh=True)  # fmt: skip
    return out


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _freq(n, d, False, dtype, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _freq(n, d, True, dtype, device)


def _shift(x, axes, inverse: bool):
    from .manipulation import roll

    C.check(x, "fftshift")
    axes = C.normalise_axes(axes, x.ndim)
    shifts = tuple((-(x.shape[a] // 2)) if inverse else x.shape[a] // 2 for a in axes)
    if not axes:
        return C.concrete(x.astype(x.dtype, copy=True))
    return roll(x, shifts, axis=axes)


def fftshift(x, /, *, axes=None):
    return _shift(x, axes, False)


def ifftshift(x, /, *, axes=None):
    return _shift(x, axes, True)


FFT = dict(
    fft=fft, ifft=ifft, fftn=fftn, ifftn=ifftn, rfft=rfft, irfft=irfft, rfftn=rfftn,
    irfftn=irfftn, hfft=hfft, ihfft=ihfft, fftfreq=fftfreq, rfftfreq=rfftfreq,
    fftshift=fftshift, ifftshift=ifftshift,
)  # fmt: skip
