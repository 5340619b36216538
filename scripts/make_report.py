#!/usr/bin/env python3
"""Builds report/index.html from the experiments' outputs (out/<experiment>/meta.json + data files).

Every verdict is decided in C++ by the experiment that measured it (include/sinkscope/analysis/verdict.hpp)
and written to meta.json under "verdict": the claim, the outcome, the rule, the statistic with its 95%
interval, n, the threshold and the null control the rule must fail on. This script decides nothing: it
prints those objects and draws the figures from the data files. A missing output is "not run".

Usage: python scripts/make_report.py [--out out] [--report report] [--null-out out/null] [--update-readme README.md]
  --null-out DIR       outputs of the same experiments run as null controls (--random-init: random weights in the
                       same layout); their outcomes are listed in a table of their own.
  --update-readme F    replace the claim table between F's "<!-- claims:begin -->" and "<!-- claims:end -->".
Needs numpy and matplotlib (scripts/pyenv.sh --plots-only prints a python that has them).
"""
import argparse
import html
import json
import math
import os
import shutil
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

NOT_RUN = "not run"


def load(out, name):
    path = os.path.join(out, name, "meta.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        meta = json.load(f)
    meta["_dir"] = os.path.join(out, name)
    return meta


def verdicts(meta):
    v = meta.get("verdict") if meta else None
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def npy(meta, file):
    path = os.path.join(meta["_dir"], file)
    return np.load(path) if os.path.exists(path) else None


def csv_rows(meta, file):
    import csv
    path = os.path.join(meta["_dir"], file)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}%"


def outcome_text(v):
    """The outcome a reader sees: a claim's own; a control's "as expected" / "unexpected", with the rule's
    outcome and the registered expectation (analysis/verdict.hpp writes both)."""
    if v.get("rule_kind") == "control" and v.get("control_outcome"):
        return v["control_outcome"], f"rule: {v['outcome']}; expected: {v.get('expected_outcome', '?')}"
    return v["outcome"], ""


def num(x):
    if x is None:
        return "n/a"
    if isinstance(x, float) and (math.isinf(x) or abs(x) >= 1e300):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, int):
        return str(x)
    return f"{x:.3g}"


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


class Figures:
    def __init__(self, report):
        self.report = report
        os.makedirs(os.path.join(report, "figures"), exist_ok=True)

    def figure(self, name):
        return os.path.join(self.report, "figures", name + ".png"), "figures/" + name + ".png"


# ---------------------------------------------------------------------------------------------------
# What each paper says (static), per claim id.

PAPER = {
    "A1": ("The sink is not BOS semantics",
           "LLaMA-3.1-8B: Sink^ε_0[2:] without BOS recovers to near its with-BOS level (only layers 0–1 change); Mistral collapses "
           "87% → 2% (sliding-window layers show no P0 sink)."),
    "A2": ("The P0 sink circuit",
           "Position 0 attends only to itself; the next MLP(s) give it a huge norm with a fixed direction (cross-input cosine ≈ 1, "
           "separate in PCA); single-head ablations do not remove it (heads cooperate). The circuit lives in two blocks "
           "(scored here: blocks 0–1)."),
    "A2-massive": ("The P0 sink circuit, at the massive stage",
                   "The same circuit read after the block where the massive activation enters (Paper B's step-up), with "
                   "its knockouts among the blocks and heads up to it."),
    "A3": ("The cone model", "E‖o‖² = α² + (1 − α²) E[Σp²]; position 0 (Σp² = 1) has the largest expected attention-output norm."),
    "A4": ("Training trace",
           "30B-A3B MoE from scratch: the circuit appears early in middle layers, spreads over the first positions (position 1 for "
           "a while) and finally concentrates in layers 0–1."),
    "B1": ("Spike life cycle and step-up/step-down table",
           "Step-up / step-down sub-blocks: Llama-2-7B 4 / 62 (of 64), Llama-3-8B 4 / 64, Qwen2.5-7B 8,10 / 54,55 (of 56), "
           "Qwen3-8B 14 / 70,72 (of 72); blocks in between add 2–3 orders of magnitude less; few channels, fixed ratios."),
    "B2": ("The step-up FFN as a quadratic amplifier",
           "F(h̃)_k ≈ h̃ᵀU_kh̃ ≈ λ⋆(s⋆ᵀh̃)²; spike channels = exceptionally large ‖U_k‖_F, only in step-up/step-down blocks; s⋆ shared."),
    "B3a": ("Almost every token spikes at position 0",
            "Share of the vocabulary that spikes at position 0: Llama-2-7B 99.65%, Llama-3-8B 99.77%, Qwen2.5-7B 98.40%, Qwen3-8B 99.93%."),
    "B3b": ("Delimiters spike elsewhere", "Away from position 0, spikes sit on delimiters such as \".\" and \"\\n\"."),
    "B4": ("RMSNorm makes spike tokens sparse and near-constant",
           "RMSNorm(spike) is bounded (|h̃_i| ≤ √d), sparse (on the spike channels) and near-constant (cosine → 1 after the step-up block)."),
    "B5": ("From sparse to sink",
           "Sink keys lie in a 1–2-dimensional subspace; a head is a sink head when its queries lie closer to it than to ordinary keys."),
    "B6": ("Spikes and sinks are separable (ablation table)", "Table: PPL / sink ratio / spike for 13 variants of a Llama-style 7B."),
    "C1": ("Causal chain: spike → sink", "Both papers: the spike, normalised by RMSNorm, becomes the sink key that sink heads attend to."),
    "P1": ("Massive activations: zero vs mean ablation", "LLaMA2-7B: zero → perplexity inf; mean → 5.47 (unchanged)."),
    "P2": ("StreamingLLM: sink tokens restore window attention", "Llama-2-13B: 0+1024 → perplexity 5158; 4+1020 → 5.40."),
}


def split_claim(claim):
    """'A1: removing BOS ...' or 'A3 (Paper A): ...' -> ('A1', 'removing BOS ...'); 'B3a' -> ('B3a', '')."""
    import re
    m = re.match(r"^([A-Z][0-9][0-9a-z]*(?:-[a-z]+)?)\s*(?:\(([^)]*)\))?\s*:?\s*(.*)$", claim, re.S)
    if not m:
        return claim, ""
    qualifier = m.group(2) or ""   # "B6 (sinks)" keeps its one-word qualifier; "A3 (Paper A)" drops its note
    return (m.group(1) + f" ({qualifier})" if qualifier and len(qualifier.split()) == 1 else m.group(1)), m.group(3)


