#!/usr/bin/env bash
# Training throughput: sinkscope (bench/bench_train.cpp) against the same model and optimizer in PyTorch
# (bench/bench_train_torch.py) on this CPU, in the same run and with the same threads, alternating the
# two `rounds` times so that both see the same machine load. Llama-style d 256, 4 layers, 4 heads,
# SwiGLU 688, T 256, batch 8, vocab 512. In float32 and in mixed bf16 (sinkscope --precision bf16: oneDNN
# bf16 products, float32 master weights; PyTorch: torch.autocast bf16). Prints every JSON line, then per
# precision the median tokens/s of each, the ratio, peak RSS, and the fraction of the machine's GEMM
# FLOP/s in that precision (Eigen SGEMM; oneDNN bf16) that sinkscope reaches: against a large square
# product, and against the model's own product shapes run one thread each (bench_train.cpp); and PyTorch's
# own 2048^3 matmul rate in that precision with the share its step reaches (bench_train_torch.py).
# Usage: bench/run_train_bench.sh [threads=$(nproc)] [steps=5] [rounds=3] [precisions="float32 bf16"]
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}; steps=${2:-5}; rounds=${3:-3}; precisions=${4:-float32 bf16}
py=$(scripts/pyenv.sh)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target bench_train >/dev/null
bench/machine.sh
results=()
for r in $(seq "$rounds"); do
  for p in $precisions; do
    results+=("$(build/bench/bench_train "$steps" "$threads" sequences 2048 "$p")")
    echo "${results[-1]}"
    results+=("$("$py" bench/bench_train_torch.py "$steps" "$threads" "$p")")
    echo "${results[-1]}"
  done
done
"$py" - "${results[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(a) for a in sys.argv[1:]]
for precision in dict.fromkeys(r.get("precision", "float32") for r in rows):
    ours = [r for r in rows if r["impl"] == "sinkscope" and r.get("precision", "float32") == precision]
    peer = [r for r in rows if r["impl"] == "pytorch" and r.get("precision", "float32") == precision]
    a = statistics.median(r["tokens_per_s"] for r in ours)
    b = statistics.median(r["tokens_per_s"] for r in peer)
    a_best = max(r["tokens_per_s"] for r in ours)
    b_best = max(r["tokens_per_s"] for r in peer)
    frac = statistics.median(r["fraction_of_gemm"] for r in ours)
    gemm = statistics.median(r["gemm_gflops"] for r in ours)
    print(f"[{precision}] tokens/s (median of {len(ours)} rounds): sinkscope {a:.0f}, PyTorch {b:.0f} -> ratio {a / b:.2f}x")
    print(f"[{precision}] tokens/s (best round, the least disturbed): sinkscope {a_best:.0f}, PyTorch {b_best:.0f} -> ratio {a_best / b_best:.2f}x")
    print(f"[{precision}] peak RSS: sinkscope {max(r['peak_rss_mb'] for r in ours):.0f} MB, PyTorch {max(r['peak_rss_mb'] for r in peer):.0f} MB")
    print(f"[{precision}] sinkscope reaches {frac:.0%} of the machine's measured GEMM rate in {precision} ({gemm:.0f} GFLOP/s, "
          f"{ours[0]['gemm_n']}^3, {ours[0]['threads']} threads); model FLOPs/step {ours[0]['model_gflop_per_step']:.1f} G")
    shape_frac = statistics.median(r["fraction_of_model_shape_gemm"] for r in ours)
    shape_gemm = statistics.median(r["model_shape_gemm_gflops"] for r in ours)
    print(f"[{precision}] and {shape_frac:.0%} of the GEMM rate at the model's own product shapes, one thread per "
          f"product as in training ({shape_gemm:.0f} GFLOP/s)")
    # PyTorch's step, counted with the same model FLOPs, against its own library's 2048^3 rate (torch.matmul).
    peer_gemm = statistics.median(r["gemm_gflops"] for r in peer)
    peer_frac = statistics.median(ours[0]["model_gflop_per_step"] / r["step_s"] / r["gemm_gflops"] for r in peer)
    print(f"[{precision}] PyTorch's own GEMM rate: {peer_gemm:.0f} GFLOP/s (torch.matmul 2048^3, operands already in "
          f"{precision}); its step reaches {peer_frac:.0%} of it")
PY
