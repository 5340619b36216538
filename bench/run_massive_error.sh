#!/usr/bin/env bash
# How much a fast compute path moves the numbers this toolkit measures: the bundled SmolLM2 (Q4_1 maps kept
# in their file type, --weights file) on the first 600 bytes of data/sample.txt, every layer's residual
# stream captured with --compute exact, int8 and bf16. At the spike positions (a row holding a massive
# activation: |x| > 100 and > 1000 × the layer's median |x|, Sun et al.'s rule) it prints, per layer, the
# error of the massive value x[c*] relative to |x[c*]|, and the largest error over the row's other channels
# relative to the row scale max|x| and to those channels' rms, for int8 and bf16 against exact; then the
# median over the other positions of max|error| / rms(x).
# Usage: [BUILD=build] [SKIP_BUILD=1] bench/run_massive_error.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bdir=${BUILD:-build}
scripts/fetch_model.sh
if [[ -z ${SKIP_BUILD:-} ]]; then
  cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$bdir" -j"$(nproc)" --target sinkscope_cli >/dev/null
fi
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
hooks=$("$bdir"/tools/sinkscope capture --list-hooks "$model" | grep -E '^blocks\.[0-9]+\.hook_resid_post$' | paste -sd,)
for c in exact int8 bf16; do
  "$bdir"/tools/sinkscope capture "$model" --text "$(head -c 600 data/sample.txt)" --hooks "$hooks" \
    --weights file --compute "$c" --out "$out/$c" >/dev/null
done
bench/machine.sh "SmolLM2 resid_post error at spike positions"
/usr/bin/python3 - "$out" <<'PY'
import json, math, os, sys
sys.path.insert(0, "tests/cli")
from npy_stdlib import npy  # standard-library .npy reader (no numpy needed)
out = sys.argv[1]
meta = json.load(open(os.path.join(out, "exact", "meta.json")))
n_layers = sum(1 for h in meta["hooks"] if h.endswith("hook_resid_post"))
paths = ("int8", "bf16")
print(f"{len(meta['tokens'])} tokens; errors against --compute exact. At spike rows: d[c*]/|x[c*]| (the massive")
print("value), and the largest error over the row's other channels relative to the row scale max|x| and to the")
print("rms of those other channels; at the other rows: the median over rows of max|d| / rms(x).")
print("layer spikes   c*   |x[c*]|  " + "  ".join(f"{p} d[c*]/|x[c*]| {p} rest/scale {p} rest/rms" for p in paths)
      + "  | other rows: " + " ".join(f"{p} max/rms" for p in paths))
worst = {p: [0.0, 0.0, 0.0, 0.0] for p in paths}
def rms(v):
    return math.sqrt(sum(a * a for a in v) / len(v))
for L in range(n_layers):
    name = f"blocks.{L}.hook_resid_post.npy"
    shape, ex = npy(os.path.join(out, "exact", name))
    T, D = shape[-2], shape[-1]
    rows = [ex[t * D:(t + 1) * D] for t in range(T)]
    absall = sorted(abs(v) for r in rows for v in r)
    cut = max(100.0, 1000.0 * absall[len(absall) // 2])
    spikes = [t for t, r in enumerate(rows) if max(abs(v) for v in r) > cut]
    line, tail, cstar, xs = [], [], -1, float("nan")
    for p in paths:
        _, y = npy(os.path.join(out, p, name))
        yr = [y[t * D:(t + 1) * D] for t in range(T)]
        c_err = rest_scale = rest_rms = 0.0
        for t in spikes:
            massive = [j for j in range(D) if abs(rows[t][j]) > cut]
            cstar = max(massive, key=lambda j: abs(rows[t][j]))
            xs = abs(rows[t][cstar])
            rest = [j for j in range(D) if j not in massive]
            d_rest = max(abs(yr[t][j] - rows[t][j]) for j in rest)
            c_err = max(c_err, abs(yr[t][cstar] - rows[t][cstar]) / xs)
            rest_scale = max(rest_scale, d_rest / xs)
            rest_rms = max(rest_rms, d_rest / rms([rows[t][j] for j in rest]))
        others = sorted(max(abs(a - b) for a, b in zip(yr[t], rows[t])) / rms(rows[t]) for t in range(T) if t not in spikes)
        med = others[len(others) // 2] if others else float("nan")
        if spikes:
            line.append(f"{c_err:18.2e} {rest_scale:15.2e} {rest_rms:13.2e}")
            w = worst[p]
            worst[p] = [max(w[0], c_err), max(w[1], rest_scale), max(w[2], rest_rms), max(w[3], med)]
        else:
            line.append(f"{'-':>18} {'-':>15} {'-':>13}")
        tail.append(f"{med:13.2e}")
    print(f"{L:5d} {len(spikes):6d} {cstar:4d} {xs:9.1f}  " + "  ".join(line) + "  | " + " ".join(tail))
for p in paths:
    w = worst[p]
    print(f"{p}, worst over the layers with spikes: d[c*]/|x[c*]| {w[0]:.2e}; other channels {w[1]:.2e} of the row "
          f"scale, {w[2]:.2e} of their rms; other rows' median max/rms {w[3]:.2e}")
PY
