#!/usr/bin/env python3
"""A random-weight Hugging Face directory with the exact tensor layout of a 7–8B BF16 checkpoint (issue 11).

The papers' models are published on the Hub as BF16 safetensors (Qwen2.5-7B: 15.2 GB in 4 shards). Loaded
as float32 they need about 30 GB; with `--weights file` sinkscope keeps their BF16 maps memory-mapped. No
such checkpoint can be downloaded here, so this writes one with the same config.json, tensor names, shapes,
dtype and sharding (model-0000i-of-0000n.safetensors + model.safetensors.index.json), with random values:
linear maps N(0, 1/row length), norms 1 + 0.02·N(0, 1), biases 0.02·N(0, 1). No tokenizer: drive it with
`--tokens`. Only numpy is needed (`scripts/pyenv.sh` has it).

    .venv/bin/python scripts/make_layout_safetensors.py --layout qwen2-7b  --out /tmp/layouts/qwen2-7b-bf16
    .venv/bin/python scripts/make_layout_safetensors.py --layout llama3-8b --out /tmp/layouts/llama3-8b-bf16
    .venv/bin/python scripts/make_layout_safetensors.py --layout olmoe-1b-7b --out /tmp/layouts/olmoe-bf16
    .venv/bin/python scripts/make_layout_safetensors.py --layout qwen2-7b --layers 2 --out /tmp/layouts/qwen2-2l

The full directories are 15.2, 16.1 and 13.8 GB (OLMoE: 64 experts a layer): write them outside the
repository. `--layers N` keeps every per-layer shape. Each tensor is written in chunks of rows (about 64 MB),
so memory stays small.
"""
import argparse
import json
import math
import os
import time

import numpy as np

LAYOUTS = {
    # Qwen2.5-7B-Instruct's config.json (the keys sinkscope and transformers read).
    "qwen2-7b": dict(
        config=dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_size=3584,
                    intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                    num_key_value_heads=4, vocab_size=152064, max_position_embeddings=32768,
                    rope_theta=1000000.0, rms_norm_eps=1e-6, hidden_act="silu", tie_word_embeddings=False,
                    use_sliding_window=False, sliding_window=131072, max_window_layers=28,
                    bos_token_id=151643, eos_token_id=151645, torch_dtype="bfloat16"),
        qkv_bias=True),
    # Meta-Llama-3-8B-Instruct's config.json.
    "llama3-8b": dict(
        config=dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=4096,
                    intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                    num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192,
                    rope_theta=500000.0, rms_norm_eps=1e-5, hidden_act="silu", tie_word_embeddings=False,
                    attention_bias=False, mlp_bias=False, bos_token_id=128000, eos_token_id=128009,
                    torch_dtype="bfloat16"),
        qkv_bias=False),
    # allenai/OLMoE-1B-7B-0924's config.json: 64 experts of d_ff 1024 per layer, 8 routed per token,
    # QK-norm over the whole projections; 6.9 B parameters, 1.3 B active.
    "olmoe-1b-7b": dict(
        config=dict(architectures=["OlmoeForCausalLM"], model_type="olmoe", hidden_size=2048,
                    intermediate_size=1024, num_hidden_layers=16, num_attention_heads=16,
                    num_key_value_heads=16, num_experts=64, num_experts_per_tok=8, norm_topk_prob=False,
                    vocab_size=50304, max_position_embeddings=4096, rope_theta=10000.0, rms_norm_eps=1e-5,
                    hidden_act="silu", tie_word_embeddings=False, attention_bias=False, bos_token_id=None,
                    eos_token_id=50279, pad_token_id=1, torch_dtype="bfloat16"),
        qkv_bias=False),
}
CHUNK_BYTES = 64 << 20
SHARD_BYTES = 4 << 30  # about what the Hub's shards hold


