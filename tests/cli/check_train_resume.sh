#!/usr/bin/env bash
# sinkscope-train --resume: the CLI loads the run's checkpoint (here of a finished smoke run, so it stops
# at its last step; tests/train/test_trainer.cpp checks that 3 + 3 steps through a checkpoint equal 6), and
# a flag that would change a saved setting (here --steps and --lr) is refused with the flags named,
# instead of being silently ignored; a float32 run is not resumed in double or the reverse.
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
if "$exe" --resume --quiet --double --out "$out" > /dev/null 2> "$out/double.err"; then fail "--resume --double continued a float32 run in double"; fi
grep -q "trained in float32: drop --double" "$out/double.err" || { cat "$out/double.err"; fail "the --double refusal does not say why"; }
"$exe" --smoke --quiet --double --out "$out/double" > /dev/null
if "$exe" --resume --quiet --out "$out/double" > /dev/null 2> "$out/float.err"; then fail "--resume continued a double run in float32"; fi
grep -q "trained in double: give --double" "$out/float.err" || { cat "$out/float.err"; fail "the refusal does not ask for --double"; }
"$exe" --resume --quiet --double --out "$out/double" > /dev/null || fail "--resume --double of a double run"
echo "ok: --resume continues from the checkpoint and refuses flags that would change its settings"
