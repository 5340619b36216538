#!/usr/bin/env bash
# A natural-English corpus big enough to matter (issue 13 item 2): prose paragraphs from seven Debian
# packages, deduplicated, split into train and held-out by whole documents, with a 4096-piece
# sentencepiece tokenizer trained on the train part and both parts tokenized to flat uint16 files.
# The 1.2 MB python_docs corpus of scripts/fetch_corpus.sh is too small for models that should not
# memorise their data; this one is 37x larger (44 MB) and stays separate, so nothing that reads
# data/corpus/python_docs.* changes.
#
# Sources (one document = one file, man page, book chapter or dictionary headword):
#   python3.11-doc       the Python 3.11 documentation, reStructuredText sources (*.rst.txt)
#   linux-doc            the Linux kernel documentation, Documentation/**/*.rst (translations/ left out)
#   manpages, manpages-dev  Linux man-pages, rendered with groff -man -Tutf8 (SYNOPSIS, EXAMPLES,
#                        SEE ALSO and COLOPHON sections left out)
#   debian-reference-en  the Debian Reference, plain-text edition, one document per chapter
#   gnu-standards        the GNU Coding Standards and GNU Maintainers Information, one document per chapter
#   dict-gcide           the Collaborative International Dictionary of English (Webster 1913 + WordNet
#                        glosses), definitions and quotations, one document per headword
# Python docs are extracted here by file (not taken from data/corpus/python_docs.txt, which is shuffled
# paragraphs without document boundaries, so it cannot be split by document).
# Markup, code blocks, tables, rst directives that hold code, and paragraphs that do not look like prose
# (under 4 words, not ending like a sentence, or under 75% ASCII letters and spaces) are dropped.
# Paragraphs are NFKC- and whitespace-normalised; exact duplicates (64-bit BLAKE2b of the normalised
# text, corpus-wide, first occurrence kept) are removed. A document goes to held-out when
# sha1("source:name") mod 10000 < 200 (about 2%), so no document is in both parts.
#
# Writes data/corpus/english/ (gitignored):
#   train.txt, heldout.txt   one paragraph a line, an empty line after each document
#   documents.tsv            split, source, document name, paragraphs, bytes (for checking the split)
#   spm4096.model/.vocab     sentencepiece unigram, vocabulary 4096, byte fallback, UNK = 0, BOS = 1,
#                            EOS = 2 (spm_train from Debian's sentencepiece, fixed seed, one thread)
#   train.u16, heldout.u16   flat little-endian uint16 token ids, paragraphs concatenated without
#                            separators (the format of scripts/make_text_tokens.sh), streamed line by line
#   stats.json               per source: documents, bytes, paragraphs kept / removed as duplicates /
#                            dropped as not prose; tokens and unique token ids per part; versions, commands
#   sources.json, train.ids.json, heldout.ids.json   intermediate counts that stats.json is made from
# Each step is skipped when its outputs exist and are newer than its inputs (delete data/corpus/english/
# to rebuild). 2 min 40 s on one core (2026-12-01: extraction 37 s, spm_train 112 s, encoding 9 s). The
# extraction holds one document at a time and the set of paragraph hashes; the encoder one paragraph at a
# time. Only spm_train loads its input: it samples --input_sentence_size paragraphs (400000, more than
# train.txt's 330000, so all 43 MB of it) and peaks at 1.0 GB. With the fixed seed and one thread its
# vocabulary is the same from run to run (checked: identical spm4096.vocab).
# Usage: scripts/make_english_corpus.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=data/corpus/english
seed=20260305
vocab=4096
sentences=400000          # spm_train --input_sentence_size: a random sample of train paragraphs
mkdir -p "$out"

die() { echo "make_english_corpus: error: $*" >&2; exit 1; }
# stale OUTPUT INPUT...: true when OUTPUT is missing, empty or older than one of the INPUTs
stale() { local o=$1 i; shift; [[ -s $o ]] || return 0; for i; do [[ $i -nt $o ]] && return 0; done; return 1; }

