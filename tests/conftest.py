"""Test session set-up: kapi's disk cache goes to a temporary directory of the session's own,
so tests neither read nor fill the user's cache (~/.cache/kapi). Tests of the cache itself
point KAPI_CACHE_DIR at their own tmp_path."""

import atexit
import os
import shutil
import tempfile

_dir = tempfile.mkdtemp(prefix="kapi-test-cache-")
os.environ["KAPI_CACHE_DIR"] = _dir
atexit.register(shutil.rmtree, _dir, True)
