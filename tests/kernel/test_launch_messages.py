"""Launch mistakes get messages that name the mistake and what to do: one argument too many,
numba-cuda's bracket launch, arrays on two queues or two devices of one model."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=lambda d: d.filter_string)
def dev(request):
    return request.param


@kapi.kernel
def fill(item, a):
    a[item.get_id(0)] = 1


def test_one_argument_too_many_names_the_item(dev):
    # the launch used to take the kernel as item-less: "Unknown attribute 'get_id' of type
    # array(float32 ...)", with the DeprecationWarning hidden
    a, b = kapi.zeros(4, device=dev), kapi.zeros(4, device=dev)
    with pytest.raises(kapi.InvalidKernelSpecializationError) as ei:
        kapi.call_kernel(fill, kapi.Range(4), a, b)
    msg = str(ei.value)
    assert "kernel 'fill' takes 1 argument(s) after its index-space argument 'item'" in msg
    assert "2 were given" in msg and "one too many" in msg and "get_id" not in msg


def test_item_less_kernels_still_launch(dev):
    @kapi.kernel
    def itemless(a):  # numba-dpex's deprecated form: no index-space method is called
        a[0] = 7

    a = kapi.zeros(1, dtype=np.int64, device=dev)
    with pytest.warns(DeprecationWarning):
        kapi.call_kernel(itemless, kapi.Range(1), a)
    assert a.asnumpy()[0] == 7


def test_bracket_launch_advice_means_what_the_brackets_meant():
    with pytest.raises(kapi.KernelCallError) as ei:
        fill[1, 4]
    msg = str(ei.value)
    # numba-cuda's fill[blocks, threads]: 1 block of 4 is a global size of 4 in groups of 4,
    # not the 2-D Range(1, 4) the old advice `call_kernel(fill, (1, 4), ...)` ran
    assert "kapi.call_kernel(fill, kapi.NdRange(4, 4), *args)" in msg
    assert "blocks=1, threads=4" in msg and "call_kernel(fill, (1, 4)" not in msg
    with pytest.raises(kapi.KernelCallError, match=r"NdRange\(\(8, 6\), \(4, 3\)\)") as ei:
        fill[(2, 2), (4, 3)]
    assert "global_size, local_size" not in str(ei.value)  # (2, 2) in groups of (4, 3): none
    with pytest.raises(kapi.KernelCallError, match=r"older fill\[global_size, local_size\] is "):
        fill[8, 4]
    with pytest.raises(kapi.KernelCallError, match=r"call_kernel\(fill, kapi.Range\(8\), "):
        fill[8]


def test_arrays_on_two_queues_of_one_device_are_refused(dev):
    # numba-dpex's ExecutionQueueInferenceError: the launch would run on the first queue, with
    # nothing ordering the other queue's pending work before it
    q1, q2 = kapi.Queue(dev), kapi.Queue(dev)

    @kapi.kernel
    def add(item, a, b):
        i = item.get_id(0)
        a[i] += b[i]

    a, b = kapi.zeros(4, queue=q1), kapi.ones(4, queue=q2)
    with pytest.raises(kapi.ExecutionQueueInferenceError) as ei:
        kapi.call_kernel(add, kapi.Range(4), a, b)
    msg = str(ei.value)
    assert "'a' and 'b' are on two different queues of one device" in msg
    assert dev.filter_string in msg and ".to_device(queue)" in msg
    with pytest.raises(kapi.ExecutionQueueInferenceError, match="two different queues"):
        a + b  # the array library's launches too
    q2.wait()
    kapi.call_kernel(add, kapi.Range(4), a, b.to_device(q1))  # rebound: one queue
    assert (a.asnumpy() == 1).all()


def test_two_devices_of_one_model_are_told_apart_by_filter_string():
    by_name = {}
    for d in DEVICES:
        by_name.setdefault(d.name, []).append(d)
    pair = next((ds for ds in by_name.values() if len(ds) > 1), None)
    if pair is None:
        pytest.skip("needs two devices of one model (a host with two GPUs)")
    d0, d1 = pair[:2]
    a, b = kapi.zeros(4, device=d0), kapi.zeros(4, device=d1)

    @kapi.kernel
    def two(item, a, b):
        a[item.get_id(0)] = b[item.get_id(0)]

    with pytest.raises(kapi.ExecutionQueueInferenceError) as ei:
        kapi.call_kernel(two, kapi.Range(4), a, b)
    msg = str(ei.value)
    assert f"({d0.filter_string})" in msg and f"({d1.filter_string})" in msg
