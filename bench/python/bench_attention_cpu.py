"""fp32 attention on the cpu: tessel (kernels/attention*.tir through `tessel run`)
beside PyTorch's CPU scaled_dot_product_attention, interleaved rounds in one run.

    python bench/python/bench_attention_cpu.py --tessel build/tessel --threads 1 \
        --shapes 1x8x1024x64,1x8x1024x128 --rounds 3

Each round runs tessel (a warm launch's median over --repeat launches, its own
process, the kernel cache warm after the first round) and then PyTorch (median of as
many calls) on the same shape, with the same thread count. The ratio is PyTorch's
time over tessel's: above 1, tessel is faster. The table gives the median over
rounds and the range. PyTorch is a PyPI package (`pip install torch`), needed only
here.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessel", default="build/tessel")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--shapes", default="1x8x1024x64,1x8x1024x128", help="BxHxSxD, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    shapes = []
    for shape in args.shapes.split(","):
        parts = shape.split("x")
        if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts):
            ap.error(f"shape '{shape}': expected BxHxSxD with four positive integers")
        shapes.append((shape, [int(p) for p in parts]))
    if args.threads < 1 or args.rounds < 1 or args.repeat < 1:
        ap.error("--threads, --rounds and --repeat must be at least 1")
    if not os.access(args.tessel, os.X_OK):
        ap.error(f"--tessel {args.tessel}: not an executable file (build tessel first)")
    try:
        import torch
    except ImportError:
        sys.exit("bench_attention_cpu: PyTorch is not installed (pip install torch)")
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s); tessel {args.tessel}; "
          f"{args.rounds} interleaved rounds, median of {args.repeat} calls each")
    print("| kernel | B x H x S x D | tessel ms | torch ms | torch / tessel: median [min, max] | tessel GFLOP/s |")
    print("|---|---|---:|---:|---:|---:|")
    for shape, (b, h, s, d) in shapes:
        for kernel in ("attention", "attention_causal"):
            causal = kernel.endswith("causal")
            q = torch.randn(b, h, s, d)
            k = torch.randn(b, h, s, d)
            v = torch.randn_like(k)
            mine, theirs = [], []
            for _ in range(args.rounds):
                cmd = [args.tessel, "run", f"kernels/{kernel}.tir", "--target", "cpu", "--threads", str(args.threads),
                       "--repeat", str(args.repeat), "--json", "--size", f"B={b}", "--size", f"Hq={h}",
                       "--size", f"Hkv={h}", "--size", f"Sq={s}", "--size", f"Skv={s}", "--size", f"D={d}",
                       "--scalar", "scale=0.125"]
                run = subprocess.run(cmd, capture_output=True, text=True)
                report = next((json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")), None)
                if run.returncode != 0 or report is None:
                    sys.exit(f"bench_attention_cpu: {' '.join(cmd)} failed (exit {run.returncode}):\n"
                             f"{run.stderr.strip()}")
                mine.append(report["warm_us"] / 1e3)
                ts = []
                for _ in range(args.repeat + 1):
                    t0 = time.perf_counter()
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.125)
                    ts.append(time.perf_counter() - t0)
                theirs.append(statistics.median(ts[1:]) * 1e3)
            ratios = [t / m for t, m in zip(theirs, mine)]
            flop = 4 * b * h * s * s * d / (2 if causal else 1)
            m = statistics.median(mine)
            print(f"| {kernel} | {shape} | {m:.2f} | {statistics.median(theirs):.2f} | "
                  f"{statistics.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}] | {flop / m / 1e6:.1f} |")


if __name__ == "__main__":
    main()
