"""The kernels the benchmarks share, as plain Python functions in numba-dpex's style; each
script decorates them (`kapi.kernel(kernels.saxpy)`) or compiles them fresh."""

import math


def saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def pairwise_distance(item, data, dist):
    i = item.get_id(0)
    j = item.get_id(1)
    d = data.dtype.type(0.0)
    for k in range(data.shape[1]):
        t = data[i, k] - data[j, k]
        d += t * t
    dist[j, i] = math.sqrt(d)