# --- 1. Debian packages --------------------------------------------------------------------------------
packages=(python3.11-doc linux-doc manpages manpages-dev debian-reference-en gnu-standards dict-gcide
          groff-base sentencepiece)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "make_english_corpus: installing ${missing[*]} from Debian"
  sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq || die "apt-get update failed"
  # dict-gcide depends on dictd, whose daemon is not needed (the dictionary file is read directly).
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null || die "apt-get install ${missing[*]} failed"
fi
kernel_doc=$(ls -d /usr/share/doc/linux-doc-*/Documentation 2>/dev/null | sort -V | tail -1)
[[ -n "$kernel_doc" ]] || die "no /usr/share/doc/linux-doc-*/Documentation (is linux-doc installed?)"
for f in /usr/share/doc/python3.11/html/_sources /usr/share/debian-reference/debian-reference.en.txt.gz \
         /usr/share/doc/gnu-standards/standards.text.gz /usr/share/dictd/gcide.dict.dz; do
  [[ -e "$f" ]] || die "$f is missing although its package is installed"
done
for c in groff spm_train spm_encode spm_decode; do command -v "$c" >/dev/null || die "$c not found"; done

# --- 2. Text: extract, normalise, deduplicate, split ---------------------------------------------------
if [[ ! -s $out/train.txt || ! -s $out/heldout.txt || ! -s $out/sources.json ]]; then
  echo "make_english_corpus: extracting text (a few minutes)"
  python3 - "$out" "$kernel_doc" <<'PY' || die "text extraction failed"
import gzip, hashlib, json, os, pathlib, re, subprocess, sys, time, unicodedata

out, kernel_doc = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
t0 = time.time()

# ---- normalisation and the prose test, shared by all sources
TRANS = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2212": "-", "\u2018": "'", "\u2019": "'",
                       "\u201c": '"', "\u201d": '"', "\u00ad": None, "\u200b": None, "\ufeff": None})
SPACE = re.compile(r"\s+")
def normalise(p):
    return SPACE.sub(" ", unicodedata.normalize("NFKC", p).translate(TRANS)).strip()

ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ")
CODE = re.compile(r"[{}]|\w\([^)]*\)\s*;|->|==|!=|&&|\|\||#include|^(int|void|char|struct|static|return) ")
def is_prose(p):
    if len(p.split()) < 4:
        return False
    end = p.rstrip("\"')]*")
    if not end or end[-1] not in ".!?:;":     # ";": list items
        return False
    if end[-1] == ";" and CODE.search(p):
        return False
    return sum(c in ASCII_LETTERS for c in p) >= 0.75 * len(p)

# ---- reStructuredText (Python and kernel documentation)
ROLE = re.compile(r":[a-zA-Z][\w:+.-]*:`(!?~?)([^`<]*?)(?:\s*<[^>]*>)?`")
LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`_+")
LIT = re.compile(r"``([^`]+)``")
EMPH = re.compile(r"(?<![\w*])\*\*?([^*\n]+?)\*\*?(?![\w*])")
REF = re.compile(r"`([^`]+)`_*")
FOOT = re.compile(r"\s*\[(?:#\w*|\d+|\*)\]_")
SUBST = re.compile(r"\|([\w -]+)\|_*")
def rst_inline(t):
    t = ROLE.sub(lambda m: m.group(2).split(".")[-1] if "~" in m.group(1) else m.group(2), t)
    t = LINK.sub(r"\1", t)
    t = LIT.sub(r"\1", t)
    t = EMPH.sub(r"\1", t)
    t = REF.sub(r"\1", t)
    t = FOOT.sub("", t)
    t = SUBST.sub(r"\1", t)
    return t.replace("\\", "")

