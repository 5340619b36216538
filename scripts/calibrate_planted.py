#!/usr/bin/env python3
"""Calibrate the verdict rules on a planted mechanism (theory/planted_massive.md, theory/planted_sink_keys.md).

--construction massive (default): builds the planted massive activation, its twin and the planted model at
doses 0, 0.25, 0.5, 1 with `sinkscope planted massive` and runs the experiment executables (b1, b2, b3,
b4, p1) on each. --construction sink-keys: the same with `sinkscope planted sink-keys` (sink heads whose
keys read the planted spike channel; the twin's keys are blind to it; --layout llama or layernorm-gelu) and
b5 and c1 (C1: ablating the spike removes the sink; the twin's sink rests on the spike too, so C1 must say
"reproduced" there as well; C2, below). --construction p0-circuit: `sinkscope planted p0-circuit` (a position-0 circuit in blocks 0-1 whose heads
each carry the identification; the twin's head 0 carries it alone; --layout llama or layernorm-gelu), a2 and c1
(C2: self-only attention in blocks 0..P gives every position the spike; both twins keep that, so C2 must say
"reproduced" on them too).
Every model is also run with `--random-init 1`, the project's null. Prints / writes the outcome of every
rule per model: rule -> planted / twin / random / dose 0 / 0.25 / 0.5 / 1, and the dose threshold (the
smallest dose at which the rule says "reproduced"). Writes calibration.json and calibration.md in --out.

--check asserts what the construction guarantees (exit 1 otherwise):
  planted: every rule in DESIGNED says "reproduced";
  twin and random: no rule says "reproduced"; where TWIN_EXPECTED names a rule, the twin must give exactly
  that outcome (sink-keys: B5 "not reproduced"; p0-circuit: A2 and A2-massive "not reproduced", decided by
  the single-head knockout), i.e. every precondition holds and a core condition fails.
Rules the construction does not make true (P1: the planted spike has no function; B3b: no spikes at
positions >= 1) are reported, never asserted to pass. The rules and their thresholds are not touched.

  scripts/calibrate_planted.py --build build [--construction massive|sink-keys|p0-circuit] [--layout llama|layernorm-gelu]
                               [--size default|smoke] [--out out/calibration] [--check]
  (CTest: calibration_planted_massive[_smoke], calibration_planted_sink_keys[_smoke],
   calibration_planted_sink_keys_layernorm_gelu_smoke, calibration_planted_p0_circuit[_layernorm_gelu]_smoke;
   label "calibration")
"""
import argparse
import json
import os
import subprocess
import sys

EXPERIMENTS = {"massive": ["b1_spike_lifecycle", "b2_quadratic_ffn", "b3_vocab_position0", "b4_rmsnorm_sparsity",
                            "p1_massive_ablation"],
               "sink-keys": ["b5_sink_keys", "c1_spike_to_sink"],
               "p0-circuit": ["a2_p0_circuit", "c1_spike_to_sink"]}
DOSES = [0.0, 0.25, 0.5, 1.0]
# Rules each construction is designed to make true (theory/planted_massive.md P5, theory/planted_sink_keys.md
# K2). B3a needs the default size: at --smoke it scores 48 vocabulary tokens, whose Clopper-Pearson lower bound
# at 48/48 is 0.926 < 0.95.
DESIGNED = {"massive": {"default": ["B1", "B2", "B3a", "B4"], "smoke": ["B1", "B2", "B4"]},
            "sink-keys": {"default": ["B5", "C1", "C2"], "smoke": ["B5", "C1", "C2"]},
            "p0-circuit": {"default": ["A2", "A2-massive", "C2"], "smoke": ["A2", "A2-massive", "C2"]}}
# The twin's outcome where the construction fixes it: the sink-key twin keeps the spike and the sink heads
# (every precondition holds) and its keys leave the weight-predicted subspace (the core condition fails); the
# p0-circuit twin keeps the circuit and the spike, and one head's knockout removes it ("heads cooperate" fails).
TWIN_EXPECTED = {"massive": {}, "sink-keys": {"B5": "not reproduced"},
                 "p0-circuit": {"A2": "not reproduced", "A2-massive": "not reproduced"}}
# Rules whose claim the twin's switch leaves true, so the twin must say "reproduced" as well (it is no twin for
# them): the sink-key twin's sink heads still rest on the spike, because only the spike drowns position 0's
# marker in the norm (theory/planted_sink_keys.md K3), so ablating the spike removes their sink (C1); in every
# construction the spike is made from position 0's unmixed attention output (a uniformly attending detector,
# or the p0-circuit's copying heads), which neither twin's switch touches, so self-only attention at every
# position gives every position the spike (C2).
TWIN_TRUE = {"massive": [], "sink-keys": ["C1", "C2"], "p0-circuit": ["C2"]}


def run(cmd, log):
    # One thread a run: these models are tiny, and OpenMP's threads on a loaded machine cost 100x.
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    return r.returncode


