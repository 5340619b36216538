#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, fetches SmolLM2-135M and prints the
# per-layer massive-activation and attention-sink summary over the sample text in data/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch_model.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target sinkscope_cli
mkdir -p out
build/tools/sinkscope stats models/SmolLM2-135M-Instruct.Q4_1.gguf --text-file data/sample.txt --seq-len 64 \
  --json out/stats_smollm2.json
echo "summary also written to out/stats_smollm2.json"
