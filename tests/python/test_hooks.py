"""run_with_hooks: a Python clamp equals the C++ intervention (model::zero_ablate_channels) bit for bit;
returning an array equals editing in place; hooks see the live activation; batches agree with single
sequences to 2e-6 of the largest entry (tests/model/test_batch.cpp's bound)."""
import numpy as np
import pytest

import sinkscope


def test_python_clamp_equals_cpp_zero_ablation(tiny):
    ids = np.array([1, 50, 60, 70, 80, 90, 100, 311], dtype=np.int32)
    name, channels = "blocks.1.hook_resid_post", [3, 17, 40]

    def clamp(x, hook_name):
        assert hook_name == name
        x[:, channels] = 0.0

    clean = tiny(ids)
    py = tiny.run_with_hooks(ids, fwd_hooks=[(name, clamp)])
    cpp = tiny.run_with_hooks(ids, fwd_hooks=[sinkscope.zero_ablate_channels(name, channels)])
    assert np.array_equal(py, cpp)
    assert np.abs(py - clean).max() > 1e-3  # the intervention changes the logits


def test_clamp_at_chosen_positions_and_on_smollm2(smollm2):
    ids = smollm2.to_tokens("Attention sinks appear at the first token of every sequence.", bos=False)
    name = "blocks.3.hook_resid_post"

    def clamp(x, _):
        x[0, [10, 507]] = 0.0

    py = smollm2.run_with_hooks(ids, fwd_hooks=[(name, clamp)])
    cpp = smollm2.run_with_hooks(ids, fwd_hooks=[sinkscope.zero_ablate_channels(name, [10, 507], positions=[0])])
    assert np.array_equal(py, cpp)


def test_returned_array_equals_in_place_edit(tiny):
    ids = np.array([1, 9, 8, 7, 6], dtype=np.int32)
    name = "blocks.2.hook_mlp_out"

    def in_place(x, _):
        x *= 0.5

    def returned(x, _):
        return x * 0.5

    a = tiny.run_with_hooks(ids, fwd_hooks=[(name, in_place)])
    b = tiny.run_with_hooks(ids, fwd_hooks=[(name, returned)])
    assert np.array_equal(a, b)


def test_hook_sees_what_the_cache_captures(tiny):
    ids = np.array([1, 9, 8, 7, 6], dtype=np.int32)
    seen = {}
    _, cache = tiny.run_with_cache(ids, names=["blocks.2.attn.hook_pattern"],
                                   fwd_hooks=[("blocks.2.attn.hook_pattern", lambda x, n: seen.setdefault(n, x.copy()))])
    assert np.array_equal(seen["blocks.2.attn.hook_pattern"], cache["blocks.2.attn.hook_pattern"])
    # Pattern rows are softmax rows of a causal mask.
    p = seen["blocks.2.attn.hook_pattern"]
    assert np.allclose(p.sum(-1), 1.0, atol=1e-6) and np.all(np.triu(p[0], 1) == 0)


def test_hooks_run_in_order(tiny):
    ids = np.array([1, 2, 3], dtype=np.int32)
    order = []
    hooks = [("blocks.0.hook_resid_post", lambda x, n: order.append("a")),
             ("blocks.0.hook_resid_pre", lambda x, n: order.append("pre")),
             ("blocks.0.hook_resid_post", lambda x, n: order.append("b"))]
    tiny.run_with_hooks(ids, fwd_hooks=hooks)
    assert order == ["pre", "a", "b"]


def test_batch_agrees_with_single_sequences(tiny):
    rng = np.random.default_rng(3)
    lengths = [9, 5, 12]
    ids = np.zeros((3, 12), dtype=np.int32)
    for b, n in enumerate(lengths):
        ids[b, :n] = rng.integers(0, 512, n)
    names = ["blocks.1.hook_resid_post", "blocks.3.attn.hook_pattern"]
    logits, cache = tiny.run_with_cache(ids, names=names, lengths=lengths)
    assert logits.shape == (3, 12, 512)
    assert cache["blocks.1.hook_resid_post"].shape == (3, 12, 64)
    assert cache["blocks.3.attn.hook_pattern"].shape == (3, 8, 12, 12)
    for b, n in enumerate(lengths):
        one_logits, one = tiny.run_with_cache(ids[b, :n], names=names)
        for got, ref in [(logits[b, :n], one_logits), (cache[names[0]][b, :n], one[names[0]]),
                         (cache[names[1]][b, :, :n, :n], one[names[1]])]:
            assert np.abs(got - ref).max() <= 2e-6 * np.abs(ref).max()
        assert np.all(cache[names[1]][b, :, n:, :] == 0) and np.all(cache[names[1]][b, :, :, n:] == 0)


def test_batch_of_equal_lengths_on_smollm2(smollm2):
    a = smollm2.to_tokens("The cat sat on the mat and looked at the door.", bos=False)[:8]
    b = smollm2.to_tokens("Massive activations live in a few channels only.", bos=False)[:8]
    batch = np.stack([a, b])
    logits, cache = smollm2.run_with_cache(batch, names=["blocks.5.hook_resid_post"])
    for i, ids in enumerate([a, b]):
        one_logits, one = smollm2.run_with_cache(ids, names=["blocks.5.hook_resid_post"])
        ref = one["blocks.5.hook_resid_post"]
        assert np.abs(cache["blocks.5.hook_resid_post"][i] - ref).max() <= 2e-6 * np.abs(ref).max()
        assert np.abs(logits[i] - one_logits).max() <= 2e-6 * np.abs(one_logits).max()
