#!/usr/bin/env python3
"""GFLOP/s per shape per implementation from a `tessel bench` results.json.

Usage: plot_bench.py results.json out.png

Bars are medians of per-round medians; the whiskers span the per-round medians
(min to max over rounds), so a bar's spread is visible, not hidden. Invalid
rounds are absent from both. Called by `tessel bench`; needs matplotlib
(Debian: python3-matplotlib).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        results = json.load(f)
    impls = results["config"]["impls"]
    summary = results["summary"]
    shapes = [s["shape"] for s in summary]

    width = 0.8 / len(impls)
    values, tops = [], []  # bar heights, and whisker ends
    fig, ax = plt.subplots(figsize=(min(14, max(8, 0.45 * len(shapes) * len(impls))), 5))
    for i, impl in enumerate(impls):
        xs, heights, lows, highs = [], [], [], []
        for j, s in enumerate(summary):
            entry = s["impls"][impl]
            rounds = [s["flop"] / (us * 1e3) for us in entry["round_medians_us"] if us]
            if entry["median_us"] is None or not rounds:
                continue
            g = entry["gflops"]
            xs.append(j + (i - (len(impls) - 1) / 2) * width)
            heights.append(g)
            lows.append(g - min(rounds))
            highs.append(max(rounds) - g)
        bars = ax.bar(xs, heights, width, label=impl, yerr=[lows, highs], capsize=2)
        ax.bar_label(bars, labels=[f"{h:.3g}" for h in heights], fontsize=7, padding=2)
        values += heights
        tops += [h + e for h, e in zip(heights, highs)]
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, rotation=30, ha="right")
    # Small and large shapes differ by orders of magnitude on a GPU: a log axis
    # keeps the small ones visible.
    if values and min(values) > 0 and max(values) / min(values) > 20:
        ax.set_yscale("log")
        ax.set_ylim(top=max(tops) * 2.5)  # room for the whiskers and value labels
    elif values:
        ax.set_ylim(top=max(tops) * 1.1)
    ax.set_ylabel("GFLOP/s (fp32, host wall per call)")
    cfg = results["config"]
    on_gpu = any(s["impls"][i].get("device_median_us") is not None for s in summary for i in impls)
    where = results["machine"]["gpu_model"] if on_gpu else results["machine"]["cpu_model"]
    threads = "" if on_gpu else f", threads: {cfg['threads']}"
    ax.set_title(
        f"{where}{threads}: median of {cfg['rounds']} rounds, whiskers = round range", fontsize=10
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
