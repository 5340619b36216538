"""run_with_cache agrees with its peers: the C++ forward run by the CLI (`capture`, .npy files, another
process and another build of the same headers) and Hugging Face transformers (the committed fixtures of
tests/model/test_reference.cpp, with its tolerances: hidden states relative error <= 1e-4, pattern max
|diff| <= 1e-5, logits max |diff| <= 1e-3)."""
import numpy as np
import pytest

from conftest import FIXTURES, cli_capture


def rel_error(got, ref):
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref.astype(np.float64)))


def check_against_hf(m, fixture_dir):
    ids = np.load(fixture_dir / "tokens.npy")
    logits, cache = m.run_with_cache(ids, names=lambda n: n.endswith("hook_resid_post") or n.endswith("hook_pattern"))
    T = len(ids)
    assert logits.shape == (T, m.config["vocab_size"]) and logits.dtype == np.float32
    compared = 0
    for l in range(m.config["n_layers"]):
        f = fixture_dir / f"resid_post_L{l}.npy"
        if f.exists():
            got = cache[f"blocks.{l}.hook_resid_post"]
            assert got.shape == (T, m.config["d_model"])
            assert rel_error(got, np.load(f)) <= 1e-4, f"layer {l}"
            compared += 1
        p = fixture_dir / f"pattern_L{l}.npy"
        if p.exists():
            got = cache[f"blocks.{l}.attn.hook_pattern"]
            assert got.shape == (m.config["n_heads"], T, T)
            assert np.abs(got - np.load(p)).max() <= 1e-5, f"pattern layer {l}"
            compared += 1
    cols = np.load(fixture_dir / "logits_cols_ids.npy")
    assert np.abs(logits[:, cols] - np.load(fixture_dir / "logits_cols.npy")).max() <= 1e-3
    assert np.abs(logits[-1] - np.load(fixture_dir / "logits_last.npy")).max() <= 1e-3
    x = logits.astype(np.float64)
    lse = x.max(1) + np.log(np.exp(x - x.max(1, keepdims=True)).sum(1))
    assert np.abs(lse - np.load(fixture_dir / "logsumexp.npy")).max() <= 1e-3
    assert compared >= 3


def test_tiny_agrees_with_transformers(tiny):
    check_against_hf(tiny, FIXTURES / "stories260K")


def test_smollm2_agrees_with_transformers(smollm2):
    check_against_hf(smollm2, FIXTURES / "smollm2")


def check_against_cli(m, path, ids, hooks, tmp_path):
    ref = cli_capture(path, ids, hooks, tmp_path)
    _, cache = m.run_with_cache(np.asarray(ids, dtype=np.int32), names=hooks)
    assert sorted(cache) == sorted(hooks)
    for h in hooks:
        assert cache[h].shape == ref[h].shape, h
        # The same headers compiled with the same flags: equal up to the order of float sums (a different
        # build may vectorise a reduction differently); 1e-5 of the largest entry bounds that.
        assert np.abs(cache[h] - ref[h]).max() <= 1e-5 * np.abs(ref[h]).max(), h


def test_tiny_agrees_with_cli(tiny, tmp_path):
    from conftest import TINY
    ids = [1, 50, 60, 70, 80, 90, 100, 311, 7, 3]
    hooks = ["hook_embed", "blocks.0.attn.hook_q", "blocks.2.attn.hook_pattern", "blocks.3.mlp.hook_post",
             "blocks.4.hook_resid_post", "ln_final.hook_normalized", "logits"]
    check_against_cli(tiny, TINY, ids, hooks, tmp_path)


def test_smollm2_agrees_with_cli(smollm2, tmp_path):
    from conftest import SMOLLM2
    ids = smollm2.to_tokens("The quick brown fox jumps over the lazy dog. Attention sinks, massive activations.", bos=False)
    hooks = ["blocks.0.hook_resid_post", "blocks.3.hook_resid_post", "blocks.11.hook_resid_post", "blocks.5.attn.hook_pattern",
             "blocks.29.hook_mlp_out", "logits"]
    check_against_cli(smollm2, SMOLLM2, ids, hooks, tmp_path)


