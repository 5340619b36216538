#!/usr/bin/env python3
"""Writes the table "theory prediction vs measurement" (scripts/theory_table.py's four sections, as Markdown)
into docs/theory.md between the marker comments

    <!-- theory-vs-measurement:begin -->
    <!-- theory-vs-measurement:end -->

replacing whatever lies between them, and names the source run of each experiment: its git revision, the
UTC time it finished (meta.json's timings.finished_utc) and whether it ran at its --smoke size. Reads
out/{a3_cone_model,b2_quadratic_ffn,b4_rmsnorm_sparsity,b5_sink_keys}/ (meta.json and a3's .npy);
scripts/reproduce.sh calls it after make_report. Plain Python, no numpy.

usage: theory_vs_measurement.py [--out out] [--doc docs/theory.md] [--skip-incomplete]
Exit status: 0 written (or already up to date; or, with --skip-incomplete, an output is missing and the page
is left as it is), 1 an output is missing, 2 the page lacks the markers."""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import theory_table  # noqa: E402

BEGIN = "<!-- theory-vs-measurement:begin -->"
END = "<!-- theory-vs-measurement:end -->"


def source_lines(metas):
    """The provenance table: one row per experiment."""
    rows = ["| experiment | git revision | finished (UTC) | size |", "|---|---|---|---|"]
    for name, m in metas.items():
        rev = m.get("git_revision", "unknown")
        dirty = rev.endswith("+dirty")
        rev = rev[:-len("+dirty")] if dirty else rev
        rev = f"`{rev[:12]}`" + (" (uncommitted changes)" if dirty else "")
        when = m.get("timings", {}).get("finished_utc", "not recorded")
        size = "**smoke** (the test size: a check of the command, not a measurement)" if m.get("smoke") else "default"
        rows.append(f"| {name} | {rev} | {when} | {size} |")
    return rows


def block(out):
    metas, tables = theory_table.tables(out)
    smoke = any(m.get("smoke") for m in metas.values())
    lines = [BEGIN,
             "<!-- written by scripts/theory_vs_measurement.py from the experiments' outputs; edits here are overwritten -->",
             "",
             theory_table.title(metas) + (": **smoke-size run, not a measurement**" if smoke else "") + ".",
             "",
             *source_lines(metas),
             theory_table.render_markdown(tables),
             "",
             END]
    return "\n".join(lines)


def splice(page, new_block):
    """page with the text from BEGIN to END (both included) replaced by new_block; None without the markers."""
    i, j = page.find(BEGIN), page.find(END)
    if i < 0 or j < i or page.count(BEGIN) != 1 or page.count(END) != 1:
        return None
    return page[:i] + new_block + page[j + len(END):]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out", type=pathlib.Path)
    ap.add_argument("--doc", default=pathlib.Path(__file__).resolve().parent.parent / "docs" / "theory.md", type=pathlib.Path)
    ap.add_argument("--skip-incomplete", action="store_true",
                    help="leave the page alone, with exit status 0, when an experiment's output is missing "
                         "(scripts/reproduce.sh --only ...)")
    a = ap.parse_args()
    missing = [n for n in theory_table.EXPERIMENTS if not (a.out / n / "meta.json").exists()]
    if missing and a.skip_incomplete:
        print(f"theory_vs_measurement: {a.out} lacks {', '.join(missing)}; {a.doc} left as it is")
        return 0
    page = a.doc.read_text(encoding="utf-8")
    new = splice(page, block(a.out))
    if new is None:
        print(f"theory_vs_measurement: {a.doc} needs exactly one '{BEGIN}' followed by one '{END}'", file=sys.stderr)
        return 2
    if new != page:
        tmp = a.doc.with_name(a.doc.name + ".tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(a.doc)
        print(f"theory_vs_measurement: wrote the table from {a.out} into {a.doc}")
    else:
        print(f"theory_vs_measurement: {a.doc} is up to date with {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
