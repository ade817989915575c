"""User code that mypy checks against kapi's types in `make lint` (kapi/__init__.pyi, py.typed).

It is only type-checked, never run. Each `# type: ignore[...]` marks a mistake mypy must
report: the run uses --warn-unused-ignores, so a mistake that stops being reported fails lint.
"""

from typing import assert_type

import numpy as np

import kapi
from kapi import kernel_api as ka


@kapi.kernel
def vector_add(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]


@kapi.kernel(["(item(1), array(f32,1), f32)"], cache=False)
def scale(item, a, s):
    a[item.get_id(0)] *= s


def run() -> None:
    assert_type(vector_add, kapi.KernelDispatcher)
    assert_type(scale, kapi.KernelDispatcher)
    devs = kapi.devices()
    assert_type(devs, list[kapi.Device])
    cpu: kapi.Device = kapi.Device("cpu")
    a = kapi.asarray(np.arange(8, dtype=np.float32), device=cpu)
    b = kapi.ones(8, dtype=kapi.float32.dtype, device="cpu")
    c = kapi.empty_like(a)
    assert_type(a + b, kapi.Array)
    kapi.call_kernel(vector_add, kapi.Range(8), a, b, c)
    event = kapi.call_kernel_async(scale, kapi.NdRange((8,), (4,)), [], c, np.float32(2))
    event.wait()
    host: np.ndarray = c.asnumpy()
    assert host.shape == (8,) and c.shape == (8,)
    assert_type(ka.Item, type[ka.Item])  # the in-kernel classes are there to type-check against
    try:
        kapi.call_kernel(vector_add, kapi.Range(8), a, b)
    except kapi.KernelCallError as e:
        print(e)

    # The C API's folders (docs/guide/c-api.md).
    assert_type(kapi.get_include(), str)
    assert_type(kapi.get_cmake_dir(), str)

    # Mistakes mypy reports.
    kapi.nonexistent_function(1)  # type: ignore[attr-defined]
    kapi.Range("8")  # type: ignore[arg-type]
    kapi.empty(8, device=3)  # type: ignore[arg-type]
    a.no_such_method()  # type: ignore[attr-defined]
    kapi.devices()[0].name + 1  # type: ignore[operator]
