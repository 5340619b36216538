#!/usr/bin/env python3
"""scripts/theory_vs_measurement.py on committed outputs (tests/fixtures/theory_outputs/: the fields of A3, B2,
B4 and B5's meta.json and A3's two .npy files that the script reads, from a --smoke run on SmolLM2-135M; see
the README there). Writes into a temporary copy of docs/theory.md and checks that the table lands between the
markers, the page outside them is unchanged, the source run is named, and the numbers are the fixture's
(formatted here from the fixture's own values; A3's errors recomputed from the raw .npy bytes with the array
module, not the script's reader). Seconds; no build, no numpy.
usage: check_theory_vs_measurement.py REPO_ROOT"""
import array
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

BEGIN = "<!-- theory-vs-measurement:begin -->"
END = "<!-- theory-vs-measurement:end -->"
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def npy_rows(path):
    """float32 (L, T) .npy: the header length from bytes 8-9 (format 1.0), the shape from the header text."""
    data = path.read_bytes()
    hlen = int.from_bytes(data[8:10], "little")
    header = data[10:10 + hlen].decode("latin1")
    assert "'descr': '<f4'" in header and "'fortran_order': False" in header, header
    shape = tuple(int(x) for x in header.split("'shape': (")[1].split(")")[0].split(",") if x.strip())
    values = array.array("f")
    values.frombytes(data[10 + hlen:])
    assert len(values) == shape[0] * shape[1], (len(values), shape)
    return [list(values[i * shape[1]:(i + 1) * shape[1]]) for i in range(shape[0])]


def table_row(block, first_cell):
    """The cells of the Markdown row of `block` whose first cell is first_cell (None if absent)."""
    for line in block.splitlines():
        if line.startswith("| ") and line.split(" | ")[0][2:] == first_cell:
            return [c.strip() for c in line.strip().strip("|").split(" | ")]
    return None


def run(repo, out, doc, *extra):
    return subprocess.run([sys.executable, str(repo / "scripts" / "theory_vs_measurement.py"), "--out", str(out),
                           "--doc", str(doc), *extra], capture_output=True, text=True)


