#!/usr/bin/env python3
"""Tiny checkpoint files with and without the BOS keys, for tests/tokenizer/test_bos.cpp and
tests/analysis/test_bos.cpp (tokenizer/bos.hpp, analysis/bos.hpp). Standard library only.

    python3 scripts/make_bos_fixtures.py [--out tests/fixtures/tokenizer/bos]

Each GGUF is version 3 with metadata only (no tensors), written by hand from the format (the file magic,
version, tensor count, key count, then key, value type and value per key); each Hugging Face "directory" holds
only the JSON files the BOS convention is read from. What each says, and so what a test expects:

  gguf_add_true.gguf     4 tokens, bos_token_id 2, add_bos_token true      (Gemma: BOS is 2, used)
  gguf_add_false.gguf    4 tokens, bos_token_id 1, add_bos_token false     (SmolLM2's keys)
  gguf_absent.gguf       4 tokens, bos_token_id 1, no add_bos_token key    (stories260K's keys)
  gguf_no_id.gguf        4 tokens, neither key
  gguf_bad_id.gguf       4 tokens, bos_token_id 7 (outside the vocabulary)
  gguf_bad_add.gguf      4 tokens, bos_token_id 1, add_bos_token the string "yes"
  hf_add_true/           tokenizer_config.json bos_token {"content": "<bos>"}, add_bos_token true;
                         tokenizer.json with <bos> an added token of id 2; config.json bos_token_id 2
  hf_add_false/          tokenizer_config.json bos_token "<s>", add_bos_token false; <s> id 1 in model.vocab
  hf_template/           no add_bos_token; tokenizer.json's TemplateProcessing opens with <|begin|> (id 5)
  hf_config_only/        config.json bos_token_id 3 only
  hf_none/               config.json without bos_token_id
"""
import argparse
import json
import os
import struct

GGUF_UINT32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY = 4, 7, 8, 9


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(v):
    """(value type, bytes) of a Python bool, int, str or list of str."""
    if isinstance(v, bool):
        return GGUF_BOOL, struct.pack("<B", 1 if v else 0)
    if isinstance(v, int):
        return GGUF_UINT32, struct.pack("<I", v)
    if isinstance(v, str):
        return GGUF_STRING, gguf_string(v)
    if isinstance(v, list):
        return GGUF_ARRAY, struct.pack("<IQ", GGUF_STRING, len(v)) + b"".join(gguf_string(x) for x in v)
    raise TypeError(v)


def write_gguf(path, kv):
    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
    for key, value in kv.items():
        t, data = gguf_value(value)
        out += gguf_string(key) + struct.pack("<I", t) + data
    with open(path, "wb") as f:
        f.write(out)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def tokenizer_json(vocab, added=(), post=None):
    return {"version": "1.0", "added_tokens": [{"id": i, "content": c, "special": True} for c, i in added],
            "post_processor": post, "model": {"type": "BPE", "vocab": vocab, "merges": []}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "tokenizer", "bos"))
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    base = {"general.architecture": "llama", "tokenizer.ggml.model": "gpt2",
            "tokenizer.ggml.tokens": ["<unk>", "<s>", "<bos>", "a"]}
    write_gguf(os.path.join(out, "gguf_add_true.gguf"),
               {**base, "tokenizer.ggml.bos_token_id": 2, "tokenizer.ggml.add_bos_token": True})
    write_gguf(os.path.join(out, "gguf_add_false.gguf"),
               {**base, "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.add_bos_token": False})
    write_gguf(os.path.join(out, "gguf_absent.gguf"), {**base, "tokenizer.ggml.bos_token_id": 1})
    write_gguf(os.path.join(out, "gguf_no_id.gguf"), base)
    write_gguf(os.path.join(out, "gguf_bad_id.gguf"), {**base, "tokenizer.ggml.bos_token_id": 7})
    write_gguf(os.path.join(out, "gguf_bad_add.gguf"),
               {**base, "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.add_bos_token": "yes"})

    vocab = {"<unk>": 0, "<s>": 1, "a": 3, "b": 4}
    d = os.path.join(out, "hf_add_true")
    write_json(os.path.join(d, "tokenizer_config.json"),
               {"bos_token": {"content": "<bos>", "lstrip": False}, "add_bos_token": True})
    write_json(os.path.join(d, "tokenizer.json"), tokenizer_json(vocab, added=[("<bos>", 2)]))
    write_json(os.path.join(d, "config.json"), {"model_type": "gemma2", "bos_token_id": 2})

    d = os.path.join(out, "hf_add_false")
    write_json(os.path.join(d, "tokenizer_config.json"), {"bos_token": "<s>", "add_bos_token": False})
    write_json(os.path.join(d, "tokenizer.json"), tokenizer_json(vocab))
    write_json(os.path.join(d, "config.json"), {"model_type": "llama", "bos_token_id": 1})

    d = os.path.join(out, "hf_template")
    post = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<|begin|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<|begin|>": {"id": "<|begin|>", "ids": [5], "tokens": ["<|begin|>"]}}}
    write_json(os.path.join(d, "tokenizer_config.json"), {"tokenizer_class": "PreTrainedTokenizerFast"})
    write_json(os.path.join(d, "tokenizer.json"), tokenizer_json(vocab, added=[("<|begin|>", 5)], post=post))

    write_json(os.path.join(out, "hf_config_only", "config.json"), {"model_type": "llama", "bos_token_id": 3})
    write_json(os.path.join(out, "hf_none", "config.json"), {"model_type": "gpt2"})


if __name__ == "__main__":
    main()
