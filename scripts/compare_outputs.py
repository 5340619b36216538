#!/usr/bin/env python3
"""Compares two experiment output trees number for number: a refactor must leave every result unchanged.

    scripts/compare_outputs.py OLD_DIR NEW_DIR [--ignore KEY ...]

Walks OLD_DIR for meta.json, *.npy and *.csv files and compares each with the file of the same relative path
under NEW_DIR:
  meta.json  every value, recursively, exactly (floats bit for bit, NaN equal to NaN), except the keys that
             describe the run rather than its result: timings, git_revision, command, model/corpus paths,
             out paths and the rule-set fields (rule_set, rule_id, rule_hash; --ignore adds more key names);
  *.npy      dtype, shape and bytes;
  *.csv      byte for byte, except the columns whose header is an ignored key (a run's own "seconds"):
             those files are compared cell for cell without them.
A file present on one side only is a difference. Prints one line per difference and a summary line;
exits 1 when anything differs, 0 when the trees agree.
"""
import argparse
import csv
import json
import math
import os
import sys

DEFAULT_IGNORED = {
    "timings", "total_seconds", "git_revision", "command", "sinkscope_version", "model", "corpus",
    "out", "tokens_file", "rule_set", "rule_set_hash", "rule_id", "rule_hash", "rules", "seconds", "elapsed_seconds",
    "wall_seconds", "forward_passes_seconds",
    "expected_seconds", "rate_flop_per_s",  # a4_scale_sweep's measured speed of this machine, a timing
}


def load_npy(path):
    import numpy as np
    return np.load(path, allow_pickle=False)


def same_number(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b and type(a) is type(b)


def compare_json(a, b, path, ignored, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in ignored:
                continue
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'new' if k not in a else 'old'}")
                continue
            compare_json(a[k], b[k], f"{path}.{k}", ignored, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: list length {len(a)} vs {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            compare_json(x, y, f"{path}[{i}]", ignored, out)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if not same_number(a, b):
            out.append(f"{path}: {a!r} vs {b!r}")
    elif a != b:
        sa, sb = repr(a), repr(b)
        out.append(f"{path}: {sa[:120]} vs {sb[:120]}")


def compare_csv(pa, pb, rel, ignored):
    """The differences of two CSV files that are not byte-identical, cell for cell, leaving out the columns
    whose header is an ignored key; one line when the headers or the row counts differ."""
    with open(pa, newline="") as fa, open(pb, newline="") as fb:
        ra, rb = list(csv.reader(fa)), list(csv.reader(fb))
    if not ra or not rb or ra[0] != rb[0] or len(ra) != len(rb):
        return [f"{rel}: bytes differ (header or row count)"]
    keep = [i for i, name in enumerate(ra[0]) if name not in ignored]
    if len(keep) == len(ra[0]):
        return [f"{rel}: bytes differ"]
    out = []
    for r, (a, b) in enumerate(zip(ra, rb)):
        ca = [a[i] if i < len(a) else None for i in keep]
        cb = [b[i] if i < len(b) else None for i in keep]
        if ca != cb:
            out.append(f"{rel}: row {r} differs outside the ignored columns")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--ignore", action="append", default=[], help="another meta.json key to skip")
    args = ap.parse_args()
    ignored = DEFAULT_IGNORED | set(args.ignore)

    def files(root):
        found = set()
        for d, _, names in os.walk(root):
            for n in names:
                if n == "meta.json" or n.endswith(".npy") or n.endswith(".csv"):
                    found.add(os.path.relpath(os.path.join(d, n), root))
        return found

    old, new = files(args.old), files(args.new)
    diffs = []
    for rel in sorted(old - new):
        diffs.append(f"{rel}: missing in {args.new}")
    for rel in sorted(new - old):
        diffs.append(f"{rel}: missing in {args.old}")
    compared = 0
    for rel in sorted(old & new):
        pa, pb = os.path.join(args.old, rel), os.path.join(args.new, rel)
        compared += 1
        if rel.endswith("meta.json"):
            with open(pa) as fa, open(pb) as fb:
                out = []
                compare_json(json.load(fa), json.load(fb), rel, ignored, out)
                diffs.extend(out)
        elif rel.endswith(".npy"):
            a, b = load_npy(pa), load_npy(pb)
            if a.dtype != b.dtype or a.shape != b.shape:
                diffs.append(f"{rel}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
            elif a.tobytes() != b.tobytes():
                diffs.append(f"{rel}: bytes differ")
        else:
            with open(pa, "rb") as fa, open(pb, "rb") as fb:
                if fa.read() != fb.read():
                    diffs.extend(compare_csv(pa, pb, rel, ignored))
    for d in diffs:
        print(d)
    print(f"compare_outputs: {compared} files compared, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