def paper_of(claim):
    """The paper's title and statement for a short claim id ('B6-sinks' and 'B6' share B6's)."""
    return PAPER.get(claim) or PAPER.get(claim.split(" ")[0].split("-")[0]) or (claim, "")


# ---------------------------------------------------------------------------------------------------
# Figures, one function per experiment: (r, meta) -> list of figure paths. Best effort: a figure that
# cannot be drawn is reported, never a reason to drop a verdict.

def fig_a1(r, m):
    figs = []
    rates = npy(m, "sink_rates.npy")
    if rates is not None and rates.ndim == 3:
        path, rel = r.figure("a1_sink_rates")
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for b, lab in ((0, "without BOS"), (1, "with BOS")):
            for e in range(rates.shape[1]):
                ax.plot(100 * rates[b, e], "-" if e == 0 else "--", marker="o" if b else "x", ms=3, label=f"{lab}, ε #{e}")
        ax.set_xlabel("layer"); ax.set_ylabel("Sink^ε_0 of the layer (%)"); ax.legend(fontsize=7)
        ax.set_title("A1: sink rate per layer with and without BOS")
        save(fig, path); figs.append(rel)
    return figs


def fig_a2(r, m):
    res = m["results"]
    figs = []
    if "layers" in res:
        path, rel = r.figure("a2_norms")
        fig, axs = plt.subplots(1, 2, figsize=(10, 3.5))
        axs[0].semilogy([l["norm_pos0"] for l in res["layers"]], "o-", ms=3, label="position 0")
        axs[0].semilogy([l["norm_rest"] for l in res["layers"]], "x-", ms=3, label="positions ≥ 1")
        axs[0].set_xlabel("layer (resid_post)"); axs[0].set_ylabel("mean ℓ2 norm"); axs[0].legend(fontsize=7)
        axs[1].plot([l["cos_pos0"] for l in res["layers"]], "o-", ms=3, label="residual, position 0")
        axs[1].plot([l["cos_rest"] for l in res["layers"]], "x-", ms=3, label="residual, positions ≥ 1")
        axs[1].set_xlabel("layer"); axs[1].set_ylabel("mean cross-input cosine"); axs[1].legend(fontsize=7)
        save(fig, path); figs.append(rel)
    pca = npy(m, "pca.npy")
    if pca is not None and pca.ndim == 2 and pca.shape[1] >= 3:
        path, rel = r.figure("a2_pca")
        fig, ax = plt.subplots(figsize=(4.5, 3.5))
        rest, p0 = pca[pca[:, 2] == 0], pca[pca[:, 2] == 1]
        ax.scatter(rest[:, 0], rest[:, 1], s=4, alpha=0.5, label="positions ≥ 1")
        ax.scatter(p0[:, 0], p0[:, 1], s=20, c="red", label="position 0")
        ax.set_title("A2: PCA of resid_post after the step-up block"); ax.legend(fontsize=7)
        save(fig, path); figs.append(rel)
    ab = res.get("ablations", [])
    if len(ab) > 1:
        path, rel = r.figure("a2_knockouts")
        fig, ax = plt.subplots(figsize=(10, 3.2))
        labels = [f"{a.get('kind', '?')}{a.get('layer', '')}" + (f".{a['head']}" if a.get("kind") == "head" else "") for a in ab[1:]]
        colors = ["tab:blue" if a.get("kind") == "mlp" else "tab:orange" if a.get("kind") == "attn" else "tab:gray" for a in ab[1:]]
        x = np.arange(len(labels))
        ax.bar(x - 0.2, [a.get("norm_ratio") if a.get("norm_ratio") is not None else float("nan") for a in ab[1:]], width=0.4,
               color=colors, label="after block M (massive stage)")
        ax.bar(x + 0.2, [a.get("norm_ratio_early") if a.get("norm_ratio_early") is not None else float("nan") for a in ab[1:]],
               width=0.4, color=colors, alpha=0.45, hatch="//", label="after block 2 (early stage)")
        ax.set_xticks(x); ax.set_xticklabels(labels, rotation=90, fontsize=6); ax.legend(fontsize=7)
        ax.set_ylabel("P0 norm after knockout / clean"); ax.set_title("A2: knockouts (blue MLP, orange attention, gray heads)")
        save(fig, path); figs.append(rel)
    return figs


