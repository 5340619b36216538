#!/usr/bin/env bash
# The CUDA backend on one GPU, in one go: the cross-backend tests, then bench_cuda (memory-bound kernels
# against a measured device-to-device copy, SmolLM2-135M forward with capture, the training benchmark
# model) and its PyTorch peer on the same GPU (bench/bench_cuda_torch.py), then the ratios.
#   usage: bench/run_cuda_bench.sh [tokens=512] [repeats=10]
# Environment:
#   BUILD=dir         build directory (default build-cuda-bench)
#   CUDA_ARCH=90      CMAKE_CUDA_ARCHITECTURES (default 90: H100/H200; "native" builds for the GPU present)
#   SKIP_BUILD=1      use the binaries already in $BUILD (built elsewhere and carried to the GPU machine:
#                     $BUILD/tests/cuda/sinkscope_cuda_tests and $BUILD/bench/bench_cuda)
#   PYTHON=python3    the interpreter with a CUDA build of torch (and transformers) for the peer
#   TEST_LOG=file     also keep the whole cross-backend test output there (the console shows its last 25 lines)
#   MODEL=path.gguf   SmolLM2 weights; without them the forward runs random weights of the same shape
#                     (bench/smollm2_135m.config.json, read from the GGUF's metadata)
#   SWEEP=1           also build the experiments and train the scale sweep's smoke grid on the GPU against
#                     the CPU (tests/experiments/check_sweep_device.sh; with SKIP_BUILD=1 it runs when
#                     $BUILD/experiments/a4_scale_sweep exists, e.g. built here with SWEEP=1 and carried)
# Every figure goes to stdout as JSON lines; copy them into bench/RESULTS.md with the date and the GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
tokens=${1:-512}; repeats=${2:-10}
build=${BUILD:-build-cuda-bench}
py=${PYTHON:-python3}
model=${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
[[ -f "$model" ]] || model=bench/smollm2_135m.config.json

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSINKSCOPE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
    -DSINKSCOPE_TEST_MODULES=core -DSINKSCOPE_BUILD_TOOLS=OFF -DSINKSCOPE_BUILD_EXPERIMENTS="$([[ ${SWEEP:-0} == 1 ]] && echo ON || echo OFF)" \
    >/dev/null || exit 1
  cmake --build "$build" -j"$(nproc)" --target sinkscope_cuda_tests bench_cuda >/dev/null || exit 1
  if [[ ${SWEEP:-0} == 1 ]]; then cmake --build "$build" -j"$(nproc)" --target sinkscope_experiments >/dev/null || exit 1; fi
fi
tests=$build/tests/cuda/sinkscope_cuda_tests
bench=$build/bench/bench_cuda

# The test binary has the fixture directory of the checkout it was built in compiled in; where the
# checkout sits elsewhere (a copy on the GPU machine), point that path at this checkout.
fixtures=$(grep -a -o -m1 '/[[:alnum:]_./+-]*/tests/fixtures' "$tests" | head -1 || true)
if [[ -n "$fixtures" && ! -d "$fixtures" ]]; then
  root=${fixtures%/tests/fixtures}
  mkdir -p "$(dirname "$root")" && ln -sfn "$PWD" "$root" && echo "linked $root -> $PWD (fixtures of the carried test binary)"
fi

echo "== device"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>/dev/null || echo "nvidia-smi not available"
echo "== cross-backend tests"
test_log=${TEST_LOG:-$(mktemp)}
"$tests" "[cuda]" --durations yes >"$test_log" 2>&1
test_rc=$?
tail -25 "$test_log"
echo "tests exit code: $test_rc"
sweep=$build/experiments/a4_scale_sweep
if [[ -x "$sweep" ]]; then
  echo "== the scale sweep's smoke grid on the GPU against the CPU"
  tests/experiments/check_sweep_device.sh "$sweep" "$build/sweep_device"
  sweep_rc=$?
  echo "sweep check exit code: $sweep_rc (77: skipped)"
  [[ $sweep_rc -eq 0 || $sweep_rc -eq 77 ]] || test_rc=$sweep_rc
fi

echo "== sinkscope (CUDA)"
ours=$("$bench" "$model" "$tokens" "$repeats")
echo "$ours"
echo "== PyTorch on the same GPU"
peer=$("$py" bench/bench_cuda_torch.py bench/smollm2_135m.config.json "$tokens" "$repeats" 2>/dev/null || true)
echo "$peer"

"$py" - "$ours" "$peer" <<'PY'
import json, sys
rows = [json.loads(l) for l in (sys.argv[1] + "\n" + sys.argv[2]).splitlines() if l.strip().startswith("{")]
kern = [r for r in rows if r.get("bench") == "kernel"]
if kern:
    print("memory-bound kernels, fraction of the device-to-device copy bandwidth (target >= 0.70):")
    for r in kern:
        flag = "" if r["fraction_of_copy"] >= 0.70 else "   <-- below target"
        print(f"  {r['kernel']:<42} {r['gbps']:8.0f} GB/s  {r['fraction_of_copy']:.2f}{flag}")
fw = {r.get("impl", "sinkscope-cuda"): r for r in rows if r.get("bench") == "forward"}
if "sinkscope-cuda" in fw:
    a = fw["sinkscope-cuda"]
    print(f"forward ({a['weights']}): {a['tokens_per_s_capture']:.0f} tokens/s with every resid_post captured, "
          f"{a['tokens_per_s_plain']:.0f} without hooks, {a['tokens_per_s_attention_received']:.0f} with attention received")
    if "pytorch-transformers" in fw:
        b = fw["pytorch-transformers"]
        print(f"  vs transformers on the same GPU: capture {a['tokens_per_s_capture'] / b['tokens_per_s_capture']:.2f}x, "
              f"plain {a['tokens_per_s_plain'] / b['tokens_per_s_plain']:.2f}x")
        if "tokens_per_s_device_logits" in a and "tokens_per_s_host_logits" in b:
            print(f"  like for like: logits on the device {a['tokens_per_s_device_logits']:.0f} vs {b['tokens_per_s_plain']:.0f} tokens/s "
                  f"({a['tokens_per_s_device_logits'] / b['tokens_per_s_plain']:.2f}x); logits to the host "
                  f"{a['tokens_per_s_plain']:.0f} vs {b['tokens_per_s_host_logits']:.0f} "
                  f"({a['tokens_per_s_plain'] / b['tokens_per_s_host_logits']:.2f}x)")
tr = {r.get("impl"): r for r in rows if r.get("bench") == "train"}
if "sinkscope-cuda" in tr:
    a = tr["sinkscope-cuda"]
    print(f"training: {a['tokens_per_s']:.0f} tokens/s ({a['achieved_tflops']:.2f} TFLOP/s)")
    for k in ("pytorch-sdpa", "pytorch-eager"):
        if k in tr:
            print(f"  vs {k}: {a['tokens_per_s'] / tr[k]['tokens_per_s']:.2f}x ({tr[k]['tokens_per_s']:.0f} tokens/s)")
PY
exit "$test_rc"
