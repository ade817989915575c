"""dpjit: numba-dpex's @dpjit, prange loops offloaded as kernels and the host code around them
compiled by Numba's njit (host). Sits on top of kernels, arrays and the array library.
"""
