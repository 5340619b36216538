#!/usr/bin/env bash
# sinkscope-train --resume: the CLI loads the run's checkpoint (here of a finished smoke run, so it stops
# at its last step; tests/train/test_trainer.cpp checks that 3 + 3 steps through a checkpoint equal 6), and
# a flag that would change a saved setting (here --steps and --lr) is refused with the flags named,
# instead of being silently ignored.
# Usage: check_train_resume.sh SINKSCOPE_TRAIN OUT
set -euo pipefail
exe=$1 out=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out"
"$exe" --smoke --quiet --out "$out" > /dev/null
steps=$(grep -c '"step"' "$out/trace.jsonl") || true
[ "$steps" -ge 2 ] || fail "the smoke run wrote $steps trace records"
"$exe" --resume --quiet --out "$out" > "$out/resume.txt" || fail "resume of the smoke run"
grep -q "resumed $out/checkpoint.safetensors at step 20" "$out/resume.txt" || { cat "$out/resume.txt"; fail "no 'resumed … at step 20'"; }
if "$exe" --resume --quiet --out "$out" --steps 40 --lr 1e-2 > /dev/null 2> "$out/refused.err"; then
  fail "--resume accepted --steps and --lr, which it would ignore"
fi
grep -q "are refused: --steps --lr" "$out/refused.err" || { cat "$out/refused.err"; fail "the refusal does not name --steps and --lr"; }
echo "ok: --resume continues from the checkpoint and refuses flags that would change its settings"
