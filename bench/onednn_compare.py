#!/usr/bin/env python3
"""Compares bench/onednn_conv_bench's outputs for two oneDNN builds (Debian's
2.6 and PyPI's 3.x) at two ISA levels, as bench/onednn_versions.sh leaves
them: DIR/{debian,pypi}-{native,avx2}-{round}.txt.

  bench/onednn_compare.py DIR ROUNDS [--metric median|fastest|cpu] [--all]

Each figure is the median over the rounds. First, per net and pass, the sum
over its convolution layers (a shape's time x its count) for each of the
three timings the benchmark records; then, per shape and pass, the chosen
--metric where the versions differ by more than 10 % (--all: every shape).
"3.x/2.6" is the time ratio: below 1, oneDNN 3.x is faster.
"""
import argparse
import statistics
import sys
from pathlib import Path

VERSIONS = ("debian", "pypi")
ISAS = ("native", "avx2")
PASSES = ("forward", "backward_data", "backward_weights")
METRICS = ("median", "fastest", "cpu")


def read_run(path):
    """(header line, {(net, layer, pass): {count, median, fastest, cpu, gflop, impl}})."""
    lines = path.read_text().splitlines()
    results = {}
    for line in lines:
        fields = line.split()
        if fields[:1] != ["result"]:
            continue
        net, layer, count, pass_name, median, fastest, cpu, gflop = fields[1:9]
        results[(net, layer, pass_name)] = {
            "count": int(count), "median": float(median), "fastest": float(fastest),
            "cpu": float(cpu), "gflop": float(gflop), "impl": " ".join(fields[9:])}
    return lines[0] if lines else "(empty)", results


def combine(runs):
    """The rounds' medians per shape and pass; the implementation of the first."""
    combined = {}
    for key, first in runs[0].items():
        present = [run[key] for run in runs if key in run]
        combined[key] = dict(first, **{m: statistics.median(r[m] for r in present)
                                       for m in METRICS})
    return combined


def net_totals(results, metric):
    """{net: [forward, backward_data, backward_weights] ms}, nets in file order."""
    totals = {}
    for (net, _, pass_name), r in results.items():
        totals.setdefault(net, [0.0, 0.0, 0.0])[PASSES.index(pass_name)] += r["count"] * r[metric]
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("dir", type=Path)
    parser.add_argument("rounds", type=int)
    parser.add_argument("--metric", choices=METRICS, default="median")
    parser.add_argument("--all", action="store_true", help="every shape, not only differences")
    args = parser.parse_args()

    data = {}
    for version in VERSIONS:
        for isa in ISAS:
            paths = [args.dir / ("%s-%s-%d.txt" % (version, isa, r)) for r in
                     range(1, args.rounds + 1)]
            paths = [p for p in paths if p.exists()]
            if not paths:
                sys.exit("onednn_compare.py: no %s-%s-*.txt in %s" % (version, isa, args.dir))
            runs = [read_run(p) for p in paths]
            print("%s, %s: %s (%d rounds)" % (version, isa, runs[0][0], len(runs)))
            data[(version, isa)] = combine([r for _, r in runs])

    for isa in ISAS:
        old, new = data[("debian", isa)], data[("pypi", isa)]
        for metric in METRICS:
            print("\nISA %s, per net (sum of count x %s ms): 2.6 / 3.x ms, 3.x/2.6" % (isa, metric))
            print("%-14s %-22s %-22s %-22s %-22s" % ("net", *PASSES, "all three"))
            old_totals, new_totals = net_totals(old, metric), net_totals(new, metric)
            for net, before in old_totals.items():
                after = new_totals.get(net, [float("nan")] * 3)
                cells = ["%9.2f /%9.2f %5.2f" % (b, a, a / b) for b, a in
                         zip(before + [sum(before)], after + [sum(after)])]
                print("%-14s %s" % (net, " ".join("%-22s" % c for c in cells)))
        print("\nISA %s, per shape (%s ms)%s: 2.6 ms [impl], 3.x ms [impl], 3.x/2.6, 3.x GFLOP/s"
              % (isa, args.metric, "" if args.all else ", where they differ by > 10 %"))
        for key, before in old.items():
            after = new.get(key)
            if after is None:
                continue
            ratio = after[args.metric] / before[args.metric]
            if args.all or abs(ratio - 1) > 0.10:
                print("  %-14s %-26s x%d %-16s %9.3f [%s] %9.3f [%s] %5.2f %7.1f" % (
                    key[0], key[1], before["count"], key[2], before[args.metric], before["impl"],
                    after[args.metric], after["impl"], ratio,
                    after["gflop"] / (after[args.metric] / 1e3)))


if __name__ == "__main__":
    main()
