#!/usr/bin/env python3
"""Peer for bench_forward on a Hugging Face directory (e.g. scripts/make_layout_safetensors.py's BF16 7B
layout): transformers loads it in its stored dtype (bfloat16 for a BF16 checkpoint: a float32 copy of a 7B
model would need 30 GB), CPU, eager attention, output_hidden_states=True (every layer's residual stream),
the same fixed token ids as bench_forward with TEXT_FILE "-". Prints one JSON line.
Note the arithmetic differs: transformers in bfloat16 also rounds every activation to bf16, while
sinkscope's bf16 compute rounds only the inputs of each product and keeps activations float32.
usage: bench_forward_hf_dir.py DIR [tokens=32] [repeats=2] [threads]"""
import json, resource, statistics, sys, time
import torch
from transformers import AutoModelForCausalLM

path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 32
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 2
if len(sys.argv) > 4:
    torch.set_num_threads(int(sys.argv[4]))
t0 = time.perf_counter()
model = AutoModelForCausalLM.from_pretrained(path, dtype="auto", attn_implementation="eager").eval()
load_s = time.perf_counter() - t0
vocab = model.config.vocab_size
x = torch.tensor([[(i * 7919 + 13) % vocab for i in range(n)]])
times = []
with torch.no_grad():
    for r in range(repeats + 1):
        t0 = time.perf_counter()
        out = model(x, output_hidden_states=True)
        s = time.perf_counter() - t0
        assert len(out.hidden_states) == model.config.num_hidden_layers + 1
        if r:
            times.append(s)
med = statistics.median(times)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(json.dumps(dict(impl="transformers", dtype=str(next(model.parameters()).dtype), torch=torch.__version__,
                      threads=torch.get_num_threads(), tokens=n, repeats=repeats, load_s=load_s,
                      forward_median_s=med, tokens_per_s=n / med, peak_rss_mb=rss)))