def tensor_plan(L, n_layers):
    """[(name, shape, kind)] in the Hub's order (embedding, layers, norm, head)."""
    c = L["config"]
    d, ff, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    plan = [("model.embed_tokens.weight", [V, d], "embed")]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        plan += [(p + "input_layernorm.weight", [d], "norm"),
                 (p + "self_attn.q_proj.weight", [q, d], "weight"),
                 (p + "self_attn.k_proj.weight", [kv, d], "weight"),
                 (p + "self_attn.v_proj.weight", [kv, d], "weight")]
        if L["qkv_bias"]:
            plan += [(p + "self_attn.q_proj.bias", [q], "bias"), (p + "self_attn.k_proj.bias", [kv], "bias"),
                     (p + "self_attn.v_proj.bias", [kv], "bias")]
        plan += [(p + "self_attn.o_proj.weight", [d, q], "weight")]
        if "num_experts" in c:  # OLMoE: QK-norm gains, a router and one (gate, up, down) per expert
            plan += [(p + "self_attn.q_norm.weight", [q], "norm"), (p + "self_attn.k_norm.weight", [kv], "norm"),
                     (p + "post_attention_layernorm.weight", [d], "norm"),
                     (p + "mlp.gate.weight", [c["num_experts"], d], "weight")]
            for e in range(c["num_experts"]):
                x = p + f"mlp.experts.{e}."
                plan += [(x + "gate_proj.weight", [ff, d], "weight"), (x + "up_proj.weight", [ff, d], "weight"),
                         (x + "down_proj.weight", [d, ff], "weight")]
            continue
        plan += [(p + "post_attention_layernorm.weight", [d], "norm"),
                 (p + "mlp.gate_proj.weight", [ff, d], "weight"),
                 (p + "mlp.up_proj.weight", [ff, d], "weight"),
                 (p + "mlp.down_proj.weight", [d, ff], "weight")]
    plan += [("model.norm.weight", [d], "norm"), ("lm_head.weight", [V, d], "weight")]
    return plan


def bf16_bits(x):
    """float32 → bfloat16 bits, round to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_values(fout, rng, shape, kind):
    if kind == "norm":
        bf16_bits(1.0 + 0.02 * rng.standard_normal(shape[0])).tofile(fout)
        return
    if kind == "bias":
        bf16_bits(0.02 * rng.standard_normal(shape[0])).tofile(fout)
        return
    rows, cols = shape
    std = 1.0 / math.sqrt(cols) if kind == "weight" else 1.0
    per_chunk = max(1, CHUNK_BYTES // (2 * cols))
    for r0 in range(0, rows, per_chunk):
        n = min(per_chunk, rows - r0)
        bf16_bits(std * rng.standard_normal((n, cols), dtype=np.float32)).tofile(fout)


def write_shard(path, entries, rng):
    header, offset = {}, 0
    for name, shape, kind in entries:
        size = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for name, shape, kind in entries:
            write_values(f, rng, shape, kind)
    return offset


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layout", choices=sorted(LAYOUTS), required=True)
    ap.add_argument("--out", required=True, help="directory to create")
    ap.add_argument("--layers", type=int, default=0, help="number of layers (0: the model's)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    L = LAYOUTS[a.layout]
    config = dict(L["config"])
    if a.layers: config["num_hidden_layers"] = a.layers
    n_layers = config["num_hidden_layers"]
    plan = tensor_plan(L, n_layers)
    # Shards of about SHARD_BYTES, split between tensors.
    shards, current, size = [], [], 0
    for e in plan:
        b = 2 * math.prod(e[1])
        if current and size + b > SHARD_BYTES:
            shards.append(current)
            current, size = [], 0
        current.append(e)
        size += b
    shards.append(current)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    rng = np.random.default_rng(a.seed)
    weight_map, total, t0 = {}, 0, time.time()
    for i, entries in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        total += write_shard(os.path.join(a.out, name), entries, rng)
        for e in entries: weight_map[e[0]] = name
        print(f"{name}: {len(entries)} tensors, {total / 1e9:.2f} GB so far, {time.time() - t0:.0f} s", flush=True)
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    print(f"{a.out}: {a.layout}, {n_layers} layers, {len(plan)} tensors, {total / 1e9:.2f} GB of BF16 in {len(shards)} shard(s)")


if __name__ == "__main__":
    main()
