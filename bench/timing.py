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


def warm(launch, sync, seconds):
    """Launches back to back for about `seconds` (and at least once), then waits: the cores
    (and on a CPU device, their clocks and the memory's) busy before a timing starts."""
    t_end = time.perf_counter() + seconds
    launch()
    while time.perf_counter() < t_end:
        launch()
    sync()


def median_batch(launch, sync, reps, batches=7, warm_s=0.0, clock=time.perf_counter):
    """Seconds per launch: median over batches of `reps` launches and one wait, after
    warm(launch, sync, warm_s) (one launch when warm_s is 0). clock: time.thread_time counts
    the calling thread's CPU time alone (on a shared machine, with work that thread runs
    itself: kapi's CPU device with KAPI_CPU_THREADS=1)."""
    warm(launch, sync, warm_s)
    per = []
    for _ in range(batches):
        t0 = clock()
        for _ in range(reps):
            launch()
        sync()
        per.append((clock() - t0) / reps)
    return statistics.median(per)
