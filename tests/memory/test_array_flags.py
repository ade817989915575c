"""`kapi.Array.flags` reads as NumPy's flagsobj: the same attributes, keys and repr as the
NumPy array of the same shape and strides."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi

DEVICES = devices_or_skip()
ids = [d.filter_string for d in DEVICES]

ATTRS = "c_contiguous f_contiguous contiguous fortran fnc forc writeable aligned behaved"
ATTRS += " carray farray writebackifcopy owndata num"
KEYS = "C_CONTIGUOUS C CONTIGUOUS F_CONTIGUOUS F FORTRAN WRITEABLE W ALIGNED A OWNDATA O"
KEYS += " WRITEBACKIFCOPY X BEHAVED B CARRAY CA FARRAY FA FNC FORC"


@pytest.fixture(params=DEVICES, ids=ids)
def dev(request):
    return request.param


def _cases(dev):
    h = np.arange(24.0, dtype=np.float32).reshape(4, 6).copy()
    a = kapi.asarray(h, device=dev)
    f = kapi.asarray(np.asfortranarray(h), device=dev)
    yield "C", a, h
    yield "F", f, np.asfortranarray(h)
    yield "strided view", a[:, ::2], h[:, ::2]
    yield "row view", a[1], h[1]
    yield "transpose", a.T, h.T
    yield "1-D", kapi.zeros(5, np.int64, device=dev), np.zeros(5, np.int64)


def test_flags_match_numpy(dev):
    for name, a, h in _cases(dev):
        for attr in ATTRS.split():
            assert getattr(a.flags, attr) == getattr(h.flags, attr), (name, attr)
        for key in KEYS.split():
            assert a.flags[key] == h.flags[key], (name, key)
        assert repr(a.flags) == repr(h.flags), name


def test_flags_refuse_unknown_keys_and_writes(dev):
    a = kapi.zeros(3, device=dev)
    with pytest.raises(KeyError):
        a.flags["c_contiguous"]  # keys are upper case, as in NumPy
    with pytest.raises(AttributeError, match="read-only"):
        a.flags.writeable = False
    assert a.flags == kapi.ones(4, device=dev).flags
    assert a.flags != a[::2].flags