# Directives whose body is prose (kept, the directive line itself dropped); every other directive
# (code-block, literalinclude, kernel-doc, toctree, tables, math, images, ...) is dropped with its body.
PROSE_DIRECTIVES = {
    "note", "warning", "attention", "caution", "danger", "error", "hint", "important", "tip", "seealso",
    "admonition", "versionadded", "versionchanged", "deprecated", "deprecated-removed", "topic", "sidebar",
    "only", "impl-detail", "describe", "function", "method", "class", "attribute", "data", "exception",
    "decorator", "decoratormethod", "classmethod", "staticmethod", "abstractmethod", "coroutinefunction",
    "coroutinemethod", "module", "opcode", "cmdoption", "option", "envvar", "pdbcommand", "macro",
    "member", "type", "var", "enum", "enumerator", "struct", "union", "object", "glossary", "epigraph",
    "highlights", "pull-quote", "container", "centered", "compound", "audit-event", "availability",
}
ADMONITIONS = {"note", "warning", "attention", "caution", "danger", "error", "hint", "important", "tip",
               "seealso"}
ADORN = re.compile(r"([=\-~^\"'`#*+_:.<>])\1{2,}")
SIMPLE_TABLE = re.compile(r"[=\-]{2,}(\s+[=\-]{2,})+")
DIRECTIVE = re.compile(r"\.\.\s+([\w:.+-]+)::(.*)")
BULLET = re.compile(r"([-*+\u2022]|\d+[.)]|#\.|\(\d+\)|[a-z][.)])\s+")
FIELD = re.compile(r":[\w .()-]+:(\s+|$)")

def rst_paragraphs(lines):
    para, indent, skip, skip_blank = [], -1, None, False
    def flush():
        if para:
            yield rst_inline(" ".join(para))
        para.clear()
    for raw in lines:
        line = raw.expandtabs(8).rstrip()
        s = line.strip()
        ind = len(line) - len(line.lstrip())
        if skip_blank:                        # doctest block: runs to the next blank line
            if s:
                continue
            skip_blank = False
        if skip is not None:                  # indented block under a code directive or "::"
            if not s or ind > skip:
                continue
            skip = None
        if not s:
            yield from flush()
            continue
        if ADORN.fullmatch(s):                # section title underline/overline: drop the title
            para.clear()
            continue
        if SIMPLE_TABLE.fullmatch(s) or s.startswith(("+-", "+=", "|")):
            yield from flush()
            continue
        if s.startswith((">>>", "$ ", "# ")):
            yield from flush()
            skip_blank = True
            continue
        if s.startswith(".."):
            yield from flush()
            m = DIRECTIVE.match(s)
            name = m.group(1).lower().split(":")[-1] if m else ""
            if m and name in PROSE_DIRECTIVES:
                arg = m.group(2).strip()
                if name in ADMONITIONS and arg:
                    para.append(arg)
                    indent = ind + 3
                continue
            skip = ind                        # code directive, comment, target, footnote, substitution
            continue
        m = FIELD.match(s)
        if m:                                 # field list / directive option: keep the text after it
            yield from flush()
            s = s[m.end():].strip()
            if not s:
                continue
            indent = ind
        m = BULLET.match(s)
        if m:
            yield from flush()
            s = s[m.end():]
            indent = ind + m.end()
        elif para and ind != indent:
            yield from flush()
            indent = ind
        elif not para:
            indent = ind
        if s.endswith("::"):                  # a literal block follows
            s = s[:-2].rstrip() if s[:-2].endswith((" ", "\t")) or s == "::" else s[:-1]
            if s:
                para.append(s)
            yield from flush()
            skip = indent
            continue
        para.append(s)
    yield from flush()

def read_text(path):
    opener = gzip.open if str(path).endswith((".gz", ".dz")) else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()

def python_docs():
    src = pathlib.Path("/usr/share/doc/python3.11/html/_sources")
    for path in sorted(src.rglob("*.rst.txt")):
        yield str(path.relative_to(src)), rst_paragraphs(read_text(path))

