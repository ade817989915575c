"""Range launches on CUDA, whose grid holds 2^31 - 1 blocks in x but 65535 in y and z: the
runtime picks local sizes that keep every dimension's group count launchable, and says which
limit a launch past every choice exceeds. On the fake libcuda (runtime/drivers/cuda/tests),
which checks each launch's geometry as CUDA does and keeps the last one; the kernels do not
run there, so on a GPU the same launches run and their results are checked (and the array
functions' on every device by tests/numeric/test_array_api.py)."""

import numpy as np
import pytest
from kapi_testing import devices_or_skip, fake_cuda_run

import kapi
from kapi import kernel_api

CUDA = [d for d in devices_or_skip() if d.backend == "cuda"]

_CODE = """
from kapi import kernel_api
import kapi.array_api as xp
@kapi.kernel
def fill(item, out):
    out[item.get_id(1), item.get_id(0)] = 1.0
out = {}
for shape in [(256, 100000), (3, 200000), (1, 70000), (256, 65536 * 2), (100003, 256),
              (256, 100003)]:
    x = kapi.zeros(shape[::-1], dtype=np.float32, device='cuda:gpu:0')
    try:
        kapi.call_kernel(fill, kernel_api.Range(*shape), x)
        kapi.Queue('cuda:gpu:0').wait()
        g = (ctypes.c_uint * 6)()
        fake.fake_cuda_last_geometry(g)
        out[str(shape)] = list(g)
    except kapi.DeviceError as e:
        out[str(shape)] = str(e)
h = kapi.zeros((3, 11), dtype=np.float32, device='cuda:gpu:0')
i = kapi.zeros(100003, dtype=np.int64, device='cuda:gpu:0')
xp.take(h, i, axis=1)
xp.take(h.T, i, axis=0)
xp.take_along_axis(h, kapi.zeros((3, 100003), dtype=np.int64, device='cuda:gpu:0'), axis=1)
w = kapi.zeros((4, 100003), dtype=np.float32, device='cuda:gpu:0')
w[kapi.zeros(2, dtype=np.int64, device='cuda:gpu:0')] = kapi.ones((2, 100003),
    dtype=np.float32, device='cuda:gpu:0')
kapi.Queue('cuda:gpu:0').wait()
out['arrays'] = stats()['broken']
refused = []
P = 100003
for shape in [(3, P), (P, 3), (P, 257), (2, 3, P)]:
    a = kapi.zeros(shape, dtype=np.float32, device='cuda:gpu:0')
    ops = {'T': lambda: xp.asarray(xp.permute_dims(a, tuple(reversed(range(a.ndim)))),
                                   copy=True),
           'column': lambda: a - a[..., :1], 'row': lambda: a * a[:1],
           'mask': lambda: a[a > 0]}
    for ax in range(len(shape)):
        ops[f'sum{ax}'] = lambda ax=ax: xp.sum(a, axis=ax)
        ops[f'argmax{ax}'] = lambda ax=ax: xp.argmax(a, axis=ax)
        ops[f'cumsum{ax}'] = lambda ax=ax: xp.cumulative_sum(a, axis=ax)
        ops[f'sort{ax}'] = lambda ax=ax: xp.sort(a, axis=ax)
        ops[f'roll{ax}'] = lambda ax=ax: xp.roll(a, 1, axis=ax)
        ops[f'concat{ax}'] = lambda ax=ax: xp.concat([a, a], axis=ax)
    for name, f in ops.items():
        try:
            _ = f()._ptr  # computed (not left pending)
            kapi.Queue('cuda:gpu:0').wait()
        except kapi.DeviceError as e:
            refused.append(f'{shape} {name}: {e}')
out['refused'] = refused
print(json.dumps(out))
"""


def test_range_group_counts_fit_cuda_grid_limits():
    out = fake_cuda_run(_CODE, KAPI_FAKE_CUDA_KERNELS="1", KAPI_CACHE="0")
    assert out.pop("arrays") == 0  # the gathers and the scatter launched, flat
    # kapi's own launches (elementwise copies and broadcasts, reductions, scans, sorts) keep
    # a prime extent past 65535 out of dimensions 1 and 2
    assert out.pop("refused") == []
    refused = out.pop("(256, 100003)")
    assert "100003 work-groups in dimension 1" in refused and "limit 65535" in refused, refused
    assert "largest extent first" in refused
    for shape, geometry in out.items():
        grid, block = geometry[:3], geometry[3:]
        glob = [int(n) for n in shape.strip("()").split(",")] + [1]
        assert [g * b for g, b in zip(grid, block, strict=True)] == glob, (shape, geometry)
        assert grid[1] <= 65535 and grid[2] <= 65535, (shape, geometry)
        assert block[0] * block[1] * block[2] <= 1024, (shape, geometry)


@kapi.kernel
def _mark(item, out):
    out[item.get_id(1), item.get_id(0)] = item.get_id(1) * 1000 + item.get_id(0)


@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (runs on the GPU machine)")
def test_range_past_65535_groups_in_dimension_1_runs_on_a_gpu():
    dev = CUDA[0]
    for shape in [(256, 100000), (3, 200000)]:
        out = kapi.zeros(shape[::-1], dtype=np.int64, device=dev)
        kapi.call_kernel(_mark, kernel_api.Range(*shape), out)
        j, i = np.indices(shape[::-1])
        np.testing.assert_array_equal(out.asnumpy(), j * 1000 + i, err_msg=str(shape))
    with pytest.raises(kapi.DeviceError, match="limit 65535"):
        kapi.call_kernel(_mark, kernel_api.Range(256, 100003), kapi.zeros((100003, 256),
                         dtype=np.int64, device=dev))  # fmt: skip
