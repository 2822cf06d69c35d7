#!/usr/bin/env python3
"""Which plan wins where: the seeds' table, remade from a held-out run with fixed plans.

Reads a `tessel tune --heldout ... --fixed-plans FILE` JSON (heldout-<kernel>.json) and
prints a markdown table: the held-out shapes in three regimes of equal count by their
work (the product of the sizes), and per regime the total time of the planner's picks,
of the default plans, of each fixed plan and of the best measured candidate, the lowest
of picks, default and fixed plans in bold. A last row counts, per column, the shapes on
which that plan was the fastest of those columns.

    scripts/planner_table.py docs/results/planner-2026-12-02-cuda-run8/planner-cuda/heldout-gemm_bf16.json
"""
import json
import math
import re
import sys


def short(plan):
    """A fixed plan's column name: its tiles, workers, window and copy."""
    tiles = re.search(r"tiles=(\S+)", plan).group(1).replace(":", "").replace(",", " ")
    parts = [tiles]
    for key, tag in (("workers", "wk"), ("window", "win")):
        m = re.search(key + r"=(\d+)", plan)
        if m:
            parts.append(f"{tag}{m.group(1)}")
    if re.search(r"async=1", plan):
        parts.append("async")
    atom = re.search(r"atom=(\S+)", plan)
    if atom:
        parts.append(atom.group(1))
    return " ".join(parts)


def main(path):
    try:
        with open(path) as f:
            run = json.load(f)
        run["suite_total_us"]["fixed"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{path}: not a held-out run's JSON ({e})")
    fixed = [f["plan"] for f in run["suite_total_us"]["fixed"]]
    if not fixed:
        sys.exit(f"{path}: the run measured no fixed plans (--fixed-plans)")
    rows = []
    for shape in run["shapes"]:
        sizes = dict(kv.split("=") for kv in shape["sizes"].split(","))
        work = math.prod(int(v) for v in sizes.values())
        cands = [c for c in shape["candidates"] if c.get("measured_us")]
        pick = [c["measured_us"] for c in cands if c.get("pick")]
        default = [c["measured_us"] for c in cands if c.get("default")]
        # A fixed plan that is also one of the shape's candidates is measured once.
        times = {c["plan"]: c["measured_us"] for c in cands}
        if not pick or not default or any(p not in times for p in fixed):
            continue  # a plan that did not run there: out of every total, as in the run's own
        best = min(c["measured_us"] for c in cands)
        rows.append((work, shape["sizes"], [pick[0], default[0]] + [times[p] for p in fixed], best))
    rows.sort()
    names = ["picks", "default"] + [short(p) for p in fixed]
    print(f"{run['kernel']}, {len(rows)} held-out shapes ({path}); total us per regime")
    print()
    print("| regime (work = product of sizes) | " + " | ".join(names) + " | best measured |")
    print("|---" * (len(names) + 2) + "|")
    thirds = [rows[i * len(rows) // 3:(i + 1) * len(rows) // 3] for i in range(3)] + [rows]
    for i, part in enumerate(thirds):
        totals = [sum(r[2][j] for r in part) for j in range(len(names))]
        low = min(totals)
        cells = [f"**{t:.1f}**" if t == low else f"{t:.1f}" for t in totals]
        label = "all" if i == 3 else f"{len(part)} shapes, work {part[0][0]:.3g} to {part[-1][0]:.3g}"
        print(f"| {label} | " + " | ".join(cells) + f" | {sum(r[3] for r in part):.1f} |")
    wins = [0] * len(names)
    for r in rows:
        wins[r[2].index(min(r[2]))] += 1
    print("| shapes won (fastest of these columns) | " + " | ".join(str(w) for w in wins) + " | |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
