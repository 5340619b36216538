#!/usr/bin/env python3
"""Prints the table "theory prediction vs measurement on SmolLM2-135M" for the theory modules 1-4
(cone model, quadratic-form FFN, RMSNorm sparsification, sink geometry) from the outputs of the
experiments A3, B2, B4 and B5 (out/<experiment>/meta.json and a3's .npy). scripts/theory_table.sh runs
them first; scripts/theory_vs_measurement.py writes the same tables into docs/theory.md.
Plain Python (no numpy): the two .npy files are read by read_npy below.
usage: theory_table.py [--out out]"""
import argparse
import ast
import json
import pathlib
import statistics
import struct
import sys

EXPERIMENTS = ("a3_cone_model", "b2_quadratic_ffn", "b4_rmsnorm_sparsity", "b5_sink_keys")


def load(out, name):
    path = out / name / "meta.json"
    if not path.exists():
        sys.exit(f"theory_table: {path} is missing; run scripts/theory_table.sh (it runs {name} first)")
    return json.loads(path.read_text())


def read_npy(path):
    """A C-order little-endian float32/float64 .npy file (what io::write_npy writes) as a list of rows
    (2-D) or a flat list (1-D)."""
    data = pathlib.Path(path).read_bytes()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = data[6]
    hlen = struct.unpack("<H", data[8:10])[0] if major == 1 else struct.unpack("<I", data[8:12])[0]
    start = 10 if major == 1 else 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    fmt = {"<f4": "f", "<f8": "d"}.get(header["descr"])
    if fmt is None or header["fortran_order"]:
        raise ValueError(f"{path}: unsupported dtype {header['descr']} or Fortran order")
    shape = header["shape"]
    count = 1
    for n in shape:
        count *= n
    values = list(struct.unpack(f"<{count}{fmt}", data[start + hlen:start + hlen + count * struct.calcsize(fmt)]))
    if len(shape) == 1:
        return values
    if len(shape) != 2:
        raise ValueError(f"{path}: expected 1 or 2 dimensions, got {shape}")
    return [values[i * shape[1]:(i + 1) * shape[1]] for i in range(shape[0])]


class Table:
    """One section: a title, a header, rows of cells, and notes printed after it."""

    def __init__(self, title, header, rows, notes=()):
        self.title, self.header, self.rows, self.notes = title, header, [[str(c) for c in r] for r in rows], list(notes)


def render_text(tables):
    lines = []
    for t in tables:
        lines.append(f"\n{t.title}")
        cells = [t.header] + t.rows
        width = [max(len(r[i]) for r in cells) for i in range(len(t.header))]
        for k, r in enumerate(cells):
            lines.append("  " + " | ".join(c.ljust(w) for c, w in zip(r, width)))
            if k == 0:
                lines.append("  " + "-+-".join("-" * w for w in width))
        lines += ["  " + n for n in t.notes]
    return "\n".join(lines)


def render_markdown(tables):
    def cell(c):
        return c.replace("|", "\\|")
    lines = []
    for t in tables:
        lines += ["", f"**{t.title}**", "", "| " + " | ".join(cell(h) for h in t.header) + " |",
                  "|" + "---|" * len(t.header)]
        lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in t.rows]
        if t.notes:
            lines.append("")
            lines += [f"- {n}" for n in t.notes]
    return "\n".join(lines)


