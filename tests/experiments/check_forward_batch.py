#!/usr/bin/env python3
"""An experiment gives the same results one sample per forward pass and in batches.

Usage: check_forward_batch.py EXE OUT MODEL [extra flags...]

Runs EXE at its --smoke size twice, with --forward-batch 1 and --forward-batch 4, and requires meta.json's
results and verdicts and every file written beside it (.npy, .csv) to be byte for byte equal:
model::forward_each batches only where a batch is bit-exact with one sample at a time, and the experiment
must see its samples in the same order either way. The batched run must also have run fewer forward passes
(meta.json "forward_passes"), so that a silent fallback to one sample at a time cannot pass.
Exit 77 (CTest: skipped) when MODEL does not exist.
"""
import filecmp
import json
import os
import shutil
import subprocess
import sys


def main() -> int:
    exe, out, model, *extra = sys.argv[1:]
    if not os.path.exists(model):
        print(f"model {model} not found: skipped")
        return 77
    runs = {}
    for batch in (1, 4):
        d = os.path.join(out, f"forward_batch_{batch}")
        shutil.rmtree(d, ignore_errors=True)
        subprocess.run([exe, "--smoke", "--model", model, "--out", d, "--forward-batch", str(batch), *extra], check=True)
        runs[batch] = d
    one, four = runs[1], runs[4]
    problems = []
    m1 = json.load(open(os.path.join(one, "meta.json")))
    m4 = json.load(open(os.path.join(four, "meta.json")))
    if m4.get("forward_batch") != 4:
        problems.append(f"meta.json records forward_batch {m4.get('forward_batch')}, not 4")
    passes = (m1.get("forward_passes"), m4.get("forward_passes"))
    if not (isinstance(passes[0], int) and isinstance(passes[1], int) and passes[1] < passes[0]):
        problems.append(f"forward passes {passes[0]} one at a time and {passes[1]} in batches: nothing was batched")
    for key in ("results", "verdict"):
        if m1.get(key) != m4.get(key):
            problems.append(f"meta.json '{key}' differs")
    files = sorted(f for f in os.listdir(one) if f != "meta.json")
    if not files:
        problems.append("the run wrote no data file to compare")
    for f in files:
        if not os.path.exists(os.path.join(four, f)):
            problems.append(f"{f} missing from the batched run")
        elif not filecmp.cmp(os.path.join(one, f), os.path.join(four, f), shallow=False):
            problems.append(f"{f} differs")
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print(f"results, verdicts and {len(files)} files equal byte for byte with --forward-batch 1 and 4")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
