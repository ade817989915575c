"""The array API's fft extension. Transforms of host-memory arrays (kapi's CPU device) run
through NumPy's pocketfft on the arrays in place (read without a copy); on other devices
they raise TypeError (no device FFT library is loaded), never copying to the host silently.
fftfreq, rfftfreq, fftshift and ifftshift are kernels on any device."""

from __future__ import annotations

import operator

import numpy as np

from ..._memory.array import Array
from . import _core as C


def _complex_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.complex64 if dt in (np.float32, np.complex64) else np.complex128)


def _real_of(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dt in (np.float32, np.complex64) else np.float64)


def _run(name: str, fn, x: Array, out_dtype) -> Array:
    from .creation import asarray
    from .linear_algebra import _np_view

    C.check(x, f"fft.{name}")
    if not x._host_ok:
        raise TypeError(
            f"kapi.array_api.fft.{name} runs on host-memory arrays (kapi's CPU device) through "
            f"NumPy's FFT; this array is on '{x.device.filter_string}', where kapi loads no "
            f"FFT library: copy it explicitly with kapi.asnumpy(x) and use numpy.fft.{name}"
        )
    r = np.asarray(fn(_np_view(x)))  # norm=None is NumPy's "backward"
    return asarray(r.astype(out_dtype, copy=False), device=x.sycl_queue)


def _c(name):
    def f(x, /, n=None, axis=-1, norm="backward"):
        fn = getattr(np.fft, name)
        return _run(name, lambda a: fn(a, n=n, axis=axis, norm=norm), x, _complex_of(x.dtype))

    f.__name__ = name
    return f


def _cn(name):
    def f(x, /, s=None, axes=None, norm="backward"):
        fn = getattr(np.fft, name)
        return _run(name, lambda a: fn(a, s=s, axes=axes, norm=norm), x, _complex_of(x.dtype))

    f.__name__ = name
    return f


fft = _c("fft")
ifft = _c("ifft")
rfft = _c("rfft")
ihfft = _c("ihfft")
fftn = _cn("fftn")
ifftn = _cn("ifftn")
rfftn = _cn("rfftn")


def irfft(x, /, n=None, axis=-1, norm="backward"):
    return _run("irfft", lambda a: np.fft.irfft(a, n=n, axis=axis, norm=norm), x,
                _real_of(x.dtype))  # fmt: skip


def hfft(x, /, n=None, axis=-1, norm="backward"):
    return _run("hfft", lambda a: np.fft.hfft(a, n=n, axis=axis, norm=norm), x,
                _real_of(x.dtype))  # fmt: skip


def irfftn(x, /, s=None, axes=None, norm="backward"):
    return _run("irfftn", lambda a: np.fft.irfftn(a, s=s, axes=axes, norm=norm), x,
                _real_of(x.dtype))  # fmt: skip


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
