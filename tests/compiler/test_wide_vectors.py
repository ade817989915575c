"""Kernels that LLVM's O2 pipeline vectorises wider than SPIR-V allows (more than 16 lanes:
32 independent accumulators, a search's 32 compares or-ed together) compile and run: the
compiler optimises such a module again at O1 instead of stopping in the translator ("Cannot
translate source of bitcast instruction")."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi

DEVICES = devices_or_skip()
U = 32


def _source():
    lines = ["def wide(item, x, out, found):", "    i = item.get_id(0)", f"    q = i * {4 * U}"]
    lines += [f"    b{k} = x[q + {k}]" for k in range(U)]
    lines += [f"    j = q + {U}", f"    while j < q + {4 * U}:"]
    lines += [f"        b{k} = max(b{k}, x[j + {k}])" for k in range(U)]
    lines += [f"        j += {U}"]
    names = [f"b{k}" for k in range(U)]
    while len(names) > 1:
        names = [f"max({names[k]}, {names[k + 1]})" for k in range(0, len(names), 2)]
    lines += [f"    m = {names[0]}", "    out[i] = m", "    j = q"]
    hit = " | ".join(f"(x[j + {k}] == m)" for k in range(U))
    lines += [f"    while j < q + {4 * U} and not ({hit}):", f"        j += {U}"]
    lines += ["    found[i] = j - q"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("dev", DEVICES, ids=[d.filter_string for d in DEVICES])
def test_32_accumulators_and_a_32_compare_search(dev, tmp_path):
    path = tmp_path / "wide_kernel.py"
    path.write_text(_source())
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102 - the test's own source
    k = kapi.kernel(ns["wide"])
    n = 64
    h = np.random.default_rng(0).random(n * 4 * U).astype(np.float32)
    out = kapi.zeros(n, dtype=np.float32, device=dev)
    found = kapi.zeros(n, dtype=np.int64, device=dev)
    kapi.call_kernel(k, kapi.Range(n), kapi.asarray(h, device=dev), out, found)
    rows = h.reshape(n, 4 * U)
    np.testing.assert_array_equal(out.asnumpy(), rows.max(1))
    np.testing.assert_array_equal(found.asnumpy(), rows.argmax(1) // U * U)
