#!/usr/bin/env python3
"""scripts/null_rates.py: its exact binomial interval against closed forms and published values, and its
counting of outcomes on synthetic meta.json files (no experiment is run here)."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import null_rates  # noqa: E402


def close(a, b, tol=1e-7):
    return abs(a - b) <= tol


def main():
    cp = null_rates.clopper_pearson
    # Closed forms at the ends: k = 0 gives [0, 1 - (a/2)^(1/n)], k = n gives [(a/2)^(1/n), 1].
    for n in (1, 5, 10, 37):
        assert cp(0, n)[0] == 0.0 and close(cp(0, n)[1], 1 - 0.025 ** (1 / n)), (n, cp(0, n))
        assert cp(n, n)[1] == 1.0 and close(cp(n, n)[0], 0.025 ** (1 / n)), (n, cp(n, n))
    # R: binom.test(3, 10)$conf.int = 0.06673951 0.65245285; binom.test(1, 20) = 0.001265089 0.248732762.
    assert close(cp(3, 10)[0], 0.06673951) and close(cp(3, 10)[1], 0.65245285), cp(3, 10)
    assert close(cp(1, 20)[0], 0.001265089) and close(cp(1, 20)[1], 0.248732762), cp(1, 20)
    for bad in ((3, 2), (0, 0), (-1, 4)):
        try:
            cp(*bad)
        except ValueError:
            continue
        raise AssertionError(f"clopper_pearson{bad} did not raise")

    # Counting: two seeds, one experiment with two rules; one false positive of rule X.
    with tempfile.TemporaryDirectory() as d:
        outcomes = {1: {"X": "not reproduced", "Y": "not applicable to this model"}, 2: {"X": "reproduced", "Y": "inconclusive"}}
        dirs = {}
        for seed, by_rule in outcomes.items():
            dirs[seed] = os.path.join(d, f"seed-{seed}")
            os.makedirs(os.path.join(dirs[seed], "e"))
            meta = {"rule_set": {"version": "t", "hash": "h"},
                    "verdict": [{"claim": r, "rule_id": r, "outcome": o} for r, o in by_rule.items()]}
            json.dump(meta, open(os.path.join(dirs[seed], "e", "meta.json"), "w"))
        rules, sets = null_rates.collect(dirs, ["e"])
        assert len(sets) == 1
        assert rules["X"]["runs"] == 2 and rules["X"]["false_positives"] == 1 and rules["X"]["rate"] == 0.5, rules["X"]
        assert rules["Y"]["false_positives"] == 0 and rules["Y"]["outcomes"] == {"not applicable to this model": 1, "inconclusive": 1}
        assert rules["X"]["ci"] == cp(1, 2)
    print("null_rates: interval and counting checks passed")


if __name__ == "__main__":
    main()