def kernel_docs():
    for path in sorted(kernel_doc.rglob("*.rst*")):
        rel = path.relative_to(kernel_doc)
        if rel.parts[0] == "translations" or not (path.name.endswith(".rst") or path.name.endswith(".rst.gz")):
            continue
        yield str(rel).removesuffix(".gz"), rst_paragraphs(read_text(path))

# ---- plain text (rendered man pages, the Debian Reference, the GNU standards)
TEXT_BULLET = re.compile(r"([*+\u2022\u00b7o-]|\d+\.|\([a-z0-9]\))\s+")
def text_paragraphs(lines, skip_sections=(), section_indent=None):
    para, indent, section = [], -1, ""
    def flush():
        if para:
            yield " ".join(para)
        para.clear()
    for raw in lines:
        line = raw.expandtabs(8).rstrip()
        s = line.strip()
        ind = len(line) - len(line.lstrip())
        if not s:
            yield from flush()
            continue
        if section_indent is not None and ind == section_indent and s.upper() == s:
            yield from flush()
            section = s
            continue
        if section in skip_sections:
            continue
        if ADORN.fullmatch(s):
            para.clear()
            continue
        if s.startswith(("|", "+-")) or re.match(r"\* .*::", s):   # tables, texinfo menus
            yield from flush()
            continue
        m = TEXT_BULLET.match(s)
        if m:
            yield from flush()
            s = s[m.end():]
            indent = ind + m.end()
        elif para and ind > indent:
            yield from flush()
            indent = ind
        elif not para:
            indent = ind
        para.append(s)
    yield from flush()

MAN_SKIP = {"SYNOPSIS", "EXAMPLES", "EXAMPLE", "SEE ALSO", "COLOPHON", "NAME", "LIBRARY"}
OVERSTRIKE = re.compile(".\x08")
GROFF = ["groff", "-t", "-man", "-Tutf8", "-rLL=1000n", "-rHY=0", "-P-cbou"]
render_failed = []
def man_pages(package):
    files = subprocess.run(["dpkg-query", "-L", package], capture_output=True, text=True, check=True).stdout
    for name in sorted(files.split()):
        path = pathlib.Path(name)
        if not (name.startswith("/usr/share/man/man") and name.endswith(".gz") and path.is_file()
                and not path.is_symlink()):
            continue
        src = gzip.open(path).read()
        if src.lstrip().startswith(b".so "):  # a stub that includes another page
            continue
        r = subprocess.run(GROFF, input=src, capture_output=True)
        if r.returncode != 0 or not r.stdout.strip():
            render_failed.append(name)
            continue
        text = OVERSTRIKE.sub("", r.stdout.decode("utf-8", errors="replace"))
        yield str(path.relative_to("/usr/share/man")).removesuffix(".gz"), \
            text_paragraphs(text.splitlines(), MAN_SKIP, section_indent=0)

def chapters(path, is_heading):
    lines, name, doc = read_text(path), "front matter", []
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if is_heading(line, nxt):
            if doc:
                yield name, doc
            name, doc = line.strip(), []
        else:
            doc.append(line)
    if doc:
        yield name, doc

def debian_reference():
    path = "/usr/share/debian-reference/debian-reference.en.txt.gz"
    heading = re.compile(r"(Preface|Chapter\s\d+\.|Appendix\s[A-Z]\.)")   # \s: the file has no-break spaces
    for name, lines in chapters(path, lambda l, n: heading.match(l) is not None):
        yield normalise(name), text_paragraphs(lines)

NOTE_REF = re.compile(r"\*[Nn]ote\s+")
def gnu_standards():
    for book in ("standards", "maintain"):
        path = f"/usr/share/doc/gnu-standards/{book}.text.gz"
        top = lambda l, n: bool(l.strip()) and not l.startswith(" ") and re.fullmatch(r"\*{3,}", n) is not None
        for name, lines in chapters(path, top):
            yield f"{book}: {name}", (NOTE_REF.sub("see ", p).replace("::", "")
                                      for p in text_paragraphs(lines))

