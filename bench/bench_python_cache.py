#!/usr/bin/env python3
"""run_with_cache from Python against TransformerLens-style capture in transformers, in the same run.

SmolLM2-135M, 512 tokens of data/sample.txt (repeated), every layer's residual stream after the block
captured: sinkscope's `m.run_with_cache(ids, names=[every blocks.{l}.hook_resid_post])` against a
transformers model loaded from the same GGUF (dequantised to float32, eager attention, as
bench/bench_forward_hf.py) with a forward hook on each decoder layer that keeps its output (what
TransformerLens's hook_resid_post caches). Same ids, same threads, the two timed alternately, medians
over the repeats after one warm-up each. Prints both medians, the ratio and how far the captured
residual streams of the two agree; a third line times sinkscope with weights="file", compute="int8".
Needs a Python with the sinkscope module, torch and transformers, e.g. after
`/work/fixenv/bin/pip install --no-deps <the wheel>` (see docs/python.md).
usage: bench_python_cache.py [MODEL.gguf] [tokens=512] [repeats=7] [threads=2]"""
import os
import pathlib
import statistics
import sys
import time

model_path = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "models/SmolLM2-135M-Instruct.Q4_1.gguf")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 512
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 7
threads = int(sys.argv[4]) if len(sys.argv) > 4 else 2
os.environ["OMP_NUM_THREADS"] = str(threads)  # before either library starts its OpenMP runtime

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

import sinkscope  # noqa: E402

torch.set_num_threads(threads)
text = (pathlib.Path(__file__).resolve().parents[1] / "data" / "sample.txt").read_text()

t0 = time.perf_counter()
m = sinkscope.load(str(model_path))
ours_load = time.perf_counter() - t0
ids = m.to_tokens(text, bos=False)
while len(ids) < n:
    ids = np.concatenate([ids, ids])
ids = np.ascontiguousarray(ids[:n])
L = m.config["n_layers"]
names = [f"blocks.{l}.hook_resid_post" for l in range(L)]

t0 = time.perf_counter()
hf = AutoModelForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name, dtype=torch.float32,
                                          attn_implementation="eager").eval()
hf_load = time.perf_counter() - t0
hf_cache = {}


def keep(name):
    def hook(module, inputs, output):  # TransformerLens-style: cache the layer's output, the residual stream
        hf_cache[name] = (output[0] if isinstance(output, tuple) else output).detach()
    return hook


handles = [layer.register_forward_hook(keep(names[l])) for l, layer in enumerate(hf.model.layers)]
x = torch.tensor(ids[None, :].astype(np.int64))


# The same model with its linear maps kept in their GGUF types and 8-bit activations (the CLI's
# --weights file --compute int8), a third line: faster, ~1e-2 relative on logits (docs/large-models-and-precision.md).
m8 = sinkscope.load(str(model_path), weights="file", compute="int8")


def run_ours(model=m):
    logits, cache = model.run_with_cache(ids, names=names)
    assert len(cache) == L and logits.shape == (n, model.config["vocab_size"])
    return cache


def run_int8():
    return run_ours(m8)


def run_hf():
    hf_cache.clear()
    with torch.no_grad():
        out = hf(x)
    assert len(hf_cache) == L
    return out


ours_t, hf_t, int8_t = [], [], []
for r in range(repeats + 1):
    for fn, times in ((run_ours, ours_t), (run_hf, hf_t), (run_int8, int8_t)):
        t0 = time.perf_counter()
        fn()
        s = time.perf_counter() - t0
        if r:  # the first round warms up
            times.append(s)

cache = run_ours()
run_hf()
worst = max(float(np.linalg.norm(cache[k] - hf_cache[k][0].numpy()) / np.linalg.norm(hf_cache[k][0].numpy())) for k in names)
a, b = statistics.median(ours_t), statistics.median(hf_t)
print(f"machine: {os.cpu_count()} cores, {threads} threads each; SmolLM2 {model_path.name}, {n} tokens, "
      f"{L} x hook_resid_post captured, median of {repeats}")
print(f"sinkscope {sinkscope.__version__} run_with_cache: {a:.3f} s ({n / a:.0f} tokens/s; load {ours_load:.2f} s)")
print(f"transformers (torch {torch.__version__}) forward hooks on {L} layers: {b:.3f} s ({n / b:.0f} tokens/s; load {hf_load:.2f} s)")
print(f"ratio transformers / sinkscope: {b / a:.2f}x")
c = statistics.median(int8_t)
print(f"sinkscope run_with_cache, weights='file', compute='int8': {c:.3f} s ({n / c:.0f} tokens/s); "
      f"ratio transformers / this: {b / c:.2f}x")
print(f"agreement: largest relative error of a captured resid_post, sinkscope vs transformers: {worst:.2e}")
