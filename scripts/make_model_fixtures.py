#!/usr/bin/env python3
"""Reference fixtures for the model agreement tests, made by Hugging Face transformers (the peer).

Regenerate (needs the PyPI packages torch, transformers, gguf, safetensors, numpy):
    python3 -m venv .venv && .venv/bin/pip install torch transformers gguf safetensors numpy
    scripts/fetch_model.sh
    .venv/bin/python scripts/make_model_fixtures.py

Writes tests/fixtures/model/:
  smollm2/   the default GGUF loaded by transformers (dequantised to float32, eager attention):
             tokens.npy (int32), logits_cols.npy (T × K logits at every position for K fixed vocabulary
             columns, the argmax of each position included), logits_cols_ids.npy, logsumexp.npy (per
             position, over the whole vocabulary), logits_last.npy (all V logits of the last position),
             resid_post_L{l}.npy for a few layers, pattern_L{l}.npy for a few layers (H × T × T),
             meta.json (versions, text, layers).
  stories260K/  the same for ../shared/models/stories260K.gguf (token ids, not text).
  random_{llama,qwen2,qwen3,mistral,gpt2,gemma2,gemma3,phi3,olmo2,gpt_neox,mixtral,olmoe,llama31}/  small random-weight
             models saved by transformers as safetensors (config.json + model.safetensors), with tokens, all
             logits, every layer's residual stream; the mixture-of-experts ones also chosen_L{l}.npy; llama31
             (Llama 3.1's "llama3" RoPE scaling) also inv_freq.npy, transformers' scaled float32 frequencies.
  gguf_{gemma2,gemma3,phi3,olmo2,gpt_neox,mixtral,olmoe,llama31}/  model.gguf: a random model converted to GGUF (float32)
             by llama.cpp's own convert_hf_to_gguf.py (from the llama-cpp-python source package on PyPI, unpacked
             into build/), with transformers' tokens, logits, residual streams and layer-0 pattern for the same
             weights (the mixture-of-experts ones also chosen_L{l}.npy). The configs differ from random_* only
             where GGUF cannot state a value (see random_config).
  phi3_longrope.gguf  metadata of a Phi-3 LongRoPE conversion (rope_factors_long/short.weight), for the refusal test.
  llama_rope_freqs_{len3,f16}.gguf  a Llama 3.1 rope_freqs.weight of the wrong length / type, for the error tests.
`make_model_fixtures.py random [KIND …]` remakes only those random-weight fixtures (default: the families
added last: gemma2 gemma3 phi3 olmo2 gpt_neox mixtral olmoe llama31), without the GGUF models;
`make_model_fixtures.py gguf [KIND …]` remakes only the converted ones (default: all of GGUF_FAMILIES).
`make_model_fixtures.py rope_factors` remakes only phi3_longrope.gguf and llama_rope_freqs_{len3,f16}.gguf.
Every array is float32 unless said otherwise.
"""
import json, os, pathlib, sys
import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "model"
SMOL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
STORIES = ROOT.parent / "shared" / "models" / "stories260K.gguf"

# The fixed text: ≥ 64 tokens with digits, punctuation, newlines and a delimiter-rich layout.
TEXT = ("The quick brown fox jumps over the lazy dog. In 1969, Apollo 11 landed on the Moon; "
        "Neil Armstrong said: \"That's one small step for man.\"\n\n"
        "Attention sinks appear at the first token, and massive activations sit in a few channels "
        "of the residual stream. Why does position zero matter so much?")

torch.manual_seed(0)
np.random.seed(0)


def save(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.ascontiguousarray(array))


def run(model, ids):
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_hidden_states=True, output_attentions=True)
    logits = out.logits[0].float().numpy()
    # hidden_states[0] = embeddings, hidden_states[l+1] = output of block l, except that transformers
    # applies the final norm to the last entry: that one is not a residual stream, so it is not used.
    hidden = [h[0].float().numpy() for h in out.hidden_states]
    attn = [a[0].float().numpy() for a in out.attentions]
    return logits, hidden, attn