# ---- the dictionary: /usr/share/dictd/gcide.dict.dz (dictzip is gzip), read as a stream
BRACKETS = re.compile(r"\[[^\[\]]*\]")
CITATION = re.compile(r"\s--\s?[A-Z][\w.&' ]*\.?\s*$")
SENSE = re.compile(r"^(\d+\.\s+)?(\([a-z]\)\s+)?((Note|Usage):\s+)?")
def gcide_clean(block):
    p = " ".join(l.strip() for l in block)
    if p.startswith("Syn:"):
        return None
    for _ in range(3):
        p = BRACKETS.sub("", p)
    p = p.replace("{", "").replace("}", "")
    p = CITATION.sub("", p).strip()
    return SENSE.sub("", p)

def gcide():
    def paragraphs(entry):
        blocks, block = [], []
        for line in entry:
            if line.strip():
                block.append(line)
            elif block:
                blocks.append(block); block = []
        if block:
            blocks.append(block)
        if not blocks:
            return
        first, depth, i = blocks[0], 0, 0          # the header: headword, pronunciation, etymology
        for i, line in enumerate(first):
            depth += line.count("[") - line.count("]")
            if depth <= 0:
                break
        blocks[0] = first[i + 1:]
        for b in blocks:
            if b:
                p = gcide_clean(b)
                if p:
                    yield p
    def document(head, entries):                 # consecutive entries of one headword: one document
        return head, (p for e in entries for p in paragraphs(e))
    with gzip.open("/usr/share/dictd/gcide.dict.dz", "rt", encoding="utf-8", errors="replace") as f:
        entries, head, prev_blank = [[]], None, True
        for line in f:
            line = line.rstrip("\n")
            if line and not line[0].isspace() and prev_blank and ("\\" in line or head is None):
                word = line.split("\\", 1)[0].strip().lower()
                if not word:                      # "\Ac*cou"tre*ments\, n. pl.": the pronunciation only
                    word = re.sub(r"[*\"`'\\]", "", line.split("\\")[1]).lower()
                if word != head:
                    if head is not None and not head.startswith("00-database"):
                        yield document(head, entries)
                    head, entries = word, []
                entries.append([line])
            else:
                entries[-1].append(line)
            prev_blank = not line.strip()
        if head is not None and not head.startswith("00-database"):
            yield document(head, entries)

SOURCES = [("python3.11-doc", python_docs), ("linux-doc", kernel_docs),
           ("manpages", lambda: man_pages("manpages")), ("manpages-dev", lambda: man_pages("manpages-dev")),
           ("debian-reference-en", debian_reference), ("gnu-standards", gnu_standards), ("dict-gcide", gcide)]

def heldout(source, name):
    return int.from_bytes(hashlib.sha1(f"{source}:{name}".encode()).digest()[:8], "big") % 10000 < 200

seen = set()
stats = {}
with open(out / "train.txt.part", "w", encoding="utf-8") as train, \
     open(out / "heldout.txt.part", "w", encoding="utf-8") as held, \
     open(out / "documents.tsv.part", "w", encoding="utf-8") as manifest:
    manifest.write("split\tsource\tdocument\tparagraphs\tbytes\n")
    for source, documents in SOURCES:
        st = dict(documents_scanned=0, documents=0, bytes=0, paragraphs_kept=0, paragraphs_duplicate=0,
                  paragraphs_not_prose=0, train_documents=0, train_bytes=0, heldout_documents=0,
                  heldout_bytes=0)
        ts = time.time()
        prev = None
        for name, paragraphs in documents():
            st["documents_scanned"] += 1
            kept = []
            for p in paragraphs:
                p = normalise(p)
                if not is_prose(p):
                    st["paragraphs_not_prose"] += 1
                    continue
                h = int.from_bytes(hashlib.blake2b(p.encode(), digest_size=8).digest(), "little")
                if h in seen:
                    st["paragraphs_duplicate"] += 1
                    continue
                seen.add(h)
                kept.append(p)
            if not kept:
                continue
            split = "heldout" if heldout(source, name) else "train"
            text = "\n".join(kept) + "\n\n"
            nbytes = len(text.encode("utf-8"))
            (held if split == "heldout" else train).write(text)
            manifest.write(f"{split}\t{source}\t{name}\t{len(kept)}\t{nbytes}\n")
            st["documents"] += 1
            st["bytes"] += nbytes
            st["paragraphs_kept"] += len(kept)
            st[split + "_documents"] += 1
            st[split + "_bytes"] += nbytes
        st["seconds"] = round(time.time() - ts, 1)
        stats[source] = st
        print(f"  {source:20s} {st['documents']:7d} documents {st['bytes'] / 1e6:7.1f} MB "
              f"{st['paragraphs_kept']:8d} paragraphs kept {st['paragraphs_duplicate']:7d} duplicates removed "
              f"({st['seconds']} s)", file=sys.stderr)
