"""Kernels whose loops take their bounds from dimension 1's id, on the CPU device, with the
driver's settings now and before, in alternating processes, beside NumPy.

The CPU driver runs a barrier-free kernel's loops as regions (one work-item loop per iteration,
vectorised across the work-items of a chunk, a run along dimension 0). A loop whose bounds come
from get_id(1) used to count as differing between work-items: such loops were not split at all
(each work-item walked its own column) or, where they could be, went round as divergent loops.
Now dimensions 1 and 2 count as the same within a chunk, and such a loop is split unless it
reads along itself. Settings (each a process of its own):

  now        the defaults
  before     KAPI_HOST_LOOPVEC_ROWS=0 and KAPI_HOST_ROUND_UNIFORMS=0: every id varies, and a
             value the same for a chunk keeps one copy across a divergent loop's rounds
  rows only  KAPI_HOST_ROUND_UNIFORMS=0: the ids as now, such values as before

Cases:
  row blocks     a 2-D Range kernel: each work-item sums block p = get_id(1) of its column
  prefix rows    out[r, c] = a[0, c] + ... + a[r, c], the trip count get_id(1) + 1
  pairwise       the README's pairwise distance, Range(n, n) (uniform loop; j = get_id(1))
  mandelbrot     ci from get_id(1), or from the arguments alone (no NumPy column)
  cumsum ...     kapi's own CPU scans that launch one block of a row per get_id(1)
  scan devfunc   kapi.scan with a device function (the in-order serial scan)
  reduce devfunc kapi.reduce with a device function (its fold reads along its loop: unchanged)

Each process times every case (median of --repeat calls after a warm-up, results checked
against NumPy first); --procs processes per setting alternate, and the table gives the median
over processes, each setting's time over now's (> 1: faster now) and NumPy / now.

    python3 bench/dim1_loops.py [--procs 3] [--repeat 15] [--json F] [--plot P]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

SETTINGS = {
    "now": {},
    "before": {"KAPI_HOST_LOOPVEC_ROWS": "0", "KAPI_HOST_ROUND_UNIFORMS": "0"},
    "rows only": {"KAPI_HOST_ROUND_UNIFORMS": "0"},
}


def one_process(repeat):
    import kernels
    import numpy as np
    from timing import median_time

    import kapi

    @kapi.device_func
    def bigger(a, b):
        return a if a > b else b

    rng = np.random.default_rng(1)
    dev = "cpu"
    cases = []

    def kernel_case(name, fn, space, args, out_i, ref, numpy_fn):
        k = kapi.kernel(fn)
        dargs = [kapi.asarray(a, device=dev) if isinstance(a, np.ndarray) else a for a in args]

        def run():
            kapi.call_kernel(k, space, *dargs)

        run()
        got = dargs[out_i].asnumpy()
        if numpy_fn is None:  # escape counts: a point on the set's edge may differ by one
            assert np.mean(got != ref) < 1e-3, name
        else:
            np.testing.assert_allclose(got, ref, rtol=2e-4, atol=1e-3)
        cases.append((name, run, numpy_fn))

    a = rng.random((4096, 2048), dtype=np.float32)
    kernel_case(
        "row blocks 4096x2048/64",
        kernels.row_blocks,
        kapi.Range(2048, 64),
        [a, np.zeros((64, 2048), np.float32), 64],
        1,
        a.reshape(64, 64, 2048).sum(1),
        lambda: a.reshape(64, 64, 2048).sum(1),
    )
    b = rng.random((512, 2048), dtype=np.float32)
    kernel_case(
        "prefix rows 512x2048",
        kernels.prefix_rows,
        kapi.Range(2048, 512),
        [b, np.zeros((512, 2048), np.float32)],
        1,
        np.cumsum(b, axis=0),
        lambda: np.cumsum(b, axis=0),
    )
    d = rng.random((2048, 3), dtype=np.float32)
    ref = np.sqrt(((d[:, None, :] - d[None, :, :]) ** 2).sum(-1))
    kernel_case(
        "pairwise 2048x3",
        kernels.pairwise_distance,
        kapi.Range(2048, 2048),
        [d, np.zeros((2048, 2048), np.float32)],
        1,
        ref,
        lambda: np.sqrt(((d[:, None, :] - d[None, :, :]) ** 2).sum(-1)),
    )

    def mandelbrot_line(item, out, x0, y0, step, ci_arg, maxit):
        # ci from the arguments alone (one line of the plane, every row alike): the same for
        # a chunk whatever the setting
        cr = x0 + step * np.float32(item.get_id(0))
        ci = ci_arg * step
        zr = np.float32(0.0)
        zi = np.float32(0.0)
        n = 0
        while n < maxit and zr * zr + zi * zi <= np.float32(4.0):
            t = zr * zr - zi * zi + cr
            zi = np.float32(2.0) * zr * zi + ci
            zr = t
            n += 1
        out[item.get_id(1), item.get_id(0)] = np.float32(n)

    def mandel_ref(x0, y0, step, ci_arg, maxit, n):
        cr = (x0 + step * np.arange(n, dtype=np.float32)).astype(np.float32)[None, :]
        ci = (y0 + step * np.arange(n, dtype=np.float32)).astype(np.float32)[:, None]
        if ci_arg > 0:
            ci = np.full((n, 1), np.float32(ci_arg * step), np.float32)
        zr = np.zeros((n, n), np.float32)
        zi = np.zeros((n, n), np.float32)
        cnt = np.zeros((n, n), np.float32)
        for _ in range(maxit):
            live = zr * zr + zi * zi <= 4
            zr, zi = (
                np.where(live, zr * zr - zi * zi + cr, zr),
                np.where(live, 2 * zr * zi + ci, zi),
            )
            cnt += live
        return cnt

    f32 = np.float32
    for label, fn, ci_arg in (
        ("ci from get_id(1)", kernels.mandelbrot, 0.0),  # bench/kernels.py's: ci from get_id(1)
        ("ci from the arguments", mandelbrot_line, 100.0),
    ):
        margs = [np.zeros((1024, 1024), np.float32), f32(-2.0), f32(-1.5), f32(3 / 1024)]
        margs += [f32(ci_arg), 256] if ci_arg else [256]
        ref = mandel_ref(*margs[1:4], ci_arg, 256, 1024)
        kernel_case(f"mandelbrot 1024^2, {label}", fn, kapi.Range(1024, 1024), margs, 0,
                    ref, None)  # fmt: skip

    def lib_case(name, kapi_fn, numpy_fn):
        got = kapi_fn().asnumpy()
        np.testing.assert_allclose(got, numpy_fn(), rtol=2e-4, atol=1e-3)
        cases.append((name, lambda: kapi_fn().asnumpy(), numpy_fn))

    x = rng.random(1 << 22, dtype=np.float32)
    xs = rng.random(3000, dtype=np.float32)
    m = rng.random((3000, 700), dtype=np.float32)
    kx, kxs, km = (kapi.asarray(v, device=dev) for v in (x, xs, m))
    lib_case("cumsum 3000", lambda: kapi.cumsum(kxs), lambda: np.cumsum(xs))
    lib_case("cumsum (3000,700) axis=1", lambda: kapi.cumsum(km, axis=1), lambda: np.cumsum(m, 1))
    lib_case(
        "scan devfunc (3000,700) axis=1",
        lambda: kapi.scan(km, bigger, axis=1),
        lambda: np.maximum.accumulate(m, 1),
    )
    lib_case("scan devfunc 2^22", lambda: kapi.scan(kx, bigger), lambda: np.maximum.accumulate(x))
    lib_case("reduce devfunc 2^22", lambda: kapi.reduce(bigger, kx), lambda: np.asarray(np.max(x)))
    out = {}
    for name, run, numpy_fn in cases:
        npy = median_time(numpy_fn, repeat) if numpy_fn else float("nan")
        out[name] = {"kapi": median_time(run, repeat), "numpy": npy}
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--child", action="store_true")
    from plotting import add_args, write_results

    add_args(ap)
    args = ap.parse_args()
    if args.child:
        one_process(args.repeat)
        return
    runs = {s: [] for s in SETTINGS}
    for i in range(args.procs):
        order = list(SETTINGS) if i % 2 == 0 else list(reversed(SETTINGS))
        for s in order:
            env = dict(os.environ, KAPI_CACHE="0", **SETTINGS[s])
            r = subprocess.run(
                [sys.executable, __file__, "--child", "--repeat", str(args.repeat)],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if r.returncode != 0:
                sys.exit(f"{s}: {r.stderr[-3000:]}")
            runs[s].append(json.loads(r.stdout.strip().splitlines()[-1]))
    others = [s for s in SETTINGS if s != "now"]
    print(f"{args.procs} processes per setting, medians; ratios > 1: kapi now faster")
    head = f"{'case':34} {'now ms':>9}"
    for s in others:
        head += f" {s + ' ms':>14} {s + '/now':>14}"
    print(head + f" {'NumPy ms':>9} {'NumPy/now':>9}")
    rows = []
    for name in runs["now"][0]:
        now = statistics.median(r[name]["kapi"] for r in runs["now"])
        npy = statistics.median(r[name]["numpy"] for rs in runs.values() for r in rs)
        line, ratios = f"{name:34} {now * 1e3:9.3f}", {}
        for s in others:
            t = statistics.median(r[name]["kapi"] for r in runs[s])
            line += f" {t * 1e3:14.3f} {t / now:13.2f}x"
            ratios[f"kapi {s}"] = t / now
        print(line + f" {npy * 1e3:9.3f} {npy / now:8.2f}x")
        if npy == npy:  # no NumPy peer for the escape counts
            ratios["NumPy"] = npy / now
        rows.append((name, ratios))
    write_results(
        rows, args.json, args.plot, "CPU device: loops bounded by get_id(1), now vs before"
    )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