def outcomes(meta_path):
    """{rule id (the registered rule_id): (outcome, decided_by, failed conditions)} from an experiment's meta.json."""
    with open(meta_path) as f:
        meta = json.load(f)
    v = meta.get("verdict", [])
    if isinstance(v, dict):
        v = [v]
    out = {}
    for x in v:
        failed = [{"name": c["name"], "value": c.get("value"), "ci": c.get("ci"), "threshold": c.get("threshold")}
                  for c in x.get("conditions", []) + x.get("preconditions", []) if not c.get("holds", True)]
        out[x.get("rule_id", x["claim"])] = {"outcome": x["outcome"], "decided_by": x.get("decided_by", ""), "failed": failed}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="the build directory (tools/sinkscope, experiments/*)")
    ap.add_argument("--cli", help="the sinkscope CLI (default BUILD/tools/sinkscope)")
    ap.add_argument("--experiments", help="the experiment executables' folder (default BUILD/experiments)")
    ap.add_argument("--out", default="out/calibration", help="output directory")
    ap.add_argument("--size", choices=["default", "smoke"], default="default", help="experiment size")
    ap.add_argument("--seed", default="1", help="seed of the planted background")
    ap.add_argument("--construction", choices=["massive", "sink-keys", "p0-circuit"], default="massive",
                    help="the planted mechanism")
    ap.add_argument("--layout", choices=["llama", "layernorm-gelu"], default="llama",
                    help="the planted model's layout (sink-keys and p0-circuit; massive uses the small Llama)")
    ap.add_argument("--check", action="store_true", help="assert the construction's guarantees (exit 1 otherwise)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cli = a.cli or os.path.join(a.build, "tools", "sinkscope")
    exe_dir = a.experiments or os.path.join(a.build, "experiments")

    build = [cli, "planted", a.construction, "--seed", a.seed]
    if a.construction in ("sink-keys", "p0-circuit"):
        build += ["--layout", a.layout]
    experiments = EXPERIMENTS[a.construction]
    designed = DESIGNED[a.construction][a.size]
    models = {}  # column -> (checkpoint, extra experiment flags)
    for dose in DOSES:
        path = os.path.join(a.out, f"planted_dose{dose}.safetensors")
        if run(build + ["--out", path, "--dose", str(dose)], path + ".log") != 0:
            sys.exit(f"sinkscope planted {a.construction} failed: see {path}.log")
        models[f"dose {dose:g}"] = (path, [])
    twin = os.path.join(a.out, "twin.safetensors")
    if run(build + ["--out", twin, "--twin"], twin + ".log") != 0:
        sys.exit(f"sinkscope planted {a.construction} --twin failed: see {twin}.log")
    planted = models["dose 1"][0]
    columns = {"planted": (planted, []), "twin": (twin, []), "random": (planted, ["--random-init", "1"])}
    columns.update(models)

    table = {}  # rule -> column -> outcome record
    for col, (ckpt, extra) in columns.items():
        for e in experiments:
            d = os.path.join(a.out, col.replace(" ", "_"), e)
            os.makedirs(d, exist_ok=True)
            cmd = [os.path.join(exe_dir, e), "--model", ckpt, "--random-tokens", "--out", d] + extra
            if a.size == "smoke":
                cmd.append("--smoke")
            rc = run(cmd, os.path.join(d, "log.txt"))
            meta = os.path.join(d, "meta.json")
            if rc != 0 or not os.path.exists(meta):
                table.setdefault(e, {})[col] = {"outcome": f"error (rc {rc})", "decided_by": "", "failed": []}
                continue
            for rule, rec in outcomes(meta).items():
                table.setdefault(rule, {})[col] = rec

    dose_cols = [f"dose {x:g}" for x in DOSES]
    result = {"construction": a.construction, "layout": a.layout if a.construction != "massive" else "llama",
              "size": a.size, "seed": a.seed, "designed": designed, "rules": {}}
    for rule, cols in table.items():
        reproduced = [x for x, c in zip(DOSES, dose_cols) if cols.get(c, {}).get("outcome") == "reproduced"]
        result["rules"][rule] = {"columns": cols, "dose_threshold": min(reproduced) if reproduced else None}
    with open(os.path.join(a.out, "calibration.json"), "w") as f:
        json.dump(result, f, indent=1)

    header = ["rule", "planted", "twin", "random"] + dose_cols + ["dose threshold"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for rule, r in result["rules"].items():
        cells = [r["columns"].get(c, {}).get("outcome", "-") for c in ["planted", "twin", "random"] + dose_cols]
        thr = "-" if r["dose_threshold"] is None else f"{r['dose_threshold']:g}"
        lines.append("| " + " | ".join([rule] + cells + [thr]) + " |")
    failed = []
    for rule, r in result["rules"].items():
        p = r["columns"].get("planted", {})
        if p.get("outcome") != "reproduced" and p.get("failed"):
            for c in p["failed"]:
                failed.append(f"- {rule} on the planted model: `{c['name']}` = {c['value']} (interval {c['ci']}, threshold {c['threshold']})")
    md = f"Planted {a.construction} ({result['layout']}), size {a.size}, seed {a.seed}\n\n" + "\n".join(lines) + "\n"
    if failed:
        md += "\nConditions that fail on the planted model:\n" + "\n".join(failed) + "\n"
    with open(os.path.join(a.out, "calibration.md"), "w") as f:
        f.write(md)
    print(md)

    if a.check:
        problems = []
        for rule in designed:
            got = result["rules"].get(rule, {}).get("columns", {}).get("planted", {}).get("outcome")
            if got != "reproduced":
                problems.append(f"{rule} on the planted model: {got} (expected reproduced)")
        for rule, r in result["rules"].items():
            for col in ["twin", "random"]:
                got = r["columns"].get(col, {}).get("outcome")
                if col == "twin" and rule in TWIN_TRUE[a.construction]:
                    if got != "reproduced":
                        problems.append(f"{rule} on the twin: {got} (expected reproduced: the twin's switch leaves the claim true)")
                    continue
                if got is None or got == "reproduced" or got.startswith("error"):
                    problems.append(f"{rule} on the {col}: {got} (expected not reproduced / not applicable)")
        for rule, want in TWIN_EXPECTED[a.construction].items():
            got = result["rules"].get(rule, {}).get("columns", {}).get("twin", {}).get("outcome")
            if got != want:
                problems.append(f"{rule} on the twin: {got} (expected {want}: every precondition holds, a core condition fails)")
        if problems:
            print("calibration check FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 1
        print("calibration check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
