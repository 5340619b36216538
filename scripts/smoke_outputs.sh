#!/usr/bin/env bash
# Every experiment at --smoke size, three ways (the default model with text, its --random-init 1 null, the
# shared tiny model with random token ids), plus four error paths and each --help, into one tree that
# scripts/compare_outputs.py compares with another: the evidence that a refactor left every result unchanged.
#   usage: scripts/smoke_outputs.sh BUILD_DIR OUT_DIR      (BUILD_DIR/experiments/sinkscope-experiments)
# About two minutes on 2 cores. Single-threaded, as CTest runs the experiments.
set -uo pipefail
bin=$1/experiments; out=$2
exps="a1_bos_ablation a2_p0_circuit a3_cone_model a4_training_trace a4_scale_sweep b1_spike_lifecycle b2_quadratic_ffn
      b3_vocab_position0 b4_rmsnorm_sparsity b5_sink_keys b6_ablations c1_spike_to_sink p1_massive_ablation p2_streaming_window"
tiny=$(cd "$(dirname "$0")/.." && pwd)/../shared/models/stories260K.gguf
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
rm -rf "$out"; mkdir -p "$out"
for e in $exps; do
  "$bin/sinkscope-experiments" $e --smoke --out "$out/$e" > "$out/$e.stdout" 2> "$out/$e.stderr"; echo "$e rc=$?" >> "$out/rc.txt"
  "$bin/sinkscope-experiments" $e --smoke --random-init 1 --out "$out/null/$e" > /dev/null 2>&1; echo "null/$e rc=$?" >> "$out/rc.txt"
  "$bin/sinkscope-experiments" $e --smoke --random-tokens --model "$tiny" --out "$out/tiny/$e" > /dev/null 2>&1
  echo "tiny/$e rc=$?" >> "$out/rc.txt"
done
"$bin/sinkscope-experiments" a1_bos_ablation --smoke --from-layer 9 --out "$out/err_a1" > /dev/null 2> "$out/err_a1.stderr"; echo "err_a1 rc=$?" >> "$out/rc.txt"
"$bin/sinkscope-experiments" a4_scale_sweep --preset nope --out "$out/err_a4" > /dev/null 2> "$out/err_a4.stderr"; echo "err_a4 rc=$?" >> "$out/rc.txt"
"$bin/sinkscope-experiments" p2_streaming_window --smoke --model /nonexistent.gguf --out "$out/err_p2" > /dev/null 2> "$out/err_p2.stderr"
echo "err_p2 rc=$?" >> "$out/rc.txt"
for e in $exps; do "$bin/sinkscope-experiments" $e --help > "$out/$e.help" 2>&1; done
echo "smoke_outputs: wrote $out ($(grep -c 'rc=0' "$out/rc.txt") runs with rc 0; rc.txt lists each)"
