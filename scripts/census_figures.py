#!/usr/bin/env python3
"""Draws the figures of a census from its merged table (`sinkscope census --merge DIR` writes DIR/table.json).

  census_sink_rate.png   Gu et al.'s sink rate of each layer (fraction of its heads with alpha_0 > eps, mean over
                         samples) against relative depth l / (L - 1), one line per model
  census_massive.png     the largest |x| of each layer's residual stream (hook_resid_post) against relative depth,
                         log scale; a filled marker where the layer meets Sun et al.'s criterion (|x| > 100 and
                         >= 1000 x the median |x|), the dotted line at 100
  census_outcomes.png    each model's claim outcomes as a grid (a model whose record ran no rule shows the record's
                         own words, "not run (--rules none)"; "error" where the rule's experiment failed
                         on the checkpoint: its message is in the record)

Every number is read from the table; this script computes nothing but the relative depth.
Usage: python scripts/census_figures.py DIR/table.json [--out DIR/figures]
Needs numpy and matplotlib (scripts/pyenv.sh --plots-only prints a python that has them).
"""
import argparse
import json
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

TABLE_FORMAT = "sinkscope.census.table"
TABLE_VERSION = 2
OUTCOME_COLORS = {"reproduced": "#4c9a2a", "not reproduced": "#c0392b", "inconclusive": "#e1a33b",
                  "not shown at this scale": "#9b9b9b", "not applicable": "#d0d0d0", "error": "#6c3483",
                  "no verdict written": "#f0f0f0"}
NOT_RUN_COLOR = "#f0f0f0"


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def label(m):
    name = m.get("name") or os.path.basename(m["checkpoint"].rstrip("/"))
    return f"{name} ({m['family']}, {m['parameters'] / 1e6:.3g}M)"


def relative_depth(n_layers):
    return np.arange(n_layers) / max(n_layers - 1, 1)


def fig_sink_rate(models, eps, path):
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for m in models:
        ax.plot(relative_depth(m["n_layers"]), m["sink_rate_by_layer"], "o-", ms=3, lw=1, label=label(m))
    ax.set_xlabel("relative depth l / (L - 1)")
    ax.set_ylabel(f"sink rate (heads with α₀ > {eps:g})")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7)
    save(fig, path)


def fig_massive(models, path):
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for m in models:
        x = relative_depth(m["n_layers"])
        top = np.asarray(m["top_abs_by_layer"], dtype=float)
        massive = np.asarray(m["massive_by_layer"], dtype=bool)
        (line,) = ax.plot(x, top, "-", lw=1, label=label(m))
        ax.plot(x[~massive], top[~massive], "o", ms=3, mfc="none", color=line.get_color())
        ax.plot(x[massive], top[massive], "o", ms=5, color=line.get_color())
    ax.axhline(100, color="red", lw=0.8, ls=":", label="|x| = 100 (Sun et al.)")
    ax.set_yscale("log")
    ax.set_xlabel("relative depth l / (L - 1)")
    ax.set_ylabel("largest |x| of the residual stream")
    ax.legend(fontsize=7)
    save(fig, path)


def fig_outcomes(models, path, title):
    rule_ids = sorted({r for m in models if isinstance(m["rules"], dict) for r in m["rules"]})
    columns = rule_ids or ["claims"]
    fig, ax = plt.subplots(figsize=(4 + 1.6 * len(columns), 1.0 + 0.5 * len(models)))
    for i, m in enumerate(models):
        for j, rule in enumerate(columns):
            if isinstance(m["rules"], dict):
                outcome = m["rules"].get(rule, "not run")
            else:
                outcome = m["rules"]
            ax.add_patch(plt.Rectangle((j, i), 1, 1, color=OUTCOME_COLORS.get(outcome, NOT_RUN_COLOR), ec="white"))
            ax.text(j + 0.5, i + 0.5, textwrap.fill(outcome, 14), ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(columns))
    ax.set_ylim(len(models), 0)
    ax.set_xticks(np.arange(len(columns)) + 0.5, columns, fontsize=8)
    ax.set_yticks(np.arange(len(models)) + 0.5, [label(m) for m in models], fontsize=7)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(title, fontsize=8)
    save(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", help="a census's table.json (sinkscope census --merge DIR)")
    ap.add_argument("--out", help="folder for the figures (default: figures/ beside the table)")
    a = ap.parse_args()
    with open(a.table) as f:
        table = json.load(f)
    if table.get("format") != TABLE_FORMAT or table.get("format_version") != TABLE_VERSION:
        sys.exit(f"census_figures: {a.table} is not a census table of format version {TABLE_VERSION} "
                 f"(format {table.get('format')!r}, version {table.get('format_version')!r})")
    models = table["models"]
    if not models:
        sys.exit(f"census_figures: {a.table} has no model (every checkpoint failed?)")
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(a.table)), "figures")
    os.makedirs(out, exist_ok=True)
    fig_sink_rate(models, table["settings"]["eps"], os.path.join(out, "census_sink_rate.png"))
    fig_massive(models, os.path.join(out, "census_massive.png"))
    size = table.get("settings", {}).get("rules", "none")
    rule_set = table.get("rule_set", {})
    title = (f"claim outcomes: experiments at {size} size" + (" (a check of the code, not of the claims)" if size == "smoke" else "")
             + f"; rule set {rule_set.get('version', '?')} ({rule_set.get('hash', '?')[:12]})")
    fig_outcomes(models, os.path.join(out, "census_outcomes.png"), title)
    print(f"wrote {out}/census_sink_rate.png, census_massive.png, census_outcomes.png ({len(models)} models)")


if __name__ == "__main__":
    main()
