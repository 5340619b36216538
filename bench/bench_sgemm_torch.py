#!/usr/bin/env python3
"""Peer of bench/bench_quant_matmul.cpp: PyTorch's float32 SGEMM y = x @ W.T on the same shapes (T, in, out),
the rate a float32 path (transformers, or sinkscope with dequantized weights) can reach on this CPU.
Prints one JSON line per shape: median and best GFLOP/s (2·T·in·out / wall time) of `runs` calls after a
warm-up, and gflops_cpu (process CPU time / threads in place of wall time, as bench_quant_matmul does).
    usage: bench_sgemm_torch.py [runs=7] [threads=0 (= all cores)]
"""
import json, os, sys, time
import torch

runs = max(5, int(sys.argv[1])) if len(sys.argv) > 1 else 7
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 0
torch.set_num_threads(threads if threads > 0 else os.cpu_count())
gen = torch.Generator().manual_seed(1)
for T, n_in, n_out in [(32, 3584, 18944), (512, 3584, 3584), (512, 576, 1536)]:
    x = torch.randn(T, n_in, generator=gen)
    W = torch.randn(n_out, n_in, generator=gen) / n_in ** 0.5
    y = x @ W.T  # warm-up
    times, cpu = [], []
    for _ in range(runs):
        c0, t0 = time.process_time(), time.perf_counter()
        torch.matmul(x, W.T, out=y)
        times.append(time.perf_counter() - t0)
        cpu.append((time.process_time() - c0) / torch.get_num_threads())
    times.sort()
    cpu.sort()
    flop = 2.0 * T * n_in * n_out
    print(json.dumps({"impl": "pytorch", "method": "sgemm_f32", "torch": torch.__version__,
                      "threads": torch.get_num_threads(), "T": T, "in": n_in, "out": n_out, "runs": runs,
                      "gflops": round(flop / times[len(times) // 2] * 1e-9, 1),
                      "gflops_best": round(flop / times[0] * 1e-9, 1),
                      "gflops_cpu": round(flop / cpu[len(cpu) // 2] * 1e-9, 1)}), flush=True)
