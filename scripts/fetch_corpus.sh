#!/usr/bin/env bash
# Builds the natural-text corpus the experiments sample from: plain English prose paragraphs taken from
# the Python 3.11 documentation that Debian ships as reStructuredText (package python3.11-doc,
# /usr/share/doc/python3.11/html/_sources/**/*.rst.txt). Markup, code blocks, tables and directives
# are dropped; inline roles keep their text. Paragraphs are shuffled with a fixed seed so that any
# prefix of the corpus mixes many documents (the experiments read a prefix).
# Writes data/corpus/python_docs.txt (gitignored) and data/corpus/SOURCE. Idempotent.
# Usage: scripts/fetch_corpus.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=data/corpus/python_docs.txt
[[ -s "$out" ]] && exit 0
src=/usr/share/doc/python3.11/html/_sources
if [[ ! -d "$src" ]]; then
  echo "fetch_corpus: installing python3.11-doc from Debian"
  sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3.11-doc >/dev/null
fi
mkdir -p data/corpus
python3 - "$src" "$out.part" <<'PY'
import pathlib, random, re, sys

src, out = pathlib.Path(sys.argv[1]), sys.argv[2]
role = re.compile(r":[a-zA-Z:]+:`!?~?([^`<]*?)(?:\s*<[^>]*>)?`")   # :func:`~a.b` -> a.b ; :ref:`text <x>` -> text
link = re.compile(r"`([^`<]+?)\s*<[^>]+>`_+")                     # `text <url>`_ -> text
lit = re.compile(r"``([^`]+)``")
emph = re.compile(r"(?<![\w*])\*\*?([^*\n]+?)\*\*?(?![\w*])")
ref = re.compile(r"`([^`]+)`_*")
prose = re.compile(r"^[A-Z\"'(]")

def clean(text):
    text = role.sub(lambda m: m.group(1).split(".")[-1] if m.group(0).find("~") >= 0 else m.group(1), text)
    text = link.sub(r"\1", text)
    text = lit.sub(r"\1", text)
    text = emph.sub(r"\1", text)
    text = ref.sub(r"\1", text)
    text = text.replace("|", "").replace("\\", "")
    return re.sub(r"\s+", " ", text).strip()

paragraphs = []
for path in sorted(src.rglob("*.rst.txt")):
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    block = []
    def flush():
        if block:
            p = clean(" ".join(block))
            words = p.split()
            # Keep real prose: starts like a sentence, ends with a full stop, 12+ words, mostly letters.
            if (len(words) >= 12 and prose.match(p) and p[-1] in ".!?" and
                    sum(c.isalpha() or c.isspace() for c in p) > 0.85 * len(p)):
                paragraphs.append(p)
        block.clear()
    for line in lines:
        if not line.strip() or line.startswith((" ", "\t", "..", "=", "-", "*", "~", "^", "+", "#", ">>>", ":")):
            flush()
            continue
        if line.rstrip().endswith("::"):
            line = line.rstrip()[:-1]          # "For example::" introduces a code block: keep the sentence
        block.append(line.strip())
    flush()

random.Random(20260305).shuffle(paragraphs)
with open(out, "w", encoding="utf-8") as f:
    for p in paragraphs:
        f.write(p + "\n\n")
print(f"fetch_corpus: {len(paragraphs)} paragraphs, {sum(len(p) for p in paragraphs) / 1e6:.1f} MB of prose",
      file=sys.stderr)
PY
mv "$out.part" "$out"
dpkg-query -W -f='Debian package ${Package} ${Version}: /usr/share/doc/python3.11/html/_sources/**/*.rst.txt\n' \
  python3.11-doc > data/corpus/SOURCE
echo "fetch_corpus: wrote $out"