def gguf_fixture(name, gguf_path, ids, layers, pattern_layers, text=None):
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                 dtype=torch.float32, attn_implementation="eager")
    model.eval()
    logits, hidden, attn = run(model, ids)
    d = OUT / name
    T, V = logits.shape
    rng = np.random.default_rng(1)
    cols = np.unique(np.concatenate([logits.argmax(1), rng.choice(V, size=min(V, 1000), replace=False)]))
    save(d / "tokens.npy", np.array(ids, dtype=np.int32))
    save(d / "logits_cols_ids.npy", cols.astype(np.int32))
    save(d / "logits_cols.npy", logits[:, cols].astype(np.float32))
    m = logits.max(1, keepdims=True)
    save(d / "logsumexp.npy", (m[:, 0] + np.log(np.exp(logits - m).sum(1))).astype(np.float32))
    save(d / "logits_last.npy", logits[-1].astype(np.float32))
    for l in layers:
        save(d / f"resid_post_L{l}.npy", hidden[l + 1].astype(np.float32))
    for l in pattern_layers:
        save(d / f"pattern_L{l}.npy", attn[l].astype(np.float32))
    meta = dict(source=gguf_path.name, text=text, n_tokens=len(ids), layers=layers, pattern_layers=pattern_layers,
                torch=torch.__version__, transformers=transformers.__version__, dtype="float32", attn="eager")
    (d / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{name}: T={T} V={V}, wrote {d}")


def random_config(kind, for_gguf=False):
    """The random model's config. for_gguf: the few values a GGUF file cannot state changed to what llama.cpp
    assumes (Gemma: query_pre_attn_scalar = head_dim as llama.cpp derives it for every size but 27B; Gemma 3:
    llama.cpp's fixed sliding pattern of 6, five sliding layers then a global one)."""
    common = dict(vocab_size=256, max_position_embeddings=128)
    if kind == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=256, n_positions=128, n_embd=48, n_layer=3, n_head=4,
                                      activation_function="gelu_new", resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)
    elif kind == "llama":
        cfg = transformers.LlamaConfig(hidden_size=48, intermediate_size=112, num_hidden_layers=3, num_attention_heads=6,
                                       num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0,
                                       tie_word_embeddings=False, **common)
    elif kind == "mistral":
        cfg = transformers.MistralConfig(hidden_size=48, intermediate_size=112, num_hidden_layers=3, num_attention_heads=4,
                                         num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=1e6, sliding_window=None,
                                         tie_word_embeddings=False, **common)
    elif kind == "qwen2":
        cfg = transformers.Qwen2Config(hidden_size=48, intermediate_size=112, num_hidden_layers=3, num_attention_heads=6,
                                       num_key_value_heads=3, rms_norm_eps=1e-6, rope_theta=1e6,
                                       tie_word_embeddings=True, use_sliding_window=False, **common)
    elif kind == "qwen3":
        cfg = transformers.Qwen3Config(hidden_size=48, intermediate_size=112, num_hidden_layers=3, num_attention_heads=4,
                                       num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, rope_theta=1e6,
                                       tie_word_embeddings=True, use_sliding_window=False, **common)
    elif kind == "gemma2":
        # Soft-capping values small enough that tanh bends the random model's scores and logits; every
        # other layer sliding with a window shorter than the 40 test tokens; query_pre_attn_scalar ≠ d_h.
        cfg = transformers.Gemma2Config(hidden_size=48, intermediate_size=112, num_hidden_layers=4, num_attention_heads=4,
                                        num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24, rms_norm_eps=1e-6,
                                        rope_theta=10000.0, sliding_window=8, attn_logit_softcapping=5.0,
                                        final_logit_softcapping=3.0, hidden_activation="gelu_pytorch_tanh",
                                        pad_token_id=0, **common)
    elif kind == "gemma3":
        cfg = transformers.Gemma3TextConfig(hidden_size=48, intermediate_size=112, num_hidden_layers=4, num_attention_heads=4,
                                            num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24, rms_norm_eps=1e-6,
                                            rope_theta=1e6, rope_local_base_freq=10000.0, sliding_window=8,
                                            sliding_window_pattern=2, hidden_activation="gelu_pytorch_tanh",
                                            pad_token_id=0, **common)
    elif kind == "phi3":
        cfg = transformers.Phi3Config(hidden_size=48, intermediate_size=112, num_hidden_layers=3, num_attention_heads=4,
                                      num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0, partial_rotary_factor=0.5,
                                      pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, **common)
    elif kind == "olmo2":
        cfg = transformers.Olmo2Config(hidden_size=48, intermediate_size=112, num_hidden_layers=3, num_attention_heads=6,
                                       num_key_value_heads=3, rms_norm_eps=1e-6, rope_theta=500000.0,
                                       pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False, **common)
    elif kind == "gpt_neox":
        cfg = transformers.GPTNeoXConfig(hidden_size=64, intermediate_size=160, num_hidden_layers=3, num_attention_heads=4,
                                         rotary_pct=0.25, rotary_emb_base=10000, hidden_act="gelu", layer_norm_eps=1e-5,
                                         use_parallel_residual=True, tie_word_embeddings=False, **common)
    elif kind == "mixtral":
        # 4 experts, top 2, renormalised top-k weights (Mixtral always renormalises).
        cfg = transformers.MixtralConfig(hidden_size=48, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                                         num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                                         rms_norm_eps=1e-5, rope_theta=1e6, sliding_window=None, router_jitter_noise=0.0,
                                         tie_word_embeddings=False, **common)
    elif kind == "llama31":
        # Llama 3.1's RoPE scaling with original_max_position_embeddings small enough that, with d_h = 16 and
        # base 5e5, its 8 frequencies fall in all three regimes (kept, smoothed, divided by factor): asserted below.
        cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                       num_key_value_heads=2, rms_norm_eps=1e-5, tie_word_embeddings=False,
                                       rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0,
                                                            low_freq_factor=1.0, high_freq_factor=4.0,
                                                            original_max_position_embeddings=64), **common)
    elif kind == "olmoe":
        # 8 experts, top 2, top-k weights not renormalised (norm_topk_prob=False, as OLMoE-1B-7B), QK-norm over
        # the whole q and k projections.
        cfg = transformers.OlmoeConfig(hidden_size=48, intermediate_size=64, num_hidden_layers=3, num_attention_heads=6,
                                       num_key_value_heads=3, num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
                                       rms_norm_eps=1e-5, rope_theta=10000.0, pad_token_id=0, bos_token_id=1,
                                       eos_token_id=2, tie_word_embeddings=False, **common)
    if for_gguf and kind == "gemma2":
        cfg.query_pre_attn_scalar = cfg.head_dim
    if for_gguf and kind == "gemma3":
        cfg = transformers.Gemma3TextConfig(hidden_size=48, intermediate_size=112, num_hidden_layers=6, num_attention_heads=4,
                                            num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16, rms_norm_eps=1e-6,
                                            rope_theta=1e6, rope_local_base_freq=10000.0, sliding_window=8,
                                            sliding_window_pattern=6, hidden_activation="gelu_pytorch_tanh",
                                            pad_token_id=0, **common)
    cfg._attn_implementation = "eager"
    return cfg


