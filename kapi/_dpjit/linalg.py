"""Small dense linear algebra in prange bodies: `np.linalg.inv(a)` and `np.linalg.solve(a, b)`
of an iteration's own matrix, as device functions (Gauss-Jordan elimination with partial
pivoting, element loops in the work-item, as Numba's parfor runs LAPACK per iteration).
kernels.py rewrites each call into private arrays (a working copy of `a`, the result) and a
call of one of these functions. Work is O(n^3) per iteration, memory two private matrices:
for the small matrices of per-iteration systems, not for a large solve (call np.linalg
outside the loop)."""

from __future__ import annotations


def _eliminate(w, x, n, m):
    """Reduce w (n x n, destroyed) to the identity, applying the same row operations to x
    (n x m): x becomes inv(w) @ x. A zero pivot column leaves x with infinities or NaNs
    (no exception in a kernel)."""
    for k in range(n):
        p = k
        best = abs(w[k, k])
        for r in range(k + 1, n):
            v = abs(w[r, k])
            if v > best:
                best = v
                p = r
        if p != k:
            for c in range(n):
                t = w[k, c]
                w[k, c] = w[p, c]
                w[p, c] = t
            for c in range(m):
                t = x[k, c]
                x[k, c] = x[p, c]
                x[p, c] = t
        d = 1 / w[k, k]
        for c in range(n):
            w[k, c] = w[k, c] * d
        for c in range(m):
            x[k, c] = x[k, c] * d
        for r in range(n):
            if r != k:
                f = w[r, k]
                for c in range(n):
                    w[r, c] = w[r, c] - f * w[k, c]
                for c in range(m):
                    x[r, c] = x[r, c] - f * x[k, c]
    return 0


def inv_into(a, w, x):
    """x = inv(a) (a: n x n, left unchanged; w: n x n work space)."""
    n = a.shape[0]
    for r in range(n):
        for c in range(n):
            w[r, c] = a[r, c]
            x[r, c] = 0
        x[r, r] = 1
    return _eliminate(w, x, n, n)


def solve_into(a, b, w, x):
    """x = solve(a, b) for a 2-d b (n x m)."""
    n = a.shape[0]
    for r in range(n):
        for c in range(n):
            w[r, c] = a[r, c]
        for c in range(b.shape[1]):
            x[r, c] = b[r, c]
    return _eliminate(w, x, n, b.shape[1])


def _eliminate_vec(w, x, n):
    """_eliminate for a 1-d x (n)."""
    for k in range(n):
        p = k
        best = abs(w[k, k])
        for r in range(k + 1, n):
            v = abs(w[r, k])
            if v > best:
                best = v
                p = r
        if p != k:
            for c in range(n):
                t = w[k, c]
                w[k, c] = w[p, c]
                w[p, c] = t
            t = x[k]
            x[k] = x[p]
            x[p] = t
        d = 1 / w[k, k]
        for c in range(n):
            w[k, c] = w[k, c] * d
        x[k] = x[k] * d
        for r in range(n):
            if r != k:
                f = w[r, k]
                for c in range(n):
                    w[r, c] = w[r, c] - f * w[k, c]
                x[r] = x[r] - f * x[k]
    return 0


def solve_vec_into(a, b, w, x):
    """x = solve(a, b) for a 1-d b (n)."""
    n = a.shape[0]
    for r in range(n):
        for c in range(n):
            w[r, c] = a[r, c]
        x[r] = b[r]
    return _eliminate_vec(w, x, n)


for _f in (_eliminate, _eliminate_vec, inv_into, solve_into, solve_vec_into):
    _f.__kapi_device_func__ = True  # compiled into the kernel that calls it
