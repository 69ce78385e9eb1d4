#!/usr/bin/env python3
"""Compares bench/onednn_conv_bench's outputs for two oneDNN builds (Debian's
2.6 and PyPI's 3.x) at two ISA levels, as bench/onednn_versions.sh leaves
them: DIR/{debian,pypi}-{native,avx2}-{round}.txt.

  bench/onednn_compare.py DIR ROUNDS [--metric median|fastest|cpu] [--all]

Each figure is the median over the rounds. First, per net and pass, the sum
over its convolution layers (a shape's time x its count) for each of the
three timings the benchmark records; then, per shape and pass, the chosen
--metric where the versions differ by more than 10 % (--all: every shape).
When the runs timed every implementation (onednn_conv_bench
--all-implementations), the same per-net sums with the fastest
implementation of each pass, and where it beats oneDNN's own choice.
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


def read_run(path, kind="result"):
    """(header line, {key: {count, median, fastest, cpu, gflop, impl}}) from
    the lines of one kind: "result" (oneDNN's choice; key (net, layer,
    pass)) or "impl" (every implementation timed; key (net, layer, pass,
    implementation))."""
    lines = path.read_text().splitlines()
    results = {}
    for line in lines:
        fields = line.split()
        if fields[:1] != [kind]:
            continue
        net, layer, count, pass_name, median, fastest, cpu, gflop = fields[1:9]
        implementation = " ".join(fields[9:])
        key = (net, layer, pass_name) + ((implementation,) if kind == "impl" else ())
        results[key] = {
            "count": int(count), "median": float(median), "fastest": float(fastest),
            "cpu": float(cpu), "gflop": float(gflop), "impl": implementation}
    return lines[0] if lines else "(empty)", results


def best_implementations(per_implementation, metric):
    """{(net, layer, pass): the fastest implementation's figures by metric}."""
    best = {}
    for key, r in per_implementation.items():
        shape = key[:3]
        if shape not in best or r[metric] < best[shape][metric]:
            best[shape] = r
    return best


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

    data, best = {}, {}
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
            alternatives = [read_run(p, "impl")[1] for p in paths]
            if all(len(a) > len(r) for a, (_, r) in zip(alternatives, runs)):
                best[(version, isa)] = best_implementations(combine(alternatives), args.metric)

    for isa in ISAS:
        old, new = data[("debian", isa)], data[("pypi", isa)]
        for metric in METRICS:
            print_net_totals(
                "\nISA %s, per net (sum of count x %s ms): 2.6 / 3.x ms, 3.x/2.6" % (isa, metric),
                old, new, metric)
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
        if ("debian", isa) in best and ("pypi", isa) in best:
            print_best(isa, data, best, args.metric)


def print_net_totals(heading, old, new, metric):
    """Under `heading`, per net: each pass's and all three's sum of count x
    `metric` ms in 2.6 (`old`) and 3.x (`new`), and 3.x/2.6."""
    print(heading)
    print("%-14s %-22s %-22s %-22s %-22s" % ("net", *PASSES, "all three"))
    old_totals, new_totals = net_totals(old, metric), net_totals(new, metric)
    for net, before in old_totals.items():
        after = new_totals.get(net, [float("nan")] * 3)
        cells = ["%9.2f /%9.2f %5.2f" % (b, a, a / b) for b, a in
                 zip(before + [sum(before)], after + [sum(after)])]
        print("%-14s %s" % (net, " ".join("%-22s" % c for c in cells)))


def print_best(isa, data, best, metric):
    """With --all-implementations: per net, each version's fastest
    implementation per shape and pass, summed; and the shapes where that is
    not oneDNN's own choice."""
    old, new = best[("debian", isa)], best[("pypi", isa)]
    print_net_totals("\nISA %s, per net, the fastest implementation of each pass (sum of count x"
                     " %s ms): 2.6 / 3.x ms, 3.x/2.6" % (isa, metric), old, new, metric)
    for version, label in (("debian", "2.6"), ("pypi", "3.x")):
        print("\nISA %s, oneDNN %s: shapes where another implementation beats oneDNN's choice"
              " by > 10 %% (%s ms)" % (isa, label, metric))
        chosen = data[(version, isa)]
        for key, fastest in best[(version, isa)].items():
            first = chosen.get(key)
            if first and fastest[metric] < 0.9 * first[metric]:
                print("  %-14s %-26s x%d %-16s %9.3f [%s] -> %9.3f [%s]" % (
                    key[0], key[1], first["count"], key[2], first[metric], first["impl"],
                    fastest[metric], fastest["impl"]))


if __name__ == "__main__":
    main()
