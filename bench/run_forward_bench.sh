#!/usr/bin/env bash
# SmolLM2-135M forward over 512 tokens with every layer's residual stream captured: sinkscope (float32;
# float32 weights with bf16 products; BF16 weights (rounded once at load) with bf16 products; file-type
# weights with int8 products) against Hugging Face
# transformers (CPU, eager, output_hidden_states=True) and llama.cpp (llama-bench prompt processing on the
# same GGUF in its own types, no capture; built by bench/llama_cpp_peer.sh), in the same run, same threads,
# the programs alternating `rounds` times so that all see the same machine load.
# Prints every JSON line and a table of medians over rounds (each round's figure is itself the median of
# `repeats` forwards) with the ratios, then the machine's single-precision GEMM rate (torch, 2048³, same
# threads) and the tokens/s a forward of this arithmetic would reach at that rate — the ceiling for any
# float32 implementation on this machine — and the same ceiling at the bf16 GEMM rate (oneDNN, 2048³) and
# at the rate of the forward's own bf16 linear products (bench_forward with compute=bf16 measures both).
# Usage: [BUILD=build] [SKIP_BUILD=1] bench/run_forward_bench.sh [tokens=512] [repeats=5] [threads=nproc] [rounds=1]
set -euo pipefail
cd "$(dirname "$0")/.."
tokens=${1:-512}; repeats=${2:-5}; threads=${3:-$(nproc)}; rounds=${4:-1}
build=${BUILD:-build}
scripts/fetch_model.sh
py=${PYTHON:-}
if [[ -z "$py" ]]; then
  if [[ -x /work/fixenv/bin/python ]] && /work/fixenv/bin/python -c "import torch, transformers" 2>/dev/null; then py=/work/fixenv/bin/python
  else py=$(scripts/pyenv.sh); fi
fi
if [[ -z "${SKIP_BUILD:-}" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target bench_forward >/dev/null
fi
cores=$(nproc)  # before OMP_NUM_THREADS, which nproc obeys
export OMP_NUM_THREADS=$threads  # Eigen, oneDNN (OpenMP build) and torch
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
llama_bench=$(bench/llama_cpp_peer.sh)
bench/machine.sh "$threads threads"
lines=()
run() { local l; l=$("$@"); echo "$l"; lines+=("$l"); }
for r in $(seq "$rounds"); do
  run "$build/bench/bench_forward" "$model" data/sample.txt "$tokens" "$repeats"
  # The dense products with bf16 inputs, float32 accumulation (oneDNN: AMX or AVX512-BF16).
  run "$build/bench/bench_forward" "$model" data/sample.txt "$tokens" "$repeats" float32 bf16
  # The same products with the maps rounded to BF16 once at load (--weights bf16): no conversion per call.
  run "$build/bench/bench_forward" "$model" data/sample.txt "$tokens" "$repeats" bf16 bf16
  # The GGUF's linear maps kept in their types, multiplied with 8-bit activations.
  run "$build/bench/bench_forward" "$model" data/sample.txt "$tokens" "$repeats" file int8
  run "$py" bench/bench_forward_hf.py "$model" data/sample.txt "$tokens" "$repeats" 2>/dev/null
  run "$py" bench/bench_forward_llamacpp.py "$llama_bench" "$model" "$tokens" "$repeats" "$threads"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$tokens" "$threads" "${lines[@]}" <<'PY'
import json, statistics, sys, time
tokens, threads = int(sys.argv[1]), int(sys.argv[2])
rows = [json.loads(a) for a in sys.argv[3:]]
def pick(pred):
    return [r for r in rows if pred(r)]
groups = {
    "sinkscope float32": pick(lambda r: r.get("impl") == "sinkscope" and r["compute"] == "exact" and r["weights"] == "float32"),
    "sinkscope bf16 products": pick(lambda r: r.get("impl") == "sinkscope" and r["compute"] == "bf16" and r["weights"] == "float32"),
    "sinkscope BF16 weights + bf16 products": pick(lambda r: r.get("impl") == "sinkscope" and r["weights"] == "bf16"),
    "sinkscope file-type + int8": pick(lambda r: r.get("impl") == "sinkscope" and r["compute"] == "int8"),
    "transformers (float32)": pick(lambda r: r.get("impl") == "transformers"),
    "llama.cpp (no capture)": pick(lambda r: r.get("peer") == "llama.cpp"),
}
med = lambda g, k: statistics.median(r[k] for r in g)
hf = med(groups["transformers (float32)"], "tokens_per_s")
ll = med(groups["llama.cpp (no capture)"], "tokens_per_s")
print(f"\nSmolLM2-135M Q4_1, {tokens} tokens, {threads} threads, median over {len(groups['transformers (float32)'])} round(s)")
print("| implementation | tokens/s | forward s | peak RSS MB | × transformers | × llama.cpp | each round's tokens/s | fresh buffers: tokens/s, × transformers |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for name, g in groups.items():
    t = med(g, "tokens_per_s")
    fs = f"{tokens / t:.3f}"
    # sinkscope's timed loop reuses its logits matrix and capture cache (bench_forward.cpp); fresh_* allocates both per forward.
    fresh = f"{med(g, 'fresh_tokens_per_s'):.0f}, {med(g, 'fresh_tokens_per_s') / hf:.2f}×" if "fresh_tokens_per_s" in g[0] else "—"
    print(f"| {name} | {t:.0f} | {fs} | {med(g, 'peak_rss_mb'):.0f} | {t / hf:.2f}× | {t / ll:.2f}× | "
          + ", ".join(f"{r['tokens_per_s']:.0f}" for r in g) + f" | {fresh} |")
a = groups["sinkscope float32"][0]
b16 = groups["sinkscope bf16 products"]
import torch
n = 2048
x, y = torch.randn(n, n), torch.randn(n, n)
for _ in range(2): x @ y
times = []
for _ in range(7):
    t0 = time.perf_counter(); x @ y; times.append(time.perf_counter() - t0)
peak = 2 * n**3 / sorted(times)[3] / 1e9
ceiling = a["tokens"] / (a["gflop"] / peak)
print(f"\nforward: {a['gflop']:.1f} GFLOP ({a['gflop'] / a['tokens'] * 1e3:.0f} MFLOP/token, linear maps + head + causal attention)")
print(f"SGEMM rate (torch {n}^3, {torch.get_num_threads()} threads, median of 7): {peak:.0f} GFLOP/s; "
      f"float32 ceiling {ceiling:.0f} tokens/s = {ceiling / hf:.2f}x transformers")
g2048 = med(b16, "bf16_gemm_2048_gflop_per_s")
glin = med(b16, "bf16_linear_gflop_per_s")
lin_s, conv_s = med(b16, "bf16_linear_s"), med(b16, "bf16_weight_convert_s")
for what, rate in (("bf16 GEMM rate (oneDNN 2048^3)", g2048), ("the forward's bf16 linear products at their shapes", glin)):
    c = a["tokens"] / (a["gflop"] / rate)
    print(f"{what}: {rate:.0f} GFLOP/s; the whole forward at that rate: {c:.0f} tokens/s = {c / hf:.2f}x transformers")
print(f"bf16 forward: its linear products alone take {lin_s:.3f} s of the {tokens / med(b16, 'tokens_per_s'):.3f} s, "
      f"of which converting the weights to bf16 on every call {conv_s:.3f} s")
PY
