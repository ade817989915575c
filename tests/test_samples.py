"""Every sample in samples/ runs and checks itself (exit status 0) on the default device, as a
user would run it: `python samples/NAME.py`."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "samples").glob("*.py"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_runs_and_checks_itself(path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run(
        [sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, f"{path.name} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    assert "MISMATCH" not in r.stdout and "FAIL" not in r.stdout, r.stdout[-2000:]
