"""The C++ interventions from Python (scale_channels, scale_heads, force_pattern, self_only_attention,
attend_only_to, patch_sites) against the same edits written by hand as NumPy hooks, and against what the
math says the attention output becomes: z[t, h] = sum_j p[h, t, j] v[j, g(h)]."""
import numpy as np
import pytest

import sinkscope

IDS = np.array([1, 50, 60, 70, 80, 90, 100, 311], dtype=np.int32)
OTHER = np.array([1, 7, 7, 300, 12, 5, 44, 9], dtype=np.int32)


def group(m):
    c = m.config
    return c["n_heads"] // c["n_kv_heads"]


def test_self_only_attention_gives_the_query_its_own_value(tiny):
    g, layer, queries = group(tiny), 1, [2, 5]
    names = [f"blocks.{layer}.attn.hook_v", f"blocks.{layer}.attn.hook_z", f"blocks.{layer}.attn.hook_pattern"]
    logits, cache = tiny.run_with_cache(IDS, names=names, fwd_hooks=[sinkscope.self_only_attention(layer, queries=queries)])
    v, z, p = (cache[n] for n in names)
    H = z.shape[1]
    for t in queries:
        for h in range(H):
            assert np.array_equal(z[t, h], v[t, h // g])       # 1·v_t + 0·(the others), exactly
            assert np.array_equal(p[h, t], np.eye(len(IDS), dtype=np.float32)[t])

    def one_hot(x, _):                                          # the same surgery as a NumPy hook
        x[:, queries, :] = 0.0
        for t in queries:
            x[:, t, t] = 1.0
    by_hand = tiny.run_with_hooks(IDS, fwd_hooks=[(names[2], one_hot)])
    assert np.array_equal(logits, by_hand)
    assert np.abs(logits - tiny(IDS)).max() > 1e-3


def test_force_pattern_own_pattern_is_identity_and_rows_are_renormalised(tiny):
    name = "blocks.0.attn.hook_pattern"
    clean, cache = tiny.run_with_cache(IDS, names=[name])
    same = tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.force_pattern(0, cache[name])])
    assert np.abs(same - clean).max() <= 1e-5 * np.abs(clean).max()

    # One row for heads 0 and 3 at query 3: weights (1, 0, 2, 1) / 4 over keys 0..3, the rest dropped.
    row = np.array([1, 0, 2, 1, 9, 9, 9, 9], dtype=np.float32)
    forced = tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.force_pattern(0, row, heads=[0, 3], queries=[3])])

    def by_hand(x, _):
        for h in (0, 3):
            x[h, 3] = np.array([0.25, 0, 0.5, 0.25, 0, 0, 0, 0], dtype=np.float32)
    expected = tiny.run_with_hooks(IDS, fwd_hooks=[(name, by_hand)])
    assert np.abs(forced - expected).max() <= 1e-6 * np.abs(expected).max()
    assert np.abs(forced - clean).max() > 1e-3

    with pytest.raises(sinkscope.Error):
        sinkscope.force_pattern(0, np.ones((2, 2)))                                       # neither a row nor a pattern
    with pytest.raises(sinkscope.Error):
        tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.force_pattern(0, [0, 0, 1], queries=[1])])  # nothing visible
    with pytest.raises(sinkscope.Error):
        tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.self_only_attention(tiny.config["n_layers"])])  # no such block