def random_model(kind, cfg):
    torch.manual_seed({"llama": 11, "mistral": 12, "qwen2": 13, "qwen3": 14, "gpt2": 15, "gemma2": 16, "gemma3": 17,
                       "phi3": 18, "olmo2": 19, "gpt_neox": 20, "mixtral": 21, "olmoe": 22, "llama31": 23}[kind])
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    # Default init leaves norms at 1 and biases at 0: perturb every parameter so that each one matters.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, 1.0 / np.sqrt(p.shape[-1]) if "emb" not in name and "wte" not in name and "wpe" not in name else 1.0)
    model.eval()
    return model


def save_reference(model, cfg, d):
    """tokens.npy, logits.npy, resid_post_L{l}.npy and pattern_L0.npy of the random model, into d."""
    ids = np.random.default_rng(2).integers(0, 256, size=40).tolist()
    logits, hidden, attn = run(model, ids)
    save(d / "tokens.npy", np.array(ids, dtype=np.int32))
    save(d / "logits.npy", logits.astype(np.float32))
    for l in range(cfg.num_hidden_layers):
        if l + 1 < len(hidden) - 1:
            save(d / f"resid_post_L{l}.npy", hidden[l + 1].astype(np.float32))
    save(d / "pattern_L0.npy", attn[0].astype(np.float32))
    return ids


def random_fixture(kind):
    cfg = random_config(kind)
    model = random_model(kind, cfg)
    d = OUT / f"random_{kind}"
    model.save_pretrained(d, safe_serialization=True)
    ids = save_reference(model, cfg, d)
    if kind in MOE:
        moe_routing(model, cfg, ids, d)
    if kind == "llama31":
        llama3_rope_regimes(model, cfg, d)
    (d / "generation_config.json").unlink(missing_ok=True)
    print(f"random_{kind}: wrote {d}")


# llama.cpp's own converter, the peer for how a family is written to GGUF (tensor names, fused or split
# projections, the Gemma norm shift, permuted or stacked tensors, metadata keys). It comes from the
# llama-cpp-python source package on PyPI, which vendors llama.cpp; nothing of it is kept in this repository.
LLAMA_CPP_PYTHON = "0.3.36"
GGUF_FAMILIES = ["gemma2", "gemma3", "phi3", "olmo2", "gpt_neox", "mixtral", "olmoe", "llama31"]


