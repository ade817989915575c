"""Bar charts of kapi against its peers, one bar group per kernel, shared by the bench scripts.

A result file is JSON: {"title": ..., "xlabel": ..., "rows": [{"name": kernel, "ratios":
{peer label: ratio, ...}}, ...]}, a ratio being peer time / kapi time (> 1: kapi faster). The
scripts write one with --json and, where matplotlib imports, the PNG with --plot; on a machine
without matplotlib (the GPU machine), render the JSON here:

    python3 bench/plotting.py RESULT.json bench/plots/NAME.png
"""

from __future__ import annotations

import json
import os
import sys


def ratio_bars(rows, path, title, xlabel="peer's time / kapi's time (> 1: kapi faster)"):
    """rows: [(kernel name, {series label: ratio})]; writes a horizontal bar chart at path, a
    log axis so that 0.5x and 2x sit equally far from the dashed parity line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np

    labels = []
    for _, ratios in rows:
        labels += [k for k in ratios if k not in labels]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) * max(len(labels), 1) + 1.5))
    h = 0.8 / max(len(labels), 1)
    y = np.arange(len(rows))
    for j, label in enumerate(labels):
        vals = [ratios.get(label, np.nan) for _, ratios in rows]
        bars = ax.barh(y + j * h, vals, h, label=label)
        ax.bar_label(bars, [f"{v:.2f}x" if v == v else "" for v in vals], padding=3, fontsize=8)
    ax.axvline(1.0, color="k", lw=1, ls="--")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_yticks(y + h * (len(labels) - 1) / 2, [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot: {path}")


def write_results(rows, json_path, plot_path, title, xlabel=None):
    """The --json / --plot options of a bench script: the JSON always (when asked), the PNG
    where matplotlib imports (else a note naming this module's command line)."""
    kw = {"xlabel": xlabel} if xlabel else {}
    if json_path:
        with open(json_path, "w") as f:
            json.dump(
                {"title": title, **kw, "rows": [{"name": n, "ratios": r} for n, r in rows]}, f
            )
        print(f"results: {json_path}")
    if plot_path:
        try:
            ratio_bars(rows, plot_path, title, **kw)
        except ImportError:
            src = json_path or "RESULT.json"
            print(f"no matplotlib here: render with `python3 bench/plotting.py {src} {plot_path}`")


def add_args(ap) -> None:
    """The --json and --plot options every bench script with peers takes."""
    ap.add_argument("--json", default="", help="write the ratios here (bench/plotting.py)")
    ap.add_argument("--plot", default="", help="a PNG of the ratios, where matplotlib imports")


class Ratios:
    """Ratios gathered while a script prints its rows: add(kernel, peer label, peer's time /
    kapi's time), then write(args, title) for --json / --plot."""

    def __init__(self):
        self.rows: dict[str, dict[str, float]] = {}

    def add(self, name: str, label: str, ratio: float) -> None:
        self.rows.setdefault(name, {})[label] = ratio

    def write(self, args, title: str, xlabel=None) -> None:
        if (args.json or args.plot) and self.rows:
            write_results(list(self.rows.items()), args.json, args.plot, title, xlabel)


def main(argv) -> int:
    if len(argv) != 3:
        print(__doc__)
        return 2
    with open(argv[1]) as f:
        data = json.load(f)
    rows = [(r["name"], r["ratios"]) for r in data["rows"]]
    kw = {"xlabel": data["xlabel"]} if "xlabel" in data else {}
    ratio_bars(rows, argv[2], data["title"], **kw)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
