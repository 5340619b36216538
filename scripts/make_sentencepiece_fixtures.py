#!/usr/bin/env python3
"""Reference fixtures for SentencePiece tokenization (tests/fixtures/tokenizer/sp_*), made by the peers.

Regenerate (PyPI: sentencepiece, tokenizers, transformers, gguf, protobuf):
    python3 -m venv .venv && .venv/bin/pip install sentencepiece tokenizers transformers gguf protobuf
    .venv/bin/python scripts/make_sentencepiece_fixtures.py

What it writes, and the peer behind each file:
  sp_unigram.model, sp_bpe.model (not committed; in the output folder only while it runs)
      Vocabularies of 800 pieces trained by `sentencepiece` itself on the corpus (data/corpus/*.txt when
      fetched, else data/sample.txt): a Unigram and a BPE model, byte_fallback=True, identity
      normalization, no removal of extra whitespace, whitespace-only pieces allowed (Llama-2's settings).
  sp_<model>.gguf
      The vocabulary as a GGUF tokenizer with no tensors (tokenizer.ggml.model = "llama", tokens, scores,
      token types, BOS/EOS/UNK ids), written with gguf-py.
  sp_<model>/tokenizer.json          (Hugging Face's Llama form: normalizer Prepend("▁") + Replace(" ", "▁"))
  sp_unigram_metaspace/tokenizer.json (transformers' non-legacy form: Replace + Metaspace(prepend_scheme="first"))
      The model part from transformers' converter (SpmConverter.build_tokenizer_from_spm_proto: Unigram, or
      BPE with merges ranked by piece score and byte_fallback), with <unk>, <s>, </s> as special added tokens.
  sp_reference.json
      Texts (corpus lines, hand-picked edge cases: non-Latin scripts, emoji, runs of spaces and newlines,
      control characters that only byte fallback covers, seeded random strings) and for each model:
        "sentencepiece": ids from SentencePieceProcessor.encode (what both tokenizer.json forms must give,
            except where HF's Metaspace drops the dummy prefix of a text that starts with a space: those
            texts' HF ids are under "metaspace_differs");
        "llama_cpp": the ids llama.cpp's SPM tokenizer gives for the GGUF. llama.cpp merges the pair of
            highest score whatever model the vocabulary came from, which is SentencePiece's BPE encoding, so
            these are SentencePieceProcessor.encode on the same pieces with model_type set to BPE (for the
            BPE model, the same as "sentencepiece"). llama-cpp-python would be the direct peer; it is
            published on PyPI as source only and compiling llama.cpp takes longer than this script may.
      and "stories260K": ids for the first 80 texts from ../shared/models/stories260K.gguf's vocabulary (a llama2.c
      SentencePiece BPE vocabulary), by SentencePieceProcessor on a model built from the GGUF's pieces.
  out/sp_corpus_reference.json (not committed, about 10 MB)
      The same ids for every line of the corpus, for the [slow] test that checks the C++ on all of it.
The script checks the peers against each other over the whole corpus (every line), prints the counts,
and fails if `tokenizers` and `sentencepiece` disagree anywhere except the Metaspace leading-space case.
"""
import io
import json
import os
import random
import sys

import gguf
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb
from tokenizers import AddedToken, Tokenizer
from transformers.convert_slow_tokenizer import SpmConverter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "fixtures", "tokenizer")
STORIES = os.path.join(REPO, "..", "shared", "models", "stories260K.gguf")
VOCAB = 800

EDGE = [
    "", " ", "  ", "Hello world", "Hello  world", "   leading spaces", "trailing spaces   ", "a  b   c    d",
    "line one\nline two\n\nline four\n", "\n", "\n\n\n", "tab\there\t\tand there", "\r\n windows \r\n",
    "def f(x):\n    return x ** 2  # square\n", "naïve café déjà vu", "Grüße aus München", "Привет, мир!",
    "Γειά σου Κόσμε", "こんにちは世界", "你好，世界", "안녕하세요", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया",
    "emoji 😀🎉👍🏽 and flags 🇩🇪 and zwj 👨‍👩‍👧", "control \x01\x02\x1f\x7f chars", "nul \x00 byte",
    "mixed ▁ lower one eighth block ▁▁", "▁starts with the block",
    "1234567890 3.14159 -42", "x" * 120, "ab" * 50, "   ", "\t", "\u3000ideographic space\u00a0nbsp",
    "Straße ǅ ﬁ ligature Ⅻ ①", "quotes “ ” ‘ ’ « » and dashes – —", "math ∑ ∫ √ ∞ ≤ ≥",
]
ALPHABET = list("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ  0123456789.,;:!?'\"()-_\n\t") + [
    "é", "ü", "ß", "я", "ж", "日", "本", "😀", "🎉", "\x01", "\x7f", "▁", "  ", "the ", "ing", " of", "\u00a0", "\u2028"]


def random_texts(count, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40))) for _ in range(count)]


