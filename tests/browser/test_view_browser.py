#!/usr/bin/env python3
"""`sinkscope view`'s page in a real headless browser (Debian's chromium and chromedriver, driven by selenium).

Checks, on SmolLM2 (models/, the bundled default) or else the shared stories260K, with about 128 tokens of text:
  - the page loads (its script sets body[data-ready]) and stays within the size budget (10 MB);
  - the alpha0 heat-map has one cell per (layer, head);
  - a clicked cell's alpha0 equals alpha0 computed here from `sinkscope capture`'s pattern of the same text;
  - hovering a token (a real mouse move) shows that query's pattern row, equal to capture's within the page's
    byte quantisation (1/510) and its 4-decimal display;
  - the logit lens table has one row per read-out point (L + 1).
Exit 77 (skipped, with the reason) when selenium, chromium or chromedriver is missing, unless
SINKSCOPE_REQUIRE_BROWSER=1 (scripts/test.sh sets it after `scripts/setup.sh --browser` installed them):
then a missing browser fails the test.
Usage: test_view_browser.py SINKSCOPE_BINARY SHARED_DIR MODELS_DIR
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from npy_stdlib import npy  # noqa: E402

SKIP = 77
require = os.environ.get("SINKSCOPE_REQUIRE_BROWSER") == "1"


def unavailable(why):
    print(f"test_view_browser: {why}")
    sys.exit(1 if require else SKIP)


try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    unavailable("no selenium for this Python (Debian: python3-selenium; scripts/setup.sh --browser installs it)")
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
driver_path = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
if not chromium or not driver_path:
    unavailable("no chromium / chromedriver (Debian: chromium chromium-driver; scripts/setup.sh --browser installs them)")


def main():
    cli, shared, models = sys.argv[1:4]
    model = os.path.join(models, "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(model):
        model = os.path.join(shared, "models", "stories260K.gguf")
    text = ("The attention sink is the first token of a sequence, which most heads attend to whatever it says. "
            "Massive activations are a few channels of a few tokens that grow thousands of times larger than the "
            "rest of the residual stream, and they appear in the same early layers in which the sinks form. "
            "This page shows both for one text, one head at a time.")
    failures = []
    with tempfile.TemporaryDirectory() as work:
        view = os.path.join(work, "view")
        subprocess.run([cli, "view", model, "--text", text, "--out", view], check=True, stdout=subprocess.DEVNULL)
        summary = json.load(open(os.path.join(view, "summary.json")))
        L, H = summary["config"]["n_layers"], summary["config"]["n_heads"]
        page = os.path.join(view, "index.html")
        size = os.path.getsize(page)
        if size > 10 * 1000 * 1000:
            failures.append(f"page of {size} bytes is over the 10 MB budget")
        layer, head = min(3, L - 1), H - 1
        cap = os.path.join(work, "cap")
        # Every layer's pattern, as the page's forward captures them: a forward that materialises fewer patterns may
        # take the fused attention path in the other layers and differ in the last bits.
        hooks = ",".join(f"blocks.{l}.attn.hook_pattern" for l in range(L))
        subprocess.run([cli, "capture", model, "--text", text, "--hooks", hooks, "--out", cap], check=True, stdout=subprocess.DEVNULL)
        (_, T, _), p = npy(os.path.join(cap, f"blocks.{layer}.attn.hook_pattern.npy"))
        alpha = math.fsum(p[(head * T + t) * T] for t in range(T)) / T

        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
            options.add_argument(arg)
        try:
            driver = webdriver.Chrome(service=Service(driver_path), options=options)
        except Exception as e:  # a browser that does not start is a missing browser
            unavailable(f"chromium did not start: {e}")
        try:
            driver.get("file://" + page)
            WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready") == "1")
            cells = driver.find_elements(By.CSS_SELECTOR, "#alpha .cell")
            if len(cells) != L * H:
                failures.append(f"{len(cells)} heat-map cells for {L} layers x {H} heads")
            cell = driver.find_element(By.CSS_SELECTOR, f'#alpha .cell[data-layer="{layer}"][data-head="{head}"]')
            cell.click()
            title = driver.find_element(By.ID, "head-title")
            got = float(title.get_attribute("data-alpha"))
            if title.get_attribute("data-layer") != str(layer) or title.get_attribute("data-head") != str(head):
                failures.append("clicking a cell did not choose its head")
            if abs(got - alpha) > 1e-9:
                failures.append(f"alpha0 of layer {layer} head {head}: page {got}, capture {alpha}")
            t = T - 1
            token = driver.find_element(By.CSS_SELECTOR, f'#tokens .tok[data-pos="{t}"]')
            ActionChains(driver).move_to_element(token).perform()
            info = driver.find_element(By.ID, "row-info")
            if info.get_attribute("data-query") != str(t):
                failures.append(f"hovering token {t} shows query {info.get_attribute('data-query')!r}")
            else:
                row = json.loads(info.get_attribute("data-row"))
                want = p[(head * T + t) * T:(head * T + t) * T + t + 1]
                worst = max(abs(a - b) for a, b in zip(row, want)) if len(row) == len(want) else math.inf
                if worst > 0.5 / 255 + 6e-5:
                    failures.append(f"hovered row of query {t}: off by {worst} from capture's pattern")
                if "attends to" not in info.text:
                    failures.append("the hovered row is not described in words")
            rows = driver.find_elements(By.CSS_SELECTOR, "#lens tr")
            if len(rows) != L + 2:
                failures.append(f"logit-lens table has {len(rows)} rows, not a header and {L + 1} read-out points")
        finally:
            driver.quit()
    for f in failures:
        print("FAILED:", f)
    print(f"view in {os.path.basename(chromium)}: {model.split('/')[-1]}, {L} x {H} heads, {T} positions, page {size} bytes")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
