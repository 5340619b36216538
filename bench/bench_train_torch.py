#!/usr/bin/env python3
"""Peer of bench/bench_train.cpp: the same Llama-style model (d 256, 4 layers, 4 heads, SwiGLU 688,
T 256, batch 8, vocab 512; RMSNorm pre-norm, RoPE half-split, tied head, no biases) and the same
optimizer step (AdamW with the same decay groups, global-norm clipping) in PyTorch on the CPU, float32
or mixed bf16 (torch.autocast, bf16 products with float32 master weights), with PyTorch's fused causal attention (F.scaled_dot_product_attention); the model is bench/torch_llama.py. Prints one JSON line like
bench_train: tokens_per_s (median step), step_s, peak_rss_mb, and gemm_gflops: PyTorch's own matrix product
rate on this machine in the same precision and threads (torch.matmul, 2048 x 2048 x 2048, operands already
in that precision, best of 3 after the steps), so that run_train_bench.sh can give both implementations'
share of their own GEMM library's rate (PyTorch bundles its own oneDNN; sinkscope uses Debian's).
    usage: bench_train_torch.py [steps=6] [threads=0 (= all cores)] [precision=float32|bf16]
"""
import json, os, resource, sys, time
import torch

from torch_llama import B, T, V, model_and_optimizer, train_step

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 0
precision = sys.argv[3] if len(sys.argv) > 3 else "float32"
assert precision in ("float32", "bf16"), precision
torch.set_num_threads(threads if threads > 0 else os.cpu_count())
torch.manual_seed(0)
model, opt = model_and_optimizer("sdpa")
gen = torch.Generator().manual_seed(1)
times, loss = [], None
for s in range(steps + 1):  # step 0 is a warm-up
    batch = torch.randint(0, V, (B, T + 1), generator=gen)
    t0 = time.perf_counter()
    loss = train_step(model, opt, batch, bf16=precision == "bf16")
    if s:
        times.append(time.perf_counter() - t0)
times.sort()
step_s = times[len(times) // 2]


def gemm_gflops(n=2048, reps=3):
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a = torch.randn(n, n, generator=gen).to(dtype)
    b = torch.randn(n, n, generator=gen).to(dtype)
    a @ b  # warm-up
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best / 1e9


print(json.dumps({"impl": "pytorch", "precision": precision, "torch": torch.__version__, "threads": torch.get_num_threads(), "steps": steps,
                  "tokens_per_step": T * B, "step_s": step_s, "tokens_per_s": T * B / step_s,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, "last_loss": loss.item(),
                  "gemm_gflops": gemm_gflops(), "gemm_n": 2048}))
