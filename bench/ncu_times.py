"""Reads `ncu --csv --metrics gpu__time_duration.sum,...` output (bench/gpu_sort4.sh) on
stdin and prints one line per kernel launch (name, microseconds, DRAM throughput % of peak,
active warps % of peak) and the sum of the durations."""

import csv
import sys


def main():
    lines = sys.stdin.read().splitlines()
    for ln in lines:  # the profiled script's own output (its check)
        if ln.strip() and not ln.startswith('"'):
            print("  " + ln)
    rows = [r for r in csv.reader(ln for ln in lines if ln.startswith('"')) if len(r) > 10]
    if not rows:
        print("no ncu rows")
        return
    head = rows[0]
    ki, mi, ui, vi = (head.index(x) for x in ("Kernel Name", "Metric Name", "Metric Unit",
                                              "Metric Value"))  # fmt: skip
    idi = head.index("ID")
    launches = {}
    for r in rows[1:]:
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(r[ui], 1.0)
        value = float(r[vi].replace(",", ""))
        launches.setdefault((int(r[idi]), r[ki]), {})[r[mi]] = value * (
            scale if r[mi] == "gpu__time_duration.sum" else 1.0
        )
    total = 0.0
    for (i, name), m in sorted(launches.items()):
        us = m.get("gpu__time_duration.sum", 0.0)
        total += us
        dram = m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed", float("nan"))
        warps = m.get("sm__warps_active.avg.pct_of_peak_sustained_active", float("nan"))
        print(f"  {i:3d} {name:12s} {us:9.1f} us  dram {dram:5.1f}%  warps {warps:5.1f}%")
    print(f"  sum {total:9.1f} us")


if __name__ == "__main__":
    main()
