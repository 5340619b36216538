#!/usr/bin/env python3
"""False-positive rate of every rule on random weights, over many random seeds.

Each experiment runs at its test size (--smoke) on random weights in the bundled model's layout
(--random-init SEED) for SEED = 1..N, the null control of scripts/reproduce.sh repeated. A rule that says
"reproduced" on random weights is a false positive. Per rule the script counts the outcomes over the seeds
and gives the false-positive rate k/n with its exact (Clopper-Pearson) 95 % interval: with N = 10 seeds and
no false positive the interval is [0, 0.31], so ten clean seeds bound the rate, they do not prove it zero.
This script decides no verdict; it counts the verdicts the experiments wrote into meta.json.

Usage: python3 scripts/null_rates.py --build build --out out/null_seeds [--seeds 10] [--jobs 2]
                                     [--seed1 out/null] EXPERIMENT...
  --seed1 DIR   reuse DIR as the outputs of seed 1 (reproduce.sh's null control run) instead of rerunning it.
Writes OUT/null_rates.json: {"seeds": [...], "rule_set": hash, "rules": {rule_id: {"claim", "runs",
"false_positives", "rate", "ci", "outcomes": {outcome: count}}}, "failed": [...]}.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys


def binomial_tail_ge(k, n, p):
    """P(X >= k) for X ~ Binomial(n, p), summed exactly."""
    from math import comb
    return sum(comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))


def clopper_pearson(k, n, confidence=0.95):
    """Exact binomial interval: lo solves P(X >= k | lo) = a/2, hi solves P(X <= k | hi) = a/2 (a = 1 - c);
    lo = 0 when k = 0 and hi = 1 when k = n. Found by bisection on the exact tail sums (n is small here)."""
    if not (n > 0 and 0 <= k <= n):
        raise ValueError(f"clopper_pearson: needs 0 <= k <= n and n > 0, got k={k}, n={n}")
    a = 1 - confidence

    def solve(f, target):  # f increasing in p on [0, 1]
        lo, hi = 0.0, 1.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if f(mid) < target:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    lo = 0.0 if k == 0 else solve(lambda p: binomial_tail_ge(k, n, p), a / 2)
    # P(X <= k | p) = 1 - P(X >= k + 1 | p) decreases in p; solve P(X >= k + 1 | p) = 1 - a/2.
    hi = 1.0 if k == n else solve(lambda p: binomial_tail_ge(k + 1, n, p), 1 - a / 2)
    return [lo, hi]


def verdicts(meta):
    v = meta.get("verdict")
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def run_one(build, exp, seed, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    log = os.path.join(out_dir, exp + ".log")
    with open(log, "w") as f:
        rc = subprocess.call([os.path.join(build, "experiments", exp), "--smoke", "--random-init", str(seed),
                              "--out", os.path.join(out_dir, exp)], stdout=f, stderr=subprocess.STDOUT)
    return exp, seed, rc, log


def collect(dirs_by_seed, experiments):
    rules, rule_sets = {}, set()
    for seed, d in sorted(dirs_by_seed.items()):
        for exp in experiments:
            path = os.path.join(d, exp, "meta.json")
            if not os.path.exists(path):
                continue
            meta = json.load(open(path))
            if "rule_set" in meta:
                rule_sets.add(json.dumps(meta["rule_set"], sort_keys=True))
            for v in verdicts(meta):
                rid = v.get("rule_id") or v.get("claim")
                r = rules.setdefault(rid, {"claim": v.get("claim", rid), "kind": v.get("rule_kind", "claim"),
                                           "experiment": exp, "runs": 0, "false_positives": 0, "outcomes": {}})
                o = v.get("outcome", "?")
                r["runs"] += 1
                r["outcomes"][o] = r["outcomes"].get(o, 0) + 1
                if o == "reproduced":
                    r["false_positives"] += 1
    for r in rules.values():
        r["rate"] = r["false_positives"] / r["runs"]
        r["ci"] = clopper_pearson(r["false_positives"], r["runs"])
    return rules, rule_sets


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="out/null_seeds")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed1", default="", help="outputs of seed 1 to reuse (reproduce.sh's out/null)")
    ap.add_argument("experiments", nargs="+")
    a = ap.parse_args()
    if a.seeds < 1:
        sys.exit("null_rates: --seeds must be >= 1")
    for exp in a.experiments:
        if not os.access(os.path.join(a.build, "experiments", exp), os.X_OK):
            sys.exit(f"null_rates: {os.path.join(a.build, 'experiments', exp)} is not an executable (build the experiments first)")
    dirs = {}
    todo = []
    for seed in range(1, a.seeds + 1):
        if seed == 1 and a.seed1:
            if not os.path.isdir(a.seed1):
                sys.exit(f"null_rates: --seed1 {a.seed1} is not a directory")
            dirs[1] = a.seed1
            continue
        dirs[seed] = os.path.join(a.out, f"seed-{seed}")
        todo += [(exp, seed) for exp in a.experiments]
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = [pool.submit(run_one, a.build, exp, seed, dirs[seed]) for exp, seed in todo]
        for i, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            exp, seed, rc, log = fut.result()
            if rc != 0:
                failed.append({"experiment": exp, "seed": seed, "log": log})
            print(f"  null seed {seed}: {exp} {'ok' if rc == 0 else f'FAILED (rc {rc}, {log})'} [{i}/{len(todo)}]", flush=True)
    rules, rule_sets = collect(dirs, a.experiments)
    if len(rule_sets) > 1:
        sys.exit("null_rates: the seeds' outputs come from different rule sets: " + ", ".join(sorted(rule_sets)))
    result = {"seeds": sorted(dirs), "rule_set": json.loads(next(iter(rule_sets))) if rule_sets else None,
              "rules": dict(sorted(rules.items())), "failed": failed}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "null_rates.json"), "w") as f:
        json.dump(result, f, indent=1)
    for rid, r in sorted(rules.items()):
        print(f"  {rid:<16} false positives {r['false_positives']}/{r['runs']}  95% CI [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]  {r['outcomes']}")
    if failed:
        sys.exit(f"null_rates: {len(failed)} runs failed (see their logs)")


if __name__ == "__main__":
    main()
