#!/usr/bin/env bash
# Quantized matrix products (issue 11, item 1): sinkscope's two paths for y = x Wᵀ with W in its GGUF type
# (layers/quantized_linear.hpp: `exact` = dequantized tiles × Eigen SGEMM, `int8` = 8-bit activations ×
# vpdpbusd) against the float32 paths — Eigen's SGEMM on the dequantized weight (bench/bench_quant_matmul.cpp)
# and PyTorch's SGEMM (bench/bench_sgemm_torch.py) — in the same run and with the same threads, alternating
# the two programs `rounds` times so that both see the same machine load. Prints every JSON line, then
# tables of GFLOP/s and the ratios: from the median call (median over rounds), from the fastest call, and
# from CPU time (process CPU seconds / threads, which discounts time the threads spent descheduled when
# other work shares the cores: calls of a few ms then take whole 16 ms scheduler slices).
# Usage: [BUILD=build] [SKIP_BUILD=1] bench/run_quant_bench.sh [threads=2] [runs=7] [rounds=2] [types=Q4_K,Q8_0,Q6_K,Q4_1]
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}; runs=${2:-7}; rounds=${3:-2}; types=${4:-Q4_K,Q8_0,Q6_K,Q4_1}
build=${BUILD:-build}
py=${PYTHON:-}
if [[ -z "$py" ]]; then
  if [[ -x /work/fixenv/bin/python ]] && /work/fixenv/bin/python -c "import torch" 2>/dev/null; then py=/work/fixenv/bin/python
  else py=$(scripts/pyenv.sh); fi
fi
if [[ -z "${SKIP_BUILD:-}" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target bench_quant_matmul >/dev/null
fi
export OMP_NUM_THREADS=$threads
bench/machine.sh
lines=()
for r in $(seq "$rounds"); do
  while IFS= read -r l; do lines+=("$l"); echo "$l"; done < <("$build/bench/bench_quant_matmul" "$runs" "$types")
  while IFS= read -r l; do lines+=("$l"); echo "$l"; done < <("$py" bench/bench_sgemm_torch.py "$runs" "$threads")
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "${lines[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(a) for a in sys.argv[1:]]
def rate(method, shape, typ=None, key="gflops"):
    v = [r[key] for r in rows if r["method"] == method and (r["T"], r["in"], r["out"]) == shape
         and (typ is None or r.get("type") == typ)]
    if not v:
        return None
    return max(v) if key == "gflops_best" else statistics.median(v)
shapes = list(dict.fromkeys((r["T"], r["in"], r["out"]) for r in rows))
types = list(dict.fromkeys(r["type"] for r in rows if r["method"] in ("int8", "skipped")))
for key, what in (("gflops", "wall time, median over rounds of each round's median call"),
                  ("gflops_best", "wall time, the fastest call of all rounds (the least disturbed)"),
                  ("gflops_cpu", "process CPU time / threads in place of wall time, median (the idle-machine rate when others share the cores)")):
  print(f"\nGFLOP/s from {what}, {rows[0].get('threads', '?')} threads")
  print("| T, in, out | type | torch SGEMM f32 | Eigen SGEMM f32 (dequantized W) | exact (tiles) | int8 | int8 / torch | int8 / Eigen | int8 / exact | int8 max rel err |")
  print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
  for sh in shapes:
    torch_r, eig = rate("sgemm_f32", sh, key=key), rate("eigen_f32", sh, key=key)
    for t in types:
        a, b = rate("exact", sh, t, key), rate("int8", sh, t, key)
        f = lambda v: "—" if v is None else f"{v:.0f}"
        q = lambda u, v: "—" if u is None or v is None else f"{u / v:.2f}×"
        if a is None:
            print(f"| {sh[0]}, {sh[1]}, {sh[2]} | {t} | {f(torch_r)} | {f(eig)} | skipped: in not a multiple of the block | | | | | |")
            continue
        err = max(r["max_rel_err"] for r in rows if r["method"] == "int8" and r["type"] == t and (r["T"], r["in"], r["out"]) == sh)
        print(f"| {sh[0]}, {sh[1]}, {sh[2]} | {t} | {f(torch_r)} | {f(eig)} | {f(a)} | {f(b)} | {q(b, torch_r)} | {q(b, eig)} | {q(b, a)} | {err:.1e} |")
PY
