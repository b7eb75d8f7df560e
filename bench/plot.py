#!/usr/bin/env python3
"""Bandwidth plots from benchmark result JSON (`kiln bench --json`, `bench/peers.py --json`).

    bench/plot.py RESULT.json [more.json ...] --out DIR

Writes DIR/<case>_<dtype>.png for softmax, add_rmsnorm and layer_norm: GB/s against the
row length (log2 axis), one line per implementation and a dashed line at the measured copy
bandwidth, as Triton's tutorials draw them; and DIR/roofline_bars.png: % of the copy
bandwidth per implementation for gelu_chain, row_sum and col_sum.

Rows from several files are merged by (case, dtype, shape, impl); a later file wins. The
roofline is the copy bandwidth of the first file (of `kiln bench`'s when one is given), and
every row's percentage is recomputed against it, as `kiln bench --peers` does.
At run time: numpy and matplotlib.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

LINE_CASES = ("softmax", "add_rmsnorm", "layer_norm")
BAR_CASES = ("gelu_chain", "row_sum", "col_sum")
IMPL_ORDER = ("kiln default", "kiln tuned", "hand-written", "cuBLAS", "torch eager", "torch.compile", "triton")
IMPL_STYLE = {  # colour and marker per implementation, the same in every figure
    "kiln default": ("tab:blue", "o"),
    "kiln tuned": ("tab:cyan", "s"),
    "hand-written": ("tab:purple", "^"),
    "cuBLAS": ("tab:brown", "v"),
    "torch eager": ("tab:green", "D"),
    "torch.compile": ("tab:orange", "P"),
    "triton": ("tab:red", "X"),
}


def load_results(paths):
    """(merged rows, copy_gbs, gpu, date) from one or more result files."""
    results = []
    for path in paths:
        with open(path) as f:
            result = json.load(f)
        for key in ("rows", "copy_gbs"):
            if key not in result:
                raise SystemExit(f"plot.py: {path} has no '{key}': not a benchmark result")
        results.append(result)
    primary = next((r for r in results if r.get("tool") == "kiln bench"), results[0])
    merged = {}
    for result in results:
        for row in result["rows"]:
            merged[(row["case"], row["dtype"], tuple(row["shape"]), row["impl"])] = dict(row)
    copy_gbs = float(primary["copy_gbs"])
    for row in merged.values():
        row["pct_roofline"] = 100.0 * row["gb_s"] / copy_gbs if copy_gbs > 0 else 0.0
    return list(merged.values()), copy_gbs, primary.get("gpu", "unknown GPU"), primary.get("date", "")


def ordered_impls(rows):
    seen = {r["impl"] for r in rows}
    return [i for i in IMPL_ORDER if i in seen] + sorted(seen - set(IMPL_ORDER))


def style(impl):
    return IMPL_STYLE.get(impl, (None, "."))


def plot_lines(rows, case, dtype, copy_gbs, gpu, date, out_dir):
    """GB/s against row length for one case; returns the PNG path or None when no rows."""
    rows = [r for r in rows if r["case"] == case and r["dtype"] == dtype]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for impl in ordered_impls(rows):
        points = sorted((r["shape"][1], r["gb_s"]) for r in rows if r["impl"] == impl)
        colour, marker = style(impl)
        failed = any(r["check"] == "failed" for r in rows if r["impl"] == impl)
        label = impl + (" (check failed)" if failed else "")
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, color=colour, label=label)
    ax.axhline(copy_gbs, linestyle="--", color="grey", label=f"copy {copy_gbs:.0f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("row length C")
    ax.set_ylabel("GB/s (minimum bytes moved / time)")
    ax.set_ylim(bottom=0, top=max(copy_gbs, max(r["gb_s"] for r in rows)) * 1.08)
    ax.set_title(f"{case} ({dtype}) on {gpu}, {date}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    path = os.path.join(out_dir, f"{case}_{dtype}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_bars(rows, copy_gbs, gpu, date, out_dir):
    """% of the copy bandwidth per implementation for the single-shape cases."""
    rows = [r for r in rows if r["case"] in BAR_CASES]
    if not rows:
        return None
    groups = sorted({(r["case"], r["dtype"], tuple(r["shape"])) for r in rows},
                    key=lambda g: (BAR_CASES.index(g[0]), g[1], g[2]))
    impls = ordered_impls(rows)
    width = 0.8 / len(impls)
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(groups) * len(impls) / 3), 5))
    for k, impl in enumerate(impls):
        xs, heights = [], []
        for g, (case, dtype, shape) in enumerate(groups):
            key = (case, dtype, shape, impl)
            match = [r for r in rows if (r["case"], r["dtype"], tuple(r["shape"]), r["impl"]) == key]
            if match:
                xs.append(g - 0.4 + width * (k + 0.5))
                heights.append(match[0]["pct_roofline"])
        colour, _ = style(impl)
        ax.bar(xs, heights, width=width, color=colour, label=impl)
    ax.axhline(100.0, linestyle="--", color="grey", label=f"copy {copy_gbs:.0f} GB/s")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{c} {d}\n{s[0]}x{s[1]}" for c, d, s in groups])
    ax.set_ylabel("% of copy bandwidth")
    ax.set_ylim(0, max(120.0, max(r["pct_roofline"] for r in rows) * 1.2))  # room for the legend above the bars
    ax.set_title(f"memory-bound kernels against the roofline on {gpu}, {date}")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper center", ncol=len(impls) + 1, fontsize="small")
    path = os.path.join(out_dir, "roofline_bars.png")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="result JSON files")
    parser.add_argument("--out", required=True, help="folder for the PNGs")
    args = parser.parse_args(argv)
    rows, copy_gbs, gpu, date = load_results(args.results)
    os.makedirs(args.out, exist_ok=True)
    written = []
    for case in LINE_CASES:
        for dtype in sorted({r["dtype"] for r in rows if r["case"] == case}):
            written.append(plot_lines(rows, case, dtype, copy_gbs, gpu, date, args.out))
    written.append(plot_bars(rows, copy_gbs, gpu, date, args.out))
    written = [w for w in written if w]
    for path in written:
        print(f"wrote {path}")
    if not written:
        print("plot.py: no rows of the plotted cases", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
