#!/usr/bin/env bash
# `sinkscope capture --text` on a SentencePiece ("llama") GGUF: stories260K's own tokenizer turns the text
# into the ids `sentencepiece` gives (tests/fixtures/tokenizer/sp_reference.json, made by
# scripts/make_sentencepiece_fixtures.py), so the logits equal those of `--tokens` with those ids.
# Usage: check_text_sentencepiece.sh SINKSCOPE_BINARY SHARED_DIR
set -u
bin=$1; model=$2/models/stories260K.gguf
ref=$(cd "$(dirname "$0")/../fixtures/tokenizer" && pwd)/sp_reference.json
[[ -f $model ]] || { echo "skipped: $model absent"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fails=0; passes=0
check() {  # check NAME CONDITION...
    local name=$1; shift
    if "$@"; then passes=$((passes + 1)); else echo "FAILED: $name"; fails=$((fails + 1)); fi
}
text=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["stories260K"]["cli_text"])' "$ref")
ids=$(python3 -c 'import json, sys; print(",".join(map(str, json.load(open(sys.argv[1]))["stories260K"]["cli_ids"])))' "$ref")
"$bin" info "$model" > "$work/info" 2>&1
check "info names the SentencePiece tokenizer" grep -q "tokenizer:  SentencePiece llama (merges by score), 512 tokens, BOS 1 (added by default: yes)" "$work/info"
"$bin" capture "$model" --text "$text" --hooks logits --out "$work/text" > "$work/text.log" 2>&1
check "capture --text exits 0" test $? -eq 0
"$bin" capture "$model" --tokens "$ids" --hooks logits --out "$work/ids" > "$work/ids.log" 2>&1
check "capture --tokens exits 0" test $? -eq 0
check "--text gives sentencepiece's ids (BOS first, the GGUF's default)" python3 -c '
import json, sys
got = json.load(open(sys.argv[1]))["tokens"]
sys.exit(got != [int(i) for i in sys.argv[2].split(",")])' "$work/text/meta.json" "$ids"
check "--text gives the logits of --tokens with those ids" cmp -s "$work/text/logits.npy" "$work/ids/logits.npy"
echo "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
