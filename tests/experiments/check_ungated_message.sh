#!/usr/bin/env bash
# An experiment that reads the quadratic form of a gated FFN (b3: theory/quadratic_ffn.hpp via
# experiments/common.hpp's LayerSwiGlu), run on a model whose FFN is ungated (the planted sink-key model in
# the LayerNorm/GELU layout), stops with an error that names the layer and the missing gate, not an empty matrix.
# Usage: check_ungated_message.sh SINKSCOPE_CLI B3_EXECUTABLE
set -u
cli=$1; exe=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$cli" planted sink-keys --layout layernorm-gelu --out "$work/gelu.safetensors" > /dev/null || { echo "planted failed"; exit 1; }
OMP_NUM_THREADS=1 "$exe" --smoke --model "$work/gelu.safetensors" --random-tokens --out "$work/b3" > "$work/log" 2>&1
rc=$?
if [[ $rc -ne 0 ]] && grep -q "FFN has no gate (W_gate)" "$work/log"; then echo "ok: $(grep -m1 'no gate' "$work/log")"; exit 0; fi
echo "FAILED: exit $rc, expected an error naming the missing gate:"; cat "$work/log"; exit 1
