"""kapi objects passing through @kapi.dpjit host code as numba-dpex 0.23's dpjit passes them:
index spaces are values (a new Range/NdRange comes back), events and arrays are references
(the same object comes back, reference counts balanced), allocation keywords are checked
as numba-dpex checks them."""

import sys

import numpy as np
import pytest
from kapi_testing import devices_or_skip
from numba.core.errors import TypingError

import kapi

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


@kapi.dpjit
def _identity(a):
    return a


@kapi.dpjit
def _drop(a):
    return None


@pytest.mark.parametrize(
    "make",
    [
        lambda: kapi.Range(10),
        lambda: kapi.Range(4, 5, 6),
        lambda: kapi.NdRange(kapi.Range(8, 8), kapi.Range(2, 4)),
    ],
    ids=["range1", "range3", "ndrange2"],
)
def test_index_spaces_come_back_as_new_equal_values(make):
    r = make()
    before = sys.getrefcount(r)
    out = _identity(r)
    assert out is not r and type(out) is type(r)
    if isinstance(r, kapi.NdRange):
        assert out.global_range == r.global_range and out.local_range == r.local_range
    else:
        assert out == r
    assert sys.getrefcount(r) == before  # the new value holds no reference to r
    _drop(r)
    assert sys.getrefcount(r) == before


@kapi.kernel
def _noop(item, a):
    a[item.get_id(0)] += 1


def test_events_pass_through_and_wait_in_host_code(dev):
    a = kapi.zeros(4, dtype=np.int32, device=dev)
    _, ev = kapi.call_kernel_async(_noop, kapi.Range(4), (), a)

    @kapi.dpjit
    def wait(e):
        e.wait()
        return None

    wait(ev)
    assert ev.is_complete and a.asnumpy().tolist() == [1, 1, 1, 1]
    before = sys.getrefcount(ev)  # (a pending launch holds its event until it completes)
    out = _identity(ev)
    assert out is ev and sys.getrefcount(ev) == before + 1
    del out
    wait(ev)
    assert sys.getrefcount(ev) == before


def _alloc(name, dev):
    """(a dpjit function passing device= and sycl_queue= to kapi.<name>, one passing only
    sycl_queue=, its first argument)."""
    fn = getattr(kapi, name)
    d = dev.filter_string
    if name.startswith("full"):
        both = lambda x, q: fn(x, 7, device=d, sycl_queue=q)  # noqa: E731
        one = lambda x, q: fn(x, 7, sycl_queue=q)  # noqa: E731
    else:
        both = lambda x, q: fn(x, device=d, sycl_queue=q)  # noqa: E731
        one = lambda x, q: fn(x, sycl_queue=q)  # noqa: E731
    x = kapi.ones(3, device=dev) if name.endswith("_like") else 3
    return kapi.dpjit(both), kapi.dpjit(one), x


@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "full", "empty_like", "full_like"])
def test_device_and_sycl_queue_together_are_refused_as_numba_dpex_does(dev, name):
    both, one, x = _alloc(name, dev)
    with pytest.raises(TypingError, match="`device` and `sycl_queue` are exclusive keywords"):
        both(x, dev.default_queue)
    got = one(x, dev.default_queue)
    assert got.shape == (3,) and got.sycl_queue == dev.default_queue
