#!/usr/bin/env bash
# The README's test command: installs what is missing (with a headless browser for the page test), builds, and runs the whole suite with CTest, then
# the Python module's tests (pip install . into .venv-python, pytest; they compare with build/tools/sinkscope).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --browser
scripts/fetch_model.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
# setup.sh --browser installed chromium: the page test must run here, not skip.
SINKSCOPE_REQUIRE_BROWSER=1 ctest --test-dir build --output-on-failure -j1
SINKSCOPE_CLI=build/tools/sinkscope scripts/test_python.sh
