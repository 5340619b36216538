#!/usr/bin/env bash
# Prints the table "theory prediction vs measurement on SmolLM2-135M" for the theory modules 1-4
# (cone model, quadratic-form FFN, RMSNorm sparsification, sink geometry): builds and runs the
# experiments that measure them (A3, B2, B4, B5; about a minute on 2 cores after the build), then
# scripts/theory_table.py reads their out/<experiment>/ outputs.
# Usage: scripts/theory_table.sh [--no-run] [--smoke] [--build-dir build]
#   --no-run  only print, from the outputs already in out/ (e.g. after scripts/reproduce.sh)
#   --smoke   run the experiments at their test size into out/smoke/ (a check of the command, not a measurement)
set -euo pipefail
cd "$(dirname "$0")/.."
run=1; smoke=""; bdir=build; out=out
while (($#)); do
  case "$1" in
    --no-run) run=0 ;;
    --smoke) smoke="--smoke"; out=out/smoke ;;
    --build-dir) bdir="$2"; shift ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "theory_table: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
experiments=(a3_cone_model b2_quadratic_ffn b4_rmsnorm_sparsity b5_sink_keys)
py=$(scripts/pyenv.sh --plots-only)
if ((run)); then
  scripts/setup.sh >&2
  scripts/fetch_model.sh >&2
  scripts/fetch_corpus.sh >&2
  cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$bdir" -j"$(nproc)" --target "${experiments[@]}" >&2
  export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
  for e in "${experiments[@]}"; do
    echo "== $e $smoke" >&2
    "$bdir"/experiments/"$e" $smoke --out "$out/$e" >&2
  done
fi
"$py" scripts/theory_table.py --out "$out"
