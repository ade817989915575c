"""sum, min, max and argmax of a large float32 kapi array on its device beside NumPy on the
host (kapi's own array programming): on the CPU device each work-item folds one contiguous
chunk, so the reduction runs at memory speed. Checked against NumPy."""

import sys
import time

import numpy as np

import kapi


def best(fn, reps=7):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(n=1 << 22):
    h = np.random.default_rng(0).random(n, dtype=np.float32)
    x = kapi.asarray(h)
    ok = True
    total = h.sum(dtype=np.float64)
    got = float(x.sum())
    good = abs(got - total) <= 1e-4 * total
    print(f"  sum {got:.1f} (float64 reference {total:.1f}) {'ok' if good else 'WRONG'}")
    ok &= good
    for name in ("min", "max", "argmax"):
        g, w = getattr(x, name)().asnumpy(), getattr(h, name)()
        good = g == w
        print(f"  {name} {g} {'ok' if good else 'WRONG'}")
        ok &= bool(good)
    t_kapi = best(lambda: float(x.sum()))
    t_np = best(lambda: h.sum())
    print(
        f"array_sum n={n} on {x.device.name}: kapi {t_kapi * 1e3:.3f} ms, NumPy "
        f"{t_np * 1e3:.3f} ms -> {'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
