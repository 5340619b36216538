#!/usr/bin/env bash
# How fast `sinkscope view`'s page opens: the page of the bundled SmolLM2 (30 layers x 9 heads) on the first
# 600 bytes of data/sample.txt (128 tokens), loaded REPEATS times in headless chromium (selenium); prints the
# page size and the median time from navigation to the page's script having drawn everything
# (body[data-ready]), and the median DOMContentLoaded. Needs `scripts/setup.sh --browser`.
# Usage: [BUILD=build] [SKIP_BUILD=1] bench/run_view_bench.sh [repeats=5]
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-5}; bdir=${BUILD:-build}
scripts/setup.sh --browser
scripts/fetch_model.sh
if [[ -z ${SKIP_BUILD:-} ]]; then
  cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$bdir" -j"$(nproc)" --target sinkscope_cli >/dev/null
fi
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
time "$bdir"/tools/sinkscope view models/SmolLM2-135M-Instruct.Q4_1.gguf --text "$(head -c 600 data/sample.txt)" --out "$out/view"
bench/machine.sh "sinkscope view page load, $repeats repeats"
/usr/bin/python3 - "$out/view/index.html" "$repeats" <<'PY'
import os, statistics, sys, time
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
page, repeats = sys.argv[1], int(sys.argv[2])
o = webdriver.ChromeOptions()
o.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
    o.add_argument(a)
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
ready, dom = [], []
try:
    for _ in range(repeats):
        d.get("about:blank")
        t0 = time.perf_counter()
        d.get("file://" + page)
        while d.execute_script("return document.body && document.body.dataset.ready") != "1":
            time.sleep(0.01)
        ready.append(time.perf_counter() - t0)
        dom.append(d.execute_script("return performance.timing.domContentLoadedEventEnd - performance.timing.navigationStart") / 1000)
finally:
    d.quit()
print(f"page {os.path.getsize(page) / 1e6:.2f} MB; ready in {statistics.median(ready):.3f} s (median of {repeats}; "
      f"min {min(ready):.3f}, max {max(ready):.3f}); DOMContentLoaded {statistics.median(dom):.3f} s")
PY
