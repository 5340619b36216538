#!/usr/bin/env bash
# The main job: reproduce both papers end to end and write report/index.html.
#   1. install what is missing (Debian packages), fetch SmolLM2-135M and the natural-text corpus
#   2. build the experiment executables (build/experiments/)
#   3. run every experiment at its default size, one after another, with progress per experiment
#      (outputs in out/<experiment>/: .npy/.csv data and meta.json with config, seed, git revision, timings)
#   4. run the null controls: every experiment at its test size on random weights in the same layout
#      (--random-init 1, outputs in out/null/); each rule must say "not reproduced" or "not applicable" there;
#      then at nine more seeds, for each rule's false-positive rate with its exact interval (out/null_seeds/)
#   5. calibrate the rules on planted models (scripts/calibrate_planted.py: a planted mechanism, its twin
#      with the mechanism off, random weights; out/calibration/)
#   6. a census of the scale sweep's trained models and a random-weight null of each layout: statistics and
#      every claim rule that measures a given model, sharded over --jobs tasks and merged (out/census/)
#   7. `sinkscope view` of the bundled model on one text: every head's pattern, alpha0, residual norms and the
#      logit lens in one self-contained page (out/view/index.html, linked from the report)
#   8. make the figures and the report (scripts/make_report.py, matplotlib in .venv): the verdicts are
#      the experiments' own (meta.json), with their intervals, thresholds and null controls
# Default sizes fit in about 30 minutes on a 2-core CPU, and the census about 10 more; --full runs larger sizes (much longer),
# --smoke the test sizes (a minute). --only a1,b3 runs a subset; --no-build reuses the build directory;
# --no-null skips the null controls.
# Usage: scripts/reproduce.sh [--full | --smoke] [--only NAMES] [--no-build] [--no-null] [--jobs N] [--build-dir build]
set -euo pipefail
cd "$(dirname "$0")/.."
size=default; only=""; build=1; null=1; jobs=$(nproc); bdir=build
while (($#)); do
  case "$1" in
    --full) size=full ;;
    --smoke) size=smoke ;;
    --only) only="$2"; shift ;;
    --no-build) build=0 ;;
    --no-null) null=0 ;;
    --jobs) jobs="$2"; shift ;;
    --build-dir) bdir="$2"; shift ;;
    -h|--help) sed -n 2,19p "$0"; exit 0 ;;
    *) echo "reproduce: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
t0=$(date +%s)
experiments=(a1_bos_ablation a2_p0_circuit a3_cone_model b1_spike_lifecycle b2_quadratic_ffn b3_vocab_position0
             b4_rmsnorm_sparsity b5_sink_keys c1_spike_to_sink p1_massive_ablation p2_streaming_window a4_training_trace
             a4_scale_sweep b6_ablations)
if [[ -n "$only" ]]; then
  sel=()
  for e in "${experiments[@]}"; do [[ ",$only," == *",${e%%_*},"* || ",$only," == *",$e,"* ]] && sel+=("$e"); done
  experiments=("${sel[@]}")
fi

echo "== [setup] packages, model, corpus"
scripts/setup.sh
scripts/fetch_model.sh
scripts/fetch_corpus.sh
py=$(scripts/pyenv.sh --plots-only)

if ((build)); then
  echo "== [build] the experiment executables (-j$jobs)"
  cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$bdir" -j"$jobs" --target sinkscope_experiments sinkscope_cli
fi
t_build=$(date +%s)

# Extra flags per experiment and size (defaults live in each experiment's Config).
flags() {
  case "$size:$1" in
    smoke:*) echo "--smoke" ;;
    full:a1_bos_ablation) echo "--samples 400" ;;
    full:a2_p0_circuit) echo "--samples 64 --ablation-samples 16" ;;
    full:a3_cone_model|full:b5_sink_keys) echo "--samples 64" ;;
    full:b1_spike_lifecycle|full:b4_rmsnorm_sparsity) echo "--samples 128" ;;
    full:b2_quadratic_ffn) echo "--samples 32" ;;
    full:b3_vocab_position0) echo "--text-samples 256" ;;
    full:p1_massive_ablation) echo "--samples 64" ;;
    full:p2_streaming_window) echo "--samples 16 --seq-len 512 --window 128" ;;
    full:a4_training_trace) echo "--steps 2000 --every 50" ;;
    full:b6_ablations) echo "--steps 1500" ;;
    full:a4_scale_sweep) echo "--seeds 5" ;;
    *) echo "" ;;
  esac
}

