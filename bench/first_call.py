"""The first call of some bench kernels on the CPU device: compile (pyfront, the compiler, the
CPU driver's finaliser) and one small run, the cost a user meets once per kernel and the test
suite meets per kernel. Run it with KAPI_CACHE=0 (nothing read back from the disk cache), once
per tree to compare:

    KAPI_CACHE=0 PYTHONPATH=TREE python bench/first_call.py TREE

or, for before/after figures of the CPU driver's switches: every kernel of bench/cpu_cases.py
named by --only (at a small size), each variant's first call in a fresh process, the variants
alternating, --runs rounds; prints the median wall and CPU (process time) ms per kernel and
variant:

    python bench/first_call.py --only pairwise-f32,local-scan-i32 --runs 5 \
        --variant off:KAPI_HOST_WINDOW_GATHERS=0 [--variant NAME:VAR=VALUE[,VAR=VALUE]]

The first column (`on`) is the environment as given; KAPI_CACHE=0 is set for every child, and
the kapi imported is the one of the tree holding this script. `--tree NAME:PATH` adds a column
for another checkout (its own kapi, pyfront and native libraries in PATH/kapi/_lib), run by its
own bench/first_call.py, alternating with the rest: before/after figures of a change that has
no switch.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N = 256


def first(fn, space, *args):
    import kapi

    k = kapi.kernel(getattr(fn, "py_func", fn))
    t0 = time.perf_counter()
    kapi.call_kernel(k, space, *args)
    return time.perf_counter() - t0


def legacy():
    import cpu_barrier
    import kernels

    import kapi
    from kapi import kernel_api as K

    a = kapi.asarray(np.random.rand(N, N).astype(np.float32))
    c = kapi.zeros((N, N), dtype=np.float32)
    v = kapi.asarray(np.random.rand(N * N).astype(np.float32))
    w = kapi.zeros(N * N, dtype=np.float32)
    pts = kapi.asarray(np.random.rand(N, 3).astype(np.float32))
    tile = K.LocalAccessor((16, 16), np.float32)
    res = {
        "pairwise": first(kernels.pairwise_distance, kapi.Range(N, N), pts, c),
        "matmul_naive": first(kernels.matmul_naive, kapi.Range(N, N), a, a, c),
        "tiled": first(
            cpu_barrier.tiled_matmul,
            kapi.NdRange((N, N), (16, 16)),
            a,
            a,
            c,
            tile,
            K.LocalAccessor((16, 16), np.float32),
        ),
        "mandelbrot": first(
            kernels.mandelbrot,
            kapi.Range(N, N),
            c,
            np.float32(-2),
            np.float32(-1.25),
            np.float32(0.01),
            256,
        ),
        "black_scholes": first(
            kernels.black_scholes,
            kapi.Range(N * N),
            v,
            v,
            v,
            np.float32(0.1),
            np.float32(0.2),
            w,
            w,
        ),
        "tree": first(
            cpu_barrier.tree_reduce,
            kapi.NdRange((N * N,), (256,)),
            v,
            kapi.zeros(N * N // 256, dtype=np.float32),
            K.LocalAccessor((256,), np.float32),
        ),
    }
    print(
        " ".join(f"{k}={s * 1e3:.0f}ms" for k, s in res.items()),
        f"total={sum(res.values()) * 1e3:.0f}ms",
    )


def child(name, scale):
    """One case's first call in this process: prints {"wall": s, "cpu": s} as JSON."""
    from cpu_cases import cases

    import kapi

    (case,) = cases(scale, {name})
    args = [kapi.asarray(a) if isinstance(a, np.ndarray) else a for a in case.args]
    k = kapi.kernel(getattr(case.fn, "py_func", case.fn))
    c0, t0 = time.process_time(), time.perf_counter()
    kapi.call_kernel(k, case.space, *args)
    assert kapi.__file__.startswith(os.path.dirname(HERE)), kapi.__file__
    print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))


def parse_variant(spec):
    name, _, assigns = spec.partition(":")
    env = {}
    for a in filter(None, assigns.split(",")):
        var, _, val = a.partition("=")
        env[var] = val
    return name, env


def main():
    if len(sys.argv) == 2 and not sys.argv[1].startswith("-"):
        sys.path.insert(0, sys.argv[1] + "/bench")
        return legacy()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--only", default="pairwise-f32,local-scan-i32,matmul-f32,black-scholes-f32")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--scale", type=float, default=-6, help="element counts times 2**S")
    p.add_argument("--variant", action="append", default=[], help="NAME:VAR=VALUE[,VAR=VALUE]")
    p.add_argument("--tree", action="append", default=[], help="NAME:PATH of another checkout")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.dirname(HERE))  # this tree's kapi
    if a.child:
        return child(a.child, a.scale)
    variants = [("on", {})] + [parse_variant(v) for v in a.variant]
    script = {name: __file__ for name, _ in variants}
    for t in a.tree:
        name, _, path = t.partition(":")
        variants.append((name, {}))
        script[name] = os.path.join(os.path.abspath(path), "bench", "first_call.py")
    names = [n for n in a.only.split(",") if n]
    got = {(n, v): [] for n in names for v, _ in variants}
    for r in range(a.runs):
        for n in names:
            order = variants if r % 2 == 0 else variants[::-1]
            for v, env in order:
                e = dict(os.environ, KAPI_CACHE="0", **env)
                cmd = [sys.executable, script[v], "--child", n, "--scale", str(a.scale)]
                out = subprocess.run(cmd, env=e, capture_output=True, text=True)
                if out.returncode:
                    sys.exit(f"{n} ({v}) failed:\n{out.stderr}")
                got[(n, v)].append(json.loads(out.stdout.strip().splitlines()[-1]))
    head = "| kernel | " + " | ".join(f"{v} wall ms | {v} cpu ms" for v, _ in variants) + " |"
    print(head)
    print("|---" * (1 + 2 * len(variants)) + "|")
    for n in names:
        cells = []
        for v, _ in variants:
            xs = got[(n, v)]
            cells.append(f"{statistics.median(x['wall'] for x in xs) * 1e3:.0f}")
            cells.append(f"{statistics.median(x['cpu'] for x in xs) * 1e3:.0f}")
        print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