def corpus_lines():
    folder = os.path.join(REPO, "data", "corpus")
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".txt")) if os.path.isdir(folder) else []
    if not files:
        files = [os.path.join(REPO, "data", "sample.txt")]
    lines = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            lines += [l for l in fh.read().split("\n") if l.strip()]
    return files, lines


def train(model_type, lines):
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buf, model_type=model_type, vocab_size=VOCAB, byte_fallback=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False, allow_whitespace_only_pieces=True,
        split_digits=True, character_coverage=0.9995, num_threads=1, minloglevel=2, input_sentence_size=200000,
        shuffle_input_sentence=False, seed_sentencepiece_size=200000)
    return buf.getvalue()


def hf_tokenizers(proto):
    """(legacy Llama form, Metaspace form) as tokenizers.Tokenizer, the model from transformers' converter."""
    if proto.trainer_spec.model_type == pb.TrainerSpec.UNIGRAM:
        vocab = [(p.piece, p.score) for p in proto.pieces]
    else:
        vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    meta = SpmConverter.build_tokenizer_from_spm_proto(proto, vocab, legacy=False)
    specials = [AddedToken(p.piece, normalized=False, special=True) for p in proto.pieces if p.type in (2, 3)]
    meta.add_special_tokens(specials)
    spec = json.loads(meta.to_str())
    spec["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
    spec["pre_tokenizer"] = None
    legacy = Tokenizer.from_str(json.dumps(spec))
    return legacy, meta


def metaspace_variant(meta, **changes):
    """`meta` with its Metaspace pre-tokenizer's settings changed (split, prepend_scheme)."""
    spec = json.loads(meta.to_str())
    steps = spec["pre_tokenizer"]["pretokenizers"] if spec["pre_tokenizer"]["type"] == "Sequence" else [spec["pre_tokenizer"]]
    for step in steps:
        if step["type"] == "Metaspace":
            step.update(changes)
    return Tokenizer.from_str(json.dumps(spec))


def write_gguf(path, proto):
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_tokenizer_model("llama")
    w.add_token_list([p.piece for p in proto.pieces])
    w.add_token_scores([p.score for p in proto.pieces])
    w.add_token_types([int(p.type) for p in proto.pieces])
    w.add_bos_token_id(proto.trainer_spec.bos_id)
    w.add_eos_token_id(proto.trainer_spec.eos_id)
    w.add_unk_token_id(proto.trainer_spec.unk_id)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def as_bpe(proto):
    """The same pieces as a SentencePiece BPE model: its encoding is llama.cpp's merge by score."""
    m = pb.ModelProto()
    m.CopyFrom(proto)
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    return spm.SentencePieceProcessor(model_proto=m.SerializeToString())


def stories_processor():
    r = gguf.GGUFReader(STORIES)
    field = lambda k: r.fields[k].contents()
    m = pb.ModelProto()
    for piece, score, typ in zip(field("tokenizer.ggml.tokens"), field("tokenizer.ggml.scores"),
                                 field("tokenizer.ggml.token_type")):
        p = m.pieces.add()
        p.piece, p.score, p.type = piece, score, typ
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.unk_id, m.trainer_spec.bos_id, m.trainer_spec.eos_id = 0, 1, 2
    m.trainer_spec.pad_id = -1
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = True
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    return spm.SentencePieceProcessor(model_proto=m.SerializeToString())


def main():
    files, lines = corpus_lines()
    print(f"corpus: {', '.join(os.path.relpath(f, REPO) for f in files)}: {len(lines)} lines")
    rng = random.Random(20261205)
    sample = [l[:160] for l in rng.sample(lines, min(40, len(lines)))]
    with open(os.path.join(REPO, "data", "sample.txt"), encoding="utf-8") as fh:
        sample_txt = [l for l in fh.read().split("\n") if l.strip()]
    texts = EDGE + sample_txt + sample + random_texts(50, seed=20261205)
    # HF's tokenizers cuts the added tokens out, sentencepiece does not; and HF's Unigram takes the spelling
    # of a byte piece in the text for that piece (the last two): compared with HF only.
    special_texts = ["<s>Hello</s>", "a <unk> b", "<s> <s>x", "</s>\n", "<0x41>", "x<0x0A>y"]
    full = {"corpus": [os.path.relpath(f, REPO) for f in files], "texts": lines, "models": {}}
    reference = {"corpus": [os.path.relpath(f, REPO) for f in files], "texts": texts, "special_texts": special_texts,
                 "models": {}}
    for model_type in ("unigram", "bpe"):
        proto = pb.ModelProto()
        proto.ParseFromString(train(model_type, lines))
        sp = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
        legacy, meta = hf_tokenizers(proto)
        llama = as_bpe(proto)
        name = f"sp_{model_type}"
        write_gguf(os.path.join(OUT, name + ".gguf"), proto)
        # The Metaspace form for the Unigram model only (fixture size): its model part is the legacy form's.
        for folder, tok in ((name, legacy), (name + "_metaspace", meta))[:2 if model_type == "unigram" else 1]:
            os.makedirs(os.path.join(OUT, folder), exist_ok=True)
            with open(os.path.join(OUT, folder, "tokenizer.json"), "w", encoding="utf-8") as fh:
                fh.write(tok.to_str())
        # Peers against each other, on the whole corpus and the texts.
        counts = {"texts": 0, "legacy_differs": 0, "metaspace_differs": 0, "llama_cpp_differs": 0, "roundtrip_fails": 0}
        for t in lines + texts:
            ids = sp.encode(t)
            counts["texts"] += 1
            if legacy.encode(t, add_special_tokens=False).ids != ids:
                counts["legacy_differs"] += 1
                print(f"  {model_type}: tokenizers (legacy) differs on {t[:80]!r}", file=sys.stderr)
            if meta.encode(t, add_special_tokens=False).ids != ids:
                counts["metaspace_differs"] += 1
                if not t.startswith((" ", "▁")):
                    print(f"  {model_type}: tokenizers (Metaspace) differs on {t[:80]!r}", file=sys.stderr)
            counts["llama_cpp_differs"] += llama.encode(t) != ids
            if sp.decode(ids) != t and "▁" not in t:  # a "▁" in the text decodes as a space
                counts["roundtrip_fails"] += 1
                print(f"  {model_type}: sentencepiece decode(encode(x)) != x for {t[:80]!r}", file=sys.stderr)
        print(f"{model_type}: {counts}")
        entry = {
            "vocab_size": sp.get_piece_size(),
            "sentencepiece": [sp.encode(t) for t in texts],
            # For the BPE model these are the sentencepiece ids (checked above): not written twice.
            "llama_cpp": [llama.encode(t) for t in texts] if model_type == "unigram" else "sentencepiece",
            "metaspace_differs": {str(i): meta.encode(t, add_special_tokens=False).ids for i, t in enumerate(texts)
                                  if meta.encode(t, add_special_tokens=False).ids != sp.encode(t)},
            # The Metaspace form with split=true (Viterbi per word) and with prepend_scheme="always": HF's
            # ids where they differ from sentencepiece's (the tests change the committed file to match).
            "metaspace_split_differs": {str(i): ids for i, t in enumerate(texts) for ids in
                                        [metaspace_variant(meta, split=True).encode(t, add_special_tokens=False).ids]
                                        if ids != sp.encode(t)},
            "metaspace_always_special": [metaspace_variant(meta, prepend_scheme="always").encode(t, add_special_tokens=False).ids
                                         for t in special_texts],
            "metaspace_first_special": [meta.encode(t, add_special_tokens=False).ids for t in special_texts],
            "hf_special": [legacy.encode(t, add_special_tokens=False).ids for t in special_texts],
            # HF's decode of the sentencepiece ids, where it is not the text itself.
            "hf_decode_differs": {str(i): legacy.decode(sp.encode(t), skip_special_tokens=False) for i, t in enumerate(texts)
                                  if legacy.decode(sp.encode(t), skip_special_tokens=False) != t},
        }
        assert counts["legacy_differs"] == 0, "tokenizers (legacy form) and sentencepiece disagree"
        assert all(t.startswith((" ", "▁")) for i, t in enumerate(texts) if str(i) in entry["metaspace_differs"])
        assert counts["roundtrip_fails"] == 0
        if model_type == "bpe":
            assert counts["llama_cpp_differs"] == 0
        reference["models"][model_type] = entry
        full["models"][model_type] = {"sentencepiece": [sp.encode(t) for t in lines],
                                      "llama_cpp": [llama.encode(t) for t in lines]}
    if os.path.exists(STORIES):
        sp = stories_processor()
        reference["stories260K"] = {"sentencepiece": [sp.encode(t) for t in texts[:80]],
                                    "cli_text": "Once upon a time, there was a little girl named Lily.",
                                    "cli_ids": [1] + sp.encode("Once upon a time, there was a little girl named Lily."),
                                    # Its pieces past the bytes are placeholders ("tok259"...): everything falls back
                                    # to bytes, "▁" too, which sentencepiece then decodes as "▁", not as a space.
                                    "cli_decoded": sp.decode(sp.encode("Once upon a time, there was a little girl named Lily."))}
        full["stories260K"] = {"sentencepiece": [sp.encode(t) for t in lines]}
        print("stories260K:", len(texts), "texts")
    with open(os.path.join(OUT, "sp_reference.json"), "w", encoding="utf-8") as fh:
        json.dump(reference, fh, ensure_ascii=False, separators=(",", ":"))
        fh.write("\n")
    os.makedirs(os.path.join(REPO, "out"), exist_ok=True)
    with open(os.path.join(REPO, "out", "sp_corpus_reference.json"), "w", encoding="utf-8") as fh:
        json.dump(full, fh, ensure_ascii=False, separators=(",", ":"))
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs
                if "sp_" in os.path.relpath(os.path.join(d, f), OUT))
    print(f"fixtures: {total / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
