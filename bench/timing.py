"""Timing helpers shared by the bench/ scripts (run as `python3 bench/NAME.py`, so this folder
is on sys.path): medians, after one warm-up call, so a noisy machine moves them least."""

import statistics
import time


def median_time(fn, repeat, *args):
    """Seconds per call of fn(*args): the median of `repeat` timed calls."""
    fn(*args)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def median_batch(launch, sync, reps, batches=7):
    """Seconds per launch: median over batches of `reps` launches and one wait."""
    launch()
    sync()
    per = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(reps):
            launch()
        sync()
        per.append((time.perf_counter() - t0) / reps)
    return statistics.median(per)
