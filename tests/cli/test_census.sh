#!/usr/bin/env bash
# End-to-end checks of `sinkscope census` on the shared stories260K checkpoint, two random-weight twins of
# it (`random-model`) and a planted massive activation with its twin (`planted massive`, whose plan gives
# the layer and channel of the spike): a census sharded 2 ways gives the unsharded one's records and table
# byte for byte; a rerun skips finished checkpoints and a killed one resumes; a failing checkpoint goes to
# failed.json and the exit status is 1; bad input exits 2 naming the file.
# Usage: test_census.sh SINKSCOPE_BINARY SHARED_DIR
set -u
source "$(dirname "$0")/check_lib.sh"
bin=$(realpath "$1"); model=$(realpath "$2")/models/stories260K.gguf
sbatch_script=$(cd "$(dirname "$0")/../../scripts" && pwd)/census.sbatch
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export OMP_NUM_THREADS=1  # records are bit-identical across tasks at one thread count (docs/cli-and-sharding.md)
same_dirs() { diff -r "$1" "$2" > /dev/null; }
count() { grep -c -- "$1" "$2"; }  # count PATTERN FILE
json() { python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$bin" random-model "$model" --seed 1 --out null1.safetensors > /dev/null 2>&1
"$bin" random-model "$model" --seed 2 --out null2.safetensors > /dev/null 2>&1
"$bin" planted massive --out planted.safetensors > planted.json 2> /dev/null
"$bin" planted massive --twin --out twin.safetensors > /dev/null 2>&1
python3 -c "import random; random.seed(1); [print(*random.choices(range(256), k=16)) for _ in range(6)]" > ids.txt
printf '%s\nnull1.safetensors\n# the planted pair\nplanted.safetensors\n\ntwin.safetensors\nnull2.safetensors\n' "$model" > list.txt
settings=(--tokens-file ids.txt --seq-len 16 --rules none)  # the rules: test_census_rules.sh

# The whole census in one task, then in two.
"$bin" census --list list.txt --out full "${settings[@]}" > full.log 2>&1
check "census exits 0" test $? -eq 0
check "one record per checkpoint" test "$(ls full/checkpoints | wc -l)" -eq 5
check "no failure list when nothing failed" test ! -e full/failed.json
for i in 0 1; do "$bin" census --list list.txt --out sharded "${settings[@]}" --shard $i/2 > shard$i.log 2>&1; done
check "shard 0/2 runs 3 checkpoints" grep -q "3 in this task" shard0.log
check "shard 1/2 runs 2 checkpoints" grep -q "2 in this task" shard1.log
check "sharded records = unsharded records, byte for byte" same_dirs full/checkpoints sharded/checkpoints
"$bin" census --merge full > full.table 2> /dev/null
check "merge exits 0" test $? -eq 0
"$bin" census --merge sharded > sharded.table 2> /dev/null
check "sharded table.json = unsharded table.json, byte for byte" cmp -s full/table.json sharded/table.json
check "sharded printed table = unsharded" cmp -s full.table sharded.table
check "the table has 5 models" test "$(json full/table.json 'len(j["models"])')" -eq 5

# scripts/census.sbatch as a Slurm array of 3 tasks (IDs 5-7: the shard is the ID less the array's first).
for id in 5 6 7; do
    SINKSCOPE=$bin SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_MAX=7 SLURM_ARRAY_TASK_COUNT=3 \
        bash "$sbatch_script" list.txt array "${settings[@]}" > array$id.log 2>&1
done
check "census.sbatch task 7 runs shard 2/3" grep -q "(shard 2/3)" array7.log
check "census.sbatch's 3 tasks = the unsharded census, byte for byte" same_dirs full/checkpoints array/checkpoints
SINKSCOPE=$bin SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=5 SLURM_ARRAY_TASK_COUNT=3 \
    bash "$sbatch_script" list.txt array2 "${settings[@]}" > array_gap.log 2>&1
check "census.sbatch refuses an array with gaps" test $? -eq 2

# The record's identity and findings, against peers: sha256sum, the planted plan, the rule set's own listing.
record=$(ls full/checkpoints/stories260K.gguf-*.json)
check "file hash = sha256sum's" test "$(json "$record" 'j["model"]["sha256"]')" = "$(sha256sum "$model" | cut -d' ' -f1)"
check "stories260K has 260032 parameters" test "$(json "$record" 'j["model"]["parameters"]')" -eq 260032
check "stories260K is an F32 llama GGUF" test "$(json "$record" 'j["model"]["family"], j["model"]["format"], j["model"]["precision"]["dominant"]')" = "('llama', 'gguf', 'F32')"
check "the rule-set hash is the one 'rules' prints" grep -q "hash $(json "$record" 'j["rule_set"]["hash"]')" <("$bin" rules)
check "rules are said not run" test "$(json "$record" 'j["rules"]')" = "not run (--rules none)"
check "the record holds the reducers' mergeable state" test "$(json "$record" 'sorted(j["stats"]["state"])')" = "['attention', 'residual']"
planted=$(ls full/checkpoints/planted.safetensors-*.json)
check "the planted spike forms at the plan's step-up layer" test "$(json "$planted" 'j["spike"]["layer"]')" = "$(json planted.json 'j["step_up_layer"]')"
check "the planted spike is in the plan's channel" test "$(json "$planted" 'j["spike"]["channels"]')" = "[$(json planted.json 'j["channel"]')]"
check "its twin (step-up off) has no massive activation" test "$(json "$(ls full/checkpoints/twin.safetensors-*.json)" 'j["spike"]["layer"]')" = "None"

# Resume: a rerun skips every finished checkpoint; a killed run (a record missing, a temporary file left) redoes only the missing one.
cp -r full/checkpoints before
"$bin" census --list list.txt --out full "${settings[@]}" > rerun.log 2>&1
check "rerun exits 0" test $? -eq 0
check "rerun skips all 5" test "$(count "finished, skipped" rerun.log)" -eq 5
check "rerun leaves the records as they were" same_dirs before full/checkpoints
rm full/checkpoints/null1.safetensors-*.json
echo '{"trunc' > full/checkpoints/.null1.safetensors-000000000000.json.tmp.99999
"$bin" census --list list.txt --out full "${settings[@]}" > resume.log 2>&1
check "resume exits 0" test $? -eq 0
check "resume runs 1 checkpoint" test "$(count " -> " resume.log)" -eq 1
check "resume skips 4" test "$(count "finished, skipped" resume.log)" -eq 4
rm -f full/checkpoints/.*.tmp.*
check "resumed records = the first run's" same_dirs before full/checkpoints
"$bin" census --merge full > /dev/null 2>&1
check "merge after resume gives the same table" cmp -s full/table.json sharded/table.json

# A failing checkpoint: listed in failed.json with its error, the others done, exit 1.
printf 'GGUF\x01\x00\x00\x00' > broken.gguf
"$bin" census "$model" broken.gguf --out withfail "${settings[@]}" > fail.log 2>&1
check "a failed checkpoint makes the exit status 1" test $? -eq 1
check "the others are done" test "$(ls withfail/checkpoints | wc -l)" -eq 1
check "failed.json names the checkpoint and its error" test "$(json withfail/failed.json '[(f["checkpoint"], "broken.gguf" in f["error"]) for f in j["failed"]]')" = "[('broken.gguf', True)]"
"$bin" census --merge withfail > withfail.table 2>&1
check "merge with failures exits 1" test $? -eq 1
check "merge lists the failure" grep -q "FAILED broken.gguf" withfail.table

# Bad input: exit 2, the file named.
printf '%s\nnot/there.gguf\n' "$model" > badlist.txt
"$bin" census --list badlist.txt --out bad "${settings[@]}" > badlist.log 2>&1
check "a missing checkpoint in the list exits 2" test $? -eq 2
check "the error names the path and the list's line" grep -q "not/there.gguf (named on badlist.txt line 2) does not exist" badlist.log
check "nothing ran" test ! -e bad/checkpoints
"$bin" census --list nolist.txt --out bad "${settings[@]}" > nolist.log 2>&1
check "a missing list exits 2 naming it" grep -q "nolist.txt" nolist.log
"$bin" census --list list.txt --out full --tokens-file ids.txt --seq-len 8 --rules none > other.log 2>&1
check "rerunning a folder with other settings exits 2" test $? -eq 2
check "and names the record and the setting" grep -q "setting 'seq_len' is 16 here and 8 there.*checkpoints/" other.log
"$bin" census "$model" --out seq8 --tokens-file ids.txt --seq-len 8 --rules none > /dev/null 2>&1
mkdir -p mixed/checkpoints && cp full/checkpoints/null*.json mixed/checkpoints/ && cp seq8/checkpoints/*.json mixed/checkpoints/
"$bin" census --merge mixed > mixed.log 2>&1
check "merging records of other settings exits 2" test $? -eq 2
check "and names the file and the setting" grep -q "setting 'seq_len' is 8 here and 16 there.*mixed/checkpoints/stories260K" mixed.log
rm mixed/checkpoints/stories260K*
python3 - mixed/checkpoints/null2*.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); j["rule_set"]["hash"] = "0" * 64; json.dump(j, open(sys.argv[1], "w"))
PY
"$bin" census --merge mixed > ruleset.log 2>&1
check "merging records of another rule set exits 2 naming the file" grep -q "rule set.*null2.safetensors" ruleset.log
python3 - mixed/checkpoints/null2*.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); j["format_version"] = 0; json.dump(j, open(sys.argv[1], "w"))
PY
"$bin" census --merge mixed > version.log 2>&1
check "merging a record of another census version exits 2 naming the file" grep -q "format version 0.*null2.safetensors" version.log
"$bin" census --merge . > notcensus.log 2>&1
check "merging a folder that is no census exits 2" test $? -eq 2

# --plan: sizes from the tensor tables, nothing run.
"$bin" census --list list.txt --out full --plan > plan.log 2>&1
check "plan exits 0" test $? -eq 0
check "plan marks finished checkpoints" test "$(count "finished: skipped" plan.log)" -eq 5
check "plan gives stories260K's float32 weights (260032 x 4 bytes)" grep -q "float32 1040128 bytes" plan.log

# The figures, where this python has matplotlib (scripts/pyenv.sh --plots-only makes one).
figures=$(dirname "$sbatch_script")/census_figures.py
if python3 -c "import matplotlib, numpy" 2> /dev/null; then
    python3 "$figures" full/table.json > figures.log 2>&1
    check "census_figures.py draws the three figures" test -s full/figures/census_sink_rate.png -a -s full/figures/census_massive.png -a -s full/figures/census_outcomes.png
    python3 "$figures" full/checkpoints/"$(ls full/checkpoints | head -1)" > notable.log 2>&1
    check "census_figures.py refuses a file that is no census table" grep -q "is not a census table" notable.log
else
    echo "skipped: census_figures.py (no matplotlib in python3)"
fi

check_summary ""
