"""kapi.array_api: the Python array API standard (2024.12) on kapi arrays.

`xp = x.__array_namespace__()` (or `import kapi.array_api as xp`) gives creation,
manipulation, element-wise, linear algebra, searching, sorting, set, statistical and utility
functions, the linalg extension, and the standard's dtypes (NumPy dtype objects). Every
function runs on the device where its arrays live (device= picks it for creation); nothing
is copied to the host unless asked for (`kapi.asnumpy`). docs/guide/array-api.md lists what
runs where.

This module is the array library's namespace package itself (kapi/_numeric/array_api), so
`x.__array_namespace__() is kapi.array_api`.
"""

import sys

from ._numeric import array_api as _namespace

sys.modules[__name__] = _namespace
