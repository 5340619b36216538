#!/usr/bin/env bash
# A 7B/8B Hugging Face BF16 checkpoint on this machine: the random-weight layout of
# scripts/make_layout_safetensors.py (made under build/layouts/ when missing, 15–16 GB), run by sinkscope
# with its BF16 maps memory-mapped (`--weights file`; compute exact and bf16, every resid_post captured) and
# by transformers in bfloat16 (its stored dtype; every hidden state returned) in the same run, same threads:
# tokens/s and peak RSS of each. A float32 load needs ≈ 30 GB and is refused by the memory check.
# Usage: bench/run_layout_bf16_bench.sh [layout=qwen2-7b|llama3-8b] [tokens=32] [repeats=2] [peers="exact bf16 transformers"]
set -euo pipefail
cd "$(dirname "$0")/.."
layout=${1:-qwen2-7b}; tokens=${2:-32}; repeats=${3:-2}; peers=${4:-exact bf16 transformers}
py=$(scripts/pyenv.sh)
model=${LAYOUT_DIR:-build/layouts/$layout-bf16}
if [[ ! -f $model/model.safetensors.index.json ]]; then
  mkdir -p "$(dirname "$model")"
  "$py" scripts/make_layout_safetensors.py --layout "$layout" --out "$model"
fi
if [[ -z ${SKIP_BUILD:-} ]]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target bench_forward >/dev/null
fi
bench/machine.sh "$layout BF16, $tokens tokens"
results=()
for p in $peers; do
  if [[ $p == transformers ]]; then
    results+=("$("$py" bench/bench_forward_hf.py "$model" - "$tokens" "$repeats" "$(nproc)")")
  else
    results+=("$(build/bench/bench_forward "$model" - "$tokens" "$repeats" file "$p")")
  fi
  echo "${results[-1]}"
done
"$py" - "${results[@]}" <<'PY'
import json, sys
rows = [json.loads(s) for s in sys.argv[1:]]
peer = next((r for r in rows if r["impl"] == "transformers"), None)
for r in rows:
    name = r["impl"] + (" " + r["compute"] if "compute" in r else " " + r.get("dtype", ""))
    ratio = f" = {r['tokens_per_s'] / peer['tokens_per_s']:.2f}x transformers" if peer and r is not peer else ""
    print(f"{name}: {r['tokens_per_s']:.2f} tokens/s{ratio}; peak RSS {r['peak_rss_mb'] / 1024:.2f} GB")
PY
