#!/usr/bin/env bash
# The Python module's tests (issue 14): installs what is missing (scripts/setup.sh, the model), makes a
# virtual environment .venv-python with numpy, pytest, nanobind and scikit-build-core from PyPI,
# `pip install .` into it (the extension compiles once into build-py/, reused by later runs), then runs
# pytest on tests/python. The tests compare with the C++ CLI when SINKSCOPE_CLI names it (default:
# build/tools/sinkscope, which scripts/test.sh builds) and skip those comparisons, saying so, when it is absent.
# Usage: scripts/test_python.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/fetch_model.sh
python=${PYTHON:-python3}
# A Python whose headers are missing cannot build an extension: Debian's python3 needs python3-dev.
if ! "$python" -c 'import os, sysconfig; raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3-dev >/dev/null
fi
venv=.venv-python
[[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check numpy pytest nanobind scikit-build-core
# --no-build-isolation: build with the venv's nanobind and scikit-build-core (no second download per run).
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation .
export SINKSCOPE_CLI=${SINKSCOPE_CLI:-build/tools/sinkscope}
[[ -x $SINKSCOPE_CLI ]] || echo "test_python: no CLI at $SINKSCOPE_CLI; the comparisons with it are skipped"
# One OpenMP thread: on a 2-core machine that other jobs share, each of the forward's parallel regions
# (per head, every layer) waits for a descheduled thread at its barrier, and the suite takes minutes
# instead of seconds (measured 2026-12-01: 466 s with 2 threads under load, 15 s with 1). The thread
# count changes results only in the last bits (Eigen's GEMM blocking; SmolLM2, 200 tokens: logits and
# resid_post within 2e-6 of the largest entry), below every tolerance of the tests.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# Run from tests/python so that `import sinkscope` is the installed package, not a folder of the tree.
cd tests/python
exec "../../$venv/bin/python" -m pytest -q -rs "$@"