def fig_a3(r, m):
    lay = m["results"].get("layers", [])
    if not lay:
        return []
    path, rel = r.figure("a3_ratios")
    fig, axs = plt.subplots(1, 2, figsize=(10, 3.5))
    x = [l["layer"] for l in lay]
    for key, lab in (("pred_ratio0", "predicted (unit-norm cone)"), ("pred_ratio0_drain", "predicted (cone with value norms)"),
                     ("meas_ratio0", "measured")):
        if key in lay[0]:
            axs[0].semilogy(x, [l[key] for l in lay], "o-" if key != "meas_ratio0" else "kx-", ms=3, label=lab)
    for l in lay:
        if l.get("sink_rate", 0) >= 0.3:
            axs[0].axvspan(l["layer"] - 0.5, l["layer"] + 0.5, color="gray", alpha=0.15, lw=0)
    axs[0].axhline(1, color="k", lw=0.5)
    axs[0].set_xlabel("layer (gray: sink layers)"); axs[0].set_ylabel("‖o₀‖² / mean ‖o_t≥1‖²"); axs[0].legend(fontsize=7)
    pred, meas = npy(m, "predicted.npy"), npy(m, "measured.npy")
    if pred is not None and meas is not None:
        for l in range(0, pred.shape[0], max(1, pred.shape[0] // 4)):
            axs[1].loglog(pred[l], meas[l], ".", ms=4, label=f"layer {l}")
        lim = [np.nanmin(meas[meas > 0]), np.nanmax(meas)]
        axs[1].plot(lim, lim, "k", lw=0.5)
        axs[1].set_xlabel("predicted E‖o_t‖²"); axs[1].set_ylabel("measured ‖o_t‖²"); axs[1].legend(fontsize=7)
    save(fig, path)
    return [rel]


def fig_a4(r, m):
    cps = m["results"].get("checkpoints", [])
    alpha = npy(m, "alpha.npy")
    if alpha is None or not cps or alpha.ndim != 3:
        return []
    path, rel = r.figure("a4_trace")
    fig, axs = plt.subplots(1, 2, figsize=(10, 3.5))
    steps = [c["step"] for c in cps][: alpha.shape[0]]
    for l in range(alpha.shape[1]):
        axs[0].plot(steps, alpha[: len(steps), l, 0], "o-", ms=3, label=f"layer {l}, position 0")
    axs[0].set_xlabel("step"); axs[0].set_ylabel("mean α_k over heads"); axs[0].legend(fontsize=6)
    ratio = npy(m, "norm_ratio.npy")
    if ratio is not None and ratio.ndim == 3:
        for l in range(ratio.shape[1]):
            axs[1].plot(steps, ratio[: len(steps), l, 0], "o-", ms=3, label=f"layer {l}, position 0")
        axs[1].set_xlabel("step"); axs[1].set_ylabel("‖x_0‖ / mean ‖x_t‖ (resid_post)"); axs[1].legend(fontsize=6)
    save(fig, path)
    return [rel]


def fig_a4_scale(r, m):
    """The scale sweep (the main job's preset), and beside it the English-text sweep when one was run into
    <out>/a4_scale_sweep_text (a4_scale_sweep --preset text --out …; docs/training-from-scratch.md: not part of the main job)."""
    figs = draw_scale_sweep(r, m, "a4_scale_sweep")
    text_dir = m["_dir"] + "_text"
    if os.path.exists(os.path.join(text_dir, "meta.json")):
        figs += draw_scale_sweep(r, load(os.path.dirname(text_dir), os.path.basename(text_dir)), "a4_scale_sweep_text")
    return figs


def draw_scale_sweep(r, m, name):
    """One sweep: each quantity against training compute and non-embedding parameters (log x), every
    run's trajectory (thin), its last checkpoint (dot), the fitted trend at the last checkpoints with its
    95% band (stratified bootstrap over seeds), and Sun's criterion where the axis shows it."""
    rows = csv_rows(m, "checkpoints.csv")
    trends = m["results"].get("trends", {})
    if not rows:
        return []
    # (column, label, log y axis): ratios near 1 and losses read better on a linear axis (the fit is still on log10)
    quantities = [("sink_rate", "sink rate (all layers)", False), ("p0_norm_ratio", "‖x_0‖ / mean ‖x_t‖ (max over layers)", False),
                  ("top1_over_median", "top |x| / median |x| (max over layers)", True), ("val_loss", "validation loss", False)]
    colors = {"bigram-backcopy": "tab:blue", "zipf": "tab:orange", "text": "tab:green"}
    path, rel = r.figure(name)
    fig, axs = plt.subplots(2, len(quantities), figsize=(16, 7))
    runs = {}
    for x in rows:
        runs.setdefault(x["job"], []).append(x)
    for row, axis, key in ((0, "flop", "flop"), (1, "parameters", "non_embedding_parameters")):
        for col, (q, label, logy) in enumerate(quantities):
            ax = axs[row][col]
            for job, pts in runs.items():
                task = pts[0]["task"]
                xs = [float(p[key]) for p in pts if float(p["step"]) > 0]
                ys = [float(p[q]) for p in pts if float(p["step"]) > 0]
                if not xs:
                    continue
                if row == 0:
                    ax.plot(xs, ys, "-", color=colors.get(task, "gray"), alpha=0.25, lw=0.8)
                ax.plot(xs[-1:], ys[-1:], "o", color=colors.get(task, "gray"), ms=3)
            for task, tj in trends.items():
                t = tj.get(axis, {}).get(q)
                if not t or t.get("slope") is None:
                    continue
                bx = np.power(10.0, t["band_x"])
                line = t["intercept"] + t["slope"] * np.asarray(t["band_x"])
                lo, hi = np.asarray(t["band_lo"], dtype=float), np.asarray(t["band_hi"], dtype=float)
                if t["log_y"]:
                    line, lo, hi = np.power(10.0, line), np.power(10.0, lo), np.power(10.0, hi)
                ax.plot(bx, line, "--", color=colors.get(task, "gray"), lw=1.2,
                        label=f"{task}: slope {t['slope']:.2f} [{t['slope_ci'][0]:.2f}, {t['slope_ci'][1]:.2f}]")
                ax.fill_between(bx, lo, hi, color=colors.get(task, "gray"), alpha=0.15)
            if q == "top1_over_median":
                ax.axhline(1000, color="red", lw=0.8, ls=":", label="Sun et al.: 1000× median")
                notes = []
                for task, tj in trends.items():
                    sun = tj.get(axis, {}).get("reach_sun", {})
                    reach = sun.get("top1_over_median_1000", {})
                    if reach.get("log10_x") is not None:
                        lo, hi = reach.get("ci", [None, None])
                        band = f" [{lo:.1f}, {hi:.1f}]" if lo is not None and hi is not None else ""
                        notes.append(f"{task}: 1000× at 10^{reach['log10_x']:.1f}{band}" +
                                     (" (extrapolated)" if sun.get("extrapolated") else ""))
                if notes:
                    ax.text(0.02, 0.98, "\n".join(notes), transform=ax.transAxes, va="top", fontsize=6)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            if logy:
                ax.set_yscale("log")
                ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel("training compute (FLOP)" if row == 0 else "non-embedding parameters")
            ax.set_ylabel(label, fontsize=8)
            ax.legend(fontsize=6)
    save(fig, path)
    return [rel]


def fig_b1(r, m):
    rows = csv_rows(m, "sub_blocks.csv")
    if not rows:
        return []
    tr = m["results"].get("trace", {})
    path, rel = r.figure("b1_lifecycle")
    fig, axs = plt.subplots(1, 2, figsize=(11, 3.6))
    idx = [int(x["index"]) for x in rows]
    for key, lab in (("top1", "top-1 |x|"), ("top2", "top-2"), ("top3", "top-3"), ("median", "median |x|")):
        if key in rows[0]:
            axs[0].semilogy(idx, [float(x[key]) for x in rows], "o-" if key == "top1" else ".-", ms=3, label=lab)
    for i in tr.get("step_up", []):
        axs[0].axvline(i, color="green", lw=0.8)
    for i in tr.get("step_down", []):
        axs[0].axvline(i, color="red", lw=0.8)
    axs[0].set_xlabel("sub-block i (odd attention, even FFN; green step-up, red step-down)"); axs[0].legend(fontsize=7)
    traj = npy(m, "trajectory.npy")
    if traj is not None:
        axs[1].plot(traj.T, color="gray", alpha=0.3, lw=0.7)
        axs[1].plot(traj.mean(0), color="k", lw=1.5)
        axs[1].set_xlabel("sub-block i"); axs[1].set_ylabel(f"H_i[0, {tr.get('channel', '?')}]")
        axs[1].set_title("spike coordinate, every sample")
    save(fig, path)
    return [rel]


def fig_b2(r, m):
    F, P = npy(m, "frobenius.npy"), npy(m, "predictions.npy")
    path, rel = r.figure("b2_quadratic")
    fig, axs = plt.subplots(1, 3, figsize=(13, 3.5))
    if F is not None:
        axs[0].semilogy(F.max(1) / np.median(F, axis=1), "o-", ms=3)
        axs[0].axhline(10, color="k", lw=0.5, ls="--")
        axs[0].set_xlabel("layer"); axs[0].set_ylabel("max_k ‖U_k‖_F / median")
    rows = csv_rows(m, "spectra.csv")
    for ch in sorted({int(x["channel"]) for x in rows}):
        ev = [float(x["eigenvalue"]) for x in rows if int(x["channel"]) == ch]
        axs[1].plot(np.abs(ev), "o-", ms=4, label=f"channel {ch}")
    axs[1].set_yscale("log"); axs[1].set_xlabel("rank"); axs[1].set_ylabel("|eigenvalue| of S_k")
    if rows:
        axs[1].legend(fontsize=7)
    if P is not None and len(P):
        s = P[:, 0] == 1
        axs[2].scatter(P[~s, 1], P[~s, 2], s=3, alpha=0.4, label="other tokens: quadratic")
        axs[2].scatter(P[s, 1], P[s, 2], s=20, c="red", label="spike tokens: quadratic")
        axs[2].scatter(P[s, 1], P[s, 3], s=20, marker="x", c="k", label="spike tokens: rank-one")
        lim = [min(P[:, 1].min(), P[:, 2].min()), max(P[:, 1].max(), P[:, 2].max())]
        axs[2].plot(lim, lim, "k", lw=0.5)
        axs[2].set_xlabel("true F_c(h̃)"); axs[2].set_ylabel("prediction"); axs[2].legend(fontsize=6)
    save(fig, path)
    return [rel]


def fig_b3(r, m):
    V = npy(m, "vocab.npy")
    if V is None:
        return []
    path, rel = r.figure("b3_vocab")
    fig, ax = plt.subplots(figsize=(6, 3.3))
    ax.hist(np.log10(np.maximum(V[:, 0], 1e-3)), bins=80)
    ref = m["results"].get("reference_median")
    if ref is not None:
        thr = max(100, 1000 * ref)
        ax.axvline(math.log10(thr), color="red", lw=1, label=f"threshold {thr:.0f}")
        ax.legend(fontsize=7)
    ax.set_xlabel("log10 max |x| after the step-up block (token at position 0)"); ax.set_ylabel("tokens")
    save(fig, path)
    return [rel]


def fig_b4(r, m):
    c = m["results"].get("cosine")
    if not c:
        return []
    path, rel = r.figure("b4_cosines")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar([0, 1], [c["spike_before"], c["spike_after"]], width=0.35, label="spike tokens")
    ax.bar([0.4, 1.4], [c["other_before"], c["other_after"]], width=0.35, label="other tokens")
    ax.set_xticks([0.2, 1.2]); ax.set_xticklabels(["before step-up", "after"])
    ax.set_ylabel("mean pairwise cosine"); ax.legend(fontsize=7)
    save(fig, path)
    return [rel]


def fig_b5(r, m):
    rows = csv_rows(m, "heads.csv")
    if not rows or "alpha0_measured" not in rows[0]:
        return []
    path, rel = r.figure("b5_prediction")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    pred_key = next((k for k in ("alpha0_predicted_weights", "alpha0_predicted") if k in rows[0]), None)
    if pred_key:
        ax.scatter([float(x[pred_key]) for x in rows], [float(x["alpha0_measured"]) for x in rows], s=6)
        ax.plot([0, 1], [0, 1], "k", lw=0.5)
        ax.set_xlabel(f"predicted α̂₀ ({pred_key})"); ax.set_ylabel("measured α₀")
    save(fig, path)
    return [rel]


def fig_b6(r, m):
    vs = m["results"].get("variants", [])
    if not vs:
        return []
    path, rel = r.figure("b6_ablations")
    fig, ax = plt.subplots(figsize=(10, 3.4))
    idx = np.arange(len(vs))
    ax.bar(idx - 0.2, [100 * (x.get("paper_sink") or 0) for x in vs], width=0.4, label="paper (7B, 100B tokens)")
    ax.bar(idx + 0.2, [100 * x.get("sink_ratio", 0) for x in vs], width=0.4, label="ours (toy)")
    ax.set_xticks(idx); ax.set_xticklabels([x["variant"] for x in vs], rotation=40, ha="right", fontsize=7)
    ax.set_ylabel("sink ratio (%)"); ax.legend(fontsize=7)
    save(fig, path)
    return [rel]


def fig_c1(r, m):
    """Per layer, the sink rate clean and under the spike ablation at each dose (C1: channels of layer S; C3:
    of the early layer E) and under the random-channel control; a panel per ablation that ran."""
    rows = csv_rows(m, "sink_rates.csv")
    if not rows:
        return []
    layers = [int(x["layer"]) for x in rows]
    panels = []
    for at, claim in (("S", "C1"), ("E", "C3")):
        keys = [k for k in rows[0] if k.startswith(f"spike_at_{at}") or k == f"random_at_{at}"]
        if any(float(x[k]) != 0.0 for x in rows for k in keys):
            panels.append((claim, at, keys))
    if not panels:
        return []
    path, rel = r.figure("c1_spike_to_sink")
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.5), squeeze=False)
    for ax, (claim, at, keys) in zip(axes[0], panels):
        ax.plot(layers, [float(x["clean"]) for x in rows], "k-", lw=1.5, label="clean (dose 1)")
        for k in keys:
            dose = "random channels, dose 0" if k.startswith("random") else "spike, dose " + (k.split("_x")[1] if "_x" in k else "0")
            ax.plot(layers, [float(x[k]) for x in rows], "o--" if k.startswith("random") else "o-", ms=3, label=dose)
        ax.set_title(f"{claim}: spike channels of layer {at} scaled toward their mean", fontsize=8)
        ax.set_xlabel("layer"); ax.set_ylabel("sink rate (α₀ > 0.3)"); ax.legend(fontsize=6)
    save(fig, path)
    return [rel]


