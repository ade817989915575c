"""NVIDIA's libraries (cuBLAS, cuFFT, cuSOLVER) loaded at run time, as the CUDA driver loads
libcuda: nothing links them, and where one cannot be loaded its caller runs kapi's own kernels
instead.

Each library has an environment switch (KAPI_CUBLAS, KAPI_CUFFT, KAPI_CUSOLVER): 0 turns it
off, a path picks the library file. Besides the loader's path, the nvidia-* pip wheels' lib
folders are searched. The libraries work in kapi's CUDA contexts (each device's primary
context, which the CUDA runtime uses too): `context(dev_id)` makes it current; the caller waits
for the arrays' queues first and synchronises the context before handing results back.
"""

from __future__ import annotations

import ctypes
import os

_LIBS: dict = {}  # stem -> CDLL or None
_WHY: dict = {}  # stem -> why not loaded
_CUDA: dict = {}  # "lib", "ctx": {dev_id: ctx}


def _candidates(env: str, stem: str, versions, pip_pkgs):
    value = os.environ.get(env, "")
    if value and value != "1":
        yield value
    yield f"{stem}.so"
    for v in versions:
        yield f"{stem}.so.{v}"
    try:
        import importlib.util

        for pkg in pip_pkgs:
            spec = importlib.util.find_spec(pkg)
            if spec is None or not spec.submodule_search_locations:
                continue
            for base in spec.submodule_search_locations:
                lib = os.path.join(base, "lib")
                if os.path.isdir(lib):
                    for f in sorted(os.listdir(lib)):
                        if f.startswith(f"{stem}.so"):
                            yield os.path.join(lib, f)
    except (ImportError, ValueError):
        pass


def load(env: str, stem: str, versions=(), pip_pkgs=()):
    """The library `stem` (e.g. "libcufft") as a CDLL, or None (why: `why_not(stem)`)."""
    if stem in _LIBS:
        return _LIBS[stem]
    lib = None
    if os.environ.get(env, "1") == "0":
        _WHY[stem] = f"{env}=0"
    elif cuda() is None:
        _WHY[stem] = "libcuda.so.1 not found"
    else:
        for name in _candidates(env, stem, versions, pip_pkgs):
            try:
                lib = ctypes.CDLL(name, mode=ctypes.RTLD_LOCAL)
                break
            except OSError:
                continue
        if lib is None:
            _WHY[stem] = f"{stem} not found"
    _LIBS[stem] = lib
    return lib


def why_not(stem: str) -> str:
    return _WHY.get(stem, "")


def cuda():
    if "lib" not in _CUDA:
        try:
            _CUDA["lib"] = ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_LOCAL)
        except OSError:
            _CUDA["lib"] = None
        _CUDA["ctx"] = {}
    return _CUDA["lib"]


def context(dev_id: int) -> bool:
    """Makes device dev_id's primary context current (retained once); False on failure."""
    drv = cuda()
    if drv is None:
        return False
    ctx = _CUDA["ctx"].get(dev_id)
    if ctx is None:
        dev = ctypes.c_int()
        ctx = ctypes.c_void_p()
        if drv.cuDeviceGet(ctypes.byref(dev), dev_id) != 0:
            return False
        if drv.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) != 0:
            return False
        _CUDA["ctx"][dev_id] = ctx
    return drv.cuCtxSetCurrent(ctx) == 0


def synchronise() -> bool:
    return cuda().cuCtxSynchronize() == 0


def device_id(array) -> int:
    from ..._memory.interop import dlpack_device

    return dlpack_device(array.device)[1]
