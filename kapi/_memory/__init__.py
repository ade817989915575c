"""Devices, memory and arrays: what a kernel's data is and where it lives.

device (Device, Queue, filter strings, the default device), pool (USM allocations and the
memory pool), array (kapi.Array: storage, views, host transfers, copies between devices),
flags, dtypes (the element types kapi supports), interop (DLPack, __cuda_array_interface__,
__sycl_usm_array_interface__). Nothing here compiles or launches kernels: what computes on
arrays is the array library above (kapi._numeric).
"""