def fig_p1(r, m):
    c = m["results"].get("conditions", {})
    if not c:
        return []
    path, rel = r.figure("p1_ablation")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    names = list(c.keys())
    vals = [c[k]["perplexity"] if math.isfinite(c[k]["perplexity"]) and c[k]["perplexity"] < 1e300 else 1e6 for k in names]
    ax.bar(range(len(names)), vals)
    ax.set_yscale("log"); ax.set_xticks(range(len(names))); ax.set_xticklabels(names, rotation=20, fontsize=7)
    ax.set_ylabel("perplexity")
    save(fig, path)
    return [rel]


def fig_p2(r, m):
    c = m["results"].get("conditions", {})
    if not c:
        return []
    path, rel = r.figure("p2_streaming")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    names = list(c.keys())
    ax.bar(range(len(names)), [c[k]["perplexity"] for k in names])
    ax.set_yscale("log"); ax.set_xticks(range(len(names))); ax.set_xticklabels(names)
    ax.set_ylabel("perplexity")
    save(fig, path)
    return [rel]


# (experiment, claims it decides, figure function) in report order.
EXPERIMENTS = [
    ("a1_bos_ablation", ["A1"], fig_a1),
    ("a2_p0_circuit", ["A2", "A2-massive"], fig_a2),
    ("a3_cone_model", ["A3"], fig_a3),
    ("a4_training_trace", ["A4"], fig_a4),
    ("a4_scale_sweep", ["A4-scale"], fig_a4_scale),
    ("b1_spike_lifecycle", ["B1"], fig_b1),
    ("b2_quadratic_ffn", ["B2"], fig_b2),
    ("b3_vocab_position0", ["B3a", "B3b"], fig_b3),
    ("b4_rmsnorm_sparsity", ["B4"], fig_b4),
    ("b5_sink_keys", ["B5"], fig_b5),
    ("b6_ablations", ["B6"], fig_b6),
    ("c1_spike_to_sink", ["C1"], fig_c1),
    ("p1_massive_ablation", ["P1"], fig_p1),
    ("p2_streaming_window", ["P2"], fig_p2),
]


