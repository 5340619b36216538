#!/usr/bin/env python3
"""Peer for bench_forward: Hugging Face transformers on the same GGUF (dequantised to float32), CPU,
eager attention, output_hidden_states=True, the same 512 tokens. Prints one JSON line.
usage: bench_forward_hf.py MODEL.gguf TEXT_FILE [tokens=512] [repeats=5]"""
import json, pathlib, resource, statistics, sys, time
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

path = pathlib.Path(sys.argv[1]); text = pathlib.Path(sys.argv[2]).read_text()
n = int(sys.argv[3]) if len(sys.argv) > 3 else 512
repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 5
t0 = time.perf_counter()
model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32,
                                             attn_implementation="eager").eval()
load_s = time.perf_counter() - t0
tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
ids = tok(text, add_special_tokens=False)["input_ids"]
while len(ids) < n:
    ids = ids + ids
x = torch.tensor([ids[:n]])
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
print(json.dumps(dict(impl="transformers", torch=torch.__version__, threads=torch.get_num_threads(), tokens=n,
                      repeats=repeats, load_s=load_s, forward_median_s=med, tokens_per_s=n / med, peak_rss_mb=rss)))