def main():
    repo = pathlib.Path(sys.argv[1]).resolve()
    fixtures = repo / "tests" / "fixtures" / "theory_outputs"
    metas = {d.name: json.loads((d / "meta.json").read_text()) for d in sorted(fixtures.iterdir()) if d.is_dir()}
    check(sorted(metas) == ["a3_cone_model", "b2_quadratic_ffn", "b4_rmsnorm_sparsity", "b5_sink_keys"], f"fixtures {sorted(metas)}")
    with tempfile.TemporaryDirectory(prefix="sinkscope-theory-doc-") as tmp:
        tmp = pathlib.Path(tmp)
        original = (repo / "docs" / "theory.md").read_text(encoding="utf-8")
        check(original.count(BEGIN) == 1 and original.count(END) == 1, "docs/theory.md has one pair of markers")
        doc = tmp / "theory.md"
        doc.write_text(original, encoding="utf-8")
        r = run(repo, fixtures, doc)
        check(r.returncode == 0, f"the script succeeds (rc {r.returncode}: {r.stderr.strip()})")
        page = doc.read_text(encoding="utf-8")
        i, j = page.find(BEGIN), page.find(END)
        check(0 <= i < j, "the markers are still there, in order")
        block = page[i:j]
        # Outside the markers the page is unchanged.
        oi, oj = original.find(BEGIN), original.find(END)
        check(page[:i] == original[:oi] and page[j:] == original[oj:], "the page outside the markers is unchanged")
        # The source run: revision, date and smoke flag of every experiment.
        for name, m in metas.items():
            row = table_row(block, name)
            check(row is not None, f"a provenance row for {name}")
            if row:
                rev = m["git_revision"].replace("+dirty", "")[:12]
                check(f"`{rev}`" in row[1], f"{name}: revision {rev} in {row[1]}")
                check(row[2] == m["timings"]["finished_utc"], f"{name}: date {m['timings']['finished_utc']} vs {row[2]}")
                check(("smoke" in row[3]) == bool(m["smoke"]), f"{name}: smoke flag {m['smoke']} vs {row[3]}")
        check(any(m["smoke"] for m in metas.values()) == ("smoke-size run, not a measurement" in block),
              "the smoke warning in the title")
        for title in ("1. Cone model", "2. Quadratic-form FFN", "3. RMSNorm sparsification", "4. Sink geometry"):
            check(f"**{title}" in block, f"section {title}")
        # A3: every layer's row, its α and ratios from meta.json, its errors from the raw arrays.
        pred = npy_rows(fixtures / "a3_cone_model" / "predicted.npy")
        meas = npy_rows(fixtures / "a3_cone_model" / "measured.npy")
        for l in metas["a3_cone_model"]["results"]["layers"]:
            i_l = l["layer"]
            row = table_row(block, str(i_l))
            check(row is not None, f"A3 layer {i_l} row")
            if not row:
                continue
            err = [abs(p - q) / q for p, q in zip(pred[i_l], meas[i_l])]
            want = [str(i_l), f"{l['sink_rate']:.2f}", f"{l['alpha']:.2f}", f"{l['pred_ratio0']:.2f}",
                    f"{l['pred_ratio0_unit_norm']:.2f}", f"{l['meas_ratio0']:.2f}", f"{100 * err[0]:.0f}%",
                    f"{100 * statistics.median(err[1:]):.0f}%", f"{l['log_corr']:.2f}"]
            check(row == want, f"A3 layer {i_l}: {row} vs {want}")
        # B2, B4, B5: headline numbers of each section.
        b2 = metas["b2_quadratic_ffn"]["results"]
        for s in b2["spectra"]:
            check(f"λ⋆ = {s['lambda_star']:.0f}, λ₂ = {s['lambda_2']:.0f}" in block, f"B2 spectrum of channel {s['channel']}")
        check(f"layer {b2['step_up_layer']}" in block, "B2 step-up layer")
        b4 = metas["b4_rmsnorm_sparsity"]["results"]
        check(f"{b4['sparsity']['max_abs_over_sqrt_d']:.4f}" in block, "B4 max |x̃_i| / √d")
        check(f"{b4['theory_cosine']['mean_actual']:.5f} (mean)" in block, "B4 mean cosine")
        b5 = metas["b5_sink_keys"]["results"]
        row = table_row(block, "sink heads: logit gap, α̂₀ = e^Δ/(e^Δ + n − 1) > 0.3")
        check(row is not None and row[1] == f"{b5['predicted_sink_heads']} heads" and
              f"accuracy {100 * b5['accuracy']:.1f}%" in row[2], f"B5 logit-gap row {row}")
        check(f"Pearson r = {b5['pearson_alpha0']:.3f}" in block, "B5 Pearson r")
        # A second run changes nothing (the block is replaced, not appended).
        r2 = run(repo, fixtures, doc)
        check(r2.returncode == 0 and doc.read_text(encoding="utf-8") == page and "up to date" in r2.stdout,
              "a second run leaves the page as it is")
        # Missing outputs: an error, or (--skip-incomplete) the page left alone; a page without markers: exit 2.
        partial = tmp / "partial"
        shutil.copytree(fixtures, partial)
        shutil.rmtree(partial / "b5_sink_keys")
        check(run(repo, partial, doc).returncode == 1, "a missing experiment output fails")
        r3 = run(repo, partial, doc, "--skip-incomplete")
        check(r3.returncode == 0 and doc.read_text(encoding="utf-8") == page, "--skip-incomplete leaves the page alone")
        bare = tmp / "bare.md"
        bare.write_text("# no markers\n", encoding="utf-8")
        check(run(repo, fixtures, bare).returncode == 2 and bare.read_text() == "# no markers\n", "no markers: exit 2")
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("theory_vs_measurement: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
