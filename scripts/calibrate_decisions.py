#!/usr/bin/env python3
"""Calibrate B6's two rules at the decision level: synthetic variant tables run through the same executable
(`b6_ablations --from-table`), since B6 decides on models it trains itself and no planted checkpoint can
stand in for a training run. The label "decision level" says so: these tables test the directions, the
bands and the outcome map, not the training or the measurement of sinks and spikes.

Tables (3 seeds per variant, as the experiment; baseline sink ratio 0.45-0.47, spike 3700-3900 with a
massive activation in every seed):
  planted  every variant's sink ratio and spike are the baseline's times the paper's ratio to its own
           baseline (Paper B's table, read back from the experiment's variants.csv), so every scored
           direction agrees with the paper;
  twin     every variant equals the baseline (the switches change nothing: the separability the paper
           reports is absent), every other number identical;
  random   each variant's ratio to the baseline drawn log-uniformly in [1/10, 10] (seeded), --random-seeds
           tables (100); the report gives each rule's false-positive rate ("reproduced" on a random table)
           with its Clopper-Pearson 95 % interval, and the first table's outcome as the "random" column.
--check asserts: both rules "reproduced" on the planted table, "not reproduced" on the twin (every
precondition holds there) and not "reproduced" on the first random table; and no rule's false-positive rate
demonstrably above 5 % (its Clopper-Pearson lower bound <= 0.05). A chance agreement of 9 of 12 directions
does happen on a random table (measured 2026-12-06: B6 (sinks) 1 / 100, B6 (spikes) 2 / 100), so asserting
"never" would assert something the rule does not guarantee.

  scripts/calibrate_decisions.py --build build [--out out/calibration_decisions] [--random-seeds 100] [--check]
  (CTest: calibration_decisions_b6; label "calibration")
"""
import argparse
import csv
import json
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate_planted  # noqa: E402

RULES = ["B6 (sinks)", "B6 (spikes)"]
BASE_SINK = [0.45, 0.46, 0.47]
BASE_SPIKE = [3700.0, 3818.0, 3900.0]
SEEDS = [1, 1001, 2001]


def write_table(path, rows):
    """rows: {variant: [(sink, spike, massive) per seed]}"""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["variant", "seed", "val_loss", "sink_ratio", "spike", "spike_ratio", "massive"])
        for v, per_seed in rows.items():
            for s, (sink, spike, massive) in zip(SEEDS, per_seed):
                w.writerow([v, s, "nan", repr(sink), repr(spike), "nan", int(massive)])


def run_b6(exe, table, out, log):
    """{rule id: outcome record} of one b6_ablations --from-table run (calibrate_planted.py's runner and reader)."""
    os.makedirs(out, exist_ok=True)
    rc = calibrate_planted.run([exe, "--from-table", table, "--out", out], log)
    meta = os.path.join(out, "meta.json")
    if rc != 0 or not os.path.exists(meta):
        return {r: {"outcome": f"error (rc {rc})", "decided_by": ""} for r in RULES}
    return calibrate_planted.outcomes(meta)


def paper_values(out):
    """{variant: (paper_sink, paper_spike)} from the experiment's variants.csv (NaN where not scored)."""
    vals = {}
    with open(os.path.join(out, "variants.csv")) as f:
        for r in csv.DictReader(f):
            vals[r["variant"]] = (float(r["paper_sink"]), float(r["paper_spike"]))
    return vals


