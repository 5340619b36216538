#!/usr/bin/env bash
# A 7B/8B model on this machine: the random-weight Q4_K_M layout of scripts/make_layout_gguf.py (made under
# build/layouts/ when missing, 4.7–4.9 GB), run by sinkscope with its linear maps kept in their GGUF types
# (exact, int8 and bf16 compute, every resid_post captured; bf16 only where oneDNN is built in) and by llama.cpp's llama-bench (prompt processing,
# no capture) in the same run, same threads: tokens/s and peak RSS of each. A float32 load of this model
# needs ≈ 30 GB and is refused by the memory check.
# Usage: bench/run_layout_bench.sh [layout=qwen2-7b|llama3-8b] [tokens=32] [repeats=2]
set -euo pipefail
cd "$(dirname "$0")/.."
layout=${1:-qwen2-7b}; tokens=${2:-32}; repeats=${3:-2}
py=$(scripts/pyenv.sh)
model=build/layouts/$layout-q4_k_m.gguf
if [[ ! -f $model ]]; then
  mkdir -p build/layouts
  "$py" scripts/make_layout_gguf.py --layout "$layout" --out "$model"
fi
if [[ -z ${SKIP_BUILD:-} ]]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target bench_forward >/dev/null
fi
bench/machine.sh "$layout, $tokens tokens"
exact=$(build/bench/bench_forward "$model" data/sample.txt "$tokens" "$repeats" file exact); echo "$exact"
int8=$(build/bench/bench_forward "$model" data/sample.txt "$tokens" "$repeats" file int8); echo "$int8"
bf16=$(build/bench/bench_forward "$model" data/sample.txt "$tokens" "$repeats" file bf16) || bf16='{}'; echo "$bf16"
llama=$("$py" bench/bench_forward_llamacpp.py "$(bench/llama_cpp_peer.sh)" "$model" "$tokens" "$repeats" "$(nproc)"); echo "$llama"
"$py" - "$exact" "$int8" "$llama" "$bf16" <<'PY'
import json, sys
e, q, c, b = (json.loads(s) for s in sys.argv[1:5])
for name, r in (("exact", e), ("int8", q), ("bf16", b)):
    if not r:
        print(f"sinkscope {name}: failed (its error is above; bf16 needs oneDNN)")
        continue
    print(f"sinkscope {name}: {r['tokens_per_s']:.2f} tokens/s = {r['tokens_per_s'] / c['tokens_per_s']:.2f}x llama.cpp "
          f"({c['tokens_per_s']:.2f}); peak RSS {r['peak_rss_mb'] / 1024:.2f} GB vs {c['peak_rss_mb'] / 1024:.2f} GB")
PY
