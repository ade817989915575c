"""Set functions of the array API on the device: a stable argsort, flags where the sorted
values change (NaNs are all distinct, as the standard says), a scan and one scatter."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..scan import scan
from ..sort import argsort
from . import _core as C

UniqueAllResult = namedtuple("UniqueAllResult", "values indices inverse_indices counts")
UniqueCountsResult = namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = namedtuple("UniqueInverseResult", "values inverse_indices")

_FLAGS = """
def _uflags(item, s, f):
    i = item.get_id(0)
    if i == 0:
        f[i] = np.int64(1)
    else:
        f[i] = np.int64(1) if s[i - 1] != s[i] else np.int64(0)
"""

_SCATTER = """
def _uscatter(item, s, perm, f, pos, vals, first, starts, inv):
    i = item.get_id(0)
    u = pos[i] + f[i] - 1
    inv[perm[i]] = u
    if f[i] != 0:
        vals[u] = s[i]
        first[u] = perm[i]
        starts[u] = i
"""

_COUNTS = """
def _ucounts(item, starts, cnt, n, u):
    j = item.get_id(0)
    nxt = starts[j + 1] if j + 1 < u else n
    cnt[j] = nxt - starts[j]
"""


def _unique(x):
    from .indexing import take

    C.check(x, "unique")
    n = x.size
    flat = C.contiguous(x).reshape((n,))
    if n == 0:
        e = C.allocate((0,), x.dtype, x)
        i = C.allocate((0,), np.int64, x)
        return e, i, C.allocate(x.shape, np.int64, x), C.allocate((0,), np.int64, x)
    perm = argsort(flat) if n > 1 else C.scalar_array(0, np.int64, x).reshape((1,))
    s = take(flat, perm)
    f = C.allocate((n,), np.int64, x)
    C.launch(C.kernel(_FLAGS, "_uflags"), n, s, f)
    pos = scan(f, "add", inclusive=False)
    u = int(pos[n - 1]) + int(f[n - 1])
    vals = C.allocate((u,), x.dtype, x)
    first = C.allocate((u,), np.int64, x)
    starts = C.allocate((u,), np.int64, x)
    inv = C.allocate((n,), np.int64, x)
    C.launch(C.kernel(_SCATTER, "_uscatter"), n, s, perm, f, pos, vals, first, starts, inv)
    cnt = C.allocate((u,), np.int64, x)
    C.launch(C.kernel(_COUNTS, "_ucounts"), u, starts, cnt, np.int64(n), np.int64(u))
    return vals, first, inv.reshape(x.shape), cnt


def unique_all(x, /):
    v, i, inv, c = _unique(x)
    return UniqueAllResult(v, i, inv, c)


def unique_counts(x, /):
    v, _, _, c = _unique(x)
    return UniqueCountsResult(v, c)


def unique_inverse(x, /):
    v, _, inv, _ = _unique(x)
    return UniqueInverseResult(v, inv)


def unique_values(x, /):
    return _unique(x)[0]
