#!/usr/bin/env bash
# Runs one experiment at its --smoke size and checks the verdicts it wrote (check_verdicts.py).
# Usage: run_experiment.sh any|null EXE OUT MODEL [extra flags...]
# Exit 77 (CTest: skipped) when MODEL does not exist (SmolLM2 before scripts/fetch_model.sh).
set -euo pipefail
mode=$1 exe=$2 out=$3 model=$4
shift 4
[[ -e "$model" ]] || { echo "model $model not found: skipped"; exit 77; }
rm -rf "$out"
"$exe" --smoke --model "$model" --out "$out" "$@"
exec python3 "$(dirname "$0")/check_verdicts.py" "$mode" "$out"
