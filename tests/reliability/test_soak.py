"""A tiny run of tools/soak.py in the suite: sync and async launches from several threads on
shared and separate arrays give the right results, and distinct kernels compile and run.
The full soak (10^6 launches, 1000 kernels, memory targets) is the script itself."""

import os
import sys
from types import SimpleNamespace

from kapi_testing import devices_or_skip

DEVICES = devices_or_skip()
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import soak  # noqa: E402


def test_threads_sync_and_async_launches_are_correct():
    args = SimpleNamespace(launches=8000, threads=8, check_every=2000, kernels=0)
    for dev in DEVICES:
        r = soak.launches(args, dev, log=lambda m: None)
        assert r["errors"] == [], r
        assert r["launches"] == 8000 and len(r["rss_samples_mb"]) == 4


def test_distinct_kernels_compile_and_run():
    args = SimpleNamespace(kernels=12)
    for dev in DEVICES:
        r = soak.compiles(args, dev, log=lambda m: None)
        assert r["errors"] == [] and r["kernels"] == 12, r
