#!/usr/bin/env bash
# Tokenized natural-English text for `sinkscope-train --task text`: the Python 3.11 documentation prose that
# scripts/fetch_corpus.sh extracts from the Debian package python3.11-doc, tokenized two ways:
#   byte-level   data/corpus/python_docs.bytes.u16   vocabulary 257 (bytes 0..255, BOS = 256)
#   sentencepiece data/corpus/python_docs.spm512.u16  a 512-piece unigram model trained here with the Debian
#                 package sentencepiece (spm_train, fixed seed), BOS = 1 (<s>), UNK = 0, EOS = 2
# Both are flat little-endian uint16 files, streamed from disk by train::TextCorpus, which splits them
# into training and validation blocks deterministically. Idempotent.
# Usage: scripts/make_text_tokens.sh [sinkscope-train binary=build/tools/sinkscope-train]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/tools/sinkscope-train}
scripts/fetch_corpus.sh
text=data/corpus/python_docs.txt
if [[ ! -s data/corpus/python_docs.bytes.u16 ]]; then
  "$bin" --prepare-text "$text" --tokens data/corpus/python_docs.bytes.u16
fi
if [[ ! -s data/corpus/python_docs.spm512.u16 ]]; then
  if ! command -v spm_train >/dev/null; then
    echo "make_text_tokens: installing sentencepiece from Debian"
    sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
    $sudo_cmd apt-get install -y -qq sentencepiece >/dev/null
  fi
  spm_train --input="$text" --model_prefix=data/corpus/python_docs.spm512 --vocab_size=512 \
    --model_type=unigram --character_coverage=1.0 --bos_id=1 --eos_id=2 --unk_id=0 --pad_id=-1 \
    --random_seed=20260305 --num_threads=1 --minloglevel=2
  spm_encode --model=data/corpus/python_docs.spm512.model --output_format=id < "$text" |
    python3 -c '
import array, sys
out = array.array("H")
for line in sys.stdin:
    out.extend(int(t) for t in line.split())
if sys.byteorder != "little":
    out.byteswap()
with open(sys.argv[1], "wb") as f:
    out.tofile(f)
print(f"make_text_tokens: {len(out)} sentencepiece tokens (vocabulary 512, BOS = 1) -> {sys.argv[1]}", file=sys.stderr)
' data/corpus/python_docs.spm512.u16.part
  mv data/corpus/python_docs.spm512.u16.part data/corpus/python_docs.spm512.u16
fi
ls -l data/corpus/python_docs.*.u16
