#!/usr/bin/env bash
# `sinkscope view` on the shared stories260K checkpoint (seconds), without a browser: the files it promises,
# their shapes, the page's data against `sinkscope capture` of the same tokens (α₀ of every head from the
# captured patterns, read without NumPy), and bad input. tests/browser/test_view_browser.py opens the page.
# Usage: test_view.sh SINKSCOPE_BINARY SHARED_DIR
set -u
bin=$1; model=$2/models/stories260K.gguf
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/check_lib.sh"
tokens=1,50,60,70,80,90,100,110,120,130,140,150
"$bin" view "$model" --tokens $tokens --top-channels 3 --out "$work/view" > "$work/view.log" 2>&1
check "view exits 0" test $? -eq 0
check "view names the page" grep -q "index.html" "$work/view.log"
check "index.html is a page with its data" grep -q '<script type="application/json" id="data">' "$work/view/index.html"
check "pattern.npy is (5 layers, 8 heads, 12, 12)" grep -qa "'shape': (5, 8, 12, 12)" "$work/view/pattern.npy"
check "alpha0.npy is (5, 8)" grep -qa "'shape': (5, 8)" "$work/view/alpha0.npy"
check "resid_norm.npy is (6 points, 12)" grep -qa "'shape': (6, 12)" "$work/view/resid_norm.npy"
check "top_channel.npy is int32 (6, 12, 3)" grep -qa "'descr': '<i4'.*'shape': (6, 12, 3)" "$work/view/top_channel.npy"
hooks=$(seq -s, -f "blocks.%g.attn.hook_pattern" 0 4),blocks.2.hook_resid_pre
"$bin" capture "$model" --tokens $tokens --hooks "$hooks" --out "$work/cap" > /dev/null 2>&1
check "capture of the same tokens exits 0" test $? -eq 0
# α₀ = mean over queries of pattern[t, 0], from capture's patterns, against summary.json and the page's data;
# the norms and top channel at blocks.2.hook_resid_pre against capture's residual.
python3 - "$work" "$(dirname "$0")" > "$work/numbers.log" 2>&1 <<'PY'
import json, math, re, struct, sys
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from npy_stdlib import npy
summary = json.load(open(work + "/view/summary.json"))
page = open(work + "/view/index.html", encoding="utf-8").read()
data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1))
ok = True
for l in range(5):
    (H, T, _), p = npy(f"{work}/cap/blocks.{l}.attn.hook_pattern.npy")
    for h in range(H):
        a = math.fsum(p[(h * T + t) * T] for t in range(T)) / T
        for name, got in (("summary", summary["alpha0"][l * H + h]), ("page", data["alpha0"][l * H + h])):
            if abs(got - a) > 1e-9:
                print(f"alpha0 layer {l} head {h}: {name} {got} vs capture {a}"); ok = False
(T, d), x = npy(f"{work}/cap/blocks.2.hook_resid_pre.npy")
(R, T2), norms = npy(work + "/view/resid_norm.npy")
_, top = npy(work + "/view/top_channel.npy")
for t in range(T):
    row = x[t * d:(t + 1) * d]
    n = math.sqrt(math.fsum(v * v for v in row))
    if abs(norms[2 * T2 + t] - n) > 1e-5 * n:
        print(f"norm at position {t}: {norms[2 * T2 + t]} vs {n}"); ok = False
    best = max(range(d), key=lambda c: (abs(row[c]), -c))
    if top[(2 * T2 + t) * 3] != best:
        print(f"top channel at position {t}: {top[(2 * T2 + t) * 3]} vs {best}"); ok = False
print("numbers ok" if ok else "numbers differ")
PY
check "alpha0, norms and top channels agree with capture" grep -q "numbers ok" "$work/numbers.log"
touch "$work/file"
"$bin" view "$model" --tokens $tokens --out "$work/file" > "$work/bad.log" 2>&1
check "an --out that is a file is an error naming it" grep -q "file" "$work/bad.log"
"$bin" view "$model" --tokens 1,99999 --out "$work/bad" > "$work/bad2.log" 2>&1
check "a token outside the vocabulary fails" test $? -ne 0
[[ $fails -eq 0 ]] || cat "$work/numbers.log"
check_summary "view cli: "
