"""KAPI_PERF=1 hands the CPU driver's JIT code to perf's jitdump files, so a profile names the
kernels. Checked in a subprocess (the JIT reads the setting when it is created): the dump holds
the kernel's run function by name, and without the setting no dump is written."""

import glob
import os
import subprocess
import sys
import textwrap

import pytest
from kapi_testing import devices_or_skip

CPU = [d for d in devices_or_skip() if ":cpu:" in d.filter_string]
pytestmark = pytest.mark.skipif(not CPU, reason="no CPU device")

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import kapi

    @kapi.kernel
    def perf_probe_scale(item, x):
        i = item.get_id(0)
        x[i] = x[i] * 2.0

    x = kapi.asarray(np.arange(64, dtype=np.float32), device="cpu")
    kapi.call_kernel(perf_probe_scale, kapi.Range(64), x)
    assert (x.asnumpy() == 2 * np.arange(64, dtype=np.float32)).all()
    """
)


def _run(tmp_path, perf):
    env = dict(os.environ, KAPI_CACHE="0", JITDUMPDIR=str(tmp_path))
    env.pop("KAPI_PERF", None)
    if perf:
        env["KAPI_PERF"] = perf
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=300)
    return glob.glob(str(tmp_path / ".debug" / "jit" / "*" / "jit-*.dump"))


def test_perf_dump_names_the_kernel(tmp_path):
    dumps = _run(tmp_path, "1")
    assert len(dumps) == 1, dumps
    data = open(dumps[0], "rb").read()
    assert int.from_bytes(data[:4], "little") == 0x4A695444  # jitdump's magic, "JiTD"
    assert b"perf_probe_scale" in data


@pytest.mark.parametrize("perf", [None, "0"])
def test_no_dump_without_the_setting(tmp_path, perf):
    assert _run(tmp_path, perf) == []