def cone(out, m):
    pred = read_npy(out / "a3_cone_model" / "predicted.npy")
    meas = read_npy(out / "a3_cone_model" / "measured.npy")
    # relative error of the predicted E‖o_t‖² per layer and position
    err = [[abs(p - q) / q for p, q in zip(pl, ql)] for pl, ql in zip(pred, meas)]
    rows = []
    for l in m["results"]["layers"]:
        i = l["layer"]
        rows.append([i, f"{l['sink_rate']:.2f}", f"{l['alpha']:.2f}", f"{l['pred_ratio0']:.2f}",
                     f"{l['pred_ratio0_unit_norm']:.2f}" if "pred_ratio0_unit_norm" in l else "—", f"{l['meas_ratio0']:.2f}",
                     f"{100 * err[i][0]:.0f}%", f"{100 * statistics.median(err[i][1:]):.0f}%", f"{l['log_corr']:.2f}"])
    cfg = m["config"]
    lay = m["results"]["layers"]
    notes = []
    free = [l["layer"] for l in lay if l["sink_rate"] < 0.3]
    sink = [l["layer"] for l in lay if l["sink_rate"] >= 0.3]
    for name, ls in (("sink-free layers (Sink^0.3_0 < 0.3)", free), ("sink layers", sink)):
        if ls:
            at0 = statistics.median(err[i][0] for i in ls)
            rest = statistics.median(e for i in ls for e in err[i][1:])
            notes.append(f"{name} {ls}: median rel. error at t=0 {100 * at0:.0f}%, at t≥1 {100 * rest:.0f}%; measured "
                         f"ratio > 1 in {sum(lay[i]['meas_ratio0'] > 1 for i in ls)} of {len(ls)}")
    return Table(f"1. Cone model, value-drain form: E‖o_t‖² = α²(Σpᵢrᵢ)² + (1 − α²)Σpᵢ²rᵢ² (unit norms rᵢ = 1: "
                 f"α² + (1 − α²)Σp²) (per layer, mean over heads and {cfg['samples']} samples of {cfg['seq_len']} tokens; "
                 f"ratio = position 0 / mean of positions ≥ 1; errors of the value-drain prediction)",
                 ["layer", "sink rate", "α", "ratio predicted", "ratio predicted, unit norms", "ratio measured",
                  "rel. err t=0", "median rel. err t≥1", "corr(log pred, log meas)"], rows, notes)


def quadratic(m):
    r = m["results"]
    fro, pr, sp = r["frobenius"], r["prediction"], r["spectra"]
    rows = [
        ["step-up block (B1's rule on the residual stream)", "—", f"layer {r['step_up_layer']}"],
        ["spike channels", f"‖U_k‖_F > 10× layer median: {fro['step_up_channels']} "
                           f"(max/median {fro['step_up_max_over_median']:.1f})",
         f"largest |x| after the block: {r['activation_spike_channels']}"],
        ["layers with such channels", str(fro["layers_with_spike_channels"]),
         f"other layers' max/median ≤ {fro['other_layers_max_over_median']:.1f}"],
    ]
    for s in sp:
        rows.append([f"S_k of channel {s['channel']}", f"λ⋆ = {s['lambda_star']:.0f}, λ₂ = {s['lambda_2']:.0f}, "
                                                       f"|λ⋆/λ₂| = {s['dominance']:.1f}", "—"])
    rows.append(["s⋆ alignment across spike channels", f"min |cos| = {r['alignment_min']:.3f} over {r['alignment_channels']}", "—"])
    rows.append([f"F(h̃)_{pr['channel']} at the {pr['spike_tokens']} spike tokens",
                 f"h̃ᵀU_kh̃: median rel. err {100 * pr['median_rel_err_quadratic_spike']:.1f}%; "
                 f"λ⋆(s⋆ᵀh̃)²: {100 * pr['median_rel_err_rank_one_spike']:.1f}%", "actual SwiGLU output (hook_mlp_out)"])
    if "median_silu_bound_rel_spike" in pr:
        rows.append(["  error bound, SiLU ≠ identity: Σᵢ|W_down[k,i]||uᵢ||gᵢ|σ(−gᵢ)",
                     f"median {100 * pr['median_silu_bound_rel_spike']:.1f}% of |F|",
                     f"|F − h̃ᵀU_kh̃| above it on {pr['silu_bound_violations']} of {pr['spike_tokens']} tokens"])
        rows.append(["  error bound, rank one: |λ₂|(‖h̃‖² − (s⋆ᵀh̃)²)",
                     f"median {100 * pr['median_rank_one_bound_rel_spike']:.1f}% of |F|",
                     f"|h̃ᵀU_kh̃ − λ⋆(s⋆ᵀh̃)²| above it on {pr['rank_one_bound_violations']} of {pr['spike_tokens']} tokens"])
    rows.append([f"F(h̃)_{pr['channel']} at other tokens", f"h̃ᵀU_kh̃: median rel. err {100 * pr['median_rel_err_quadratic_other']:.0f}%",
                 "not claimed: the form needs silu(g) ≈ g, large gate pre-activations"])
    return Table("2. Quadratic-form FFN: F(h̃)_k ≈ h̃ᵀU_kh̃ ≈ λ⋆(s⋆ᵀh̃)²", ["quantity", "theory", "measured"], rows)


