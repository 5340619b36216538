"""Model.attribution_patch (train/attribution_patching.hpp) from Python: the estimate's shape and the sites a
one-token corruption cannot reach, the exact values against patches written as Python hooks (an independent
path through run_with_hooks) for the logit, log-probability and loss metrics, the CLI's arrays, and bad input."""
import json
import subprocess

import numpy as np
import pytest

import sinkscope

from conftest import TINY, cli_path

CLEAN = np.array([1, 403, 261, 329, 378, 300], dtype=np.int32)
CORRUPT = np.array([1, 403, 415, 329, 378, 300], dtype=np.int32)  # position 2 substituted


def test_estimate_shape_and_unreached_sites(tiny):
    target = int(tiny(CLEAN)[-1].argmax())
    r = tiny.attribution_patch(CLEAN, CORRUPT, target=target)
    L, n = tiny.config["n_layers"], len(CLEAN)
    assert r["estimate"].shape == (L, n) and r["estimate"].dtype == np.float64
    # block 0's input differs at position 2 only; causal attention never carries it to earlier positions
    assert np.all(r["estimate"][:, :2] == 0) and np.all(r["estimate"][0, 3:] == 0)
    assert np.all(r["estimate"][1:, 2:] != 0) and r["estimate"][0, 2] != 0
    assert np.all(np.isnan(r["exact"]))
    assert np.isnan(r["spearman_top"]) and np.isnan(r["spearman_random"])
    assert r["clean_metric"] == pytest.approx(float(tiny(CLEAN)[-1, target]), rel=1e-6)
    assert r["corrupted_metric"] == pytest.approx(float(tiny(CORRUPT)[-1, target]), rel=1e-6)


def test_exact_sites_are_real_patches(tiny):
    logits = tiny(CLEAN)[-1]
    target, contrast = (int(i) for i in np.argsort(logits)[::-1][:2])
    r = tiny.attribution_patch(CLEAN, CORRUPT, target=target, contrast=contrast, exact=4, seed=3)
    ran = ~np.isnan(r["exact"])
    assert ran.sum() == 8  # the 4 largest |estimate| and 4 random others
    assert -1 <= r["spearman_top"] <= 1 and -1 <= r["spearman_random"] <= 1
    _, cache = tiny.run_with_cache(CORRUPT, names=lambda name: name.endswith("hook_resid_pre"))
    base = float(logits[target] - logits[contrast])
    for l, t in zip(*np.nonzero(ran)):
        name = f"blocks.{l}.hook_resid_pre"
        row = cache[name][t].copy()

        def put(x, hook, t=t, row=row):
            x[t] = row

        out = tiny.run_with_hooks(CLEAN, fwd_hooks=[(name, put)])[-1]
        assert r["exact"][l, t] == pytest.approx(float(out[target] - out[contrast]) - base, abs=1e-5)


def test_cli_writes_the_same_estimate(tiny, tmp_path):
    cli = cli_path()
    target = int(tiny(CLEAN)[-1].argmax())
    out = tmp_path / "atp"
    subprocess.run([cli, "atp", str(TINY), "--tokens", ",".join(map(str, CLEAN)), "--corrupted-tokens", ",".join(map(str, CORRUPT)),
                    "--target", str(target), "--out", str(out)], check=True, capture_output=True)
    r = tiny.attribution_patch(CLEAN, CORRUPT, target=target)
    cli_estimate = np.load(out / "estimate.npy")
    assert cli_estimate.shape == r["estimate"].shape
    assert np.allclose(cli_estimate, r["estimate"], rtol=1e-6, atol=1e-7)
    assert json.loads((out / "summary.json").read_text())["clean_metric"] == pytest.approx(r["clean_metric"], rel=1e-9)


def _log_softmax(z):
    z = z.astype(np.float64) - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


@pytest.mark.parametrize("metric", ["logprob", "loss"])
def test_logprob_and_loss_metrics_are_real_patches(tiny, metric):
    # The metric computed here with NumPy from the logits of run_with_hooks: an independent path.
    target = int(tiny(CLEAN)[-1].argmax())
    kw = {"target": target} if metric == "logprob" else {}

    def value(logits):
        lp = _log_softmax(logits)
        return lp[-1, target] if metric == "logprob" else -lp[np.arange(len(CLEAN) - 1), CLEAN[1:]].mean()

    r = tiny.attribution_patch(CLEAN, CORRUPT, metric=metric, exact=3, seed=5, **kw)
    base = value(tiny(CLEAN))
    assert r["clean_metric"] == pytest.approx(base, rel=1e-6)
    assert r["corrupted_metric"] == pytest.approx(value(tiny(CORRUPT)), rel=1e-6)
    ran = ~np.isnan(r["exact"])
    assert ran.sum() == 6
    _, cache = tiny.run_with_cache(CORRUPT, names=lambda name: name.endswith("hook_resid_pre"))
    for l, t in zip(*np.nonzero(ran)):
        name = f"blocks.{l}.hook_resid_pre"
        row = cache[name][t].copy()

        def put(x, hook, t=t, row=row):
            x[t] = row

        assert r["exact"][l, t] == pytest.approx(value(tiny.run_with_hooks(CLEAN, fwd_hooks=[(name, put)])) - base, abs=1e-5)


