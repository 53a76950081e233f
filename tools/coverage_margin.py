#!/usr/bin/env python3
"""Margins of the coverage floors over many RapidCheck seeds (properties/coverage.h, properties/README.md
"Regimes and coverage").

A floor met by construction (`region:pct`, cover()) must hold at every seed: its hits come from a fixed
share of the sizes (regimeGen, sizeShare) plus draws, and the share alone must reach the floor. This tool
reports the margin of the mean hits above the floor in standard deviations of the hits across seeds
(empirical when >= 10 runs, binomial otherwise); a region whose hits do not move across seeds is `fixed`.
A drawn floor (`region:~pct`, coverDrawn()) is sound when the region's rate is at least the claimed one:
the tool checks the pooled rate of all runs minus 4 of its standard errors against the claim.

  tools/coverage_margin.py --run 20 [--bin-dir bazel-bin/properties] [--out DIR]  # runs the binaries
  tools/coverage_margin.py LOG...                                                 # or reads QSA_COVERAGE logs

Exit status 1 when a region was below its floor in some log, a construction floor's margin is under
--min-sd (default 4), or a drawn floor claims more than the measured rate supports.
"""
import argparse
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

BINARIES = ["batch_invariance_test", "decode_stages_test", "determinism_test", "differential_stages_test",
            "differential_test", "layout_test", "padding_test", "pool_hygiene_test", "prefill_decode_test",
            "workspace_test"]


ALPHA = 1e-6  # properties/coverage.h's kDrawnAlpha


def needed(floor, cases, drawn):
    """properties/coverage.cc's needed(): a count for a construction floor, a binomial quantile for a drawn one."""
    if not drawn:
        return math.ceil(floor * cases - 1e-9)
    if floor <= 0.0:
        return 0
    if floor >= 1.0:
        return cases
    cdf = 0.0
    for h in range(cases + 1):
        cdf += math.exp(math.lgamma(cases + 1) - math.lgamma(h + 1) - math.lgamma(cases - h + 1) +
                        h * math.log(floor) + (cases - h) * math.log1p(-floor))
        if cdf >= ALPHA:
            return h
    return cases


def parse(paths):
    """{(property, region): {"floor": f, "drawn": bool, "runs": [(hits, cases), ...]}} from QSA_COVERAGE lines."""
    out = {}
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                if not line.startswith("QSA_COVERAGE "):
                    continue
                fields = line.split()
                prop = fields[1]
                cases = int(re.search(r" cases=(\d+)", line).group(1))
                floors = re.search(r" floors=(\S+)", line).group(1)
                if cases == 0 or floors == "none" or "check=skipped" in line:
                    continue
                for item in floors.split(","):
                    region, pct = item.rsplit(":", 1)
                    drawn = pct.startswith("~")
                    hits = int(re.search(" " + re.escape(region) + r"=(\d+)/", line).group(1))
                    entry = out.setdefault((prop, region), {"floor": int(pct.lstrip("~")[:-1]) / 100.0,
                                                            "drawn": drawn, "runs": []})
                    entry["runs"].append((hits, cases))
    return out


def run_seeds(bin_dir, seeds, out_dir, jobs):
    os.makedirs(out_dir, exist_ok=True)
    work = [(b, s) for s in seeds for b in BINARIES]

    def one(item):
        binary, seed = item
        log = os.path.join(out_dir, "%s.seed%d.log" % (binary, seed))
        env = dict(os.environ, RC_PARAMS="seed=%d" % seed)
        with open(log, "w") as f:
            subprocess.run([os.path.join(bin_dir, binary)], stdout=f, stderr=subprocess.STDOUT, env=env)
        return log

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, work))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="*")
    ap.add_argument("--run", type=int, default=0, help="run every property binary with this many seeds")
    ap.add_argument("--bin-dir", default="bazel-bin/properties")
    ap.add_argument("--out", default="/tmp/coverage_margin")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--min-sd", type=float, default=4.0)
    args = ap.parse_args()
    logs = list(args.logs)
    if args.run:
        logs += run_seeds(args.bin_dir, range(1, args.run + 1), args.out, args.jobs)
    if not logs:
        ap.error("no logs: give LOG... or --run N")
    data = parse(logs)
    bad = 0
    rows = []
    for (prop, region), e in data.items():
        runs, floor, drawn = e["runs"], e["floor"], e["drawn"]
        below = [r for r in runs if r[0] < needed(floor, r[1], drawn)]
        rates = [h / c for h, c in runs]
        total = sum(c for _, c in runs)
        rate = sum(h for h, _ in runs) / total
        n = min(c for _, c in runs)
        if drawn:
            # The claim must not exceed the rate: pooled rate minus 4 standard errors.
            margin = (rate - floor) / math.sqrt(max(rate * (1.0 - rate) / total, 1e-12))
        elif len(set(runs)) == 1 and len(runs) > 1:
            margin = math.inf  # the same hits at every seed: met by construction
        else:
            hits = [h for h, c in runs if c == n] or [h * n / c for h, c in runs]
            mean = sum(hits) / len(hits)
            if len(hits) >= 10:
                sd = math.sqrt(sum((h - mean) ** 2 for h in hits) / (len(hits) - 1))
            else:
                sd = math.sqrt(n * rate * (1.0 - rate))
            margin = (mean - (needed(floor, n, False) - 0.5)) / max(sd, 1e-12)
        flag = "below" if below else ("thin" if margin < args.min_sd else "ok")
        bad += flag != "ok"
        rows.append((margin, prop, region, ("~" if drawn else "") + "%.2f" % floor, n, min(rates), rate, len(runs),
                     flag))
    rows.sort()
    print("%-8s %-58s %-30s %6s %5s %8s %8s %5s %6s" %
          ("margin", "property", "region", "floor", "n", "min", "rate", "runs", "flag"))
    for margin, prop, region, floor, n, lo, rate, k, flag in rows:
        print("%-8s %-58s %-30s %6s %5d %8.3f %8.3f %5d %6s" %
              ("fixed" if margin == math.inf else "%.1f" % margin, prop, region, floor, n, lo, rate, k, flag))
    print("coverage_margin: %d floored regions over %d logs, %d below their floor, thin (construction floors "
          "under %.1f sd) or over-claimed (drawn)" %
          (len(rows), len(logs), bad, args.min_sd))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
