# ruff: noqa: E501  (KIR fixtures keep one item per line, as the format requires)
"""@kapi.kernel(max_registers=N): a cap on registers per work-item. It travels as KIR's kernel
attribute `max_registers N`, a SPIR-V `OpSourceExtension "kapi.max_registers N"`, and
`.maxnreg N` on every PTX entry of the kernel (ptxas then allocates at most N); kapi's CPU
device accepts and ignores it."""

import re
import shutil
import subprocess

import numpy as np
import pytest
from kapi_testing import devices_or_skip

import kapi
from kapi._lib import _kapi

DEVICES = devices_or_skip()


@pytest.fixture(params=DEVICES, ids=[d.filter_string for d in DEVICES])
def dev(request):
    return request.param


# 24 values loaded up front and combined pairwise: more registers than the cap below when
# uncapped (ptxas keeps every load in flight).
_WIDE = "\n".join(
    ["def wide(item, a, out):", "    i = item.get_id(0)"]
    + [f"    x{j} = a[i * 24 + {j}]" for j in range(24)]
    + ["    s = 0.0"]
    + [f"    s += x{j} * x{(j * 7 + 3) % 24} - x{(j * 5 + 1) % 24}" for j in range(24)]
    + ["    out[i] = s"]
)


def _wide(**options):
    g = {}
    exec(compile(_WIDE, "<wide>", "exec"), g)  # noqa: S102 - the test's own source
    return kapi.kernel(g["wide"], **options)


def _want(h):
    x = h.reshape(-1, 24).astype(np.float64)
    s = np.zeros(x.shape[0])
    for j in range(24):
        s += x[:, j] * x[:, (j * 7 + 3) % 24] - x[:, (j * 5 + 1) % 24]
    return s


def test_capped_kernel_runs_right_on_every_device(dev):
    h = np.random.default_rng(0).standard_normal(64 * 24)
    a = kapi.asarray(h, device=dev)
    out = kapi.asarray(np.zeros(64), device=dev)
    k = _wide(max_registers=32)
    kapi.call_kernel(k, kapi.Range(64), a, out)
    np.testing.assert_allclose(out.asnumpy(), _want(h), rtol=1e-12)
    (ck,) = k.overloads.values()
    assert re.search(
        r"^kernel @wide\(.*\) -> void file .* line \d+ max_registers 32 \{$", ck.kir, re.M
    )
    assert 'OpSourceExtension "kapi.max_registers 32"' in ck.disassemble()


def _registers(ptx: str) -> int:
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not shutil.which(ptxas):
        pytest.skip("ptxas not found (install the CUDA toolkit to assemble the PTX)")
    r = subprocess.run(
        [ptxas, "-arch=sm_90", "-v", "-", "-o", "/dev/null"],
        input=ptx,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    used = [int(m) for m in re.findall(r"Used (\d+) registers", r.stderr)]
    assert used, r.stderr
    return max(used)


def test_cap_reaches_ptx_and_ptxas():
    """Uncapped, the kernel takes more than 32 registers; capped at 32, every PTX entry says
    `.maxnreg 32` and ptxas allocates at most 32."""
    from nvptx_util import ptx_of

    sig = ("item(1)", "array(f64,1,C,global)", "array(f64,1,C,global)")
    plain = ptx_of(_wide().compile(sig[1:], ("item", 1)).spirv)
    capped = ptx_of(_wide(max_registers=32).compile(sig[1:], ("item", 1)).spirv)
    assert ".maxnreg" not in plain
    entries = capped.count(".entry ")
    assert entries >= 1 and capped.count(".maxnreg 32") == entries
    assert _registers(plain) > 32 >= _registers(capped)


@pytest.mark.parametrize(
    ("value", "err", "match"),
    [
        (8, ValueError, r"max_registers must be 16\.\.255"),
        (256, ValueError, r"max_registers must be 16\.\.255"),
        ("64", TypeError, r"max_registers must be an int, not str"),
        (True, TypeError, r"max_registers must be an int, not bool"),
        (64.0, TypeError, r"max_registers must be an int, not float"),
    ],
)
def test_bad_values_are_clear_errors(value, err, match):
    with pytest.raises(err, match=match):
        _wide(max_registers=value)


def test_numpy_integer_is_accepted():
    assert _wide(max_registers=np.int32(40)).max_registers == 40


_KIR = """\
kir 1
kernel @k(%a: array(f32,1,C,global)) -> void file "k.py" line 1 ATTR {
^entry:
  %0 = global_id i64 0        #2
  %1 = const f32 1.0          #2
  astore %a %1 %0             #2
  ret                         #2
}
"""


def test_kir_attribute_is_checked():
    """The compiler checks the attribute itself (KIR is never trusted): range, and only on
    the kernel."""
    _, _, spirv = _kapi.compile_kir(_KIR.replace("ATTR", "max_registers 64"))
    assert b"kapi.max_registers 64" in spirv
    for attr, match in [
        ("max_registers 15", r"max_registers must be 16\.\.255, not 15"),
        ("max_registers 1000", r"max_registers must be 16\.\.255, not 1000"),
        ("max_registers", r"register count"),
    ]:
        with pytest.raises(_kapi.CompileError, match=match):
            _kapi.compile_kir(_KIR.replace("ATTR", attr))
    func = _KIR.replace("ATTR", "") + (
        'func @f() -> void file "k.py" line 5 max_registers 32 {\n^entry:\n  ret #6\n}\n'
    )
    with pytest.raises(
        _kapi.CompileError, match=r"max_registers is an attribute of the kernel only"
    ):
        _kapi.compile_kir(func)