def test_metric_words_are_checked(tiny):
    with pytest.raises(sinkscope.Error, match="'kl'"):
        tiny.attribution_patch(CLEAN, CORRUPT, target=5, metric="kl")
    with pytest.raises(sinkscope.Error, match="no target"):
        tiny.attribution_patch(CLEAN, CORRUPT, target=5, metric="loss")
    with pytest.raises(sinkscope.Error, match="needs a target"):
        tiny.attribution_patch(CLEAN, CORRUPT)


def test_bad_input_is_named(tiny):
    with pytest.raises(sinkscope.Error, match="same length"):
        tiny.attribution_patch(CLEAN, CORRUPT[:-1], target=5)
    with pytest.raises(sinkscope.Error, match="one sequence pair"):
        tiny.attribution_patch(np.stack([CLEAN, CLEAN]), np.stack([CORRUPT, CORRUPT]), target=5)


def top_two_difference(logits):
    """The two most likely last-position tokens a, b and the metric logit(a) - logit(b) with its gradient."""
    a, b = (int(i) for i in np.argsort(logits[-1])[::-1][:2])

    def metric(z):
        g = np.zeros_like(z, dtype=np.float64)
        g[-1, a], g[-1, b] = 1.0, -1.0
        return float(z[-1, a] - z[-1, b]), g
    return a, b, metric


def test_grad_of_a_logit_difference_against_finite_differences(tiny):
    # dM/d(resid_pre) from one backward, against M moved by a small push along a random direction through
    # a Python hook. float32 central differences: at a step of 1e-3 (per entry, at most) they agreed to
    # 6e-4 relative or better in every block, their truncation and rounding errors balanced there.
    logits = tiny(CLEAN)
    a, b, metric = top_two_difference(logits)

    g = tiny.grad(CLEAN, metric, params=True)
    assert g["value"] == pytest.approx(float(logits[-1, a] - logits[-1, b]))
    assert set(g["params"]) == set(tiny.parameter_names())
    rng = np.random.default_rng(0)
    for l in range(tiny.config["n_layers"]):
        name = f"blocks.{l}.hook_resid_pre"
        assert g[name].shape == (len(CLEAN), tiny.config["d_model"])
        v = rng.standard_normal(g[name].shape).astype(np.float32)
        h = 1e-3 / float(np.abs(v).max())

        def push(x, hook, s=1.0):
            x += s * h * v

        up = tiny.run_with_hooks(CLEAN, fwd_hooks=[(name, push)])[-1]
        down = tiny.run_with_hooks(CLEAN, fwd_hooks=[(name, lambda x, hook: push(x, hook, -1.0))])[-1]
        numeric = (float(up[a] - up[b]) - float(down[a] - down[b])) / (2 * h)
        analytic = float((g[name].astype(np.float64) * v).sum())
        assert analytic == pytest.approx(numeric, rel=2e-3)
    # the attribution estimate is this gradient dotted with the patched difference
    _, clean_cache = tiny.run_with_cache(CLEAN, names=lambda n: n.endswith("hook_resid_pre"))
    _, corrupt_cache = tiny.run_with_cache(CORRUPT, names=lambda n: n.endswith("hook_resid_pre"))
    r = tiny.attribution_patch(CLEAN, CORRUPT, target=a, contrast=b)
    for l in range(tiny.config["n_layers"]):
        name = f"blocks.{l}.hook_resid_pre"
        want = ((corrupt_cache[name].astype(np.float64) - clean_cache[name]) * g[name]).sum(-1)
        assert np.allclose(r["estimate"][l], want, rtol=1e-5, atol=1e-7)
    with pytest.raises(sinkscope.Error, match="must be \\(pos, vocab\\)"):
        tiny.grad(CLEAN, lambda z: (0.0, np.zeros((2, 2))))


