#!/usr/bin/env python3
"""The rule set is pre-registered: its current hash must have a dated entry in the changelog.

    check_rule_set.py SINKSCOPE_CLI CHANGELOG.md            the check CTest runs (rule_set_registered)
    check_rule_set.py SINKSCOPE_CLI CHANGELOG.md --entry    prints a changelog entry for the current set

`sinkscope rules --json` prints the set: {"version", "set_hash", "rules": {id: {"hash", "canonical"}}}.
This script
  1. recomputes every rule's SHA-256 from its canonical JSON text with Python's hashlib, and the set hash
     from {"rules": {id: hash}, "version": v} serialised with sorted keys and no whitespace: an
     independent check of sinkscope's own SHA-256 and canonical form;
  2. reads CHANGELOG.md, whose entries open with a line
         ## YYYY-MM-DD · set <64 hex digits>
     followed by a "Why:" paragraph and one line per rule, "- `<rule id>` <64 hex digits>";
  3. passes when the current set hash opens an entry that has a date, a non-empty "Why:" and the same
     per-rule hashes. Otherwise it fails and names every rule whose hash differs from the newest
     entry's (changed, added or removed), so a threshold, scope, locator or outcome changed without a
     changelog entry fails CI naming the rule.
"""
import hashlib
import json
import re
import subprocess
import sys

HEADER = re.compile(r"^## (\d{4}-\d{2}-\d{2}) · set ([0-9a-f]{64})\s*$")
RULE_LINE = re.compile(r"^- `(.+)` ([0-9a-f]{64})\s*$")


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_set(cli):
    out = subprocess.run([cli, "rules", "--json"], check=True, capture_output=True, text=True).stdout
    data = json.loads(out)
    problems = []
    for rid, r in data["rules"].items():
        h = hashlib.sha256(r["canonical"].encode("utf-8")).hexdigest()
        if h != r["hash"]:
            problems.append(f"rule {rid}: sinkscope's hash {r['hash']} differs from hashlib's {h}")
        if json.loads(r["canonical"]).get("id") != rid:
            problems.append(f"rule {rid}: its canonical JSON names another id")
    index = {"rules": {rid: r["hash"] for rid, r in data["rules"].items()}, "version": data["version"]}
    set_hash = hashlib.sha256(canonical(index).encode("utf-8")).hexdigest()
    if set_hash != data["set_hash"]:
        problems.append(f"set hash: sinkscope's {data['set_hash']} differs from hashlib's {set_hash}")
    return data, problems


def read_changelog(path):
    entries, cur = [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = HEADER.match(line)
            if m:
                cur = {"date": m.group(1), "set": m.group(2), "why": "", "rules": {}}
                entries.append(cur)
                continue
            if cur is None:
                continue
            m = RULE_LINE.match(line)
            if m:
                cur["rules"][m.group(1)] = m.group(2)
            elif line.startswith("Why:"):
                cur["why"] = line[4:].strip()
            elif cur["why"] and line.strip() and not line.startswith("-"):
                cur["why"] += " " + line.strip()
    return entries


def entry_text(data, date="YYYY-MM-DD"):
    lines = [f"## {date} · set {data['set_hash']}", "", "Why: <what changed, the paper sentence it now follows, and why>", ""]
    lines += [f"- `{rid}` {r['hash']}" for rid, r in sorted(data["rules"].items())]
    return "\n".join(lines)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    cli, changelog = sys.argv[1], sys.argv[2]
    data, problems = read_set(cli)
    if "--entry" in sys.argv[3:]:
        print(entry_text(data))
        return 0
    entries = read_changelog(changelog)
    current = {rid: r["hash"] for rid, r in data["rules"].items()}
    match = [e for e in entries if e["set"] == data["set_hash"]]
    if match:
        e = match[-1]
        if not e["why"] or e["why"].startswith("<"):
            problems.append(f"the changelog entry of set {data['set_hash'][:12]} ({e['date']}) gives no reason (Why:)")
        if e["rules"] != current:
            problems.append(f"the changelog entry of set {data['set_hash'][:12]} lists other rule hashes than the set has")
    else:
        newest = entries[0]["rules"] if entries else {}
        changed = sorted(r for r in current if r in newest and newest[r] != current[r])
        added = sorted(r for r in current if r not in newest)
        removed = sorted(r for r in newest if r not in current)
        what = [f"rule {r} changed" for r in changed] + [f"rule {r} added" for r in added] + [f"rule {r} removed" for r in removed]
        problems.append(
            f"the rule set's hash {data['set_hash'][:12]} has no entry in {changelog}: " + ("; ".join(what) or "version changed") +
            ". A rule changes only with a dated entry saying why; `tests/experiments/check_rule_set.py "
            "SINKSCOPE_CLI CHANGELOG --entry` prints one to fill in (newest first).")
    for p in problems:
        print("rule set: " + p)
    if problems:
        print("0 passed, 1 failed")
        return 1
    print(f"rule set {data['set_hash'][:12]} (version {data['version']}, {len(current)} rules) is registered "
          f"({match[-1]['date']}); hashes agree with hashlib")
    return 0


if __name__ == "__main__":
    sys.exit(main())
