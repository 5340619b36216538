#!/usr/bin/env bash
# Fuzzes the GGUF and safetensors parsers with libFuzzer + ASan + UBSan for a bounded time per target.
#
#   scripts/fuzz.sh [seconds per target, default 60]
#
# Installs clang-14 and libclang-rt-14-dev with apt if missing, configures build-fuzz with clang
# (-DSINKSCOPE_FUZZ=ON, nothing else), builds fuzz_gguf and fuzz_safetensors, seeds a corpus from
# tests/fixtures/io and the first 16 KiB of ../shared/models/stories260K.gguf (its whole header; the model
# itself is never copied into the repo), runs each target, and exits non-zero if either found a crash.
# Crash inputs are left in build-fuzz/artifacts/ (replay: build-fuzz/fuzz/fuzz_gguf <file>).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
jobs=${FUZZ_BUILD_JOBS:-2}

if ! command -v clang++-14 >/dev/null 2>&1 || ! compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a" >/dev/null; then
  echo "fuzz.sh: installing clang-14 and libclang-rt-14-dev"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq clang-14 libclang-rt-14-dev
fi

CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINKSCOPE_FUZZ=ON \
  -DSINKSCOPE_BUILD_TESTS=OFF -DSINKSCOPE_BUILD_TOOLS=OFF -DSINKSCOPE_BUILD_BENCH=OFF \
  -DSINKSCOPE_BUILD_EXPERIMENTS=OFF -DSINKSCOPE_NATIVE=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_gguf fuzz_safetensors

corpus=build-fuzz/corpus
artifacts=build-fuzz/artifacts
mkdir -p "$corpus/gguf" "$corpus/safetensors" "$artifacts"
cp tests/fixtures/io/*.gguf "$corpus/gguf/"
stories=../shared/models/stories260K.gguf
if [[ -f $stories ]]; then head -c 16384 "$stories" > "$corpus/gguf/stories260K_head.gguf"; fi
for f in tests/fixtures/io/st_*/*.safetensors; do
  cp "$f" "$corpus/safetensors/$(basename "$(dirname "$f")")_$(basename "$f")"
done

status=0
for target in gguf safetensors; do
  echo "fuzz.sh: fuzz_$target for ${secs}s"
  if ! build-fuzz/fuzz/fuzz_$target "$corpus/$target" -max_total_time="$secs" -max_len=20000 -timeout=10 \
       -rss_limit_mb=2048 -artifact_prefix="$artifacts/${target}-" -print_final_stats=1 2>"build-fuzz/fuzz_$target.log"; then
    echo "fuzz.sh: fuzz_$target FOUND A PROBLEM (log: build-fuzz/fuzz_$target.log, input in $artifacts/)"
    tail -n 40 "build-fuzz/fuzz_$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build-fuzz/fuzz_$target.log" | sed 's/^/  /'
    grep -E "cov: .* ft: " "build-fuzz/fuzz_$target.log" | tail -n 1 | sed 's/^/  /'
  fi
done
exit $status
