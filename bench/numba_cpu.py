"""kapi's CPU device against Numba's parallel CPU target on the kernels of bench/opencl_cpu.py,
for machines where Intel's OpenCL CPU runtime cannot be installed (the GPU machine: no network,
and the runtime's environment is larger than what can be carried there).

Each kapi kernel is the one bench/opencl_cpu.py builds (bench/kernels.py, bench/cpu_barrier.py).
A Range kernel's peer is the same Python function compiled by Numba (its item a two-index
value), called from `@numba.njit(parallel=True)` with a `prange` over the last dimension and
a loop over dimension 0. Kernels Numba cannot run as they are are written as Numba users
write them: the tiled matmul (local memory, barriers) as cpu_barrier.matmul_numba (i-k-j, the
order that vectorises), the tree reduction and the local scan as a prange over the groups, the
atomic histogram as per-chunk histograms summed at the end (Numba has no atomics).
Both run on every core of the same process, sample by sample in turn (the order rotating);
results agree before anything is timed; figures are medians and ratio = Numba's time / kapi's
time (> 1: kapi faster).

    python3 bench/numba_cpu.py [--repeat 15] [--only NAME,...] [--scale S] [--json F] [--plot P]
        [--variant NAME:VAR=VALUE[,VAR=VALUE]]

--variant adds a kapi column: each kernel built again under the given environment (a renamed
copy, with its own native module), timed in turn with the others, for before/after comparisons
of the CPU driver's settings in one run; its ratio is Numba's time over the variant's.

Numba's OpenMP layer spins between parallel regions by default and would take the cores from
kapi's pool right after each Numba sample: OMP_WAIT_POLICY=passive is set unless given.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("KAPI_CACHE", "0")  # native code built now, under this environment

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.extending import (  # noqa: E402
    intrinsic,
    make_attribute_wrapper,
    models,
    overload_method,
    register_model,
)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_barrier  # noqa: E402
import plotting  # noqa: E402
from cpu_cases import cases, parse_variants, renamed, with_env  # noqa: E402

import kapi  # noqa: E402

prange = numba.prange


class _RangeItemType(numba.types.Type):
    """A Range kernel's item as a Numba value (two indices, no heap object), so that the
    kernel's own Python function compiles under Numba and its peer runs the same source."""

    def __init__(self):
        super().__init__(name="RangeItem")


_range_item = _RangeItemType()


@register_model(_RangeItemType)
class _RangeItemModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("i0", numba.types.intp), ("i1", numba.types.intp)])


make_attribute_wrapper(_RangeItemType, "i0", "i0")
make_attribute_wrapper(_RangeItemType, "i1", "i1")


@intrinsic
def _item(typingctx, i0, i1):
    def codegen(context, builder, signature, args):
        it = cgutils.create_struct_proxy(_range_item)(context, builder)
        it.i0, it.i1 = args
        return it._getvalue()

    return _range_item(numba.types.intp, numba.types.intp), codegen


@overload_method(_RangeItemType, "get_id")
def _get_id(item, d):
    return lambda item, d: item.i0 if d == 0 else item.i1


def range_peer(fn, space):
    """The Range kernel fn as Numba runs it: a prange over the last dimension and a plain loop
    over dimension 0 (the contiguous one, as kapi's and Intel's vectorisers take it)."""
    body = numba.njit(fn)
    dims = tuple(space)
    if len(dims) == 1:

        @numba.njit(parallel=True)
        def run1(n0, *args):
            for i0 in prange(n0):
                body(_item(i0, 0), *args)

        return lambda *args: run1(dims[0], *args)

    @numba.njit(parallel=True)
    def run2(n0, n1, *args):
        for i1 in prange(n1):
            for i0 in range(n0):
                body(_item(i0, i1), *args)

    return lambda *args: run2(dims[0], dims[1], *args)


@numba.njit(parallel=True)
def group_sums_numba(a, out, wg):
    for g in prange(out.shape[0]):
        acc = a.dtype.type(0)
        for k in range(g * wg, (g + 1) * wg):
            acc += a[k]
        out[g] = acc


