#!/usr/bin/env python3
"""Peer for bench_forward: Hugging Face transformers, CPU, eager attention, output_hidden_states=True (every
layer's residual stream), the same tokens. Prints one JSON line.
  MODEL.gguf: transformers' GGUF loader (dequantised to float32), the text of TEXT_FILE tokenized.
  a Hugging Face directory (e.g. scripts/make_layout_safetensors.py's BF16 7B layout): loaded in its stored
    dtype (bfloat16 for a BF16 checkpoint: a float32 copy of a 7B model would need 30 GB), with TEXT_FILE
    "-": the fixed ids bench_forward takes for "-". In bfloat16 transformers also rounds every activation to
    bf16, while sinkscope's bf16 compute rounds only each product's inputs and keeps activations float32.
usage: bench_forward_hf.py MODEL TEXT_FILE|- [tokens=512] [repeats=5] [threads]"""
import json, pathlib, resource, statistics, sys, time
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

path = pathlib.Path(sys.argv[1])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 512
repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 5
if len(sys.argv) > 5:
    torch.set_num_threads(int(sys.argv[5]))
t0 = time.perf_counter()
if path.is_dir():
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype="auto", attn_implementation="eager").eval()
else:
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
load_s = time.perf_counter() - t0
if sys.argv[2] == "-":
    ids = [(i * 7919 + 13) % model.config.vocab_size for i in range(n)]
else:
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    ids = tok(pathlib.Path(sys.argv[2]).read_text(), add_special_tokens=False)["input_ids"]
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
print(json.dumps(dict(impl="transformers", dtype=str(next(model.parameters()).dtype), torch=torch.__version__,
                      threads=torch.get_num_threads(), tokens=n, repeats=repeats, load_s=load_s,
                      forward_median_s=med, tokens_per_s=n / med, peak_rss_mb=rss)))
