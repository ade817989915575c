"""The NVPTX finaliser called directly through ctypes (it needs no GPU): PTX text and kernel
tables of a SPIR-V module, for tests that check what the CUDA driver would load."""

import ctypes
from pathlib import Path

import kapi

LIB = Path(kapi.__file__).parent / "_lib" / "libkapi_compiler.so"


class NvptxOptions(ctypes.Structure):
    """kc_nvptx_options_t (compiler/include/kapi/compiler.h)."""

    _fields_ = [
        ("libdevice_path", ctypes.c_char_p),
        ("sm", ctypes.c_uint32),
        ("opt_level", ctypes.c_int),
        ("coarsen", ctypes.c_int),
    ]


class NvptxKernel(ctypes.Structure):
    """kc_nvptx_kernel_t (compiler/include/kapi/compiler.h)."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("num_args", ctypes.c_uint32),
        ("args", ctypes.c_void_p),
        ("required_local_size", ctypes.c_uint32 * 3),
        ("coarse_name", ctypes.c_char_p),
        ("coarse_factor", ctypes.c_uint32),
        ("coarse_aligned", ctypes.c_uint64),
    ]


def _lib():
    lib = ctypes.CDLL(str(LIB))
    lib.kc_nvptx_module_ptx.restype = ctypes.c_char_p
    lib.kc_nvptx_module_find.restype = ctypes.POINTER(NvptxKernel)
    lib.kc_nvptx_module_find.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    return lib


def finalise(spirv: bytes, kernels=(), coarsen=True, libdevice=None):
    """(PTX text, {kernel name: (coarse entry name or None, factor, aligned mask)}).
    libdevice: path of CUDA's libdevice.10.bc, which kernels calling math functions need."""
    lib = _lib()
    opts = NvptxOptions()
    lib.kc_nvptx_options_init(ctypes.byref(opts))
    opts.coarsen = int(coarsen)
    if libdevice:
        opts.libdevice_path = str(libdevice).encode()
    mod, log = ctypes.c_void_p(), ctypes.c_char_p()
    st = lib.kc_nvptx_finalise(
        spirv, len(spirv), ctypes.byref(opts), ctypes.byref(mod), ctypes.byref(log)
    )
    assert st == 0, log.value
    try:
        table = {}
        for name in kernels:
            k = lib.kc_nvptx_module_find(mod, name.encode())
            assert k, f"no kernel {name}"
            c = k.contents
            coarse = c.coarse_name.decode() if c.coarse_name else None
            table[name] = (coarse, c.coarse_factor, c.coarse_aligned)
        return lib.kc_nvptx_module_ptx(mod, None).decode(), table
    finally:
        lib.kc_nvptx_module_destroy(mod)


def ptx_of(spirv: bytes, libdevice=None) -> str:
    return finalise(spirv, libdevice=libdevice)[0]
