"""Host time of one launch from C through kapi's C API (kapi_call_kernel, from
samples/c_extension's `call`) beside kapi.call_kernel from Python: an empty kernel with three
array arguments on the CPU device, as bench/launch.py. The sample is built with CMake into a
temporary folder first. Batches of the two alternate, so a noisy machine moves both alike.

    python bench/capi_launch.py [calls per batch] [batches]      (BENCH_DEVICE=cpu by default)
"""

import importlib.util
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import kapi

ROOT = pathlib.Path(__file__).resolve().parents[1]


@kapi.kernel
def empty(item, a, b, c):
    pass


def build_sample(out: str):
    for cmd in (
        ["cmake", "-S", str(ROOT / "samples" / "c_extension"), "-B", out,
         f"-DPython3_EXECUTABLE={sys.executable}", f"-Dkapi_DIR={kapi.get_cmake_dir()}",
         "-DCMAKE_BUILD_TYPE=Release"],
        ["cmake", "--build", out],
    ):  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True)
    (mod,) = pathlib.Path(out).glob("kapi_sample*.so")
    spec = importlib.util.spec_from_file_location("kapi_sample", mod)
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    return ext


def batch_us(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    dev = kapi.Device(os.environ.get("BENCH_DEVICE", "cpu"))
    a, b, c = (kapi.zeros(1024, dtype=np.float32, device=dev) for _ in range(3))
    with tempfile.TemporaryDirectory() as tmp:
        ext = build_sample(tmp)
        r, nd = kapi.Range(1), kapi.NdRange(64, 64)
        pairs = {
            "Range(1)": (
                lambda: kapi.call_kernel(empty, r, a, b, c),
                lambda: ext.call(empty, (1,), None, a, b, c),
            ),
            "NdRange(64, 64)": (
                lambda: kapi.call_kernel(empty, nd, a, b, c),
                lambda: ext.call(empty, (64,), (64,), a, b, c),
            ),
        }
        print(f"device: {dev.name} ({dev.driver_name}); {calls} calls x {batches} batches")
        for name, (py, c_api) in pairs.items():
            py(), c_api()  # compile and build once
            t_py, t_c = [], []
            for _ in range(batches):
                t_py.append(batch_us(py, calls))
                t_c.append(batch_us(c_api, calls))
            mp, mc = statistics.median(t_py), statistics.median(t_c)
            print(
                f"{name:>16}: kapi.call_kernel {mp:.2f} us, C API kapi_call_kernel {mc:.2f} us "
                f"per launch (median; C / Python {mc / mp:.2f})"
            )


if __name__ == "__main__":
    main()
