"""Model.logit_lens and Model.dla (analysis/logit_lens.hpp, logit_attribution.hpp) from Python, and the
TransformerLens hook signature fn(activation, hook): hook is a HookPoint, a str with .name and .layer().

The lens at its last point is the forward's own logits; the DLA parts sum to the logit before any soft cap,
which (soft-capped) is the forward's own logit; by_source rows sum to their head's part; the CLI writes the
same arrays. Three snippets are written the way TransformerLens's documentation
writes hooks (ablating one head's values, caching with hook.name, scoring induction heads by hook.layer()).
"""
import json
import subprocess

import numpy as np
import pytest

import sinkscope

from conftest import FIXTURES, cli_path


def test_lens_last_point_is_the_models_logits(tiny):
    ids = np.array([1, 50, 60, 70, 80, 90], dtype=np.int32)
    logits = tiny(ids)
    top = int(logits[-1].argmax())
    lens = tiny.logit_lens(ids, target=top, top_k=4)
    L = tiny.config["n_layers"]
    assert lens["points"] == [f"blocks.{l}.hook_resid_pre" for l in range(L)] + [f"blocks.{L - 1}.hook_resid_post"]
    assert lens["top_tokens"].shape == (L + 1, len(ids), 4) and lens["top_tokens"].dtype == np.int32
    assert np.array_equal(lens["logits"], logits)
    assert np.array_equal(lens["top_tokens"][-1, :, 0], logits.argmax(-1).astype(np.int32))
    assert lens["target_rank"][-1, -1] == 0
    z = logits[-1].astype(np.float64)
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    assert lens["top_probs"][-1, -1, 0] == pytest.approx(p[top], rel=1e-5)
    assert lens["target_prob"][-1, -1] == pytest.approx(p[top], rel=1e-5)
    assert np.all(np.diff(lens["top_probs"], axis=-1) <= 0)
    assert np.all(lens["target_prob"] <= lens["top_probs"][..., 0])


def test_lens_accepts_a_text_target_and_refuses_two_tokens(smollm2):
    ids = smollm2.to_tokens("The capital of France is", bos=False)
    lens = smollm2.logit_lens(ids, target=" Paris")
    paris = int(smollm2.to_tokens(" Paris", bos=False)[0])
    assert lens["target_logit"][-1, -1] == pytest.approx(float(lens["logits"][-1, paris]), rel=1e-6)
    assert lens["target_rank"][-1, -1] == int((lens["logits"][-1] > lens["logits"][-1, paris]).sum())
    with pytest.raises(sinkscope.Error, match="not one"):
        smollm2.logit_lens(ids, target=" Paris Texas")


def test_dla_parts_sum_to_the_forwards_logit(tiny):
    ids = np.array([1, 50, 60, 70, 80, 90, 100, 311], dtype=np.int32)
    logits = tiny(ids)
    target, contrast = int(logits[-1].argmax()), int(logits[-1].argmin())
    a = tiny.dla(ids, target=target, contrast=contrast)
    L, H = tiny.config["n_layers"], tiny.config["n_heads"]
    assert a["heads"].shape == (L, H) and a["mlp"].shape == (L,) and a["by_source"].shape == (L, H, len(ids))
    total = a["embed"] + a["pos_embed"] + a["heads"].sum() + a["mlp"].sum() + a["bias"]
    assert total == pytest.approx(a["total"], rel=1e-12)
    assert total == pytest.approx(a["logit"], rel=1e-5)
    # The logit difference from the forward's own logits (stories260K has no soft cap).
    assert a["model_logit"] == pytest.approx(float(logits[-1, target]) - float(logits[-1, contrast]), rel=1e-5, abs=1e-5)
    assert a["logit"] == pytest.approx(a["model_logit"], rel=1e-5)
    assert np.allclose(a["by_source"].sum(-1), a["heads"], rtol=1e-5, atol=1e-6)
    assert a["experts"] is None


def test_dla_by_source_of_the_first_position(smollm2):
    ids = smollm2.to_tokens("Attention sinks appear at the first token of every sequence.", bos=False)
    a = smollm2.dla(ids, target=" the", contrast=" a")
    sink = a["by_source"][:, :, 0]                  # what position 0 writes into this logit difference, per head
    assert sink.shape == (smollm2.config["n_layers"], smollm2.config["n_heads"])
    assert np.allclose(a["by_source"].sum(-1), a["heads"], rtol=1e-4, atol=1e-5)
    assert a["total"] == pytest.approx(a["logit"], rel=1e-5)


@pytest.mark.parametrize("kind", ["gpt2", "gemma2", "mixtral"])
def test_dla_on_family_fixtures(kind):
    m = sinkscope.load(str(FIXTURES / f"random_{kind}"))
    ids = np.load(FIXTURES / f"random_{kind}" / "tokens.npy").astype(np.int32)
    logits = m(ids)
    a = m.dla(ids, target=int(logits[-1].argmax()))
    assert a["total"] == pytest.approx(a["logit"], rel=1e-5, abs=1e-6)
    cap = m.config.get("logit_softcap", 0) or 0
    capped = cap * np.tanh(a["logit"] / cap) if cap else a["logit"]
    assert capped == pytest.approx(float(logits[-1].max()), rel=1e-5)
    if kind == "mixtral":
        assert np.allclose(a["experts"].sum(-1), a["mlp"], rtol=1e-9, atol=1e-12)
    if kind == "gpt2":
        assert a["pos_embed"] != 0 and a["bias"] != 0


