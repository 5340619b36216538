"""Attention sinks and the spike channel from Python, with sinkscope. A plain script a notebook can paste,
cell by cell (each "# %%" is a cell).

    python examples/python_sinks.py --model models/SmolLM2-135M-Instruct.Q4_1.gguf --out out/python_sinks

Writes to --out:
  sink_rate_per_layer.png      Gu et al.'s Sink^0.3_0 per layer, samples of 64 tokens without and with BOS
  attention_to_pos0_heads.png  alpha_0 of every (layer, head): the mean attention the queries pay to position 0
  spike_clamp.png              the spike channel (found from the data) zeroed at position 0 after the block
                               where it appears: the position-0 norm and the sink rate per layer, clean vs clamped
  summary.json                 the numbers behind the figures
Needs matplotlib (scripts/reproduce.sh puts it in .venv; `pip install matplotlib` elsewhere).
"""
# %%
import argparse
import collections
import json
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import sinkscope

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
p.add_argument("--text-file", default="data/sample.txt")
p.add_argument("--out", default="out/python_sinks")
p.add_argument("--seq-len", type=int, default=64)    # Gu et al.: 64 tokens
p.add_argument("--samples", type=int, default=16)
p.add_argument("--eps", type=float, default=0.3)     # Gu et al.'s threshold on alpha_0
args = p.parse_args()
out = pathlib.Path(args.out)
out.mkdir(parents=True, exist_ok=True)

m = sinkscope.load(args.model)
L, H = m.config["n_layers"], m.config["n_heads"]
text = pathlib.Path(args.text_file).read_text()
print(m)

# %% 1. Sink rate per layer, without and with BOS. Model.stats is the CLI's `stats`: the C++ reducers compute
# alpha_0 = 1/T sum_t A[t, 0] per (layer, head) and Sink^eps_0 = the share of heads with alpha_0 > eps.
stats = {bos: m.stats(text, seq_len=args.seq_len, eps=args.eps, bos=bos, samples=args.samples) for bos in (False, True)}
layers = np.arange(L)
fig, ax = plt.subplots(figsize=(7, 3.5))
for bos, style in ((False, "o-"), (True, "s--")):
    s = stats[bos]
    ax.plot(layers, [100 * l["sink_rate"] for l in s["layers"]], style,
            label=f"{'with' if bos else 'without'} BOS (all layers {100 * s['sink_rate']:.1f}%)")
ax.set(xlabel="layer", ylabel=f"Sink^{args.eps}_0 (% of heads)", ylim=(-3, 103),
       title=f"sink rate per layer, {stats[False]['samples']} samples of {args.seq_len} tokens")
ax.legend()
fig.tight_layout()
fig.savefig(out / "sink_rate_per_layer.png", dpi=120)

# %% 2. Per-head attention to position 0: alpha_0 averaged over samples, from the reducers' state
# (state.attention.alpha0 is [sample][layer * H + head]).
def alpha0(s):
    return np.array(s["state"]["attention"]["alpha0"], dtype=float).reshape(-1, L, H)

fig, axes = plt.subplots(1, 2, figsize=(8, 6), sharey=True)
for ax, bos in zip(axes, (False, True)):
    im = ax.imshow(alpha0(stats[bos]).mean(0), aspect="auto", vmin=0, vmax=1, cmap="viridis")
    ax.set(xlabel="head", title=f"{'with' if bos else 'without'} BOS")
axes[0].set_ylabel("layer")
fig.colorbar(im, ax=axes, label="alpha_0 (mean attention to position 0)")
fig.suptitle("attention to position 0 per head")
fig.savefig(out / "attention_to_pos0_heads.png", dpi=120)

# %% 3. The spike channel, from the data: among the layers whose top |x| is massive (Sun et al.: > 100 and
# >= 1000 x the median), the channel that holds it most often; the block where it first appears.
massive = [l for l in stats[False]["layers"] if l["massive"]]
if not massive:
    raise SystemExit("no layer has a massive activation in these samples; nothing to clamp")
