#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, the peer for prompt processing on the same GGUF, from the llama-cpp-python
# source package on PyPI (it vendors llama.cpp), and prints the path of the executable. Nothing of llama.cpp
# is kept in this repository: the package is downloaded and built under build/ (once; later calls reuse it).
# CPU only, with the instruction sets /proc/cpuinfo lists (as sinkscope's -march=native) except AMX: on
# these VMs cpuinfo lists amx_tile/amx_int8 but the first tileloadd dies with SIGILL (seen 2026-12-01 in
# llama.cpp's AMX Q4_1 kernel), so GGML_NATIVE (which would compile AMX in) is off and the rest is listed.
# Usage: bench/llama_cpp_peer.sh   → prints build/llama.cpp-<version>/bin/llama-bench
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.3.36
src=build/llama_cpp_python-$version
out=build/llama.cpp-$version
if [[ ! -x $out/bin/llama-bench ]]; then
  if [[ ! -d $src ]]; then
    py=$(scripts/pyenv.sh)
    tmp=$(mktemp -d)
    "$py" -m pip download --quiet --no-binary :all: --no-deps "llama-cpp-python==$version" -d "$tmp" >&2
    mkdir -p build && tar xzf "$tmp"/llama_cpp_python-$version.tar.gz -C build
    rm -rf "$tmp"
  fi
  isa=()
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx512f:AVX512 avx512vbmi:AVX512_VBMI \
              avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 avx_vnni:AVX_VNNI; do
    if [[ $flags == *" ${pair%%:*} "* ]]; then isa+=("-DGGML_${pair#*:}=ON"); else isa+=("-DGGML_${pair#*:}=OFF"); fi
  done
  echo "llama.cpp ISA: ${isa[*]}" >&2
  cmake -S "$src/vendor/llama.cpp" -B "$out" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF "${isa[@]}" -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DGGML_CUDA=OFF >&2
  cmake --build "$out" -j"${JOBS:-$(nproc)}" --target llama-bench >&2
fi
echo "$out/bin/llama-bench"