def test_every_kind_of_site_is_a_real_patch(tiny):
    # z per head, mlp_out and a channel group: the exact values against patches written as Python hooks.
    logits = tiny(CLEAN)[-1]
    target, contrast = (int(i) for i in np.argsort(logits)[::-1][:2])
    r = tiny.attribution_patch(CLEAN, CORRUPT, target=target, contrast=contrast, exact=6, seed=2,
                               sites=("z", "mlp_out"), channels={"pair": [3, 7]})
    L, n, H = tiny.config["n_layers"], len(CLEAN), tiny.config["n_heads"]
    assert r["estimate_z"].shape == (L, n, H) and r["estimate_mlp_out"].shape == (L, n)
    assert r["estimate_group_pair"].shape == (L, n) and "estimate" not in r
    for key in ("estimate_z", "estimate_mlp_out", "estimate_group_pair"):
        assert np.all(r[key][:, :2] == 0), key  # positions before the substitution are unreached
    ran = sum(int((~np.isnan(r[k])).sum()) for k in ("exact_z", "exact_mlp_out", "exact_group_pair"))
    assert ran == 12
    _, cache = tiny.run_with_cache(CORRUPT)
    base = float(logits[target] - logits[contrast])

    def patched(name, put):
        out = tiny.run_with_hooks(CLEAN, fwd_hooks=[(name, put)])[-1]
        return float(out[target] - out[contrast]) - base

    for l, t, h in zip(*np.nonzero(~np.isnan(r["exact_z"]))):
        name = f"blocks.{l}.attn.hook_z"
        src = cache[name][t, h].copy()

        def put(x, hook, t=t, h=h, src=src):
            x[t, h] = src
        assert r["exact_z"][l, t, h] == pytest.approx(patched(name, put), abs=1e-5)
    for l, t in zip(*np.nonzero(~np.isnan(r["exact_mlp_out"]))):
        name = f"blocks.{l}.hook_mlp_out"
        src = cache[name][t].copy()

        def put(x, hook, t=t, src=src):
            x[t] = src
        assert r["exact_mlp_out"][l, t] == pytest.approx(patched(name, put), abs=1e-5)
    for l, t in zip(*np.nonzero(~np.isnan(r["exact_group_pair"]))):
        name = f"blocks.{l}.hook_resid_pre"
        src = cache[name][t, [3, 7]].copy()

        def put(x, hook, t=t, src=src):
            x[t, [3, 7]] = src
        assert r["exact_group_pair"][l, t] == pytest.approx(patched(name, put), abs=1e-5)
    with pytest.raises(sinkscope.Error, match="unknown site 'heads'"):
        tiny.attribution_patch(CLEAN, CORRUPT, target=5, sites=("heads",))


def test_grad_at_named_hooks_against_finite_differences(tiny):
    # dM/d(attn_out), dM/d(z) and dM/d(mlp_out), each against M moved by a push through a Python hook at that
    # hook alone: central differences at steps h = 1e-2 and h/2 (per entry, at most), Richardson-extrapolated,
    # (4 D(h/2) - D(h)) / 3, which cancels the h^2 term. One plain step does not fit every hook in float32:
    # 1e-3 left rounding of 4e-3 relative at the last block's outputs, and 1e-2 truncation of 9e-3 at block
    # 0's; the extrapolation agreed to 6e-4 or better at all six (measured 2026-12-07).
    logits = tiny(CLEAN)
    a, b, metric = top_two_difference(logits)

    L = tiny.config["n_layers"]
    names = [f"blocks.{l}.{h}" for l in (0, L - 1) for h in ("hook_attn_out", "attn.hook_z", "hook_mlp_out")]
    g = tiny.grad(CLEAN, metric, names=names)
    assert set(g) == set(names) | {"value"}
    assert g["blocks.0.attn.hook_z"].shape == (len(CLEAN), tiny.config["n_heads"], tiny.config["head_dim"])
    rng = np.random.default_rng(1)
    for name in names:
        v = rng.standard_normal(g[name].shape).astype(np.float32)

        def central(h):
            up = tiny.run_with_hooks(CLEAN, fwd_hooks=[(name, lambda x, hook: x.__iadd__(np.float32(h) * v))])[-1]
            down = tiny.run_with_hooks(CLEAN, fwd_hooks=[(name, lambda x, hook: x.__isub__(np.float32(h) * v))])[-1]
            return (float(up[a] - up[b]) - float(down[a] - down[b])) / (2 * h)

        h = 1e-2 / float(np.abs(v).max())
        numeric = (4 * central(h / 2) - central(h)) / 3
        analytic = float((g[name].astype(np.float64) * v).sum())
        assert analytic == pytest.approx(numeric, rel=2e-3), name
    assert set(tiny.grad(CLEAN, metric, names=lambda n: n.endswith("hook_mlp_out"))) == \
        {f"blocks.{l}.hook_mlp_out" for l in range(L)} | {"value"}
    with pytest.raises(sinkscope.Error, match="no gradient at 'blocks.0.attn.hook_pattern'"):
        tiny.grad(CLEAN, metric, names=["blocks.0.attn.hook_pattern"])
    with pytest.raises(sinkscope.Error, match=f"no 'blocks.{L}.hook_mlp_out'"):
        tiny.grad(CLEAN, metric, names=[f"blocks.{L}.hook_mlp_out"])
