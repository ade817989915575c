"""kapi_lang: the kernel language's Python objects, below both kapi and pyfront.

The kernel API's names (Item, NdItem, AtomicRef, LocalAccessor, group_barrier, ...) are
defined once here, as plain Python with NumPy only, so that the front end can recognise them
inside kernels without importing the user package above it. Users import them as
`kapi.kernel_api`; nothing here imports kapi, pyfront or Numba (checked by `make lint`).
"""