@numba.njit(parallel=True)
def group_scans_numba(a, out, wg):
    for g in prange(a.shape[0] // wg):
        acc = a.dtype.type(0)
        for k in range(g * wg, (g + 1) * wg):
            acc += a[k]
            out[k] = acc


@numba.njit(parallel=True)
def histogram_numba(data, bins, chunks):
    nb = bins.shape[0]
    part = np.zeros((chunks, nb), bins.dtype)
    step = (data.shape[0] + chunks - 1) // chunks
    for c in prange(chunks):
        for k in range(c * step, min((c + 1) * step, data.shape[0])):
            part[c, data[k]] += 1
    for b in range(nb):
        acc = bins.dtype.type(0)
        for c in range(chunks):
            acc += part[c, b]
        bins[b] = acc


@numba.njit(parallel=True)
def column_sums_numba(a, out, span):
    # block p of rows summed per column, the blocks and 256 columns at a time in parallel, the
    # inner loop along a row (the order that vectorises)
    cols = a.shape[1]
    nb = (cols + 255) // 256
    for t in prange(out.shape[0] * nb):
        p, c0 = t // nb, (t % nb) * 256
        c1 = min(cols, c0 + 256)
        for c in range(c0, c1):
            out[p, c] = 0
        for r in range(p * span, min(a.shape[0], (p + 1) * span)):
            for c in range(c0, c1):
                out[p, c] += a[r, c]


BARRIER_PEERS = {  # kernels with local memory, barriers or atomics: (Numba peer, its arguments)
    "matmul-f32": lambda case, a: (cpu_barrier.matmul_numba, a[:3]),
    "tree-reduce-f32": lambda case, a: (group_sums_numba, [*a[:2], case.space.local_range[0]]),
    "local-scan-i32": lambda case, a: (group_scans_numba, [*a[:2], case.space.local_range[0]]),
    "histogram-i32": lambda case, a: (histogram_numba, [*a, 8 * numba.get_num_threads()]),
    "histogram-local-i32": lambda case, a: (histogram_numba, [*a[:2], 8 * numba.get_num_threads()]),
}


def numba_peer(case):
    """(function, arguments) of case's Numba peer, on copies of the case's arrays."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    if case.name in BARRIER_PEERS:
        return BARRIER_PEERS[case.name](case, args)
    if case.name.startswith("colsum-f32"):  # an NdRange kernel without barriers, every shape
        return column_sums_numba, args
    return range_peer(getattr(case.fn, "py_func", case.fn), tuple(case.space)), args


class KapiRunner:
    """A case's kernel on kapi's CPU device, its arrays copied there; for a variant, a renamed
    copy compiled and built by the driver under `env` on the first launch."""

    def __init__(self, case, cpu, env=None, suffix=None):
        fn = getattr(case.fn, "py_func", case.fn)
        self.kernel = kapi.kernel(renamed(fn, suffix) if suffix else fn)
        self.space, self.env = case.space, env or {}
        self.args = [
            kapi.asarray(a, device=cpu) if isinstance(a, np.ndarray) else a for a in case.args
        ]

    def launch(self):
        kapi.call_kernel(self.kernel, self.space, *self.args)

    def first(self):
        with_env(self.env, self.launch)

    def output(self, i):
        return self.args[i].asnumpy()


class NumbaRunner:
    def __init__(self, case):
        self.fn, self.args = numba_peer(case)

    def launch(self):
        self.fn(*self.args)

    def output(self, i):
        return self.args[i]


def agree(case, mine, theirs):
    for i in case.outputs:
        a, b = mine.output(i), theirs.output(i)
        if case.check is not None:
            ok = case.check(case.args, a, b)
        else:
            ok = np.allclose(a, b, rtol=case.rtol, atol=case.atol)
        if not ok:
            raise SystemExit(f"{case.name}: kapi's output {i} and Numba's differ")


def timed(runners, repeat):
    for r in runners:
        r.launch()
    wall = [[] for _ in runners]
    for rep in range(repeat):
        k = rep % len(runners)
        for j in list(range(k, len(runners))) + list(range(k)):
            t0 = time.perf_counter()
            runners[j].launch()
            wall[j].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in wall]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--scale", type=float, default=0)
    ap.add_argument("--only", default="")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME:VAR=VALUE[,VAR=VALUE]: kapi again under that environment",
    )
    plotting.add_args(ap)
    args = ap.parse_args()
    variants = parse_variants(args.variant)
    cpu = kapi.Device("cpu")
    numba.njit(parallel=True)(lambda a: a.sum())(np.ones(4))  # starts Numba's threads
    print(
        f"{os.cpu_count()} cores; kapi: {cpu}, {cpu.max_compute_units} compute units; Numba "
        f"{numba.__version__}, {numba.get_num_threads()} threads, layer "
        f"{numba.threading_layer()}; ratio = Numba ms / kapi ms (> 1: kapi faster)"
    )
    head = f"{'kernel':<18} {'size':<26} {'kapi ms':>9} {'Numba ms':>9} {'ratio':>7}"
    for v in variants:
        head += f" {v + ' ms':>12} {'ratio':>7}"
    print(head, flush=True)
    ratios = plotting.Ratios()
    got = []
    for case in cases(args.scale, set(filter(None, args.only.split(",")))):
        mine, theirs = KapiRunner(case, cpu), NumbaRunner(case)
        mine.launch()
        theirs.launch()
        agree(case, mine, theirs)
        extra = []
        for j, env in enumerate(variants.values()):
            r = KapiRunner(case, cpu, env, f"v{j}")
            r.first()
            agree(case, r, theirs)
            extra.append(r)
        t = timed([mine, theirs, *extra], args.repeat)
        line = (
            f"{case.name:<18} {case.size:<26} {t[0] * 1e3:9.3f} {t[1] * 1e3:9.3f} "
            f"{t[1] / t[0]:6.2f}x"
        )
        for tv in t[2:]:
            line += f" {tv * 1e3:12.3f} {t[1] / tv:6.2f}x"
        print(line, flush=True)
        ratios.add(case.name, "Numba parallel", t[1] / t[0])
        got.append(t[1] / t[0])
    if len(got) > 1:
        print(f"geometric mean of the ratios: {float(np.exp(np.mean(np.log(got)))):.2f}x")
    ratios.write(args, f"kapi's CPU device against Numba parallel ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
