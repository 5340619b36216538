#!/usr/bin/env python3
"""Makes tests/fixtures/theory_outputs/ (the input of tests/experiments/check_theory_vs_measurement.py) from
the outputs of A3, B2, B4 and B5 run at their --smoke size on SmolLM2-135M:

    for e in a3_cone_model b2_quadratic_ffn b4_rmsnorm_sparsity b5_sink_keys; do
      build/experiments/$e --smoke --out out/smoke/$e; done
    python3 scripts/make_theory_fixtures.py --out out/smoke

Copies, unchanged, only what scripts/theory_table.py reads: of each meta.json the keys below (the
provenance keys and the result fields of its section), and A3's predicted.npy and measured.npy.
usage: make_theory_fixtures.py --out OUT [--dest tests/fixtures/theory_outputs]"""
import argparse
import json
import pathlib
import shutil

# Top-level keys kept in every meta.json (provenance), then the "results" fields read by each section.
PROVENANCE = ("experiment", "git_revision", "smoke", "model", "timings", "config")
RESULTS = {
    "a3_cone_model": ("layers",),
    "b2_quadratic_ffn": ("step_up_layer", "frobenius", "activation_spike_channels", "spectra", "alignment_min",
                         "alignment_channels", "prediction"),
    "b4_rmsnorm_sparsity": ("step_up_layer", "spike_channels", "cosine", "sparsity", "theory_cosine", "theory_bounds"),
    "b5_sink_keys": ("median_sink_dim_of_sink_heads", "theory_rule_predicted_sink_heads", "heads", "measured_sink_heads",
                     "theory_rule_accuracy", "predicted_sink_heads", "accuracy", "precision", "recall", "pearson_alpha0"),
}
LAYER_FIELDS = ("layer", "sink_rate", "alpha", "pred_ratio0", "pred_ratio0_unit_norm", "meas_ratio0", "log_corr")
NPY = {"a3_cone_model": ("predicted.npy", "measured.npy")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--dest", default=pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "theory_outputs",
                    type=pathlib.Path)
    a = ap.parse_args()
    for name, fields in RESULTS.items():
        meta = json.loads((a.out / name / "meta.json").read_text())
        kept = {k: meta[k] for k in PROVENANCE if k in meta}
        kept["model"] = pathlib.Path(kept.get("model", "")).name  # no local path in a committed file
        kept["results"] = {k: meta["results"][k] for k in fields if k in meta["results"]}
        if name == "a3_cone_model":
            kept["results"]["layers"] = [{k: l[k] for k in LAYER_FIELDS if k in l} for l in kept["results"]["layers"]]
        (a.dest / name).mkdir(parents=True, exist_ok=True)
        (a.dest / name / "meta.json").write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n")
        for f in NPY.get(name, ()):
            shutil.copyfile(a.out / name / f, a.dest / name / f)
    print(f"make_theory_fixtures: wrote {a.dest}")


if __name__ == "__main__":
    main()