# The scale sweep's jobs are independent: its plan prints one command per job, run $jobs at a time
# (as GNU parallel or a Slurm array would), then one call merges them and decides.
run_experiment() {
  local e=$1
  if [[ $e == a4_scale_sweep && $size != smoke ]]; then
    # A fresh sweep: finished jobs of an earlier run (perhaps older code) would otherwise be reused.
    # To resume a killed sweep instead, run its --plan commands and --merge by hand.
    rm -rf out/"$e"
    # shellcheck disable=SC2046
    "$bdir"/experiments/"$e" $(flags "$e") --out out/"$e" --plan > out/"$e".plan || return 1
    mkdir -p out/"$e"/logs
    echo "   $(wc -l < out/"$e".plan) jobs, $jobs at a time (logs: out/$e/logs/)"
    # Each plan line is one command; xargs runs them $jobs at a time (line number = the log's name)
    # and fails if any job fails.
    nl -v0 -w1 -s' ' out/"$e".plan |
      xargs -P "$jobs" -L1 sh -c 'i=$1; shift; "$@" > "out/'"$e"'/logs/job_$i.log" 2>&1' job ||
      { echo "reproduce: a job of $e failed (out/$e/logs/)" >&2; return 1; }
    # shellcheck disable=SC2046
    "$bdir"/experiments/"$e" $(flags "$e") --out out/"$e" --merge
  else
    # shellcheck disable=SC2046
    "$bdir"/experiments/"$e" $(flags "$e") --out out/"$e"
  fi
}

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
mkdir -p out
timings="{"
n=${#experiments[@]}; k=0; failed=()
for e in "${experiments[@]}"; do
  k=$((k + 1))
  echo "== [$k/$n] $e $(flags "$e")"
  s=$(date +%s)
  # shellcheck disable=SC2046
  if ! run_experiment "$e"; then
    echo "reproduce: $e failed (its row will say 'not run')" >&2
    failed+=("$e")
    rm -f out/"$e"/meta.json
  fi
  dt=$(($(date +%s) - s))
  echo "   $e: ${dt} s"
  timings+="\"$e\": $dt, "
done
t_run=$(date +%s)

if ((null)); then
  echo "== [null controls] every experiment at its test size on random weights (--random-init 1): out/null/"
  rm -rf out/null
  for e in "${experiments[@]}"; do
    if ! "$bdir"/experiments/"$e" --smoke --random-init 1 --out out/null/"$e" > out/null_"$e".log 2>&1; then
      echo "reproduce: null control of $e failed (see out/null_$e.log)" >&2
      failed+=("null:$e")
    fi
  done
  # The same null control at nine more random seeds: each rule's false-positive rate with its exact
  # interval (out/null_seeds/null_rates.json; seed 1 is the run above).
  nseeds=$([[ $size == smoke ]] && echo 2 || echo 10)
  echo "== [null controls] false-positive rates over $nseeds random seeds: out/null_seeds/"
  rm -rf out/null_seeds
  if ! "$py" scripts/null_rates.py --build "$bdir" --out out/null_seeds --seeds "$nseeds" --jobs "$jobs" --seed1 out/null \
       "${experiments[@]}" > out/null_seeds.log 2>&1; then
    echo "reproduce: the null seeds failed (see out/null_seeds.log)" >&2
    failed+=("null_seeds")
  fi
fi

echo "== [calibration] the rules on a planted massive activation, its twin and random weights: out/calibration/"
if ! python3 scripts/calibrate_planted.py --build "$bdir" --out out/calibration \
     --size "$([[ $size == smoke ]] && echo smoke || echo default)" > out/calibration.log 2>&1; then
  echo "reproduce: the calibration failed (see out/calibration.log)" >&2
  failed+=("calibration")
fi
echo "== [calibration] B5 on planted sink keys, its twin (keys blind to the spike) and random weights: out/calibration_sink_keys/"
if ! python3 scripts/calibrate_planted.py --build "$bdir" --construction sink-keys --out out/calibration_sink_keys \
     --size "$([[ $size == smoke ]] && echo smoke || echo default)" > out/calibration_sink_keys.log 2>&1; then
  echo "reproduce: the sink-key calibration failed (see out/calibration_sink_keys.log)" >&2
  failed+=("calibration_sink_keys")
fi
echo "== [calibration] A2 on a planted position-0 circuit, its twin (one head carries it) and random weights: out/calibration_p0_circuit/"
if ! python3 scripts/calibrate_planted.py --build "$bdir" --construction p0-circuit --out out/calibration_p0_circuit \
     --size "$([[ $size == smoke ]] && echo smoke || echo default)" > out/calibration_p0_circuit.log 2>&1; then
  echo "reproduce: the position-0 circuit calibration failed (see out/calibration_p0_circuit.log)" >&2
  failed+=("calibration_p0_circuit")
fi
echo "== [calibration] B6 and A4 at the decision level: synthetic variant tables and checkpoint series (planted, twin, 100 random): out/calibration_decisions/"
if ! python3 scripts/calibrate_decisions.py --build "$bdir" --out out/calibration_decisions > out/calibration_decisions.log 2>&1; then
  echo "reproduce: the decision-level calibration failed (see out/calibration_decisions.log)" >&2
  failed+=("calibration_decisions")
fi

# A census of the models the scale sweep trained (sizes x seeds) and one random-weight null per layout (the
# first seed's checkpoint with random weights): per-layer statistics and every claim rule that measures a
# given model, at the rules' default sizes, on BOS + random content tokens (the trained models' own BOS, the
# last id of their vocabulary), sharded over the jobs and merged (docs/cli-and-sharding.md).
census_of_sweep() {
  local dir=out/census runs=(out/a4_scale_sweep/runs/*/)
  if [[ ! -e ${runs[0]}checkpoint.safetensors ]]; then echo "   no a4_scale_sweep checkpoints: skipped"; return 0; fi
  rm -rf "$dir"; mkdir -p "$dir/nulls" "$dir/logs"
  local r name layout list=$dir/checkpoints.txt
  : > "$list"
  for r in "${runs[@]}"; do
    r=${r%/}; name=$(basename "$r"); layout=${name%_seed*}
    echo "$r" >> "$list"
    if [[ ! -e $dir/nulls/$layout.null.safetensors ]]; then
      "$bdir"/tools/sinkscope random-model "$r/checkpoint.safetensors" --seed 1 --out "$dir/nulls/$layout.null.safetensors" > /dev/null || return 1
    fi
  done
  ls "$dir"/nulls/*.null.safetensors >> "$list"
  python3 - "${runs[0]}checkpoint.safetensors" > "$dir/ids.txt" <<'PY' || return 1
import json, random, struct, sys
with open(sys.argv[1], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
config = json.loads(header["__metadata__"]["config"])
bos, T = config["vocab_size"] - 1, config["context_length"]
random.seed(0)
for _ in range(64):
    print(bos, *random.choices(range(bos), k=T - 1))
PY
  # The samples are the models' whole context (64 tokens at the default size, 16 at --smoke).
  local seq_len; seq_len=$(head -1 "$dir/ids.txt" | wc -w)
  echo "   $(wc -l < "$list") checkpoints, $seq_len-token samples, $jobs shard(s) (logs: $dir/logs/)"
  seq 0 $((jobs - 1)) | xargs -P "$jobs" -I{} sh -c '"$1" census --list "$2" --out "$3" --tokens-file "$3/ids.txt" --seq-len "$6" \
      --rules "$5" --shard {}/"$4" > "$3/logs/shard_{}.log" 2>&1' census "$bdir/tools/sinkscope" "$list" "$dir" "$jobs" \
      "$([[ $size == smoke ]] && echo smoke || echo full)" "$seq_len" || return 1
  "$bdir"/tools/sinkscope census --merge "$dir" > "$dir/table.txt" || return 1
  "$py" scripts/census_figures.py "$dir/table.json" > /dev/null
}
if [[ " ${experiments[*]} " == *" a4_scale_sweep "* ]]; then
  echo "== [census] the scale sweep's models and a random-weight null of each layout: out/census/"
  s=$(date +%s)
  census_of_sweep || { echo "reproduce: the census failed (see out/census/logs/)" >&2; failed+=("census"); }
  echo "   census: $(($(date +%s) - s)) s"
fi

echo "== [view] every head of the bundled model on one text (sinkscope view): out/view/, linked from the report"
if ! "$bdir"/tools/sinkscope view models/SmolLM2-135M-Instruct.Q4_1.gguf --text "$(head -c 600 data/sample.txt)" \
     --out out/view > out/view.log 2>&1; then
  echo "reproduce: sinkscope view failed (see out/view.log)" >&2
  failed+=("view")
fi

echo "== [report] figures and report/index.html"
total=$(($(date +%s) - t0))
echo "${timings}\"build_seconds\": $((t_build - t0)), \"experiments_seconds\": $((t_run - t_build)), \"total_seconds\": $total, \"size\": \"$size\"}" > out/timings.json
"$py" scripts/make_report.py --out out --report report --null-out out/null
# The theory table goes into docs/theory.md from a measurement run; a --smoke run writes its copy into out/,
# so that trying the command leaves the working tree clean.
theory_doc=docs/theory.md
if [[ $size == smoke ]]; then theory_doc=out/theory.md; cp docs/theory.md "$theory_doc"; fi
"$py" scripts/theory_vs_measurement.py --out out --doc "$theory_doc" --skip-incomplete || failed+=("theory table ($theory_doc)")
total=$(($(date +%s) - t0))
echo "== done in ${total} s (setup+build $((t_build - t0)) s, experiments $((t_run - t_build)) s): report/index.html"
if ((${#failed[@]})); then echo "failed: ${failed[*]}" >&2; exit 1; fi