def test_names_filter_forms(tiny):
    ids = np.array([1, 5, 6, 7], dtype=np.int32)
    _, one = tiny.run_with_cache(ids, names="blocks.1.hook_resid_post")
    _, listed = tiny.run_with_cache(ids, names=["blocks.1.hook_resid_post"])
    _, filt = tiny.run_with_cache(ids, names=lambda n: n == "blocks.1.hook_resid_post")
    _, everything = tiny.run_with_cache(ids)
    assert list(one) == list(listed) == list(filt) == ["blocks.1.hook_resid_post"]
    assert sorted(everything) == sorted(tiny.hook_names())
    assert np.array_equal(one["blocks.1.hook_resid_post"], everything["blocks.1.hook_resid_post"])


def test_cache_arrays_are_views_of_owned_buffers(tiny):
    # No copy on the way to NumPy: each array owns nothing itself (its base is the capsule holding the C++
    # buffer) and stays valid after the model's other forwards.
    logits, cache = tiny.run_with_cache(np.array([1, 2, 3], dtype=np.int32), names=["blocks.0.hook_resid_post"])
    x = cache["blocks.0.hook_resid_post"]
    assert not x.flags.owndata and x.base is not None and x.flags.c_contiguous and x.flags.writeable
    assert not logits.flags.owndata and logits.base is not None
    before = x.copy()
    tiny.run_with_cache(np.array([4, 5, 6], dtype=np.int32), names=["blocks.0.hook_resid_post"])
    assert np.array_equal(x, before)


def test_bf16_compute(smollm2):
    # compute="bf16": the dense products with bf16 inputs (C++ tests/model/test_bf16_forward.cpp pins the
    # error: SmolLM2 logits ~5e-3 relative, bound 2e-2); the captures stay float32 and the stats say bf16.
    import sinkscope
    from conftest import SMOLLM2
    b = sinkscope.load(str(SMOLLM2), compute="bf16")
    ids = smollm2.to_tokens("The quick brown fox jumps over the lazy dog", bos=False)
    la, ca = smollm2.run_with_cache(ids)
    lb, cb = b.run_with_cache(ids)
    la, lb = np.asarray(la), np.asarray(lb)
    rel = np.linalg.norm(la - lb) / np.linalg.norm(la)
    assert 1e-4 < rel < 2e-2
    assert np.asarray(cb["blocks.3.hook_resid_post"]).dtype == np.float32
    assert b.stats("The quick brown fox jumps over the lazy dog. " * 20, seq_len=16)["settings"]["weights"] == \
        {"storage": "float32", "compute": "bf16"}


def test_bf16_weights(smollm2):
    # weights="bf16": the linear maps rounded to BF16 once at load; with compute="bf16" the same forward, bit
    # for bit, as float32 weights with bf16 products (C++ tests/model/test_bf16_weights.cpp), and the stats
    # settings name the storage, so its shards do not merge with others.
    import sinkscope
    from conftest import SMOLLM2
    ref = sinkscope.load(str(SMOLLM2), compute="bf16")
    stored = sinkscope.load(str(SMOLLM2), weights="bf16", compute="bf16")
    assert stored._m.file_type_weights and not ref._m.file_type_weights
    ids = smollm2.to_tokens("The quick brown fox jumps over the lazy dog", bos=False)
    la, ca = ref.run_with_cache(ids)
    lb, cb = stored.run_with_cache(ids)
    assert np.array_equal(np.asarray(la), np.asarray(lb))
    assert np.array_equal(np.asarray(ca["blocks.5.hook_resid_post"]), np.asarray(cb["blocks.5.hook_resid_post"]))
    assert stored.stats("The quick brown fox jumps over the lazy dog. " * 20, seq_len=16)["settings"]["weights"] == \
        {"storage": "bf16", "compute": "bf16"}
    with pytest.raises(Exception, match="weights must be"):
        sinkscope.load(str(SMOLLM2), weights="bfloat16")
