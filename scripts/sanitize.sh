#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/, -O1, no -march=native
# so that the checked code is the portable one). Slow tests are excluded; everything else runs except the
# installed-consumer check and sinkscope-train's smoke and resume runs (its target is not built here: the
# Trainer's code runs under the sanitizers through the [train] tests; the tool's runs passed under them once, 2026-12-02)
# and the docs check (it checks the pages, and the CLI paths its blocks run are the cli, census and
# cli_lens_dla tests' here; under ASan it took 318 s of a 2-core machine, a seventh of this stage), and the
# browser test of `sinkscope view`'s page (the page's numbers are checked here by cli_view).
# -g1 (line tables only): the sanitizers' reports keep file:line, and the build takes about a third less
# time than with -g (measured on tests/model/test_batch.cpp: 73 s instead of 118 s of CPU).
# -DSINKSCOPE_WERROR=ON: a compiler warning in the project's own code fails here (portable flags, so the
# same warnings on every host).
# Compiled by clang 14 (the sanitizers' reference implementation; scripts/fuzz.sh uses it too), while
# scripts/test.sh builds with GCC: the suite is then checked under both compilers' warnings, and clang
# compiles this -O1 ASan build in about two thirds of GCC's time (tests/train, one unit: 152 s against
# 232 s on one core), which CI's time needs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --sanitizers
scripts/fetch_model.sh
CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DSINKSCOPE_SANITIZE=ON -DSINKSCOPE_WERROR=ON -DSINKSCOPE_NATIVE=OFF -DSINKSCOPE_CUDA=OFF -DSINKSCOPE_BUILD_BENCH=OFF -DSINKSCOPE_BUILD_EXPERIMENTS=OFF >/dev/null
cmake --build build-asan -j"$(nproc)" --target sinkscope_tests sinkscope_cli
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j1 -E "consumer_find_package|train_smoke|train_resume|^docs$|^view_browser$"
