"""kapi_sample, the C extension in this folder, against kapi arrays: it reads an array's
pointer, shape, strides and dtype from C and scales it in place on the host (kapi's CPU device),
and launches a kapi kernel from C. Build it first (README.md), then, with the build folder on the
path: `PYTHONPATH=build-sample python samples/c_extension/demo.py`. Prints OK or MISMATCH."""

import sys

import kapi_sample
import numpy as np

import kapi
from kapi import kernel_api as kapi_api


@kapi.kernel
def scale_kernel(item: kapi_api.Item, src, dst, factor):
    i = item.get_id(0)
    dst[i] = src[i] * factor


def main(n: int = 1000) -> int:
    host = np.arange(n, dtype=np.float32)
    ok = True

    # On the host, in C: kapi's CPU device has memory the host can address.
    cpu = kapi.Device("cpu")
    a = kapi.asarray(host.reshape(10, -1), device=cpu)
    info = kapi_sample.describe(a)
    ok &= info["shape"] == list(a.shape) and info["strides"] == list(a.strides)
    kapi_sample.scale(a[:, ::2], 3.0)  # a strided view: every other column
    want = host.reshape(10, -1).copy()
    want[:, ::2] *= 3
    ok &= np.array_equal(a.asnumpy(), want)

    # A kernel launched from C, on the default device (a GPU where there is one).
    x = kapi.asarray(host)
    y = kapi_sample.scaled_copy(scale_kernel, x, np.float32(0.5))
    ok &= y.device == x.device and np.allclose(y.asnumpy(), host * 0.5)

    built, offered = kapi_sample.capi_version()
    print(
        f"kapi C API version {offered} (the sample was built against {built}); device: "
        f"{x.device.name}"
    )
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
