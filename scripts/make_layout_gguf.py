#!/usr/bin/env python3
"""A random-weight GGUF with the exact tensor layout of a 7–8B Q4_K_M checkpoint (issue 11, item 3).

No 7B checkpoint can be downloaded here, but its layout can be made: the same tensor names, shapes and
types as llama.cpp's `llama-quantize ... Q4_K_M` gives for Qwen2.5-7B(-Instruct) or Llama-3(.1)-8B(-Instruct),
with random but valid block data, so that loading, memory use and speed can be measured on the real sizes.

Dependencies (PyPI: gguf, llama.cpp's own writer, and numpy): `scripts/pyenv.sh` installs both in .venv,
or `python3 -m venv .venv && .venv/bin/pip install gguf numpy`.

    .venv/bin/python scripts/make_layout_gguf.py --layout qwen2-7b  --out /tmp/layouts/qwen2-7b-q4_k_m.gguf
    .venv/bin/python scripts/make_layout_gguf.py --layout llama3-8b --out /tmp/layouts/llama3-8b-q4_k_m.gguf
    .venv/bin/python scripts/make_layout_gguf.py --layout llama3.1-8b --out /tmp/layouts/llama3.1-8b-q4_k_m.gguf
    .venv/bin/python scripts/make_layout_gguf.py --layout qwen2-7b  --layers 2 --out /tmp/layouts/qwen2-7b-2layers.gguf

The full files are 4.7 and 4.9 GB: write them outside the repository. `--layers N` keeps every per-layer
shape and applies the Q4_K_M rule to N layers (as llama-quantize would on an N-layer model), for tests.
The script streams: it writes each tensor in chunks of about 32 MB, so it never holds a tensor in memory.

Layouts
  qwen2-7b   Qwen2.5-7B: 28 layers, d 3584, ff 18944, 28 query / 4 KV heads of 128, vocab 152064, biases on
             q, k, v; untied output; RoPE base 1e6; RMSNorm eps 1e-6; context 32768.
  llama3-8b  Llama-3-8B: 32 layers, d 4096, ff 14336, 32 / 8 heads of 128, vocab 128256; untied output;
             RoPE base 5e5; RMSNorm eps 1e-5; context 8192.
  llama3.1-8b  Llama-3.1-8B: the same, context 131072, and Llama 3.1's RoPE frequency factors as the F32
             tensor rope_freqs.weight [64] (llama.cpp's convert_hf_to_gguf.py writes them so, with no
             rope.scaling.type key; the values are the real ones, computed from factor 8, low/high frequency
             factors 1 and 4, original context 8192). A loader that ignores that tensor computes the wrong
             rotation at every position; sinkscope reads it into Config::rope_freq_divisors.

Tensor types: the Q4_K_M recipe of llama.cpp, src/llama-quant.cpp, llama_tensor_get_type_impl (read at
ggml-org/llama.cpp 007dbbf, 2026; unchanged in substance since k-quants were introduced in 2023):
  default type Q4_K for every 2-D weight whose name ends in "weight" and is not a norm;
  output.weight -> Q6_K (untied models; the "else if (new_type != Q8_0) new_type = Q6_K" branch);
  token_embd.weight -> the default, Q4_K (no Q4_K_M-specific rule for TOKEN_EMBD);
  blk.i.attn_v.weight -> Q6_K when use_more_bits(i_attention_wv, n_attention_wv), else Q4_K;
  blk.i.ffn_down.weight -> Q6_K when use_more_bits(i, n_layer), else Q4_K (non-Falcon);
  use_more_bits(i, n) = i < n/8 || i >= 7*n/8 || (i - n/8) % 3 == 2   (C integer division and remainder);
  norms, biases and rope_freqs stay F32 (1-D tensors are never quantized);
  a row length not divisible by 256 would fall back (Q4_K -> Q5_0, Q6_K -> Q8_0): none does in these layouts.
  general.file_type = 15 (LLAMA_FTYPE_MOSTLY_Q4_K_M), general.quantization_version = 2.

Weights: quantized blocks hold random quants with scales chosen so that the dequantized weight has mean
about 0 and std about 1/sqrt(row length) (Q4_K: each sub-block's min equals its scale and dmin = 7.5 d,
so w = d·sc·(q − 7.5); Q6_K: w = d·sc·(q − 32) with random-sign int8 scales). Norm weights are
1 + 0.02·N(0,1); biases 0.02·N(0,1). The tokenizer is a byte-level BPE ("gpt2") of the real size: the 256
byte symbols, then merged tokens made from random pairs of earlier tokens (each with its merge, so every
token is reachable and `--text` works), then the model's special tokens (control) and llama.cpp's [PAD{i}]
fillers (unused) up to the vocabulary size. It tokenizes text into valid ids, not into the real ids.

`--check` (default on) dequantizes a few tensors of the written file with gguf.quants and prints their
mean, std and whether anything is not finite.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import gguf
from gguf import GGMLQuantizationType as QT

Q4_K, Q6_K, F32 = QT.Q4_K, QT.Q6_K, QT.F32
QK_K = 256
CHUNK_BYTES = 32 << 20


# ---- the two layouts --------------------------------------------------------------------------------
LAYOUTS = {
    "qwen2-7b": dict(
        arch=gguf.MODEL_ARCH.QWEN2, name="Qwen2.5 7B Instruct (random-weight layout)",
        n_layers=28, d=3584, ff=18944, heads=28, kv_heads=4, head_dim=128, vocab=152064,
        qkv_bias=True, ctx=32768, rope_base=1e6, rms_eps=1e-6, rope_freqs=False,
        pre="qwen2", n_ordinary=151643,  # ids 0..151642 are BPE tokens, then specials, then [PAD]
        specials={151643: "<|endoftext|>", 151644: "<|im_start|>", 151645: "<|im_end|>"},
        n_specials=22, bos=151643, eos=151645, pad=151643, add_bos=False),
    "llama3-8b": dict(
        arch=gguf.MODEL_ARCH.LLAMA, name="Llama 3 8B Instruct (random-weight layout)",
        n_layers=32, d=4096, ff=14336, heads=32, kv_heads=8, head_dim=128, vocab=128256,
        qkv_bias=False, ctx=8192, rope_base=5e5, rms_eps=1e-5, rope_freqs=False,
        pre="llama-bpe", n_ordinary=128000,
        specials={128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128006: "<|start_header_id|>",
                  128007: "<|end_header_id|>", 128009: "<|eot_id|>"},
        n_specials=256, bos=128000, eos=128009, pad=None, add_bos=True),
}
# Llama 3.1 differs from Llama 3 only in its context and its RoPE frequency factors (one F32 tensor).
LAYOUTS["llama3.1-8b"] = dict(LAYOUTS["llama3-8b"], name="Llama 3.1 8B Instruct (random-weight layout)",
                              ctx=131072, rope_freqs=True)


def use_more_bits(i_layer, n_layers):
    """llama.cpp's use_more_bits, with C's truncating division and remainder (i - n/8 may be negative)."""
    def cdiv(a, b): return int(a / b)
    def cmod(a, b): return a - b * cdiv(a, b)
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or cmod(i_layer - n_layers // 8, 3) == 2


def tensor_plan(L, n_layers):
    """[(name, ne (GGUF order: row length first), type, kind)] in the order llama.cpp's converter writes."""
    d, ff, q, kv = L["d"], L["ff"], L["heads"] * L["head_dim"], L["kv_heads"] * L["head_dim"]
    tn = lambda t, i=None, suffix="weight": gguf.TENSOR_NAMES[t].format(bid=i) + "." + suffix
    T = gguf.MODEL_TENSOR
    plan = []
    if L["rope_freqs"]:
        plan.append((tn(T.ROPE_FREQS), [L["head_dim"] // 2], F32, "rope_freqs"))
    plan.append((tn(T.TOKEN_EMBD), [d, L["vocab"]], Q4_K, "embed"))
    for i in range(n_layers):
        more = use_more_bits(i, n_layers)  # attn_v is the i-th attn_v tensor: i_attention_wv == i here
        plan.append((tn(T.ATTN_NORM, i), [d], F32, "norm"))
        plan.append((tn(T.ATTN_Q, i), [d, q], Q4_K, "weight"))
        if L["qkv_bias"]: plan.append((tn(T.ATTN_Q, i, "bias"), [q], F32, "bias"))
        plan.append((tn(T.ATTN_K, i), [d, kv], Q4_K, "weight"))
        if L["qkv_bias"]: plan.append((tn(T.ATTN_K, i, "bias"), [kv], F32, "bias"))
        plan.append((tn(T.ATTN_V, i), [d, kv], Q6_K if more else Q4_K, "weight"))
        if L["qkv_bias"]: plan.append((tn(T.ATTN_V, i, "bias"), [kv], F32, "bias"))
        plan.append((tn(T.ATTN_OUT, i), [q, d], Q4_K, "weight"))
        plan.append((tn(T.FFN_NORM, i), [d], F32, "norm"))
        plan.append((tn(T.FFN_GATE, i), [d, ff], Q4_K, "weight"))
        plan.append((tn(T.FFN_UP, i), [d, ff], Q4_K, "weight"))
        plan.append((tn(T.FFN_DOWN, i), [ff, d], Q6_K if more else Q4_K, "weight"))
    plan.append((tn(T.OUTPUT_NORM), [d], F32, "norm"))
    plan.append((tn(T.OUTPUT), [d, L["vocab"]], Q6_K, "weight"))
    return plan


def nbytes(ne, qtype):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    assert ne[0] % block == 0, f"row length {ne[0]} is not a whole number of {qtype.name} blocks"
    return math.prod(ne) // block * size


# ---- random block data ---------------------------------------------------------------------------------
def pack_q4_k_scales(sc, m):
    """The 12 bytes of a Q4_K super-block's eight 6-bit scales and mins (inverse of Q4_K.get_scale_min):
    bytes 0-3: sc[0:4] | (sc[4:8] >> 4) << 6, bytes 4-7: m[0:4] | (m[4:8] >> 4) << 6,
    bytes 8-11: (sc[4:8] & 15) | (m[4:8] & 15) << 4."""
    out = np.empty(sc.shape[:-1] + (12,), np.uint8)
    out[..., 0:4] = (sc[..., 0:4] & 63) | ((sc[..., 4:8] >> 4) << 6)
    out[..., 4:8] = (m[..., 0:4] & 63) | ((m[..., 4:8] >> 4) << 6)
    out[..., 8:12] = (sc[..., 4:8] & 15) | ((m[..., 4:8] & 15) << 4)
    return out


def random_q4_k(rng, n_blocks, std):
    """Q4_K blocks (d f16, dmin f16, 12 bytes scales/mins, 128 bytes of 4-bit quants); w = d·sc·q − dmin·m.
    With m = sc and dmin = 7.5·d, w = d·sc·(q − 7.5): mean ≈ 0, std = d·rms(sc)·4.61 (q uniform in 0..15)."""
    b = np.frombuffer(rng.bytes(n_blocks * 144), np.uint8).reshape(n_blocks, 144).copy()
    sc = rng.integers(16, 64, size=(n_blocks, 8), dtype=np.uint8)
    rms_sc = math.sqrt((np.arange(16, 64, dtype=np.float64) ** 2).mean())
    d = (std / (rms_sc * math.sqrt((16 ** 2 - 1) / 12.0)) * rng.uniform(0.8, 1.2, n_blocks)).astype(np.float16)
    dmin = (d.astype(np.float32) * 7.5).astype(np.float16)
    b[:, 0:2] = d.view(np.uint8).reshape(n_blocks, 2)
    b[:, 2:4] = dmin.view(np.uint8).reshape(n_blocks, 2)
    b[:, 4:16] = pack_q4_k_scales(sc, sc)
    return b


def random_q6_k(rng, n_blocks, std):
    """Q6_K blocks (128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, d f16); w = d·sc·(q − 32),
    q uniform in 0..63 (std 18.47), scales of random sign with magnitude 16..127."""
    b = np.frombuffer(rng.bytes(n_blocks * 210), np.uint8).reshape(n_blocks, 210).copy()
    mag = rng.integers(16, 128, size=(n_blocks, 16)).astype(np.int8)
    sign = np.where(rng.random((n_blocks, 16)) < 0.5, -1, 1).astype(np.int8)
    rms_sc = math.sqrt((np.arange(16, 128, dtype=np.float64) ** 2).mean())
    d = (std / (rms_sc * math.sqrt((64 ** 2 - 1) / 12.0)) * rng.uniform(0.8, 1.2, n_blocks)).astype(np.float16)
    b[:, 192:208] = (mag * sign).view(np.uint8)
    b[:, 208:210] = d.view(np.uint8).reshape(n_blocks, 2)
    return b


def llama31_rope_freqs(head_dim, base, factor=8.0, low=1.0, high=4.0, original_ctx=8192):
    """Llama 3.1's RoPE frequency divisors, as llama.cpp's converter stores them (rope_freqs.weight)."""
    out = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi * base ** (i / head_dim)
        if wavelen < original_ctx / high: out.append(1.0)
        elif wavelen > original_ctx / low: out.append(factor)
        else:
            smooth = (original_ctx / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, np.float32)


def write_tensor(fout, rng, name, ne, qtype, kind, L):
    """Writes one tensor's data in chunks of whole rows (about CHUNK_BYTES each)."""
    if qtype == F32:
        if kind == "rope_freqs": data = llama31_rope_freqs(L["head_dim"], L["rope_base"])
        elif kind == "norm": data = (1.0 + 0.02 * rng.standard_normal(ne[0])).astype(np.float32)
        else: data = (0.02 * rng.standard_normal(ne[0])).astype(np.float32)
        data.tofile(fout)
        return
    row_blocks = ne[0] // QK_K
    rows = math.prod(ne[1:])
    row_bytes = nbytes([ne[0]], qtype)
    rows_per_chunk = max(1, CHUNK_BYTES // row_bytes)
    std = 1.0 / math.sqrt(ne[0])
    make = random_q4_k if qtype == Q4_K else random_q6_k
    for r0 in range(0, rows, rows_per_chunk):
        n = min(rows_per_chunk, rows - r0)
        make(rng, n * row_blocks, std).tofile(fout)


# ---- tokenizer -------------------------------------------------------------------------------------------
def byte_alphabet():
    """GPT-2's bytes_to_unicode, in its order (the first 256 tokens of GPT-2-style vocabularies)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def make_vocab(L, rng):
    """tokens, token types and merges of a byte-level BPE of the model's size (see the docstring)."""
    tokens = byte_alphabet()
    seen = set(tokens)
    merges = []
    while len(tokens) < L["n_ordinary"]:
        a = tokens[int(rng.integers(len(tokens)))]
        b = tokens[int(rng.integers(min(len(tokens), 4096)))]  # right parts from the shorter, earlier tokens
        t = a + b
        if len(t) > 12 or t in seen: continue
        seen.add(t)
        tokens.append(t)
        merges.append(a + " " + b)
    types = [int(gguf.TokenType.NORMAL)] * len(tokens)
    base = L["n_ordinary"]
    for i in range(base, base + L["n_specials"]):
        tokens.append(L["specials"].get(i, f"<|reserved_special_token_{i - base}|>"))
        types.append(int(gguf.TokenType.CONTROL))
    for i in range(len(tokens), L["vocab"]):
        tokens.append(f"[PAD{i}]")
        types.append(int(gguf.TokenType.UNUSED))
    assert len(tokens) == L["vocab"] and len(set(tokens)) == len(tokens)
    return tokens, types, merges


# ---- the file --------------------------------------------------------------------------------------------
def write_layout(layout, out, n_layers, seed):
    L = LAYOUTS[layout]
    rng = np.random.default_rng(seed)
    plan = tensor_plan(L, n_layers)
    arch = gguf.MODEL_ARCH_NAMES[L["arch"]]
    w = gguf.GGUFWriter(out, arch)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(L["name"] + ("" if n_layers == L["n_layers"] else f", {n_layers} of {L['n_layers']} layers"))
    w.add_block_count(n_layers)
    w.add_context_length(L["ctx"])
    w.add_embedding_length(L["d"])
    w.add_feed_forward_length(L["ff"])
    w.add_head_count(L["heads"])
    w.add_head_count_kv(L["kv_heads"])
    w.add_rope_freq_base(L["rope_base"])
    w.add_layer_norm_rms_eps(L["rms_eps"])
    if arch == "llama":
        w.add_key_length(L["head_dim"])
        w.add_value_length(L["head_dim"])
        w.add_rope_dimension_count(L["head_dim"])
        w.add_vocab_size(L["vocab"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    t0 = time.time()
    tokens, types, merges = make_vocab(L, rng)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(L["pre"])
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(L["bos"])
    w.add_eos_token_id(L["eos"])
    if L["pad"] is not None: w.add_pad_token_id(L["pad"])
    w.add_add_bos_token(L["add_bos"])
    print(f"tokenizer: {len(tokens)} tokens, {len(merges)} merges ({time.time() - t0:.1f} s)", flush=True)

    for name, ne, qtype, _ in plan:
        size = nbytes(ne, qtype)
        if qtype == F32: w.add_tensor_info(name, list(reversed(ne)), np.dtype(np.float32), size)
        else: w.add_tensor_info(name, list(reversed(ne)), np.dtype(np.float32), size, raw_dtype=qtype)
    total = sum(nbytes(ne, qt) for _, ne, qt, _ in plan)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    # Tensor data, streamed: GGUFWriter.write_tensor_data wants a whole tensor in memory (the output head
    # alone is 447 MB), so the same steps are done here chunk by chunk on the writer's open file: pad to
    # the alignment, write the tensor, and the next tensor pads again (the offsets in the tensor infos
    # above are computed by the writer with the same alignment).
    fout = w.fout[0]
    done, t0 = 0, time.time()
    for k, (name, ne, qtype, kind) in enumerate(plan):
        w.write_padding(fout, fout.tell())
        start = fout.tell()
        write_tensor(fout, rng, name, ne, qtype, kind, L)
        assert fout.tell() - start == nbytes(ne, qtype), name
        done += nbytes(ne, qtype)
        nxt = plan[k + 1][0] if k + 1 < len(plan) else ""
        if not name.startswith("blk.") or nxt.split(".")[:2] != name.split(".")[:2]:  # a layer, or a global, done
            print(f"[{k + 1}/{len(plan)}] {done / 1e9:.2f} / {total / 1e9:.2f} GB, {time.time() - t0:.0f} s: "
                  f"{name.rsplit('.', 2)[0] if name.startswith('blk.') else name}", flush=True)
    w.write_padding(fout, fout.tell())
    w.close()
    return plan


def summary(plan, out):
    counts = {}
    for _, _, qt, _ in plan: counts[qt.name] = counts.get(qt.name, 0) + 1
    size = os.path.getsize(out)
    print(f"{out}: {len(plan)} tensors ({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))}), "
          f"{size} bytes = {size / 1e9:.3f} GB")
    q6 = [n for n, _, qt, _ in plan if qt == Q6_K]
    print("Q6_K:", ", ".join(q6))


def check(out, names):
    """Dequantizes the named tensors of the written file; prints mean, std, target std and finiteness."""
    from gguf.quants import dequantize
    r = gguf.GGUFReader(out)
    by_name = {t.name: t for t in r.tensors}
    ok = True
    for n in names:
        t = by_name[n]
        rows = min(int(t.shape[1]) if len(t.shape) > 1 else 1, 64)  # the first rows are enough
        data = np.asarray(t.data)
        part = data[:rows] if data.ndim > 1 else data
        x = dequantize(part, t.tensor_type) if t.tensor_type != F32 else part.astype(np.float32)
        finite = bool(np.isfinite(x).all())
        ok &= finite
        print(f"  {n:<26} {t.tensor_type.name:<5} ne={list(map(int, t.shape))}  mean {x.mean():+.2e}  "
              f"std {x.std():.3e}  (1/sqrt(row) {1 / math.sqrt(int(t.shape[0])):.3e})  finite {finite}")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layout", required=True, choices=sorted(LAYOUTS))
    p.add_argument("--out", required=True, help="output .gguf path (the full layouts are ~4.7-4.9 GB)")
    p.add_argument("--layers", type=int, default=0, help="number of layers (default: the model's own)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the dequantization check")
    a = p.parse_args()
    L = LAYOUTS[a.layout]
    n_layers = a.layers or L["n_layers"]
    if n_layers < 1: p.error("--layers must be >= 1")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    plan = write_layout(a.layout, a.out, n_layers, a.seed)
    summary(plan, a.out)
    if a.check:
        last = n_layers - 1
        names = ["token_embd.weight", "output.weight", "output_norm.weight", f"blk.{last}.attn_q.weight",
                 f"blk.{last}.attn_v.weight", f"blk.0.attn_v.weight", f"blk.0.ffn_down.weight", f"blk.{last}.ffn_up.weight"]
        if L["qkv_bias"]: names.append("blk.0.attn_k.bias")
        if L["rope_freqs"]: names.append("rope_freqs.weight")
        if not check(a.out, names):
            sys.exit("non-finite values in the written file")


if __name__ == "__main__":
    main()
