"""Test session set-up: kapi's disk cache never reads or fills the user's cache (~/.cache/kapi).
Each test gets an empty cache directory of its own (so kernels compiled by one test, or faked
by a test that stubs the compiler, never reach another); tests of the cache itself
(test_disk_cache.py) check hits and "no recompilation" explicitly."""

import atexit
import os
import shutil
import tempfile

import pytest

_session_dir = tempfile.mkdtemp(prefix="kapi-test-cache-")
os.environ["KAPI_CACHE_DIR"] = _session_dir  # also what subprocesses inherit
atexit.register(shutil.rmtree, _session_dir, True)


@pytest.fixture(autouse=True)
def _kapi_cache_dir(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("KAPI_CACHE_DIR", str(tmp_path_factory.mktemp("kapi-cache")))


@pytest.fixture(autouse=True)
def _fresh_launch_plans():
    """Recorded launch plans (kapi/_numeric/replay.py) start empty and are dropped after each test:
    tests patch the library's scheme choices (which kernels, which variant), and a plan
    recorded under one test's patch must not replay in the next."""
    import sys

    rp = sys.modules.get("kapi._numeric.replay")
    if rp is not None:
        rp.clear_plans()
    yield
    rp = sys.modules.get("kapi._numeric.replay")
    if rp is not None:
        rp.clear_plans()