def collect(out, figures):
    """One row per verdict object; 'not run' rows for experiments without output or without verdicts."""
    rows, metas = [], []
    for name, claims, draw in EXPERIMENTS:
        m = load(out, name)
        if m is None:
            rows += [dict(claim=c, experiment=name, verdict=None, why="no output", figures=[], figure_error="") for c in claims]
            continue
        metas.append(m)
        figs, err = [], ""
        try:
            figs = draw(figures, m) if figures else []
        except Exception as e:  # a figure must never hide a verdict
            err = f"figure could not be drawn: {e!r}"
        vs = verdicts(m)
        if not vs:
            rows += [dict(claim=c, experiment=name, verdict=None, why="meta.json has no verdict", figures=figs, figure_error=err)
                     for c in claims]
            continue
        for i, v in enumerate(vs):
            claim, statement = split_claim(v.get("claim", "?"))
            rows.append(dict(claim=claim, statement=statement, experiment=name, verdict=v, why="", figures=figs if i == 0 else [],
                             figure_error=err if i == 0 else "", meta=m))
    return rows, metas


# ---------------------------------------------------------------------------------------------------

CSS = """body{font-family:sans-serif;max-width:1250px;margin:auto;padding:1em;font-size:14px}
table.main{border-collapse:collapse;width:100%}table.main>tbody>tr>td,table.main>tbody>tr>th{border:1px solid #ccc;padding:6px;vertical-align:top}
table.inner{border-collapse:collapse;margin:4px 0}table.inner td,table.inner th{border:1px solid #ddd;padding:2px 5px;font-size:12px}
.v-reproduced{background:#d4f7d4}.v-not-reproduced{background:#f7d4d4}.v-not-shown-at-this-scale{background:#f7f0c8}
.v-not-applicable{background:#e8e0f7}.v-as-expected{background:#d4f7d4}.v-unexpected{background:#f7d4d4}.v-not-run{background:#e0e0e0}.v-inconclusive{background:#fbe3c8}
img{max-width:100%}.rule{font-size:12px;color:#333}.small{font-size:12px;color:#555}"""


def ci_text(c):
    ci = c.get("ci") or [None, None]
    return f"{num(c.get('value', c.get('statistic')))} [{num(ci[0])}, {num(ci[1])}]"


def conditions_html(v):
    out = ["<table class='inner'><tr><th></th><th>statistic</th><th>value [95% CI]</th><th>n</th><th>threshold</th><th>holds</th></tr>"]
    for kind, key in (("pre", "preconditions"), ("", "conditions")):
        for c in v.get(key, []):
            out.append(f"<tr><td>{kind}</td><td>{html.escape(c.get('name', ''))}</td><td>{ci_text(c)}</td><td>{c.get('n', '')}</td>"
                       f"<td>{c.get('side', '')} {num(c.get('threshold'))}</td><td>{'yes' if c.get('holds') else 'no'}</td></tr>")
    out.append("</table>")
    checks = v.get("checks", [])
    if checks:
        out.append("<div class='small'>Checks (theorems and sanity checks, not evidence): " + "; ".join(
            f"{html.escape(c.get('name', ''))}: {num(c.get('value'))} vs bound {num(c.get('bound'))} "
            f"({'holds' if c.get('holds') else 'VIOLATED'})" for c in checks) + "</div>")
    return "".join(out)


def null_html(null_rows):
    if not null_rows:
        return ""
    out = ["<h2>Null controls</h2><p>The same experiments on random weights in the same layout (--random-init 1). Every rule "
           "must not say \"reproduced\" here (\"not reproduced\", \"not applicable\" or \"inconclusive\"); a \"reproduced\" would mean the rule cannot fail.</p>",
           "<table class='inner'><tr><th>claim</th><th>experiment</th><th>outcome</th><th>decided by</th></tr>"]
    for row in null_rows:
        v = row["verdict"]
        o = v["outcome"] if v else NOT_RUN
        flag = " <b>(rule cannot fail!)</b>" if o == "reproduced" else ""
        out.append(f"<tr><td>{html.escape(row['claim'])}</td><td>{row['experiment']}</td><td class='v-{o.replace(' ', '-')}'>{o}{flag}</td>"
                   f"<td>{html.escape(v.get('decided_by', '') if v else row['why'])}</td></tr>")
    out.append("</table>")
    return "".join(out)