def llama_cpp_converter():
    import subprocess, tarfile, tempfile
    cache = ROOT / "build" / f"llama_cpp_python-{LLAMA_CPP_PYTHON}"
    if not cache.exists():
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                            f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", tmp], check=True)
            with tarfile.open(next(pathlib.Path(tmp).glob("*.tar.gz"))) as t:
                t.extractall(cache.parent, filter="data")
    lc = cache / "vendor" / "llama.cpp"
    sys.path[:0] = [str(lc), str(lc / "gguf-py")]  # its own gguf-py, not the installed one
    import convert_hf_to_gguf
    return convert_hf_to_gguf


def convert_to_gguf(hf_dir, out_file):
    """Runs llama.cpp's convert_hf_to_gguf.py (float32) on a saved random model. The random models have no
    tokenizer, so the vocabulary it writes is 256 placeholder tokens (the tests feed token ids)."""
    conv = llama_cpp_converter()
    arch = json.loads((hf_dir / "config.json").read_text())["architectures"][0]
    cls = conv.get_model_class(arch)

    def placeholder_vocab(self):
        self.gguf_writer.add_tokenizer_model("gpt2")
        self.gguf_writer.add_tokenizer_pre("default")
        self.gguf_writer.add_token_list([f"<t{i}>" for i in range(self.hparams["vocab_size"])])
        self.gguf_writer.add_token_types([1] * self.hparams["vocab_size"])
        self.gguf_writer.add_token_merges([])

    cls.set_vocab = placeholder_vocab
    # transformers 5 keeps GPT-NeoX's rotary_pct only as rope_parameters.partial_rotary_factor; this
    # converter still reads the old key, so it is restored with the same value before it is read.
    if arch == "GPTNeoXForCausalLM":
        set_parameters = cls.set_gguf_parameters

        def with_rotary_pct(self):
            self.hparams.setdefault("rotary_pct", self.hparams["rope_parameters"]["partial_rotary_factor"])
            set_parameters(self)

        cls.set_gguf_parameters = with_rotary_pct
    # Gemma 3 trims token_embd to the tokenizer's size, read from tokenizer.json.
    (hf_dir / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {f"<t{i}>": i for i in range(256)}}, "added_tokens": []}))
    argv, sys.argv = sys.argv, ["convert_hf_to_gguf.py", str(hf_dir), "--outtype", "f32", "--outfile", str(out_file)]
    try:
        conv.main()
    finally:
        sys.argv = argv


def gguf_fixture_of_family(kind):
    """gguf_{kind}/: model.gguf (the random model converted by llama.cpp) and transformers' reference for the
    same weights (tokens, logits, residual streams, layer-0 pattern)."""
    import tempfile
    cfg = random_config(kind, for_gguf=True)
    model = random_model(kind, cfg)
    d = OUT / f"gguf_{kind}"
    d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        convert_to_gguf(pathlib.Path(tmp), d / "model.gguf")
    if kind == "llama31":  # the converter writes Llama 3.1's divisors as rope_freqs.weight
        import gguf
        assert any(t.name == "rope_freqs.weight" for t in gguf.GGUFReader(str(d / "model.gguf")).tensors)
    ids = save_reference(model, cfg, d)
    if kind in MOE:
        moe_routing(model, cfg, ids, d)
    print(f"gguf_{kind}: wrote {d}")


MOE = ["mixtral", "olmoe"]
NEW_FAMILIES = ["gemma2", "gemma3", "phi3", "olmo2", "gpt_neox"] + MOE + ["llama31"]


def llama3_rope_regimes(model, cfg, d):
    """llama31: inv_freq.npy (transformers' float32 scaled frequencies) and a check that the fixture exercises
    all three regimes of the scaling: wavelength < orig/high kept, > orig/low divided by factor, else smoothed."""
    import math
    p = cfg.rope_parameters
    dim = cfg.head_dim
    inv = 1.0 / (p["rope_theta"] ** (np.arange(0, dim, 2) / dim))
    wl = 2 * math.pi / inv
    orig = p["original_max_position_embeddings"]
    kept, divided = wl < orig / p["high_freq_factor"], wl > orig / p["low_freq_factor"]
    smoothed = ~kept & ~divided
    assert kept.any() and divided.any() and smoothed.any(), (wl, orig)
    # The boundaries are far from every wavelength, so float rounding cannot move one across.
    assert np.min(np.abs(np.log(wl[:, None] / np.array([orig / p["high_freq_factor"], orig / p["low_freq_factor"]])))) > 0.1
    got = model.model.rotary_emb.inv_freq.float().numpy()
    assert not np.allclose(got, inv.astype(np.float32)), "the scaling changed nothing"
    save(d / "inv_freq.npy", got.astype(np.float32))
    print(f"  llama3 RoPE regimes: {kept.sum()} kept, {smoothed.sum()} smoothed, {divided.sum()} divided")