info = dict(sources=stats, man_pages_not_rendered=render_failed, kernel_documentation=str(kernel_doc),
            groff=" ".join(GROFF), extraction_seconds=round(time.time() - t0, 1),
            python=sys.version.split()[0])
with open(out / "sources.json.part", "w") as f:
    json.dump(info, f, indent=1)
for n in ("train.txt", "heldout.txt", "documents.tsv", "sources.json"):
    os.replace(out / (n + ".part"), out / n)
PY
fi

# --- 3. Tokenizer ---------------------------------------------------------------------------------------
spm_args=(--input="$out/train.txt" --model_prefix="$out/spm$vocab" --vocab_size=$vocab --model_type=unigram
          --character_coverage=0.9995 --byte_fallback=true --bos_id=1 --eos_id=2 --unk_id=0 --pad_id=-1
          --input_sentence_size=$sentences --shuffle_input_sentence=true --random_seed=$seed
          --num_threads=1 --minloglevel=2)
if stale "$out/spm$vocab.model" "$out/train.txt"; then
  echo "make_english_corpus: training the sentencepiece tokenizer (vocabulary $vocab, $sentences paragraphs)"
  rm -f "$out/spm$vocab.model" "$out/spm$vocab.vocab"
  spm_train "${spm_args[@]}" || die "spm_train failed"
fi

# --- 4. Tokens ------------------------------------------------------------------------------------------
for part in train heldout; do
  stale "$out/$part.u16" "$out/$part.txt" "$out/spm$vocab.model" ||
    stale "$out/$part.ids.json" "$out/$part.txt" "$out/spm$vocab.model" || continue
  echo "make_english_corpus: tokenizing $part.txt"
  spm_encode --model="$out/spm$vocab.model" --output_format=id < "$out/$part.txt" |
    python3 -c '
import array, collections, json, sys
path, vocab = sys.argv[1], int(sys.argv[2])
counts = collections.Counter()
n = 0
with open(path + ".part", "wb") as f:
    for line in sys.stdin:                    # one paragraph at a time: nothing is held but the counts
        ids = array.array("H", map(int, line.split()))
        if not ids:
            continue
        counts.update(ids)
        n += len(ids)
        if sys.byteorder != "little":
            ids.byteswap()
        ids.tofile(f)
assert not counts or max(counts) < vocab, "token id beyond the vocabulary"
json.dump(dict(tokens=n, counts={str(k): v for k, v in sorted(counts.items())}), open(path[:-4] + ".ids.json", "w"))
' "$out/$part.u16" "$vocab" || die "tokenizing $part.txt failed"
  mv "$out/$part.u16.part" "$out/$part.u16"
done

# --- 5. Statistics --------------------------------------------------------------------------------------
if stale "$out/stats.json" "$out/sources.json" "$out/train.ids.json" "$out/heldout.ids.json"; then
  versions=$(dpkg-query -W -f='${Package}=${Version}\n' "${packages[@]}")
  python3 - "$out" "$vocab" "$versions" "spm_train ${spm_args[*]}" <<'PY' || die "writing stats.json failed"