def null_rates_html(out):
    """Each rule's false-positive rate on random weights over the null seeds (scripts/null_rates.py)."""
    path = os.path.join(out, "null_seeds", "null_rates.json")
    if not os.path.exists(path):
        return "<p>False-positive rates over random seeds: not run (scripts/null_rates.py).</p>"
    nr = json.load(open(path))
    seeds = nr.get("seeds", [])
    out_html = [f"<h3>False-positive rates over {len(seeds)} random seeds</h3><p>The null control repeated with random "
                f"weights of seeds {min(seeds)}&ndash;{max(seeds)}: per rule, how often it said \"reproduced\" (k of n runs) "
                "with the exact (Clopper&ndash;Pearson) 95 % interval of the rate. With no false positive in n = 10 the "
                "interval is [0, 0.31]: the seeds bound the rate, they do not show it is zero. A rule that says \"not applicable\" "
                "on random weights is stopped by its precondition there; its core condition is tested by the calibration's "
                "twins, not by this table.</p>",
                "<table class='inner'><tr><th>rule</th><th>experiment</th><th>false positives</th><th>rate, 95 % interval</th>"
                "<th>outcomes over the seeds</th></tr>"]
    for rid, r in nr["rules"].items():
        outcomes = ", ".join(f"{html.escape(o)} {c}" for o, c in sorted(r["outcomes"].items()))
        flag = " <b>(rule fired on random weights)</b>" if r["false_positives"] else ""
        out_html.append(f"<tr><td>{html.escape(rid)}</td><td>{html.escape(r['experiment'])}</td>"
                        f"<td>{r['false_positives']} / {r['runs']}{flag}</td>"
                        f"<td>{r['rate']:.2f} [{r['ci'][0]:.2f}, {r['ci'][1]:.2f}]</td><td>{outcomes}</td></tr>")
    out_html.append("</table>")
    if nr.get("failed"):
        out_html.append("<p>Runs that failed: " + ", ".join(f"{html.escape(f['experiment'])} (seed {f['seed']})" for f in nr["failed"]) + ".</p>")
    return "".join(out_html)


def calibration_html(out):
    """The calibration tables (scripts/calibrate_planted.py): each rule on a model where its claim holds by
    construction, on the twin with the mechanism switched off, on random weights, and over a dose sweep."""
    parts = []
    for folder, what in (("calibration", "a planted massive activation: theory/planted_massive.md"),
                         ("calibration_sink_keys", "sink heads whose keys read a planted spike channel: "
                                                   "theory/planted_sink_keys.md"),
                         ("calibration_p0_circuit", "a position-0 circuit in blocks 0-1 whose heads each carry the "
                                                    "identification: theory/planted_p0_circuit.md")):
        path = os.path.join(out, folder, "calibration.json")
        if os.path.exists(path):
            parts.append(calibration_table_html(json.load(open(path)), what))
    path = os.path.join(out, "calibration_decisions", "calibration.json")
    if os.path.exists(path):
        parts.append(decision_calibration_html(json.load(open(path))))
    if not parts:
        return "<h2>Calibration</h2><p>Not run (scripts/calibrate_planted.py).</p>"
    return "".join(parts)


def decision_calibration_html(cal):
    """B6 and A4 calibrated at the decision level (scripts/calibrate_decisions.py): synthetic tables, not models."""
    out_html = ["<h2>Calibration at the decision level</h2><p>B6 and A4 decide on models they train themselves, so no "
                "planted checkpoint can stand in for them. Their rules are run, unchanged, through the same executables "
                "(<code>b6_ablations --from-table</code>, <code>a4_training_trace --from-table</code>) on synthetic tables: "
                "B6 on variant tables that follow the paper's directions (planted), where no switch changes anything "
                "(twin), and random ones; A4 on checkpoint series whose sink migrates to layers 0&ndash;1 (planted), stays "
                "at the uniform share (twin), or moves at random. The share of &ldquo;reproduced&rdquo; on the random tables "
                "is the rule's false-positive rate (Clopper&ndash;Pearson 95% interval). This tests the decision, not the "
                "training.</p>",
                "<table class='inner'><tr><th>rule</th><th>planted table</th><th>twin table</th>"
                "<th>random tables: reproduced / n [95% CI]</th></tr>"]
    for rule, r in cal["rules"].items():
        cells = []
        for c in ("planted", "twin"):
            o = r["columns"].get(c, {}).get("outcome", "-")
            cells.append(f"<td class='v-{o.replace(' ', '-')}'>{html.escape(o)}</td>")
        fp = r.get("false_positive", {})
        ci = fp.get("ci95", [float("nan"), float("nan")])
        cells.append(f"<td>{fp.get('reproduced', '-')} / {fp.get('tables', '-')} [{ci[0]:.3f}, {ci[1]:.3f}]</td>")
        out_html.append(f"<tr><td>{html.escape(rule)}</td>{''.join(cells)}</tr>")
    out_html.append("</table>")
    return "".join(out_html)


def calibration_table_html(cal, what):
    cols = ["planted", "twin", "random"] + [c for c in next(iter(cal["rules"].values()), {}).get("columns", {}) if c.startswith("dose")]
    out_html = ["<h2>Calibration on planted models</h2><p>Each rule run, unchanged, through the same executables on a "
                f"model whose claim holds by construction ({html.escape(what)}), on "
                "its twin with the mechanism switched off, on random weights, and on the planted model at a sweep of "
                f"doses (size {html.escape(str(cal.get('size')))}). A rule that cannot say \"reproduced\" on its planted model "
                "measures something else; one that says it on the twin or random weights cannot fail. Rules designed to "
                f"pass here: {', '.join(cal.get('designed', []))}.</p>",
                "<table class='inner'><tr><th>rule</th>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols)
                + "<th>dose threshold</th></tr>"]
    for rule, r in cal["rules"].items():
        cells = []
        for c in cols:
            o = r["columns"].get(c, {}).get("outcome", "-")
            cells.append(f"<td class='v-{o.replace(' ', '-')}'>{html.escape(o)}</td>")
        thr = "-" if r.get("dose_threshold") is None else f"{r['dose_threshold']:g}"
        out_html.append(f"<tr><td>{html.escape(rule)}</td>{''.join(cells)}<td>{thr}</td></tr>")
    out_html.append("</table>")
    return "".join(out_html)