def test_attend_only_to_copies_the_keys_value(tiny):
    g = group(tiny)
    names = ["blocks.2.attn.hook_v", "blocks.2.attn.hook_z"]
    _, cache = tiny.run_with_cache(IDS, names=names, fwd_hooks=[sinkscope.attend_only_to(2, 0)])
    v, z = cache[names[0]], cache[names[1]]
    for t in range(len(IDS)):
        for h in range(z.shape[1]):
            assert np.array_equal(z[t, h], v[0, h // g])


def test_scaled_ablation_is_a_dose(tiny):
    layer, heads, out = 1, [0, 2], "blocks.1.hook_attn_out"
    clean = tiny(IDS)

    def zero_heads(x, _):
        x[:, heads, :] = 0.0
    assert np.array_equal(tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.scale_heads(layer, heads, 1.0)]), clean)
    assert np.array_equal(tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.scale_heads(layer, heads, 0.0)]),
                          tiny.run_with_hooks(IDS, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", zero_heads)]))
    # hook_attn_out = sum_h W_O,h z_h is affine in the dose.
    a = {f: tiny.run_with_cache(IDS, names=[out], fwd_hooks=[sinkscope.scale_heads(layer, heads, f)])[1][out]
         for f in (0.0, 1.0, 0.5, 3.0)}
    for f in (0.5, 3.0):
        expected = a[0.0] + f * (a[1.0] - a[0.0])
        assert np.abs(a[f] - expected).max() <= 1e-5 * np.abs(expected).max()

    name, channels = "blocks.2.mlp.hook_post", [1, 5, 30]

    def scale_by_hand(x, _):
        x[np.ix_([2, 4], channels)] *= np.float32(0.25)
    assert np.array_equal(tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.scale_channels(name, channels, 0.25, positions=[2, 4])]),
                          tiny.run_with_hooks(IDS, fwd_hooks=[(name, scale_by_hand)]))

    # With centres the dose scales the distance from them: factor 0 is mean-ablation to the centres.
    centres = np.array([0.5, -1.0, 2.0], dtype=np.float32)

    def mean_by_hand(x, _):
        x[np.ix_([2, 4], channels)] = centres
    assert np.array_equal(
        tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.scale_channels(name, channels, 0.0, positions=[2, 4], centres=centres)]),
        tiny.run_with_hooks(IDS, fwd_hooks=[(name, mean_by_hand)]))


def test_patch_sites_equals_hand_written_patches(tiny):
    sites = [sinkscope.PatchSite("z", 0, positions=[2, 4], heads=[1]),
             sinkscope.PatchSite("blocks.1.hook_resid_post", positions=[3], channels=[0, 7]),
             sinkscope.PatchSite("pattern", 2, positions=[5], heads=[0])]
    names = sinkscope.patch_site_names(sites)
    assert names == ["blocks.0.attn.hook_z", "blocks.1.hook_resid_post", "blocks.2.attn.hook_pattern"]
    _, source = tiny.run_with_cache(OTHER, names=names)

    def z_patch(x, _):
        x[[2, 4], 1] = source[names[0]][[2, 4], 1]

    def resid_patch(x, _):
        x[3, [0, 7]] = source[names[1]][3, [0, 7]]

    def pattern_patch(x, _):
        x[0, 5] = source[names[2]][0, 5]
    patched = tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.patch_sites(sites, source)])
    by_hand = tiny.run_with_hooks(IDS, fwd_hooks=[(names[0], z_patch), (names[1], resid_patch), (names[2], pattern_patch)])
    assert np.array_equal(patched, by_hand)
    one_at_a_time = tiny.run_with_hooks(IDS, fwd_hooks=[sinkscope.patch_sites([s], source) for s in sites])
    assert np.array_equal(patched, one_at_a_time)
    assert np.abs(patched - tiny(IDS)).max() > 1e-3

    with pytest.raises(sinkscope.Error):
        sinkscope.patch_sites(sites, {})                                                 # nothing captured
    with pytest.raises(sinkscope.Error):
        sinkscope.PatchSite("resid_post")                                                # a block hook needs a layer
    with pytest.raises(sinkscope.Error):
        tiny.run_with_hooks(IDS[:5], fwd_hooks=[sinkscope.patch_sites(sites, source)])   # another length


def test_surgery_in_a_batch_equals_each_sequence(tiny):
    surgery = [sinkscope.self_only_attention(0, heads=[1], queries=[1, 3]), sinkscope.scale_heads(1, [0], 0.5)]
    batch = tiny.run_with_hooks(np.stack([IDS, OTHER]), fwd_hooks=surgery)
    for b, ids in enumerate((IDS, OTHER)):
        alone = tiny.run_with_hooks(ids, fwd_hooks=surgery)
        assert np.abs(batch[b] - alone).max() <= 2e-6 * np.abs(alone).max()
