#!/usr/bin/env bash
# `sinkscope census --rules`: the claim experiments run on every census checkpoint, their verdicts in the
# record. Checked on a planted massive activation and its twin (step-up off) and on stories260K, at smoke
# size: a sharded census gives the unsharded records byte for byte; every outcome in a record is the one the
# experiment writes when run alone (its own meta.json, the peer); every verdict names its rule's hash as
# `sinkscope rules --json` prints it; the record lists every claim rule of the experiments that measure a given
# model (read from `rules --json`); a failing experiment is an "error" with its message while the checkpoint
# is still done; a missing experiments executable is refused before anything runs.
# Usage: test_census_rules.sh SINKSCOPE_BINARY SINKSCOPE_EXPERIMENTS_BINARY SHARED_DIR
set -u
source "$(dirname "$0")/check_lib.sh"
bin=$(realpath "$1"); experiments=$(realpath "$2"); model=$(realpath "$3")/models/stories260K.gguf
figures=$(cd "$(dirname "$0")/../../scripts" && pwd)/census_figures.py
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export OMP_NUM_THREADS=1  # records are bit-identical across tasks at one thread count (docs/cli-and-sharding.md)
json() { python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$bin" planted massive --out planted.safetensors > /dev/null 2>&1
"$bin" planted massive --twin --out twin.safetensors > /dev/null 2>&1
# 32 tokens a line: every experiment's smoke size fits (p2_streaming_window cuts 24).
python3 -c "import random; random.seed(3); [print(*random.choices(range(256), k=32)) for _ in range(8)]" > ids.txt
printf 'planted.safetensors\ntwin.safetensors\n%s\n' "$model" > list.txt
settings=(--tokens-file ids.txt --seq-len 32 --rules smoke --experiments "$experiments")

"$bin" census --list list.txt --out full "${settings[@]}" > full.log 2>&1
check "census --rules smoke exits 0" test $? -eq 0
check "every experiment ran on every checkpoint (30 runs)" test "$(grep -c ": rules [0-9]*/10 " full.log)" -eq 30
check "no experiment failed" test "$(grep -c "FAILED" full.log)" -eq 0
for i in 0 1; do "$bin" census --list list.txt --out sharded "${settings[@]}" --shard $i/2 > shard$i.log 2>&1; done
check "sharded records = unsharded records, byte for byte" diff -r full/checkpoints sharded/checkpoints

planted=$(ls full/checkpoints/planted.safetensors-*.json)
twin=$(ls full/checkpoints/twin.safetensors-*.json)
check "the settings record the rules' size and seed" test "$(json "$planted" 'j["settings"]["rules"], j["settings"]["seed"]')" = "('smoke', 0)"

# The rule ids a census must score: the claim rules of the census experiments, from `rules --json`.
"$bin" rules --json > rules.json
python3 - rules.json "$planted" > expected_ids.txt <<'PY'
import json, sys
rules = json.load(open(sys.argv[1]))["rules"]
record = json.load(open(sys.argv[2]))
ran = {e["experiment"] for e in record["rules"]["experiments"]}
claims = sorted(i for i, r in rules.items() if json.loads(r["canonical"])["kind"] == "claim"
                and json.loads(r["canonical"])["experiment"] in ran)
print(claims == sorted(record["rules"]["outcomes"]), len(claims))
PY
check "the record scores every claim rule of the experiments it ran" test "$(cat expected_ids.txt)" = "True 15"
python3 - rules.json "$planted" "$twin" > hashes.txt <<'PY'
import json, sys
rules = json.load(open(sys.argv[1]))["rules"]
bad = [(v["rule_id"], f) for f in sys.argv[2:] for e in json.load(open(f))["rules"]["experiments"] for v in e["verdicts"]
       if v["rule_hash"] != rules[v["rule_id"]]["hash"]]
print(bad)
PY
check "every verdict's rule hash is the one 'rules --json' prints" test "$(cat hashes.txt)" = "[]"

# Peer: each experiment run alone on the planted model with the same flags writes the same outcomes.
for e in b2_quadratic_ffn b4_rmsnorm_sparsity c1_spike_to_sink; do
    "$experiments" "$e" --model planted.safetensors --out alone/$e --seed 0 --bos off --weights auto --compute exact --smoke \
        --tokens-file ids.txt > alone_$e.log 2>&1
    alone=$(json alone/$e/meta.json 'sorted((v["rule_id"], v["outcome"]) for v in (j["verdict"] if isinstance(j["verdict"], list) else [j["verdict"]]))')
    census=$(json "$planted" "sorted((v['rule_id'], v['outcome']) for e in j['rules']['experiments'] if e['experiment'] == '$e' for v in e['verdicts'])")
    check "$e alone = its verdicts in the census record ($alone)" test "$alone" = "$census"
done
# The planted model's claim holds by construction, its twin's mechanism is off (theory/planted_massive.md).
check "B2 reproduced on the planted model" test "$(json "$planted" 'j["rules"]["outcomes"]["B2"]')" = "reproduced"
check "B2 not reproduced on its twin" test "$(json "$twin" 'j["rules"]["outcomes"]["B2"]')" != "reproduced"

"$bin" census --merge full > table.txt 2> /dev/null
check "merge exits 0" test $? -eq 0
check "the table's outcomes are the records'" test "$(json full/table.json 'sorted((m["checkpoint"], m["rules"]) for m in j["models"])')" = \
    "$(python3 -c "import json, sys; print(sorted((r['checkpoint'], r['rules']['outcomes']) for r in map(lambda f: json.load(open(f)), sys.argv[1:])))" full/checkpoints/*.json)"
check "the printed table lists the claims" grep -q "claims: A2 .*B2 reproduced" table.txt

# A failing experiment: 16 tokens a line is too short for p2_streaming_window's 24; the checkpoint is done.
python3 -c "import random; random.seed(3); [print(*random.choices(range(256), k=16)) for _ in range(8)]" > short.txt
"$bin" census planted.safetensors --out short --tokens-file short.txt --seq-len 16 --rules smoke --experiments "$experiments" > short.log 2>&1
check "a failing experiment does not fail the checkpoint" test $? -eq 0
short=$(ls short/checkpoints/*.json)
check "its rule reads 'error'" test "$(json "$short" 'j["rules"]["outcomes"]["P2"]')" = "error"
check "with the experiment's message" test "$(json "$short" '[e["error"] for e in j["rules"]["experiments"] if e["experiment"] == "p2_streaming_window"][0]')" \
    = "sinkscope: no line of the token file has 24 tokens [file short.txt]"
check "and its log beside the output" test -s short/rules/"$(basename "$short" .json)"/p2_streaming_window.log

# --rules none: the statistics alone, said in the record; no experiment needed.
"$bin" census planted.safetensors --out none --tokens-file ids.txt --seq-len 32 --rules none --experiments /nonexistent > none.log 2>&1
check "--rules none runs without experiments" test $? -eq 0
check "and says so in the record" test "$(json none/checkpoints/*.json 'j["rules"]')" = "not run (--rules none)"
check "and writes no rules folder" test ! -e none/rules

# No experiments executable: refused before anything runs, naming it.
"$bin" census planted.safetensors --out missing --tokens-file ids.txt --seq-len 32 --rules smoke --experiments ./nothing > missing.log 2>&1
check "a missing --experiments exits 2" test $? -eq 2
check "naming the path" grep -q "not an executable file \[file ./nothing\]" missing.log
check "nothing ran" test ! -e missing/checkpoints

if python3 -c "import matplotlib, numpy" 2> /dev/null; then
    python3 "$figures" full/table.json > figures.log 2>&1
    check "census_figures.py draws the outcome grid" test -s full/figures/census_outcomes.png
else
    echo "skipped: census_figures.py (no matplotlib in python3)"
fi

check_summary ""