def write_html(report, rows, metas, out, null_rows=()):
    counts, controls = {}, 0
    for row in rows:
        if row["verdict"] and row["verdict"].get("rule_kind") == "control":
            controls += 1  # a check of the method, not a claim: reported, not counted
            continue
        o = row["verdict"]["outcome"] if row["verdict"] else NOT_RUN
        counts[o] = counts.get(o, 0) + 1
    total = sum(m.get("timings", {}).get("total_seconds", 0) for m in metas)
    revs = sorted({m.get("git_revision", "?") for m in metas})
    timing_path = os.path.join(out, "timings.json")
    timing = json.load(open(timing_path)) if os.path.exists(timing_path) else {}
    nulls = sorted({m["experiment"] for m in metas if "null_model" in m})
    rule_sets = rule_set_hashes(metas)
    html_out = [f"<!doctype html><html><head><meta charset='utf-8'><title>sinkscope: reproduction report</title><style>{CSS}</style></head><body>",
                "<h1>sinkscope: reproducing the two papers</h1>",
                "<p>Paper A: <i>How Attention Sinks Emerge in Large Language Models: An Interpretability Perspective</i> (arXiv 2603.06591). "
                "Paper B: <i>The Spike, the Sparse and the Sink</i> (arXiv 2603.05498). Real model: SmolLM2-135M-Instruct (Q4_1 GGUF, "
                "dequantised to float32); natural text: prose from the Python 3.11 documentation (Debian python3.11-doc).</p>",
                "<p>Every verdict below was decided by the experiment that measured it (C++, include/sinkscope/analysis/verdict.hpp) and "
                "read from its meta.json; this page decides nothing. A condition holds only when its whole 95% interval lies on the "
                "claim's side of the threshold; each rule names the null control on which it must fail (CTest checks that). "
                "An interval that straddles its threshold gives <b>inconclusive</b>; <b>not reproduced</b> needs the whole "
                "interval on the wrong side. Claims: " + ", ".join(f"<b>{k}</b> {v}" for k, v in sorted(counts.items()))
                + (f"; {controls} control(s) of the method, not counted" if controls else "") + ".</p>"]
    if nulls:
        html_out.append(f"<p><b>Null control run</b> (random weights): {', '.join(nulls)}.</p>")
    html_out.append("<p><b>Rule set</b> (pre-registered, analysis/rule_table.hpp; experiments/RULES_CHANGELOG.md): "
                    + (", ".join(f"<code>{html.escape(h)}</code>" for h in rule_sets) or "not recorded")
                    + (" <b>(the runs used different rule sets!)</b>" if len(rule_sets) > 1 else "") + "</p>")
    html_out += [f"<p class='small'>git revision(s): {', '.join(revs)}; experiment time {total:.0f} s"
                 + (f"; whole reproduce.sh {timing.get('total_seconds', 0):.0f} s" if timing else "") + ".</p>",
                 "<table class='main'><tr><th>claim</th><th>paper</th><th>ours: statistics the rule read</th><th>verdict and rule</th></tr>"]
    for row in rows:
        title, paper = paper_of(row["claim"])
        v = row["verdict"]
        outcome, because = outcome_text(v) if v else (NOT_RUN, "")
        cls = "v-" + outcome.replace(" ", "-")
        outcome_cell = f"<b>{html.escape(outcome)}</b>" + (f"<div class='small'>{html.escape(because)}</div>" if because else "")
        ours = conditions_html(v) if v else html.escape(row["why"])
        if row["figure_error"]:
            ours += f"<div class='small'>{html.escape(row['figure_error'])}</div>"
        rule = (f"<div class='rule'>Rule: {html.escape(v.get('rule', ''))}</div><div class='rule'>Decided by: "
                f"{html.escape(v.get('decided_by', ''))}</div><div class='rule'>Null control: {html.escape(v.get('null', ''))}</div>") if v else ""
        stmt = row.get("statement", "")
        html_out.append(f"<tr><td><b>{html.escape(row['claim'])}</b><br>{html.escape(title)}<div class='small'>{row['experiment']}"
                        f"{'<br>' + html.escape(stmt) if stmt else ''}</div></td>"
                        f"<td>{html.escape(paper)}</td><td>{ours}</td><td class='{cls}'>{outcome_cell}{rule}</td></tr>")
        if row["figures"]:
            html_out.append("<tr><td></td><td colspan='3'>" + "".join(f"<img src='{f}'>" for f in row["figures"]) + "</td></tr>")
    html_out.append("</table>")
    html_out.append(null_html(null_rows))
    html_out.append(null_rates_html(out))
    html_out.append(calibration_html(out))
    html_out.append(census_html(out, report))
    html_out.append(view_html(out, report))
    html_out.append("<h2>Runs</h2><table class='inner'><tr><th>experiment</th><th>command</th><th>seconds</th><th>configuration</th></tr>")
    for m in metas:
        html_out.append(f"<tr><td>{m['experiment']}</td><td><code>{html.escape(m['command'])}</code></td>"
                        f"<td>{m.get('timings', {}).get('total_seconds', 0):.1f}</td><td><code>{html.escape(json.dumps(m.get('config', {})))[:600]}</code></td></tr>")
    html_out.append("</table></body></html>")
    with open(os.path.join(report, "index.html"), "w") as f:
        f.write("\n".join(html_out))


