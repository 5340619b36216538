#!/usr/bin/env bash
# The scale sweep's device path (a4_scale_sweep --device cuda, cuda::HostedTrainer):
#   1. --preset gpu --plan needs no data and no GPU: one `--device cuda --job I` command per job;
#   2. the smoke grid trained on the GPU must give the CPU's checkpoints: the same rows (job, step), and
#      validation loss, top |x| and ‖x₀‖ ratio within 1e-3 relative (float32 on both, sums in another
#      order, 8 steps). Without a CUDA device (or in a build without the CUDA trainer) step 2 exits 77,
#      which CTest reports as skipped, after checking that the refusal says why.
# Usage: check_sweep_device.sh EXE OUT
set -euo pipefail
exe=$1 out=$2
rm -rf "$out"
mkdir -p "$out"

"$exe" --preset gpu --plan --out "$out/plan" > "$out/plan.txt"
jobs=$(grep -c -- '--device cuda .*--job [0-9]' "$out/plan.txt" || true)
[[ $jobs -eq 6 ]] || { echo "FAIL: --preset gpu --plan printed $jobs job commands, expected 6:"; cat "$out/plan.txt"; exit 1; }
echo "ok: --preset gpu --plan prints 6 device jobs"

if ! "$exe" --smoke --device cuda --out "$out/cuda" 2> "$out/cuda.err"; then
  if grep -q -e 'no CUDA device' -e 'without the CUDA trainer' "$out/cuda.err"; then
    echo "skipped: $(grep -m1 -e 'no CUDA device' -e 'without the CUDA trainer' "$out/cuda.err")"
    exit 77
  fi
  echo "FAIL: --device cuda failed:"; cat "$out/cuda.err"; exit 1
fi
"$exe" --smoke --device cpu --out "$out/cpu" 2> "$out/cpu.err"
exec python3 - "$out/cpu/checkpoints.csv" "$out/cuda/checkpoints.csv" <<'PY'
import csv, math, sys
cpu, dev = ([r for r in csv.DictReader(open(p))] for p in sys.argv[1:3])
assert [(r["job"], r["step"]) for r in cpu] == [(r["job"], r["step"]) for r in dev], "different checkpoint rows"
bad = []
for a, b in zip(cpu, dev):
    for col in ("val_loss", "top1_abs", "p0_norm_ratio"):
        x, y = float(a[col]), float(b[col])
        if not math.isclose(x, y, rel_tol=1e-3, abs_tol=1e-6):
            bad.append(f"{a['job']} step {a['step']} {col}: cpu {x} cuda {y}")
print("\n".join(bad) if bad else f"ok: {len(cpu)} checkpoints agree (val_loss, top1_abs, p0_norm_ratio within 1e-3)")
sys.exit(1 if bad else 0)
PY