def clopper_pearson(k, n, alpha=0.05):
    """Exact binomial interval by bisection on the binomial tail (no scipy)."""
    def cdf(x, p):
        return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(x + 1))

    def solve(f):
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) else (lo, mid)
        return (lo + hi) / 2
    lower = 0.0 if k == 0 else solve(lambda p: 1 - cdf(k - 1, p) < alpha / 2)
    upper = 1.0 if k == n else solve(lambda p: cdf(k, p) > alpha / 2)
    return lower, upper


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="the build directory (experiments/b6_ablations)")
    ap.add_argument("--experiments", help="the experiment executables' folder (default BUILD/experiments)")
    ap.add_argument("--out", default="out/calibration_decisions", help="output directory")
    ap.add_argument("--random-seeds", type=int, default=100, help="random tables (the null's false-positive rate)")
    ap.add_argument("--check", action="store_true", help="assert the tables' designed outcomes (exit 1 otherwise)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    exe = os.path.join(a.experiments or os.path.join(a.build, "experiments"), "b6_ablations")

    # The twin first: every variant equal to the baseline. Its run also reads the paper's values back from the
    # experiment's variants.csv; the variant names are the experiment's (b6_ablations_variants.hpp), and an
    # unknown name is an error there.
    probe = os.path.join(a.out, "twin.csv")
    names = ["baseline", "sandwich", "sandwich_qknorm", "dynamic_tanh", "ffn_gelu", "ffn_linear", "attention_only",
             "weight_decay_0", "head_dim_8", "gate_per_channel", "gate_per_head", "loss_last_3_4", "loss_last_1_2",
             "head_dim_32", "gate_static_per_head", "gate_static_per_channel", "softmax_off_by_one", "sink_token", "kv_bias"]
    twin_rows = {v: list(zip(BASE_SINK, BASE_SPIKE, [True] * 3)) for v in names}
    write_table(probe, twin_rows)
    twin = run_b6(exe, probe, os.path.join(a.out, "twin"), os.path.join(a.out, "twin.log"))
    if not os.path.exists(os.path.join(a.out, "twin", "variants.csv")):
        sys.exit(f"b6_ablations --from-table failed: see {os.path.join(a.out, 'twin.log')}")
    paper = paper_values(os.path.join(a.out, "twin"))
    base_sink, base_spike = paper["baseline"]

    def scaled(paper_v, base_v, base_seeds):
        r = paper_v / base_v if math.isfinite(paper_v) and math.isfinite(base_v) else 1.0
        return [x * r for x in base_seeds]

    planted_rows = {v: list(zip(scaled(ps, base_sink, BASE_SINK), scaled(pp, base_spike, BASE_SPIKE), [True] * 3))
                    for v, (ps, pp) in paper.items()}
    write_table(os.path.join(a.out, "planted.csv"), planted_rows)
    planted = run_b6(exe, os.path.join(a.out, "planted.csv"), os.path.join(a.out, "planted"), os.path.join(a.out, "planted.log"))

    random_outcomes = []
    for k in range(a.random_seeds):
        rng = random.Random(1000 + k)
        rows = {}
        for v in paper:
            if v == "baseline":
                rows[v] = list(zip(BASE_SINK, BASE_SPIKE, [True] * 3))
                continue
            rs, rp = math.exp(rng.uniform(math.log(0.1), math.log(10))), math.exp(rng.uniform(math.log(0.1), math.log(10)))
            # A sink ratio is a share: at most 1.
            rows[v] = [(min(1.0, s * rs * rng.uniform(0.97, 1.03)), p * rp * rng.uniform(0.97, 1.03), True)
                       for s, p in zip(BASE_SINK, BASE_SPIKE)]
        path = os.path.join(a.out, f"random_{k}.csv")
        write_table(path, rows)
        o = run_b6(exe, path, os.path.join(a.out, f"random_{k}"), os.path.join(a.out, f"random_{k}.log"))
        random_outcomes.append(o)

    result = {"construction": "synthetic variant tables (decision level)", "layout": "decision level", "size": "3 seeds per variant",
              "seed": "random tables 1000 ...", "designed": RULES, "rules": {}}
    for r in RULES:
        fp = sum(o.get(r, {}).get("outcome") == "reproduced" for o in random_outcomes)
        lo, hi = clopper_pearson(fp, len(random_outcomes)) if random_outcomes else (float("nan"), float("nan"))
        first = random_outcomes[0].get(r, {"outcome": "-"}) if random_outcomes else {"outcome": "-"}
        result["rules"][r] = {"columns": {"planted": planted.get(r, {"outcome": "-"}), "twin": twin.get(r, {"outcome": "-"}),
                                          "random": first},
                              "random_tables": [o.get(r, {}).get("outcome") for o in random_outcomes],
                              "false_positive": {"reproduced": fp, "tables": len(random_outcomes), "ci95": [lo, hi]},
                              "dose_threshold": None}
    with open(os.path.join(a.out, "calibration.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = ["| rule (decision level) | planted table | twin table | random tables: reproduced / n [95% CI] |", "|---|---|---|---|"]
    for r, x in result["rules"].items():
        fp = x["false_positive"]
        lines.append(f"| {r} | {x['columns']['planted']['outcome']} | {x['columns']['twin']['outcome']} | "
                     f"{fp['reproduced']} / {fp['tables']} [{fp['ci95'][0]:.3f}, {fp['ci95'][1]:.3f}] |")
    md = "B6 at the decision level (synthetic variant tables through b6_ablations --from-table)\n\n" + "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "calibration.md"), "w") as f:
        f.write(md)
    print(md)

    if a.check:
        problems = []
        for r in RULES:
            x = result["rules"][r]
            if x["columns"]["planted"]["outcome"] != "reproduced":
                problems.append(f"{r} on the planted table: {x['columns']['planted']['outcome']} (expected reproduced)")
            if x["columns"]["twin"]["outcome"] != "not reproduced":
                problems.append(f"{r} on the twin table: {x['columns']['twin']['outcome']} (expected not reproduced)")
            first = x["columns"]["random"]["outcome"]
            if first == "reproduced" or first.startswith("error") or first == "-":
                problems.append(f"{r} on the first random table: {first}")
            errors = [o for o in x["random_tables"] if o is None or o.startswith("error")]
            if errors:
                problems.append(f"{r}: {len(errors)} random tables gave no verdict ({errors[0]})")
            fp = x["false_positive"]
            if fp["ci95"][0] > 0.05:
                problems.append(f"{r} says reproduced on {fp['reproduced']} / {fp['tables']} random tables "
                                f"(interval {fp['ci95']}, above 5 %)")
        if problems:
            print("calibration check FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 1
        print("calibration check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
