#!/usr/bin/env python3
"""Every fenced code block of README.md and docs/*.md says what it is, and the ones that claim to work do.

The opening fence line carries a tag:
  ```sh run                 run by this test (bash -euo pipefail) at the size written: seconds, not minutes
  ```sh norun: <why>        not run (takes minutes, needs a GPU, a 7B model, a cluster, ...); also python, cmake
  ```cpp compile            compiled (-fsyntax-only) against include/ and the library's dependencies;
                            a block without main() is wrapped in one, its #include / using lines kept above
  ```text, ```json          output samples and listings: not checked
An untagged block fails, naming the file and line.

`run` blocks execute in a fresh temporary directory that links every top-level entry of the repository
(so data/, models/, scripts/ read as in a checkout) and whose build/ is the build under test. A block
that names a build/... program the build lacks, or a models/... file that is not there, is skipped
with its reason; the test then exits 77 (CTest: skipped) if nothing failed.

Usage: check_docs.py --repo ROOT --build BUILD_DIR [--cxx g++] [--include-dirs a:b] [--onednn 0|1]
       SINKSCOPE_BUILD=BUILD_DIR check_docs.py   (the same, from the repository root)
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAIN = {"text", "json"}
NORUN_LANGS = {"sh", "python", "cpp", "cmake"}
SKIP = 77


def blocks_of(path):
    """Yield (line number of the opening fence, info string, body) for each fenced block."""
    body, info, start = None, "", 0
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if body is None and stripped.startswith("```"):
            body, info, start = [], stripped[3:].strip(), i
        elif body is not None and stripped == "```":
            yield start, info, "\n".join(body) + "\n"
            body = None
        elif body is not None:
            body.append(line)
    if body is not None:
        yield start, info + " <unclosed>", "\n".join(body)


def classify(info):
    """'run', 'norun', 'compile', 'plain', or None (untagged / malformed)."""
    if info in PLAIN:
        return "plain"
    if info == "sh run":
        return "run"
    if info == "cpp compile":
        return "compile"
    m = re.fullmatch(r"(\w+) norun: (\S.*)", info)
    if m and m.group(1) in NORUN_LANGS:
        return "norun"
    return None


BLOCK_SECONDS = 120   # a `sh run` block takes seconds, not minutes, in an optimised build


def run_block(repo, build, body, where, time_scale=1.0):
    """Returns (status, message): status 'ok', 'fail' or 'skip'. The limit is BLOCK_SECONDS × time_scale
    (a sanitizer build runs the same block several times slower: CMake passes its factor)."""
    limit = BLOCK_SECONDS * time_scale
    for tok in re.findall(r"(?<![\w./-])(build/[\w./+-]+|models/[\w./+-]+)", body):
        base = build if tok.startswith("build/") else repo
        rel = tok[len("build/"):] if tok.startswith("build/") else tok
        if not (base / rel).exists():
            return "skip", f"{where}: skipped, {tok} is not in {'the build ' + str(build) if base == build else 'the checkout (scripts/fetch_model.sh)'}"
    with tempfile.TemporaryDirectory(prefix="sinkscope-docs-") as tmp:
        tmp = Path(tmp)
        for entry in repo.iterdir():
            if entry.name not in ("build", ".git"):
                (tmp / entry.name).symlink_to(entry.resolve())
        (tmp / "build").symlink_to(build.resolve())
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")   # small models on shared cores: see docs/cli-and-sharding.md
        t0 = time.time()
        try:
            p = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=tmp, env=env, capture_output=True,
                               text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            return "fail", f"{where}: did not finish in {limit:.0f} s (tag it `sh norun: <why>`)"
        dt = time.time() - t0
        if p.returncode != 0:
            tail = "\n".join((p.stdout + p.stderr).splitlines()[-15:])
            return "fail", f"{where}: exit {p.returncode} after {dt:.1f} s\n{tail}"
        return "ok", f"{where}: ran in {dt:.1f} s"


def compile_block(repo, body, where, args):
    if re.search(r"\bint\s+main\s*\(", body):
        source = body
    else:
        top = [l for l in body.splitlines() if l.startswith(("#include", "using namespace"))]
        rest = [l for l in body.splitlines() if not l.startswith(("#include", "using namespace"))]
        source = "\n".join(top) + "\nint main() {\n" + "\n".join(rest) + "\n}\n"
    cmd = [args.cxx, "-std=c++17", "-fsyntax-only", "-fopenmp", "-x", "c++", "-", "-I", str(repo / "include")]
    dirs = [d for d in args.include_dirs.split(":") if d] or ["/usr/include/eigen3"]
    for d in dict.fromkeys(dirs):   # the compiler's own dirs stay implicit: -isystem /usr/include breaks include_next
        if os.path.normpath(d) not in ("/usr/include", "/usr/local/include"):
            cmd += ["-isystem", d]
    onednn = args.onednn if args.onednn is not None else int(Path("/usr/include/oneapi/dnnl/dnnl.hpp").exists())
    if int(onednn):
        cmd.append("-DSINKSCOPE_HAVE_ONEDNN")
    t0 = time.time()
    p = subprocess.run(cmd, input=source, capture_output=True, text=True)
    if p.returncode != 0:
        errors = [l for l in p.stderr.splitlines() if "error" in l][:10]
        return "fail", f"{where}: does not compile ({' '.join(shlex.quote(c) for c in cmd)})\n" + "\n".join(errors)
    return "ok", f"{where}: compiles ({time.time() - t0:.1f} s)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=".")
    ap.add_argument("--build", default=os.environ.get("SINKSCOPE_BUILD", "build"))
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    ap.add_argument("--include-dirs", default="", help="colon-separated dependency include dirs (default: Eigen's)")
    ap.add_argument("--onednn", default=None, help="1: compile with SINKSCOPE_HAVE_ONEDNN (default: if found)")
    ap.add_argument("--no-run", action="store_true", help="check tags and compile blocks only")
    ap.add_argument("--time-scale", type=float, default=1.0,
                    help=f"multiply the {BLOCK_SECONDS} s limit per block (a sanitizer build: 4)")
    args = ap.parse_args()
    repo, build = Path(args.repo).resolve(), Path(args.build).resolve()
    pages = [repo / "README.md"] + sorted((repo / "docs").glob("*.md"))
    counts = {"fail": 0, "skip": 0, "ok": 0}

    def report(status, msg):
        counts[status] += 1
        print(("FAIL " if status == "fail" else "skip " if status == "skip" else "ok   ") + msg, flush=True)

    for page in pages:
        for line, info, body in blocks_of(page):
            where = f"{page.relative_to(repo)}:{line}"
            kind = classify(info)
            if kind is None:
                report("fail", f"{where}: fence ```{info} has no tag (sh run | <lang> norun: <why> | "
                               "cpp compile | text | json)")
            elif kind == "run" and not args.no_run:
                report(*run_block(repo, build, body, where, args.time_scale))
            elif kind == "compile":
                report(*compile_block(repo, body, where, args))
    print(f"{len(pages)} pages: {counts['ok']} blocks checked, {counts['skip']} skipped, {counts['fail']} failed")
    if counts["fail"]:
        return 1
    return SKIP if counts["skip"] else 0


if __name__ == "__main__":
    sys.exit(main())
