"""Work-groups side by side on many threads: KAPI_CPU_THREADS=12 KAPI_CPU_SHARE=1 spread even
tiny launches over more threads than this machine has cores, one group per chunk, so that
groups with local memory, barriers, group and sub-group algorithms and atomics run concurrently
on every machine (on a 2-core one they would otherwise run one after another on the caller)."""

import os
import subprocess
import sys
import textwrap

CODE = textwrap.dedent(
    """
    import numpy as np
    import kapi
    from kapi import kernel_api as K
    from kapi.kernel_api import GroupOp

    ADD = GroupOp.ADD

    @kapi.kernel
    def algos(nd, a, out):
        g = nd.get_group()
        sg = nd.get_sub_group()
        i = nd.get_global_linear_id()
        out[i, 0] = K.reduce_over_group(g, a[i], ADD)
        out[i, 1] = K.inclusive_scan_over_group(g, a[i], ADD)
        out[i, 2] = K.reduce_over_group(sg, a[i], ADD)

    @kapi.kernel
    def tiles(nd, a, out, hist, loc):
        li = nd.get_local_id(0)
        i = nd.get_global_id(0)
        loc[li] = a[i]
        K.group_barrier(nd.get_group())
        out[i] = loc[63 - li]
        K.AtomicRef(hist, index=a[i] % 8).fetch_add(np.int32(1))

    dev = kapi.Device("cpu")
    for gshape, lshape in [((16, 12), (8, 6)), ((96,), (48,)), ((300,), (60,))]:
        n = int(np.prod(gshape))
        h = np.arange(1, n + 1, dtype=np.int32) % 7
        out = kapi.zeros((n, 3), dtype=np.int32, device=dev)
        for _ in range(20):
            kapi.call_kernel(algos, kapi.NdRange(gshape, lshape), kapi.asarray(h, device=dev), out)
        got = out.asnumpy()
        per = int(np.prod(lshape))
        groups = h.reshape(-1, per) if len(gshape) == 1 else None
        if groups is not None:
            assert (got[:, 0] == np.repeat(groups.sum(1), per)).all(), got[:, 0]
            assert (got[:, 1] == np.cumsum(groups, 1).ravel()).all()
    n = 64 * 40
    h = np.random.default_rng(0).integers(0, 1000, n).astype(np.int32)
    for _ in range(20):
        out = kapi.empty(n, dtype=np.int32, device=dev)
        hist = kapi.zeros(8, dtype=np.int32, device=dev)
        kapi.call_kernel(tiles, kapi.NdRange((n,), (64,)), kapi.asarray(h, device=dev), out, hist,
                         K.LocalAccessor(64, np.int32))
        assert (out.asnumpy() == h.reshape(-1, 64)[:, ::-1].ravel()).all()
        assert (hist.asnumpy() == np.bincount(h % 8, minlength=8)).all()
    import glob
    names = [open(f).read().strip() for f in glob.glob("/proc/self/task/*/comm")]
    assert names.count("kapi-cpu") == 11, names  # KAPI_CPU_THREADS: 11 workers and the caller
    print("ok")
    """
)


def test_groups_side_by_side_on_more_threads_than_cores():
    env = dict(os.environ, KAPI_CPU_THREADS="12", KAPI_CPU_SHARE="1", KAPI_DRIVERS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
