"""Kernels and launching: @kapi.kernel and device functions, their compilation through pyfront
and the compiler, and call_kernel.

dispatcher (KernelDispatcher: specialisations, compile, inspection), launch (call_kernel on
the native launch path), simulate (kernels run as Python: kapi.simulate, KAPI_SIMULATOR=1),
ranges (Range, NdRange), types (argument and signature types as KIR
type strings), numba_sig and scalar_names (numba-dpex's signature objects and scalar names).
Sits on arrays and devices (kapi._memory) and the disk cache (kapi._cache).
"""