def test_hook_receives_a_hookpoint_that_is_its_name(tiny):
    ids = np.array([1, 9, 8, 7, 6], dtype=np.int32)
    seen = []

    def hook(x, h):
        seen.append(h)
        assert isinstance(h, sinkscope.HookPoint) and isinstance(h, str)
        assert h == "blocks.3.hook_resid_post" and h.name == "blocks.3.hook_resid_post" and h.layer() == 3

    tiny.run_with_hooks(ids, fwd_hooks=[("blocks.3.hook_resid_post", hook)])
    assert len(seen) == 1 and {seen[0]: 1}["blocks.3.hook_resid_post"] == 1  # hashes as its name
    assert sinkscope.HookPoint("hook_embed").layer() is None


# ---- TransformerLens-style snippets ----

def test_tl_snippet_ablate_one_heads_values(tiny):
    tokens = np.array([[1, 50, 60, 70, 80, 90]], dtype=np.int32)   # [batch, pos]
    layer_to_ablate, head_index_to_ablate = 1, 2

    def head_ablation_hook(value, hook):
        # value: [batch, pos, head_index, d_head]
        print(f"Shape of the value tensor: {value.shape}")
        value[:, :, head_index_to_ablate, :] = 0.0
        return value

    original_logits = tiny(tokens)
    ablated_logits = tiny.run_with_hooks(tokens, fwd_hooks=[(f"blocks.{layer_to_ablate}.attn.hook_v", head_ablation_hook)])
    assert ablated_logits.shape == original_logits.shape
    assert np.abs(ablated_logits - original_logits).max() > 1e-4
    # The same ablation through the cache: that head's z is zero in every position.
    _, cache = tiny.run_with_cache(tokens, names=[f"blocks.{layer_to_ablate}.attn.hook_z"],
                                   fwd_hooks=[(f"blocks.{layer_to_ablate}.attn.hook_v", head_ablation_hook)])
    kv_group = head_index_to_ablate  # stories260K: n_heads 8, n_kv_heads 4: v head 2 feeds query heads 4 and 5
    z = cache[f"blocks.{layer_to_ablate}.attn.hook_z"][0]
    group = tiny.config["n_heads"] // tiny.config["n_kv_heads"]
    assert np.all(z[:, kv_group * group:(kv_group + 1) * group] == 0)


def test_tl_snippet_cache_with_hook_name(tiny):
    tokens = np.array([1, 50, 60, 70, 80], dtype=np.int32)
    activation_cache = {}

    def store_hook(act, hook):
        activation_cache[hook.name] = act.copy()   # TransformerLens: act.detach()

    names = [f"blocks.{l}.hook_resid_post" for l in range(tiny.config["n_layers"])]
    tiny.run_with_hooks(tokens, fwd_hooks=[(name, store_hook) for name in names])
    _, cache = tiny.run_with_cache(tokens, names=names)
    assert sorted(activation_cache) == sorted(names)
    for name in names:
        assert np.array_equal(activation_cache[name], cache[name])


def test_tl_snippet_induction_scores_by_hook_layer(tiny):
    rng = np.random.default_rng(0)
    seq_len = 12
    half = rng.integers(100, 500, size=seq_len).astype(np.int32)
    repeated_tokens = np.concatenate([[1], half, half]).astype(np.int32)[None, :]   # [batch, 1 + 2·seq_len]
    n_layers, n_heads = tiny.config["n_layers"], tiny.config["n_heads"]
    induction_score_store = np.zeros((n_layers, n_heads))

    def induction_score_hook(pattern, hook):
        # pattern: [batch, head_index, dest_pos, source_pos]; the induction stripe sits seq_len - 1 left of the diagonal
        induction_stripe = np.diagonal(pattern, offset=1 - seq_len, axis1=-2, axis2=-1)
        induction_score_store[hook.layer(), :] = induction_stripe.mean(axis=(0, -1))

    tiny.run_with_hooks(repeated_tokens,
                        fwd_hooks=[(n, induction_score_hook) for n in tiny.hook_names() if n.endswith("hook_pattern")])
    assert np.all(induction_score_store >= 0) and np.all(induction_score_store <= 1)
    assert np.all(induction_score_store.sum(axis=1) > 0)  # every layer's hook ran and wrote its row


def test_cli_lens_and_dla_agree_with_python(tiny, tmp_path):
    cli = cli_path()
    ids = [1, 50, 60, 70, 80, 90]
    out = tmp_path / "lens"
    subprocess.run([cli, "lens", tiny.path, "--tokens", ",".join(map(str, ids)), "--target", "60", "--top", "3",
                    "--out", str(out)], check=True, capture_output=True)
    lens = tiny.logit_lens(np.array(ids, dtype=np.int32), target=60, top_k=3)
    assert np.array_equal(np.load(out / "top_tokens.npy"), lens["top_tokens"])
    assert np.array_equal(np.load(out / "target_rank.npy"), lens["target_rank"].astype(np.int32))
    out = tmp_path / "dla"
    subprocess.run([cli, "dla", tiny.path, "--tokens", ",".join(map(str, ids)), "--target", "60", "--contrast", "70",
                    "--out", str(out)], check=True, capture_output=True)
    a = tiny.dla(np.array(ids, dtype=np.int32), target=60, contrast=70)
    assert np.allclose(np.load(out / "heads.npy"), a["heads"], rtol=1e-6, atol=1e-7)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["logit"] == pytest.approx(a["logit"], rel=1e-12)