import json, pathlib, sys
out, vocab, versions, spm_cmd = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
info = json.load(open(out / "sources.json"))
ids = {p: json.load(open(out / f"{p}.ids.json")) for p in ("train", "heldout")}
pieces = [l.split("\t")[0] for l in open(out / f"spm{vocab}.vocab", encoding="utf-8")]
byte_ids = {i for i, p in enumerate(pieces) if p.startswith("<0x") and p.endswith(">")}
train_ids = {int(k) for k in ids["train"]["counts"]}
held_ids = {int(k) for k in ids["heldout"]["counts"]}
tot = {k: sum(s[k] for s in info["sources"].values())
       for k in ("documents", "bytes", "paragraphs_kept", "paragraphs_duplicate", "paragraphs_not_prose",
                 "train_documents", "train_bytes", "heldout_documents", "heldout_bytes")}
part = lambda p, s: dict(
    documents=tot[p + "_documents"], bytes=tot[p + "_bytes"], tokens=ids[p]["tokens"],
    bytes_per_token=round(tot[p + "_bytes"] / max(1, ids[p]["tokens"]), 3), unique_token_ids=len(s),
    unique_token_ids_not_byte_fallback=len(s - byte_ids),
    byte_fallback_tokens=sum(v for k, v in ids[p]["counts"].items() if int(k) in byte_ids),
    unk_tokens=ids[p]["counts"].get("0", 0))
stats = dict(
    sources=info["sources"], total=tot, train=part("train", train_ids), heldout=part("heldout", held_ids),
    heldout_unique_ids_not_in_train=len(held_ids - train_ids),
    vocabulary_size=len(pieces), byte_fallback_pieces=len(byte_ids), special_pieces=3,
    heldout_rule='sha1("source:document") first 8 bytes mod 10000 < 200',
    dedup_rule="exact duplicates of the NFKC- and whitespace-normalised paragraph (64-bit BLAKE2b), "
               "corpus-wide, first occurrence kept, sources in the order listed",
    caps="none: every source is used whole; spm_train samples at most --input_sentence_size paragraphs "
         "(more than train.txt has) and skips paragraphs over 4192 bytes",
    man_pages_not_rendered=info["man_pages_not_rendered"],
    commands=dict(man_pages=info["groff"] + " < page", spm_train=spm_cmd,
                  spm_encode=f"spm_encode --model={out}/spm{vocab}.model --output_format=id",
                  kernel_documentation=info["kernel_documentation"]),
    versions=dict(line.split("=", 1) for line in versions.splitlines()) | {"python3": info["python"]},
    extraction_seconds=info["extraction_seconds"])
json.dump(stats, open(out / "stats.json", "w"), indent=1)
PY
fi

python3 - "$out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/stats.json"))
print("make_english_corpus: data/corpus/english/")
print(f"  {'source':20s} {'documents':>9s} {'MB':>7s} {'paragraphs':>10s} {'duplicates':>10s}")
for name, st in s["sources"].items():
    print(f"  {name:20s} {st['documents']:9d} {st['bytes'] / 1e6:7.1f} {st['paragraphs_kept']:10d} "
          f"{st['paragraphs_duplicate']:10d}")
t = s["total"]
print(f"  {'total':20s} {t['documents']:9d} {t['bytes'] / 1e6:7.1f} {t['paragraphs_kept']:10d} "
      f"{t['paragraphs_duplicate']:10d}")
for p in ("train", "heldout"):
    d = s[p]
    print(f"  {p:8s} {d['documents']:7d} documents {d['bytes'] / 1e6:6.1f} MB {d['tokens']:10d} tokens "
          f"({d['bytes_per_token']} bytes/token), {d['unique_token_ids']} unique token ids of {s['vocabulary_size']} "
          f"({d['unique_token_ids_not_byte_fallback']} of them not byte pieces)")
PY
