#!/usr/bin/env python3
"""Peer for bench_forward: llama.cpp's llama-bench (bench/llama_cpp_peer.sh builds it) on the same GGUF in its
own types, prompt processing of the same number of tokens (-p N -n 0), same threads. llama.cpp captures no
activations: it is the speed of a plain forward. Prints one JSON line: the median of llama-bench's per-repeat
tokens/s, and the peak RSS of the llama-bench process (the model is memory-mapped, as in sinkscope).
usage: bench_forward_llamacpp.py LLAMA_BENCH MODEL.gguf [tokens=512] [repeats=5] [threads=nproc]"""
import json, os, resource, statistics, subprocess, sys

bench, model = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 512
repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 5
threads = int(sys.argv[5]) if len(sys.argv) > 5 else os.cpu_count()
run = subprocess.run([bench, "-m", model, "-p", str(n), "-n", "0", "-t", str(threads), "-r", str(repeats), "-o", "json"],
                     check=True, capture_output=True, text=True)
result = json.loads(run.stdout)[0]
samples = result.get("samples_ts") or [result["avg_ts"]]
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"peer": "llama.cpp", "build": result.get("build_commit"), "model_type": result.get("model_type"),
                  "tokens": n, "threads": threads, "repeats": len(samples),
                  "tokens_per_s": statistics.median(samples), "peak_rss_mb": peak_mb}))