channel = collections.Counter(l["top"][0]["channel"] for l in massive).most_common(1)[0][0]
step_up = min(l["layer"] for l in massive if l["top"][0]["channel"] == channel)
print(f"spike channel {channel}, first massive after block {step_up}")

# The same samples as the stats (consecutive 64-token pieces, no BOS), as one batch [B, T].
ids = m.to_tokens(text, bos=False)
B = min(args.samples, len(ids) // args.seq_len)
batch = ids[: B * args.seq_len].reshape(B, args.seq_len)
names = [f"blocks.{l}.attn.hook_pattern" for l in range(L)] + [f"blocks.{l}.hook_resid_post" for l in range(L)]

def clamp(x, name):  # x: [batch, pos, d_model], a view of the live residual stream
    x[:, 0, channel] = 0.0

def measure(fwd_hooks):
    _, cache = m.run_with_cache(batch, names=names, fwd_hooks=fwd_hooks)
    # alpha_0 per (sample, layer, head) = mean over queries t of A[t, 0], as model/reducers.hpp computes it.
    a0 = np.stack([cache[f"blocks.{l}.attn.hook_pattern"][:, :, :, 0].mean(-1) for l in range(L)], axis=1)  # [B, L, H]
    norm0 = np.array([np.linalg.norm(cache[f"blocks.{l}.hook_resid_post"][:, 0], axis=-1).mean() for l in range(L)])
    return a0, norm0

a0_clean, norm_clean = measure([])
a0_clamp, norm_clamp = measure([(f"blocks.{step_up}.hook_resid_post", clamp)])
# The patterns of the batch and the C++ reducers agree (batch vs one-at-a-time: 2e-6 of the largest entry).
assert np.abs(a0_clean - alpha0(stats[False])).max() < 1e-4

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
ax1.semilogy(layers, norm_clean, "o-", label="clean")
ax1.semilogy(layers, norm_clamp, "s--", label=f"channel {channel} := 0 at position 0 after block {step_up}")
ax1.set(xlabel="layer", ylabel="||x_0|| after the block (mean over samples)")
ax1.legend(fontsize=8)
ax2.plot(layers, 100 * (a0_clean > args.eps).mean(axis=(0, 2)), "o-", label="clean")
ax2.plot(layers, 100 * (a0_clamp > args.eps).mean(axis=(0, 2)), "s--", label="clamped")
ax2.axvline(step_up, color="grey", lw=0.8)
ax2.set(xlabel="layer", ylabel=f"Sink^{args.eps}_0 (% of heads)", ylim=(-3, 103))
ax2.legend(fontsize=8)
fig.suptitle(f"clamping the spike channel {channel} ({B} samples of {args.seq_len} tokens, no BOS)")
fig.tight_layout()
fig.savefig(out / "spike_clamp.png", dpi=120)

summary = {
    "model": m.path, "samples": B, "seq_len": args.seq_len, "eps": args.eps,
    "sink_rate": {"without_bos": stats[False]["sink_rate"], "with_bos": stats[True]["sink_rate"]},
    "sink_rate_per_layer": {"without_bos": [l["sink_rate"] for l in stats[False]["layers"]],
                            "with_bos": [l["sink_rate"] for l in stats[True]["layers"]]},
    "spike_channel": channel, "step_up_block": step_up,
    "sink_rate_clean": float((a0_clean > args.eps).mean()), "sink_rate_clamped": float((a0_clamp > args.eps).mean()),
    "norm_pos0_clean": norm_clean.tolist(), "norm_pos0_clamped": norm_clamp.tolist(),
}
(out / "summary.json").write_text(json.dumps(summary, indent=1))
print(json.dumps({k: v for k, v in summary.items() if not isinstance(v, (list, dict))}, indent=1))
print(f"figures in {out}/")
