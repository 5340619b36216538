#!/usr/bin/env python3
"""The library's folders are floors: a header includes headers of its own folder and of the floors below it,
never of a floor above or beside it, so no two folders include each other and each can be read (and
tested) without the ones above.

    core  <  io, tokenizer, theory  <  layers  <  model  <  analysis, train  <  cuda

Reads every #include "sinkscope/<folder>/..." under include/sinkscope/<folder>/ and prints each one that
breaks the order; exits 1 when there is any.
    usage: check_include_floors.py REPO
"""
import pathlib
import re
import sys

FLOOR = {"core": 0, "io": 1, "tokenizer": 1, "theory": 1, "layers": 2, "model": 3, "analysis": 4, "train": 4, "cuda": 5}


def main():
    root = pathlib.Path(sys.argv[1]) / "include" / "sinkscope"
    bad, seen = [], 0
    for path in sorted(root.glob("*/*")):
        folder = path.parent.name
        if folder not in FLOOR:
            bad.append(f"{path}: folder '{folder}' has no floor in this script")
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"sinkscope/(\w+)/', line)
            if not m:
                continue
            seen += 1
            target = m.group(1)
            if target != folder and FLOOR.get(target, 99) >= FLOOR[folder]:
                bad.append(f"{path}:{n}: {folder}/ includes {target}/, which is not below it")
    for b in bad:
        print(b)
    print(f"check_include_floors: {seen} includes read, {len(bad)} out of order")
    return 1 if bad or seen == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