def moe_routing(model, cfg, ids, d):
    """Mixture-of-experts fixtures: chosen_L{l}.npy (int32, T × k: torch.topk's experts, most probable first)
    of every layer, checked to vary between tokens (random routing must not pick one expert set for all)
    and to have no near-tie at the k-th place (a tie could flip between implementations)."""
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_router_logits=True)
    k = cfg.num_experts_per_tok
    for l, logits in enumerate(out.router_logits):
        probs = torch.softmax(logits.float(), dim=-1)
        top, chosen = torch.topk(probs, k + 1, dim=-1)
        sets = {tuple(sorted(row)) for row in chosen[:, :k].tolist()}
        gap = (top[:, k - 1] - top[:, k]).min().item()
        assert len(sets) > 1, f"layer {l}: every token chose the experts {sets}"
        assert gap > 1e-4, f"layer {l}: a near-tie at the top-{k} boundary ({gap})"
        save(d / f"chosen_L{l}.npy", chosen[:, :k].numpy().astype(np.int32))
        print(f"  layer {l}: {len(sets)} distinct expert sets over {len(ids)} tokens, smallest top-{k} gap {gap:.2e}")


def rope_factors_gguf_fixtures():
    """phi3_longrope.gguf: the metadata of a Phi-3 LongRoPE conversion, which stores two sets of RoPE frequency
    factors (rope_factors_long/short.weight, switched by the sequence length); sinkscope must refuse it (naming
    the tensor) rather than rotate without them. llama_rope_freqs_{len3,f16}.gguf: Llama 3.1's rope_freqs.weight
    of the wrong length (3 for d_h/2 = 2) and of the wrong type (F16), which must be Errors naming the tensor."""
    import gguf

    def tiny(name, arch, tensors):
        w = gguf.GGUFWriter(str(OUT / name), arch)
        w.add_block_count(1); w.add_embedding_length(8); w.add_context_length(16); w.add_head_count(2)
        w.add_feed_forward_length(16); w.add_layer_norm_rms_eps(1e-5)
        w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
        for n, a in tensors.items():
            w.add_tensor(n, a)
        w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()

    tiny("phi3_longrope.gguf", "phi3", {"rope_factors_long.weight": np.ones(2, dtype=np.float32),
                                        "rope_factors_short.weight": np.ones(2, dtype=np.float32)})
    tiny("llama_rope_freqs_len3.gguf", "llama", {"rope_freqs.weight": np.ones(3, dtype=np.float32)})
    tiny("llama_rope_freqs_f16.gguf", "llama", {"rope_freqs.weight": np.ones(2, dtype=np.float16)})


def main():
    if sys.argv[1:2] == ["gguf"]:
        # GGUF files of the newer families, written by llama.cpp's converter: gguf gemma2 phi3 …
        for kind in sys.argv[2:] or GGUF_FAMILIES:
            gguf_fixture_of_family(kind)
        return
    if sys.argv[1:2] == ["rope_factors"]:
        rope_factors_gguf_fixtures()
        return
    if sys.argv[1:2] == ["random"]:
        # Only the named random-weight fixtures (others stay as they were made): random gemma2 phi3 …
        for kind in sys.argv[2:] or NEW_FAMILIES:
            random_fixture(kind)
        return
    if not SMOL.exists():
        sys.exit(f"{SMOL} missing: run scripts/fetch_model.sh first")
    tok = AutoTokenizer.from_pretrained(str(SMOL.parent), gguf_file=SMOL.name)
    ids = tok(TEXT, add_special_tokens=False)["input_ids"]
    assert len(ids) >= 64, len(ids)
    gguf_fixture("smollm2", SMOL, ids, layers=[0, 1, 2, 5, 15, 28], pattern_layers=[0, 1, 15, 29], text=TEXT)
    story_ids = [1] + np.random.default_rng(3).integers(3, 512, size=71).tolist()
    gguf_fixture("stories260K", STORIES, story_ids, layers=[0, 1, 2, 3], pattern_layers=[0, 4])
    for kind in ["llama", "mistral", "qwen2", "qwen3", "gpt2"] + NEW_FAMILIES:
        random_fixture(kind)
    for kind in GGUF_FAMILIES:
        gguf_fixture_of_family(kind)
    rope_factors_gguf_fixtures()


if __name__ == "__main__":
    main()
