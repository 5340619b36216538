#!/usr/bin/env bash
# The scale sweep's --precision bf16 (a4_scale_sweep; bf16 products, float32 accumulation and master weights):
#   1. the smoke grid in bf16 writes the same checkpoint rows as in float32, every job's run.json says bf16,
#      its validation losses differ from float32's (the flag changed the arithmetic) but by < 0.02 nats
#      (8 steps of tiny models; the trainer's own test bounds a longer Zipf run at 0.005);
#   2. --plan repeats --precision bf16 in every job command, so that `--plan | parallel` runs bf16 jobs;
#   3. a job checkpointed in float32 is not resumed in bf16 (the error names the checkpoint), nor with --bos
#      added (the error names the setting and both values: any setting that differs is refused), but is
#      resumed with the flags it was started with;
#   4. --device cuda refuses bf16 (the CUDA trainer computes in float32).
# Usage: check_sweep_precision.sh EXE OUT
set -euo pipefail
exe=$1 out=$2
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

"$exe" --smoke --out "$out/f32" 2> "$out/f32.err" || { cat "$out/f32.err"; fail "float32 smoke run"; }
"$exe" --smoke --precision bf16 --out "$out/bf16" 2> "$out/bf16.err" || { cat "$out/bf16.err"; fail "bf16 smoke run"; }
python3 - "$out/f32" "$out/bf16" <<'PY'
import csv, glob, json, os, sys
f32, bf16 = sys.argv[1:3]
rows = [list(csv.DictReader(open(os.path.join(d, "checkpoints.csv")))) for d in (f32, bf16)]
assert [(r["job"], r["step"]) for r in rows[0]] == [(r["job"], r["step"]) for r in rows[1]], "different checkpoint rows"
assert json.load(open(os.path.join(bf16, "meta.json")))["config"]["precision"] == "bf16"
runs = glob.glob(os.path.join(bf16, "runs", "*", "run.json"))
assert runs and all(json.load(open(p))["precision"] == "bf16" for p in runs), "a bf16 job's run.json does not say bf16"
assert all(json.load(open(p))["precision"] == "float32" for p in glob.glob(os.path.join(f32, "runs", "*", "run.json")))
diffs = [abs(float(a["val_loss"]) - float(b["val_loss"])) for a, b in zip(*rows) if int(a["step"]) > 0]
assert diffs, "no trained checkpoints to compare"
assert max(diffs) > 0, "bf16 gave float32's losses bit for bit: the flag did not reach the products"
assert max(diffs) < 0.02, f"bf16 validation loss {max(diffs):.4f} nats from float32's"
print(f"ok: bf16 smoke grid: {len(diffs)} trained checkpoints, validation loss within {max(diffs):.2e} nats of float32")
PY

"$exe" --smoke --precision bf16 --plan --out "$out/plan" > "$out/plan.txt" 2> /dev/null
total=$(grep -c -- '--job [0-9]' "$out/plan.txt" || true)
with=$(grep -c -- '--precision bf16 .*--job [0-9]' "$out/plan.txt" || true)
[[ $total -gt 0 && $with -eq $total ]] || { cat "$out/plan.txt"; fail "--plan: $with of $total job commands carry --precision bf16"; }
echo "ok: --plan repeats --precision bf16 in its $total job commands"

"$exe" --smoke --job 0 --out "$out/resume" 2> /dev/null
rm "$out"/resume/runs/*/done.json
if "$exe" --smoke --job 0 --precision bf16 --out "$out/resume" 2> "$out/resume.err"; then fail "a float32 checkpoint was resumed in bf16"; fi
grep -q 'checkpoint.safetensors: the job was trained with --precision float32, this run asks for bf16' "$out/resume.err" ||
  { cat "$out/resume.err"; fail "the refusal does not name the checkpoint and both precisions"; }
if "$exe" --smoke --job 0 --bos --out "$out/resume" 2> "$out/resume_bos.err"; then fail "a checkpoint was resumed with --bos added"; fi
grep -q "checkpoint.safetensors: this run's settings differ from the checkpoint's (.*/task/bos: false -> true" "$out/resume_bos.err" ||
  { cat "$out/resume_bos.err"; fail "the refusal of --bos does not name the setting and both values"; }
"$exe" --smoke --job 0 --out "$out/resume" 2> "$out/resume2.err" || { cat "$out/resume2.err"; fail "float32 resume"; }
grep -q 'resuming' "$out/resume2.err" && ls "$out"/resume/runs/*/done.json > /dev/null || fail "the float32 job did not resume and finish"
echo "ok: a float32 checkpoint is refused in bf16 and with --bos, and resumed in float32"

if "$exe" --smoke --device cuda --precision bf16 --out "$out/cuda" 2> "$out/cuda.err"; then fail "--device cuda accepted bf16"; fi
grep -q 'the CUDA trainer computes in float32' "$out/cuda.err" || { cat "$out/cuda.err"; fail "the cuda refusal does not say why"; }
echo "ok: --device cuda refuses bf16"
