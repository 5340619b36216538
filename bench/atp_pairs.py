#!/usr/bin/env python3
"""Attribution patching against exact patching over prompt pairs from the corpus, with an interval over pairs.

Each pair: a window of T tokens from one paragraph of the corpus (data/corpus/python_docs.txt, paragraphs in
file order, the first N that have T + 1 tokens); the corrupted prompt substitutes the token at position T // 2
by the token at that position of the next such paragraph (a natural token, never the same one). Metric:
logit(the paragraph's real next token) - logit(the corrupted run's most likely next token, or its second where
that is the real one), at the last position. Sites: every block's input, attention output, FFN output, z per
(position, head), and the spike-channel group (the channels with a massive activation, |x| > 100 and >= 1000x
the median |x|, in any block's input of the clean run). `--exact K` patches the K sites of largest |estimate|
and K random others (seed 1) for real.

Prints per pair Spearman's rho (top K, random K), the rank among all sites of the best-ranked z site of a sink
head (alpha_0 > 0.3: the head's attention to position 0, averaged over the clean run's queries) and of the
best-ranked spike-group site, how many of the top K sites are sink-head z sites, and the mean rho over pairs with a 95 % percentile bootstrap interval
over pairs (10 000 resamples, seed 0). Writes --out/pairs.json.

  .venv-python/bin/python bench/atp_pairs.py models/SmolLM2-135M-Instruct.Q4_1.gguf [--pairs 8] [--tokens 16] [--exact 50]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

import sinkscope


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--corpus", default="data/corpus/python_docs.txt")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--exact", type=int, default=50)
    ap.add_argument("--out", default="out/atp_pairs")
    a = ap.parse_args()
    m = sinkscope.Model(a.model, weights="float32")
    T = a.tokens
    windows = []
    for para in open(a.corpus, encoding="utf-8").read().split("\n\n"):
        ids = m.to_tokens(para.strip(), bos="off")
        if len(ids) > T:
            windows.append(ids[:T + 1])
        if len(windows) == a.pairs + 1:
            break
    if len(windows) < a.pairs + 1:
        sys.exit(f"atp_pairs: the corpus has only {len(windows)} paragraphs of {T + 1} tokens")
    rows = []
    for i in range(a.pairs):
        clean, target = windows[i][:T].copy(), int(windows[i][T])
        corrupt = clean.copy()
        p = T // 2
        corrupt[p] = windows[i + 1][p] if windows[i + 1][p] != clean[p] else (clean[p] + 1) % m.config["vocab_size"]
        order = np.argsort(m(corrupt)[-1])[::-1]
        contrast = int(order[0] if order[0] != target else order[1])
        _, cache = m.run_with_cache(clean, names=lambda n: n.endswith("hook_resid_pre") or n.endswith("hook_pattern"))
        alpha0 = np.stack([cache[f"blocks.{l}.attn.hook_pattern"][:, :, 0].mean(axis=1) for l in range(m.config["n_layers"])])
        sink_heads = alpha0 > 0.3  # (n_layers, n_heads)
        spike = set()
        for x in (v for k, v in cache.items() if k.endswith("hook_resid_pre")):
            med = float(np.sort(np.abs(x), axis=None)[x.size // 2])  # the upper median, as core/measures.hpp defines median |x|
            spike |= {int(c) for c in np.nonzero((np.abs(x) > 100) & (np.abs(x) >= 1000 * med))[1]}
        groups = {"spike": sorted(spike)} if spike else None
        t0 = time.time()
        r = m.attribution_patch(clean, corrupt, target=target, contrast=contrast, exact=a.exact, seed=1,
                                sites=("resid_pre", "attn_out", "z", "mlp_out"), channels=groups)
        secs = time.time() - t0
        # every site's |estimate|, ranked over all kinds together (1 = largest)
        flat = np.concatenate([np.abs(r[k]).ravel() for k in sorted(r) if k.startswith("estimate")])
        def rank_of(values):
            best = float(np.max(np.abs(values)))
            return int(np.sum(flat > best)) + 1
        z = np.abs(r["estimate_z"])  # (n_layers, positions, n_heads)
        sink_z = z.transpose(0, 2, 1)[sink_heads]  # (sink heads, positions)
        top_cut = np.sort(flat)[::-1][min(a.exact, flat.size) - 1]
        row = {"pair": i, "clean": m.to_string(clean), "substituted_position": p,
               "target": m.to_string([target]), "contrast": m.to_string([contrast]),
               "clean_metric": r["clean_metric"], "corrupted_metric": r["corrupted_metric"],
               "spearman_top": r["spearman_top"], "spearman_random": r["spearman_random"],
               "sites": int(flat.size), "sink_heads": int(sink_heads.sum()), "best_rank_sink_head_z": rank_of(sink_z),
               "sink_head_z_in_top": int(np.sum(sink_z >= top_cut)),
               "spike_channels": sorted(spike), "seconds": secs}
        if spike:
            row["best_rank_spike_group"] = rank_of(r["estimate_group_spike"])
        rows.append(row)
        print(f"pair {i}: rho top {row['spearman_top']:.3f}, random {row['spearman_random']:.3f}; sites {row['sites']}; "
              f"sink heads {row['sink_heads']}, best z rank {row['best_rank_sink_head_z']}, in the top {a.exact}: "
              f"{row['sink_head_z_in_top']}; spike channels {row['spike_channels']} "
              f"rank {row.get('best_rank_spike_group', '-')}; metric {row['clean_metric']:.2f} -> {row['corrupted_metric']:.2f}; "
              f"{secs:.1f} s", flush=True)
    rng = np.random.default_rng(0)
    summary = {}
    for key in ("spearman_top", "spearman_random"):
        x = np.array([r[key] for r in rows])
        boot = x[rng.integers(0, len(x), size=(10000, len(x)))].mean(axis=1)
        summary[key] = {"mean": float(x.mean()), "ci95": [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))],
                        "min": float(x.min()), "max": float(x.max())}
        print(f"{key}: mean {x.mean():.3f} [{summary[key]['ci95'][0]:.3f}, {summary[key]['ci95'][1]:.3f}] over {len(x)} pairs "
              f"(min {x.min():.3f}, max {x.max():.3f})")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "pairs.json"), "w") as f:
        json.dump({"model": a.model, "tokens": T, "exact": a.exact, "pairs": rows, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
