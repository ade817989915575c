"""What a dpjit call costs besides its kernel (issue 14): dpbench's l2 norm of a whole array
(one prange `+=` reduction) from 2^10 elements, where the fixed cost is all there is (the
Numba dispatch, the launch's Python, the kernel launch and its wait, the host combine), up
to dpbench's size, beside the same function under Numba njit(parallel=True) on the host's
cores (CPU device) or dpbench's numba-cuda kernel (GPU). Times are medians of paired rounds
(bench/dpbench.py's `paired`); on the CPU device also the process CPU time per call. The
last column is the share of the kapi call at that size that the smallest size's time
(the fixed cost) makes up.

    python3 bench/dpjit_overhead.py [--device cpu|gpu] [--log2n 10,13,16,19,22,25] [--reps 200]
"""

import argparse

import numba
import numpy as np
from dpbench import cuda_peers, l2_norm_total, paired

import kapi


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--log2n", default="10,13,16,19,22,25")
    ap.add_argument("--reps", type=int, default=200)
    opt = ap.parse_args()
    dev = kapi.devices(opt.device)[0]
    peers = cuda_peers() if opt.device == "gpu" else None
    if isinstance(peers, str):
        print(f"no numba-cuda peer: {peers}")
        return
    nj = numba.njit(parallel=True)(l2_norm_total)
    dj = kapi.dpjit(l2_norm_total)
    peer_name = "numba parallel" if peers is None else "numba-cuda"
    print(f"dpjit l2 norm (a prange += reduction), float64, on {dev.name}; peer {peer_name}")
    fixed = None
    for k in (int(x) for x in opt.log2n.split(",")):
        n = 1 << k
        h = np.random.default_rng(k).integers(-100, 100, n).astype(np.float64)
        a = kapi.asarray(h, device=dev)
        want = nj(h)
        assert dj(a) == want
        if peers is None:
            run_peer = lambda h=h: nj(h)  # noqa: E731
        else:
            run_peer = peers["l2-norm-total"](peers["_to_device"](h))
            assert run_peer() == want
        reps = max(5, min(opt.reps, int(opt.reps * 2**16 / n) + 5))
        (tk, ck), (tp, cp) = paired(lambda a=a: dj(a), run_peer, reps)
        fixed = tk if fixed is None else fixed
        cpu = f"  CPU {ck * 1e6:9.1f} / {cp * 1e6:9.1f} us" if peers is None else ""
        print(
            f"  n=2^{k:<2} kapi {tk * 1e6:9.1f} us  {peer_name} {tp * 1e6:9.1f} us  "
            f"ratio {tp / tk:5.2f}x  fixed share {min(1.0, fixed / tk):5.0%}{cpu}",
            flush=True,
        )


if __name__ == "__main__":
    main()
