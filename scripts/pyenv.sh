#!/usr/bin/env bash
# Creates .venv with the PyPI packages used for plots, reference fixtures and peer benchmarks
# (torch, transformers, gguf, accelerate, safetensors, numpy, matplotlib). Not needed to build or test.
# Usage: scripts/pyenv.sh [--plots-only]   (prints the python path on stdout)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
if [[ ! -x .venv/bin/python ]]; then python3 -m venv .venv >&2; fi
pkgs=(numpy matplotlib)
[[ "${1:-}" == "--plots-only" ]] || pkgs+=(torch transformers gguf accelerate safetensors sentencepiece)
missing=()
for p in "${pkgs[@]}"; do .venv/bin/python -c "import ${p}" 2>/dev/null || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "pyenv: installing ${missing[*]} from PyPI" >&2
  .venv/bin/pip install --quiet "${missing[@]}" >&2
fi
echo "$PWD/.venv/bin/python"