def census_html(out, report):
    """The census of the scale sweep's models (out/census/, scripts/reproduce.sh): per claim rule, how many
    trained checkpoints and how many random-weight nulls of the same layouts got each outcome, and the census's
    figures (scripts/census_figures.py). A rule that says "reproduced" on a null is a false positive."""
    path = os.path.join(out, "census", "table.json")
    if not os.path.exists(path):
        return ""
    table = json.load(open(path))
    models = table.get("models", [])
    groups = {"trained": [m for m in models if ".null." not in os.path.basename(m["checkpoint"])],
              "null": [m for m in models if ".null." in os.path.basename(m["checkpoint"])]}
    rules = sorted({r for m in models if isinstance(m.get("rules"), dict) for r in m["rules"]})
    parts = [f"<h2>Census of the scale sweep's models</h2><p>{len(groups['trained'])} trained checkpoints (sizes x seeds) "
             f"and {len(groups['null'])} random-weight nulls of their layouts, every claim rule that measures a given model "
             f"(<code>sinkscope census --rules {html.escape(str(table.get('settings', {}).get('rules', '?')))}</code>; rule set "
             f"<code>{html.escape(str(table.get('rule_set', {}).get('hash', '?'))[:12])}</code>). Counts of outcomes; "
             "'reproduced' on a null is a false positive.</p>"]
    if table.get("failed"):
        parts.append("<p>Checkpoints that failed: " + ", ".join(html.escape(f["checkpoint"]) for f in table["failed"]) + ".</p>")
    if rules:
        parts.append("<table class='inner'><tr><th>rule</th><th>trained checkpoints</th><th>nulls</th></tr>")
        for r in rules:
            cells = []
            for g in ("trained", "null"):
                counts = {}
                for m in groups[g]:
                    o = m["rules"].get(r, "not run") if isinstance(m.get("rules"), dict) else str(m.get("rules"))
                    counts[o] = counts.get(o, 0) + 1
                cells.append(", ".join(f"{html.escape(o)} {n}" for o, n in sorted(counts.items())) or "-")
            parts.append(f"<tr><td>{html.escape(r)}</td><td>{cells[0]}</td><td>{cells[1]}</td></tr>")
        parts.append("</table>")
    figures = os.path.join(out, "census", "figures")
    if os.path.isdir(figures):
        os.makedirs(os.path.join(report, "census"), exist_ok=True)
        for name in ("census_sink_rate.png", "census_massive.png", "census_outcomes.png"):
            if os.path.exists(os.path.join(figures, name)):
                shutil.copyfile(os.path.join(figures, name), os.path.join(report, "census", name))
                parts.append(f"<img src='census/{name}'>")
    return "".join(parts)


def view_html(out, report):
    """A link to `sinkscope view`'s page of the bundled model (out/view/, copied to report/view/): every head's
    pattern, alpha0 per (layer, head), the residual norms and the logit lens of one text."""
    page = os.path.join(out, "view", "index.html")
    if not os.path.exists(page):
        return ""
    os.makedirs(os.path.join(report, "view"), exist_ok=True)
    shutil.copyfile(page, os.path.join(report, "view", "index.html"))
    summary = json.load(open(os.path.join(out, "view", "summary.json")))
    alpha = summary.get("alpha0", [])
    sinks = sum(a > 0.3 for a in alpha)
    return (f"<h2>Every head of the bundled model, one text</h2><p><a href='view/index.html'>view/index.html</a>: "
            f"{html.escape(os.path.basename(summary.get('model', '')))}, {len(summary.get('tokens', []))} tokens; "
            f"{sinks} of {len(alpha)} heads have alpha0 &gt; 0.3. Hover a token to see where the chosen head sends its "
            f"attention (<code>sinkscope view</code>, a self-contained page).</p>")


def rule_set_hashes(metas):
    """The rule-set hashes the runs recorded in meta.json (one, unless runs of different code were mixed)."""
    return sorted({m.get("rule_set", {}).get("hash", "not recorded") for m in metas})


def claims_markdown(rows, null_rows=(), metas=()):
    """The README's claim table: one line per verdict, numbers straight from meta.json."""
    null = {(r["claim"]): (r["verdict"]["outcome"] if r["verdict"] else NOT_RUN) for r in null_rows}
    lines = ["Rule set " + ", ".join(f"`{h}`" for h in rule_set_hashes(metas)) + " (`sinkscope rules` prints the current one).", "",
             "| claim | outcome | headline statistic [95% CI] | n | threshold | decided by | on random weights |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        v = row["verdict"]
        if not v:
            lines.append(f"| {row['claim']} | not run | | | | {row['why']} | {null.get(row['claim'], '')} |")
            continue
        ci = v.get("ci") or [None, None]
        measure = v.get("measure", "").replace("|", "/")
        label = row["claim"] + (" (control, not counted)" if v.get("rule_kind") == "control" else "")
        outcome, because = outcome_text(v)
        lines.append(f"| {label} | **{outcome}**{' (' + because + ')' if because else ''} | {measure}: {num(v.get('statistic'))} [{num(ci[0])}, {num(ci[1])}] "
                     f"| {v.get('n', '')} | {v.get('side', '')} {num(v.get('threshold'))} | {v.get('decided_by', '').replace('|', '/')} "
                     f"| {null.get(row['claim'], 'not run')} |")
    return "\n".join(lines) + "\n"


def update_readme(path, table):
    begin, end = "<!-- claims:begin -->", "<!-- claims:end -->"
    text = open(path).read()
    if begin not in text or end not in text:
        raise SystemExit(f"make_report: {path} has no {begin} ... {end} markers")
    a, b = text.index(begin) + len(begin), text.index(end)
    with open(path, "w") as f:
        f.write(text[:a] + "\n" + table + text[b:])
    print(f"updated the claim table in {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="out")
    ap.add_argument("--report", default="report")
    ap.add_argument("--null-out", default="")
    ap.add_argument("--update-readme", default="")
    a = ap.parse_args()
    figures = Figures(a.report)
    rows, metas = collect(a.out, figures)
    null_rows = []
    if a.null_out and os.path.isdir(a.null_out):
        null_rows, _ = collect(a.null_out, None)
    write_html(a.report, rows, metas, a.out, null_rows)
    if a.update_readme:
        update_readme(a.update_readme, claims_markdown(rows, null_rows, metas))
    for row in rows:
        v = row["verdict"]
        if v:
            ci = v.get("ci") or [None, None]
            outcome, because = outcome_text(v)
            print(f"{row['claim']:10s} {outcome:24s} {v.get('measure', '')}: {num(v.get('statistic'))} "
                  f"[{num(ci[0])}, {num(ci[1])}], n={v.get('n')}" + (f" ({because})" if because else ""))
        else:
            print(f"{row['claim']:8s} not run ({row['why']})")
    print(f"wrote {os.path.join(a.report, 'index.html')}")


if __name__ == "__main__":
    sys.exit(main())
