#!/usr/bin/env bash
# SmolLM2-135M forward over 512 tokens with every layer's residual stream captured: sinkscope against
# Hugging Face transformers (CPU, eager, output_hidden_states=True) and llama.cpp (llama-bench prompt
# processing on the same GGUF in its own types, no capture; built by bench/llama_cpp_peer.sh), in the same
# run, same threads.
# Prints both JSON lines and the ratios, then the machine's single-precision GEMM rate (torch, 2048³,
# same threads) and the tokens/s a forward of this arithmetic would reach at that rate: the ceiling
# for any float32 implementation on this machine.
# Usage: bench/run_forward_bench.sh [tokens=512] [repeats=5]
set -euo pipefail
cd "$(dirname "$0")/.."
tokens=${1:-512}; repeats=${2:-5}
scripts/fetch_model.sh
py=$(scripts/pyenv.sh)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target bench_forward >/dev/null
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
ours=$(build/bench/bench_forward "$model" data/sample.txt "$tokens" "$repeats")
echo "$ours"
# The same forward with the GGUF's linear maps kept in their types, multiplied with 8-bit activations.
int8=$(build/bench/bench_forward "$model" data/sample.txt "$tokens" "$repeats" file int8)
echo "$int8"
peer=$("$py" bench/bench_forward_hf.py "$model" data/sample.txt "$tokens" "$repeats" 2>/dev/null)
echo "$peer"
llama=$("$py" bench/bench_forward_llamacpp.py "$(bench/llama_cpp_peer.sh)" "$model" "$tokens" "$repeats" "$(nproc)")
echo "$llama"
"$py" - "$ours" "$peer" "$llama" "$int8" <<'PY'
import json, sys
a, b, c, q = (json.loads(s) for s in sys.argv[1:5])
print(f"file-type weights, int8 compute: {q['tokens_per_s']:.0f} tokens/s = {q['tokens_per_s'] / b['tokens_per_s']:.2f}x transformers, "
      f"{q['tokens_per_s'] / c['tokens_per_s']:.2f}x llama.cpp; peak RSS {q['peak_rss_mb']:.0f} MB")
print(f"tokens/s ratio sinkscope/transformers: {a['tokens_per_s'] / b['tokens_per_s']:.2f}x "
      f"({a['tokens_per_s']:.0f} vs {b['tokens_per_s']:.0f})")
print(f"tokens/s ratio sinkscope/llama.cpp: {a['tokens_per_s'] / c['tokens_per_s']:.2f}x "
      f"({a['tokens_per_s']:.0f} vs {c['tokens_per_s']:.0f}; llama.cpp peak RSS {c['peak_rss_mb']:.0f} MB)")
print(f"peak RSS ratio: {a['peak_rss_mb'] / b['peak_rss_mb']:.2f} ({a['peak_rss_mb']:.0f} MB vs {b['peak_rss_mb']:.0f} MB)")
print(f"load: {a['load_s']:.2f} s vs {b['load_s']:.2f} s")
import time, torch
n = 2048
x, y = torch.randn(n, n), torch.randn(n, n)
for _ in range(2): x @ y
times = []
for _ in range(7):
    t0 = time.perf_counter(); x @ y; times.append(time.perf_counter() - t0)
peak = 2 * n**3 / sorted(times)[3] / 1e9
ceiling = a["tokens"] / (a["gflop"] / peak)
print(f"SGEMM rate (torch {n}^3, {torch.get_num_threads()} threads, median of 7): {peak:.0f} GFLOP/s; "
      f"forward {a['gflop']:.1f} GFLOP: sinkscope {a['gflop_per_s']:.0f} GFLOP/s ({a['gflop_per_s'] / peak:.0%} of it)")
print(f"float32 ceiling at that rate: {ceiling:.0f} tokens/s = {ceiling / b['tokens_per_s']:.2f}x transformers")
PY