def rmsnorm(m):
    r = m["results"]
    c, s, t = r["cosine"], r["sparsity"], r["theory_cosine"]
    rows = [
        ["energy fraction ρ on spike channels " + str(r["spike_channels"]), "—",
         f"spike tokens {s['energy_share_spike']:.4f}; other tokens {s['energy_share_other']:.3f}"],
        ["max |x̃_i| / √d, x̃ = x / rms(x) (unit gain)", "≤ 1", f"{s['max_abs_over_sqrt_d']:.4f}"],
        [f"cos(RMSNorm(hᵃ), RMSNorm(hᵇ)) of spike tokens, {t['pairs']} pairs", f"≥ {t['mean_bound']:.3f} (mean lower bound)",
         f"{t['mean_actual']:.5f} (mean)"],
        ["mean pairwise cosine, before → after the step-up block", "—",
         f"spike {c['spike_before']:.3f} → {c['spike_after']:.5f}; other {c['other_before']:.3f} → {c['other_after']:.3f}"],
    ]
    b = r.get("theory_bounds")
    if b:
        rows[1:1] = [
            [f"R1: max_i |h̃_i| (gain of the next norm), {b['spike_tokens']} spike tokens",
             f"≤ √d·max|g|·κ = {b['mean_max_abs_bound']:.2f} (mean)",
             f"{b['mean_max_abs']:.2f} (mean); worst actual/bound {b['worst_max_abs_over_bound']:.3f}"],
            ["R2: ‖h̃ − h̃_C‖", f"≤ √(d(1−ρ))·max_(i∉C)|g_i|·κ = {b['mean_residual_bound']:.3f} (mean)",
             f"{b['mean_residual']:.3f} (mean); worst actual/bound {b['worst_residual_over_bound']:.3f}"],
        ]
    return Table(f"3. RMSNorm sparsification (after the step-up block, layer {r['step_up_layer']})",
                 ["quantity", "theory", "measured"], rows)


def sink(m):
    r = m["results"]
    rows = [
        ["sink-key subspace dimension (90% explained variance)", "1–2", f"median {r['median_sink_dim_of_sink_heads']:.0f} "
                                                                         "over measured sink heads"],
        ["sink heads: query-to-subspace alignment rule", f"{r['theory_rule_predicted_sink_heads']} of {r['heads']} heads",
         f"{r['measured_sink_heads']} with Gu α₀ > 0.3; agreement {100 * r['theory_rule_accuracy']:.1f}%"],
        ["sink heads: logit gap, α̂₀ = e^Δ/(e^Δ + n − 1) > 0.3", f"{r['predicted_sink_heads']} heads",
         f"accuracy {100 * r['accuracy']:.1f}%, precision {100 * r['precision']:.1f}%, recall {100 * r['recall']:.1f}%"],
        ["α̂₀ against measured α₀ per head", "—", f"Pearson r = {r['pearson_alpha0']:.3f}"],
    ]
    return Table("4. Sink geometry", ["quantity", "theory", "measured"], rows)


def tables(out):
    """(the four experiments' meta.json by name, the four tables)."""
    metas = {name: load(out, name) for name in EXPERIMENTS}
    return metas, [cone(out, metas["a3_cone_model"]), quadratic(metas["b2_quadratic_ffn"]),
                   rmsnorm(metas["b4_rmsnorm_sparsity"]), sink(metas["b5_sink_keys"])]


def title(metas):
    model = pathlib.Path(metas["a3_cone_model"].get("model", "")).name
    return f"Theory prediction vs measurement on SmolLM2-135M ({model})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out", type=pathlib.Path)
    a = ap.parse_args()
    metas, ts = tables(a.out)
    for name, m in metas.items():
        if m.get("smoke"):
            print(f"note: {name} ran at its --smoke size; numbers below are a smoke check, not a measurement")
    print(title(metas))
    print(render_text(ts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
