#!/usr/bin/env python3
"""Checks the verdict objects an experiment wrote to OUT/meta.json (CTest runs it after every smoke run).

Usage: check_verdicts.py any|null OUT
  any   every verdict object is well formed: claim, outcome (one of the five), rule, measure, statistic,
        threshold, ci [lo, hi] with lo <= hi, n, null (the control the rule names), conditions, and the
        registered rule it applied (rule_id, a 64-digit rule_hash, rule_kind) with the run's rule-set hash.
  null  the run was a null control (--random-init: the model's layout with random weights): no verdict
        may say "reproduced" ("not reproduced", "not applicable" and "inconclusive" are allowed;
        experiments that train their own model may say "not shown at this scale": no trained structure
        formed).
Standard library only. Exit 0 when the check passes, 1 with the reasons otherwise.
"""
import json
import math
import os
import sys

OUTCOMES = {"reproduced", "not reproduced", "not shown at this scale", "not applicable", "inconclusive"}
NULL_OK = {"not reproduced", "not applicable", "inconclusive"}
HEX = set("0123456789abcdef")
TRAINS_ITS_OWN_MODEL = {"a4_training_trace", "a4_scale_sweep", "b6_ablations"}


def is_num(x):
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x))


def problems(v, mode, experiment):
    out = []
    for key in ("claim", "outcome", "rule", "measure", "statistic", "threshold", "ci", "n", "null", "conditions"):
        if key not in v:
            out.append(f"missing key '{key}'")
    if out:
        return out
    if v["outcome"] not in OUTCOMES:
        out.append(f"outcome '{v['outcome']}' is not one of {sorted(OUTCOMES)}")
    for key in ("claim", "rule", "measure", "null"):
        if not isinstance(v[key], str) or not v[key].strip():
            out.append(f"'{key}' must be a non-empty string")
    if not is_num(v["statistic"]) or not is_num(v["threshold"]):
        out.append("statistic and threshold must be numbers (or null)")
    ci = v["ci"]
    if not (isinstance(ci, list) and len(ci) == 2 and all(is_num(c) for c in ci)):
        out.append(f"ci must be [lo, hi], got {ci!r}")
    elif None not in ci and ci[0] > ci[1]:
        out.append(f"ci lower bound {ci[0]} above upper bound {ci[1]}")
    if not isinstance(v["n"], int) or v["n"] < 0:
        out.append(f"n must be a non-negative integer, got {v['n']!r}")
    if not isinstance(v["conditions"], list):
        out.append("conditions must be a list")
    if not isinstance(v.get("rule_id"), str) or not v["rule_id"]:
        out.append("the verdict names no registered rule (rule_id): Verdict::registered(analysis::rule(...))")
    h = v.get("rule_hash", "")
    if not (isinstance(h, str) and len(h) == 64 and set(h) <= HEX):
        out.append(f"rule_hash must be 64 hex digits, got {h!r}")
    if v.get("rule_kind") not in ("claim", "control"):
        out.append(f"rule_kind must be 'claim' or 'control', got {v.get('rule_kind')!r}")
    if v.get("rule_kind") == "control":
        expected = v.get("expected_outcome")
        if v.get("control_outcome") != ("as expected" if v["outcome"] == expected else "unexpected"):
            out.append(f"a control needs control_outcome 'as expected' exactly when outcome equals expected_outcome; got "
                       f"outcome {v['outcome']!r}, expected_outcome {expected!r}, control_outcome {v.get('control_outcome')!r}")
    elif "control_outcome" in v:
        out.append("a claim has no control_outcome")
    if mode == "null":
        allowed = NULL_OK | ({"not shown at this scale"} if experiment in TRAINS_ITS_OWN_MODEL else set())
        if v["outcome"] not in allowed:
            out.append(f"null control says '{v['outcome']}' ({v.get('decided_by', '')}): the rule cannot fail")
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("any", "null"):
        print(__doc__)
        return 2
    mode, out_dir = sys.argv[1], sys.argv[2]
    path = os.path.join(out_dir, "meta.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_verdicts: cannot read {path}: {e}")
        return 1
    if "verdict" not in meta:
        print(f"check_verdicts: {path} has no 'verdict'")
        return 1
    verdicts = meta["verdict"] if isinstance(meta["verdict"], list) else [meta["verdict"]]
    if not verdicts:
        print(f"check_verdicts: {path} has an empty verdict list")
        return 1
    failed = False
    rs = meta.get("rule_set", {})
    if not (isinstance(rs, dict) and isinstance(rs.get("hash"), str) and len(rs["hash"]) == 64):
        print(f"check_verdicts: {path} records no rule-set hash (meta.json 'rule_set': {{'version', 'hash'}})")
        failed = True
    for v in verdicts:
        p = problems(v, mode, meta.get("experiment", ""))
        claim = v.get("claim", "?")
        print(f"  {claim}: {v.get('outcome', '?')} ({v.get('decided_by', '')})")
        for msg in p:
            print(f"    FAIL: {msg}")
        failed |= bool(p)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
