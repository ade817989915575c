"""kapi.where / np.where and astype on kapi arrays run as kernels where the arrays live (kapi's
own array programming): a clipped, thresholded image in float32 converted to uint8, with
NumPy 2's result dtypes, checked against NumPy."""

import sys
import time

import numpy as np

import kapi


def to_uint8(img, lo, hi):
    scaled = (img - lo) * (255 / (hi - lo))
    clipped = kapi.where(scaled < 0, 0, kapi.where(scaled > 255, 255, scaled))
    return (clipped + 0.5).astype(np.uint8)  # one kernel: where and astype fuse


def main(h=1024, w=1024):
    rng = np.random.default_rng(0)
    himg = rng.normal(0.5, 0.3, (h, w)).astype(np.float32)
    img = kapi.asarray(himg)
    to_uint8(img, 0.1, 0.9).asnumpy()  # compiles
    t0 = time.perf_counter()
    got = to_uint8(img, 0.1, 0.9).asnumpy()
    dt = time.perf_counter() - t0
    s = (himg - 0.1) * np.float32(255 / 0.8)
    want = (np.where(s < 0, 0, np.where(s > 255, 255, s)) + 0.5).astype(np.uint8)
    ok = got.dtype == np.uint8 and np.array_equal(got, want)
    print(f"  where + astype(uint8): {got.dtype} {'ok' if ok else 'WRONG'}")

    mask = np.where(img > 0.5, img, -1)  # np.where dispatches to kapi.where
    hm = np.where(himg > 0.5, himg, -1)
    good = isinstance(mask, kapi.Array) and mask.dtype == hm.dtype
    good = good and np.array_equal(mask.asnumpy(), hm)
    print(f"  np.where on kapi arrays: {mask.dtype} on the device {'ok' if good else 'WRONG'}")
    ok &= good

    d = img.astype(np.float64) * img.astype(np.int16)  # float64 * int16 -> float64
    good = d.dtype == np.float64 and np.allclose(
        d.asnumpy(), himg.astype(np.float64) * himg.astype(np.int16)
    )
    print(f"  astype(float64) * astype(int16): {d.dtype} {'ok' if good else 'WRONG'}")
    ok &= good
    print(
        f"where_astype {h}x{w} on {img.device.name}: to_uint8 {dt * 1e3:.3f} ms "
        f"-> {'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
