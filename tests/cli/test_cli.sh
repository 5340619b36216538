#!/usr/bin/env bash
# End-to-end checks of the sinkscope CLI on the shared stories260K checkpoint: each subcommand runs,
# writes what it promises, and bad input fails with exit 2 and a message naming the problem.
# Usage: test_cli.sh SINKSCOPE_BINARY SHARED_DIR
set -u
bin=$1; model=$2/models/stories260K.gguf
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/check_lib.sh"
lacks() { ! grep -q "$1" "$2"; }  # lacks PATTERN FILE
differ() { ! cmp -s "$1" "$2"; }  # differ FILE FILE
"$bin" --help > "$work/help" 2>&1
check "--help names the subcommands" grep -q "capture" "$work/help"
"$bin" info "$model" > "$work/info" 2>&1
check "info prints the config" grep -q "L=5 d=64 H=8 kvH=4" "$work/info"
check "info prints tensor types" grep -q "F32" "$work/info"
check "info prints the attention span" grep -q "attention:  global (every layer)" "$work/info"
# The parameter table's rows with the shapes the file's own tensor list gives (GGUF lists dimensions fastest
# first: attn_k [64, 32] is W_K [32, 64]).
check "info lists W_K of block 0 with its (out, in) shape" grep -q "blocks.0.attn.W_K \[32, 64\] float32" "$work/info"
check "info lists block 0 only" bash -c "! grep -q 'blocks.1.attn' '$work/info'"
fixtures=$(cd "$(dirname "$0")/../fixtures/model" && pwd)
"$bin" info "$fixtures/random_gemma2" > "$work/gemma.info" 2>&1
check "info lists Gemma 2's sliding and global layers" grep -q "global (layers 1, 3); sliding window 8 (layers 0, 2)" "$work/gemma.info"
check "info says a Gemma 2 model runs on the CPU only" grep -q "CPU only (CUDA does not implement" "$work/gemma.info"
"$bin" capture "$model" --list-hooks --describe > "$work/describe" 2>&1
check "--list-hooks --describe prints the hook table's rows with shapes" grep -q "blocks.{l}.attn.hook_pattern.*\[head, query_pos, key_pos\]" "$work/describe"
"$bin" capture "$model" --tokens 1,50,60,70,80 --hooks blocks.0.hook_resid_post,blocks.4.attn.hook_pattern,logits --out "$work/cap" > "$work/cap.log" 2>&1
check "capture exits 0" test $? -eq 0
check "capture writes resid_post" test -s "$work/cap/blocks.0.hook_resid_post.npy"
check "capture writes pattern" test -s "$work/cap/blocks.4.attn.hook_pattern.npy"
check "capture writes meta.json with the tokens" grep -q '"tokens"' "$work/cap/meta.json"
# A (5 × 64) float32 array: 128-byte header + 1280 bytes.
check "resid_post has 5x64 float32 values" test "$(stat -c %s "$work/cap/blocks.0.hook_resid_post.npy")" -eq $((128 + 5 * 64 * 4))
check "npy header says float32 and shape (5, 64)" grep -qa "'descr': '<f4'.*'shape': (5, 64)" "$work/cap/blocks.0.hook_resid_post.npy"
"$bin" capture "$model" --tokens 1,512 --hooks logits --out "$work/bad" > "$work/bad.log" 2>&1
check "out-of-range token exits 2" test $? -eq 2
check "out-of-range token is named" grep -q "token id 512 at position 1" "$work/bad.log"
"$bin" capture "$model" --tokens 1,2 --hooks blocks.9.hook_resid_post --out "$work/bad2" > "$work/bad2.log" 2>&1
check "unknown hook exits 2" test $? -eq 2
printf 'GGUF\x01\x00\x00\x00' > "$work/v1.gguf"
"$bin" info "$work/v1.gguf" > "$work/v1.log" 2>&1
check "GGUF v1 exits 2" test $? -eq 2
check "GGUF v1 error names the file" grep -q "v1.gguf" "$work/v1.log"
"$bin" info "$work/missing.gguf" > "$work/missing.log" 2>&1
check "missing file exits 2" test $? -eq 2
# Bad input that used to abort with an uncaught exception (signal 6) must exit 2 with a message.
touch "$work/a_file"
"$bin" capture "$model" --tokens 1,2 --hooks logits --out "$work/a_file" > "$work/outfile.log" 2>&1
check "capture --out naming an existing file exits 2" test $? -eq 2
check "capture --out naming an existing file says so" grep -q "must name a directory.*a_file" "$work/outfile.log"
"$bin" capture "$model" --tokens 1,2 --hooks logits --out "$work/a_file/sub" > "$work/outsub.log" 2>&1
check "capture --out under an existing file exits 2" test $? -eq 2
# mkgguf OUT ROWS [full|short] [llama]: a GGUF whose token_embd.weight is Q4_0 [4096, ROWS]; "full" makes its
# data a sparse hole (no disk used), "short" leaves it out; "llama" adds the metadata of a 1-layer Llama.
mkgguf() {
    python3 - "$@" <<'PY'
import struct, sys
out, rows, data = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def s(x): return struct.pack("<Q", len(x)) + x
u32 = lambda v: struct.pack("<II", 4, v)
kv = [(b"general.architecture", struct.pack("<I", 8) + s(b"llama"))]
if len(sys.argv) > 4:
    kv += [(b"llama.block_count", u32(1)), (b"llama.embedding_length", u32(4096)), (b"llama.attention.head_count", u32(32)),
           (b"llama.feed_forward_length", u32(128)), (b"llama.context_length", u32(64)),
           (b"llama.attention.layer_norm_rms_epsilon", struct.pack("<If", 6, 1e-5))]
h = b"GGUF" + struct.pack("<IQQ", 3, 1, len(kv)) + b"".join(s(k) + v for k, v in kv)
h += s(b"token_embd.weight") + struct.pack("<IQQIQ", 2, 4096, rows, 2, 0)
h += b"\0" * (-len(h) % 32)
with open(out, "wb") as f:
    f.write(h)
    if data == "full": f.truncate(len(h) + 4096 * rows // 32 * 18)
PY
}
# A metadata value of the wrong type (general.architecture a u32, not a string).
python3 - "$work/arch_u32.gguf" <<'PY'
import struct, sys
k = b"general.architecture"
open(sys.argv[1], "wb").write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(k)) + k + struct.pack("<II", 4, 7))
PY
"$bin" info "$work/arch_u32.gguf" > "$work/arch_u32.log" 2>&1
check "a metadata value of the wrong type exits 2" test $? -eq 2
check "a metadata value of the wrong type names the key and the file" grep -q "general.architecture.*arch_u32.gguf" "$work/arch_u32.log"
# A model whose float32 weights need twice the memory available (its Q4_0 map a seventh of that) is refused
# as float32 before anything is allocated, the error naming the way out; --weights auto (the default) keeps
# the map in its file type instead and says so (this file has no layers, so the load then stops on that).
avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
rows=$(( (2 * avail_kb * 1024 / (4 * 4096)) + 1 ))
mkgguf "$work/huge.gguf" "$rows" full
"$bin" capture "$work/huge.gguf" --weights float32 --tokens 1 --hooks logits --out "$work/huge_out" > "$work/huge.log" 2>&1
check "a model too large for memory exits 2" test $? -eq 2
check "a model too large for memory says what it needs and what there is, and the way out" \
      grep -q "needs [0-9.]* GiB of memory for float32 weights, [0-9.]* GiB available; --weights file keeps the linear maps in their file types.*\[file .*huge.gguf\]" "$work/huge.log"
"$bin" capture "$work/huge.gguf" --tokens 1 --hooks logits --out "$work/huge_out" > "$work/huge_auto.log" 2>&1
check "--weights auto keeps a model too large for float32 in its file types and says so" \
      grep -q "float32 weights need [0-9.]* GiB, [0-9.]* GiB available: the linear maps stay in their file types" "$work/huge_auto.log"
mkgguf "$work/huge_short.gguf" "$rows" short
"$bin" info "$work/huge_short.gguf" > "$work/huge_short.log" 2>&1
check "a data section cut short exits 2" test $? -eq 2
check "a data section cut short names file, tensor and offset" \
      grep -q "outside the file .*huge_short.gguf\] \[tensor token_embd.weight\] \[offset [0-9]*\]" "$work/huge_short.log"
# An allocation that fails past the check (here: an address-space limit the check does not read) is
# std::bad_alloc, reported with exit 2. Not under ASan: its operator new reports the failure and dies.
if ! grep -qa __asan_init "$bin"; then  # __asan_init: the instrumented binary (libasan is a shared library)
    mkgguf "$work/big.gguf" 96000 full llama   # 1.5 GiB of float32 weights in a 221 MB sparse file
    (ulimit -v 1048576; "$bin" capture "$work/big.gguf" --tokens 1 --hooks logits --out "$work/big_out") > "$work/big.log" 2>&1
    check "std::bad_alloc exits 2" test $? -eq 2
    check "std::bad_alloc says what was needed and what is available" \
          grep -q "out of memory (std::bad_alloc); the model's float32 weights need 1.5 GiB; [0-9.]* GiB available" "$work/big.log"
fi
# A tensor of a type the loader does not convert (stories260K's blk.0.attn_q.weight relabelled F32 -> I32,
# which has the same size): Error naming the file, the tensor and its offset.
python3 - "$model" "$work/i32.gguf" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
name = b"blk.0.attn_q.weight"
at = b.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
n_dims = struct.unpack_from("<I", b, at)[0]
type_at = at + 4 + 8 * n_dims
assert struct.unpack_from("<I", b, type_at)[0] == 0  # F32
struct.pack_into("<I", b, type_at, 26)                # I32
open(sys.argv[2], "wb").write(b)
PY
"$bin" capture "$work/i32.gguf" --tokens 1,2 --hooks logits --out "$work/i32_out" > "$work/i32.log" 2>&1
check "an unsupported tensor type exits 2" test $? -eq 2
check "an unsupported tensor type names file, tensor and offset" \
      grep -q "cannot dequantize ggml type I32 \[file .*i32.gguf\] \[tensor blk.0.attn_q.weight\] \[offset [0-9]*\]" "$work/i32.log"
"$bin" capture "$model" --list-hooks > "$work/hooks" 2>&1
check "list-hooks lists 5 layers of hooks" test "$(grep -c hook_resid_post "$work/hooks")" -eq 5
# Token files and null controls: stats on fixed id sequences, a random-weight copy of the layout.
printf '1 50 60 70 80 90 100 110\n1,51,61,71,81,91,101,111\n# skipped\n1 2\n' > "$work/tokens.txt"
"$bin" stats "$model" --tokens-file "$work/tokens.txt" --seq-len 8 --json "$work/stats.json" > "$work/stats.log" 2>&1
check "stats --tokens-file exits 0" test $? -eq 0
check "stats --tokens-file uses the 2 long lines" grep -q '"samples": 2' "$work/stats.json"
"$bin" random-model "$model" --seed 3 --out "$work/random.safetensors" > "$work/random.log" 2>&1
check "random-model exits 0" test $? -eq 0
"$bin" stats "$work/random.safetensors" --tokens-file "$work/tokens.txt" --seq-len 8 --json "$work/random_stats.json" > "$work/rstats.log" 2>&1
check "stats reads a random-model checkpoint" test $? -eq 0
check "random weights give other statistics" test "$(grep -m1 '"sink_rate"' "$work/stats.json")" != "$(grep -m1 '"sink_rate"' "$work/random_stats.json")" -o \
      "$(grep -m1 '"median_abs"' "$work/stats.json")" != "$(grep -m1 '"median_abs"' "$work/random_stats.json")"
printf '1 2 x\n' > "$work/bad_tokens.txt"
"$bin" stats "$model" --tokens-file "$work/bad_tokens.txt" --seq-len 2 > "$work/badtok.log" 2>&1
check "bad token file exits 2" test $? -eq 2
check "bad token file error names the line" grep -q "line 1" "$work/badtok.log"
# Sharded stats: two shards (--shard counts from 0) merged give the whole run's JSON. The float sums in
# the state (norm_sum, received "sum") and the mean norms made from them (norm_pos0, norm_rest) may differ
# in the last bits, because the merge adds the two shards' sums where one run adds sample by sample:
# compared with relative tolerance 1e-12 (3 samples of non-negative terms: the bound is about
# 4 × 2.2e-16, see model/reducers.hpp); everything else (top-k, medians, α₀, sink rates, counts) must be equal.
printf '1 52 62 72 82 92 102 112\n' >> "$work/tokens.txt"   # 3 samples: shards of 1 and 2
"$bin" stats "$model" --tokens-file "$work/tokens.txt" --seq-len 8 --json "$work/whole.json" > "$work/whole.txt" 2>/dev/null
check "stats (3 samples) exits 0" test $? -eq 0
for i in 0 1; do
    "$bin" stats "$model" --tokens-file "$work/tokens.txt" --seq-len 8 --shard $i/2 --json "$work/shard$i.json" > "$work/shard$i.log" 2>&1
    check "stats --shard $i/2 exits 0" test $? -eq 0
done
check "shard 1/2 holds samples 1 and 2" grep -q "shard 1/2 (samples 1…2 of 3)" "$work/shard1.log"
"$bin" merge "$work/shard1.json" "$work/shard0.json" --json "$work/merged.json" > "$work/merged.txt" 2> "$work/merge.log"
check "merge exits 0" test $? -eq 0
check "merge prints the whole run's table" cmp -s "$work/whole.txt" "$work/merged.txt"
same_json() {  # same_json A B: equal JSON, the sums and mean norms within relative 1e-12
    python3 - "$1" "$2" <<'PY'
import json, sys
def same(a, b, key, where):
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return all(same(a[k], b[k], k, where + "." + k) for k in a)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return all(same(x, y, key, where) for x, y in zip(a, b))
    if key in ("sum", "norm_sum", "norm_pos0", "norm_rest") and type(a) is float and type(b) is float:
        ok = abs(a - b) <= 1e-12 * abs(b)
    else:
        ok = type(a) is type(b) and a == b
    if not ok: print("differs at", where, ":", a, "vs", b)
    return ok
sys.exit(0 if same(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), "", "") else 1)
PY
}
check "merge writes the whole run's JSON" same_json "$work/merged.json" "$work/whole.json"
# Batches: the runs above put 3 and 2 samples of 8 tokens in one forward pass (--batch 8 by default);
# one sample per pass gives the same JSON bit for bit.
"$bin" stats "$model" --tokens-file "$work/tokens.txt" --seq-len 8 --batch 1 --json "$work/batch1.json" > /dev/null 2>&1
check "stats --batch 1 writes the batched run's JSON exactly" cmp -s "$work/batch1.json" "$work/whole.json"
check "the whole run's JSON holds the mergeable state" grep -q '"format": "sinkscope.AttentionStats"' "$work/whole.json"
"$bin" stats "$model" --tokens-file "$work/tokens.txt" --seq-len 8 --shard 2/2 > "$work/badshard.log" 2>&1
check "--shard 2/2 exits 2 (shards count from 0)" test $? -eq 2
check "--shard 2/2 is named" grep -q "shard '2/2'" "$work/badshard.log"
"$bin" stats "$model" --tokens-file "$work/tokens.txt" --seq-len 8 --shard 0/4 > "$work/manyshards.log" 2>&1
check "more shards than samples exits 2" test $? -eq 2
"$bin" merge "$work/shard0.json" --json "$work/partial.json" > "$work/missing.log" 2>&1
check "merge with a missing shard exits 2" test $? -eq 2
check "merge names the missing shard" grep -q "shard(s) 1/2 missing" "$work/missing.log"
check "merge with a missing shard writes nothing" test ! -e "$work/partial.json"
"$bin" merge "$work/shard0.json" "$work/shard0.json" "$work/shard1.json" > "$work/twice.log" 2>&1
check "merge of a repeated shard exits 2 naming the file" grep -q "shard 0/2 given twice.*shard0.json" "$work/twice.log"
"$bin" stats "$model" --tokens-file "$work/tokens.txt" --seq-len 7 --shard 1/2 --json "$work/other.json" > /dev/null 2>&1
"$bin" merge "$work/shard0.json" "$work/other.json" > "$work/other.log" 2>&1
check "merge of shards of other settings exits 2" test $? -eq 2
check "merge names the setting and the file" grep -q "setting 'seq_len'.*other.json" "$work/other.log"
# --compute bf16 (float32 weights, dense products with bf16 inputs through oneDNN): capture records it and
# gives other values than float32; a bf16 stats shard does not merge with float32 ones; with --weights file
# (the shared model is all F32: no views) the same dense bf16 products, byte for byte. A build without
# oneDNN refuses it with exit 2 naming oneDNN, before the load.
"$bin" capture "$model" --tokens 1,50,60,70,80 --hooks blocks.0.hook_resid_post --compute bf16 --out "$work/cap_bf16" > "$work/cap_bf16.log" 2>&1
bf16_rc=$?
if grep -q "needs oneDNN" "$work/cap_bf16.log"; then
    check "capture --compute bf16 without oneDNN exits 2" test $bf16_rc -eq 2
else
    check "capture --compute bf16 exits 0" test $bf16_rc -eq 0
    check "capture --compute bf16 records the arithmetic" grep -q '"compute": "bf16"' "$work/cap_bf16/meta.json"
    check "float32 capture records exact" grep -q '"compute": "exact"' "$work/cap/meta.json"
    check "bf16 residual stream differs from float32's" differ "$work/cap/blocks.0.hook_resid_post.npy" "$work/cap_bf16/blocks.0.hook_resid_post.npy"
    check "bf16 residual stream is float32 (5, 64)" grep -qa "'descr': '<f4'.*'shape': (5, 64)" "$work/cap_bf16/blocks.0.hook_resid_post.npy"
    "$bin" info "$model" --compute bf16 > "$work/info_bf16" 2>&1
    check "info --compute bf16 says so" grep -q "products with bf16 inputs" "$work/info_bf16"
    "$bin" stats "$model" --tokens-file "$work/tokens.txt" --seq-len 8 --shard 1/2 --compute bf16 --json "$work/shard1_bf16.json" > /dev/null 2>&1
    check "stats --compute bf16 exits 0" test $? -eq 0
    check "its settings record bf16" grep -q '"compute": "bf16"' "$work/shard1_bf16.json"
    "$bin" merge "$work/shard0.json" "$work/shard1_bf16.json" > "$work/bf16_merge.log" 2>&1
    check "merge of a float32 and a bf16 shard exits 2" test $? -eq 2
    check "merge of a float32 and a bf16 shard names the setting" grep -q "setting 'weights'" "$work/bf16_merge.log"
    "$bin" capture "$model" --tokens 1,50,60,70,80 --hooks blocks.0.hook_resid_post --weights file --compute bf16 \
        --out "$work/bf16_file" > "$work/bf16_file.log" 2>&1
    check "--weights file --compute bf16 exits 0" test $? -eq 0
    check "--weights file --compute bf16 on F32 tensors is the dense bf16 forward" \
        cmp -s "$work/cap_bf16/blocks.0.hook_resid_post.npy" "$work/bf16_file/blocks.0.hook_resid_post.npy"
    # --weights bf16: the maps rounded to BF16 once at load give the same bf16 forward, byte for byte, and say so.
    "$bin" capture "$model" --tokens 1,50,60,70,80 --hooks blocks.0.hook_resid_post,blocks.1.hook_resid_post \
        --weights bf16 --compute bf16 --out "$work/bf16_stored" > "$work/bf16_stored.log" 2>&1
    check "--weights bf16 --compute bf16 exits 0" test $? -eq 0
    check "--weights bf16 is the float32-weight bf16 forward, byte for byte" \
        cmp -s "$work/cap_bf16/blocks.0.hook_resid_post.npy" "$work/bf16_stored/blocks.0.hook_resid_post.npy"
    check "capture --weights bf16 records the storage" grep -q '"weights": "bf16"' "$work/bf16_stored/meta.json"
    "$bin" info "$model" --weights bf16 --compute bf16 > "$work/info_bf16_stored" 2>&1
    check "info --weights bf16 says so" grep -q "rounded to BF16 at load, bf16 products" "$work/info_bf16_stored"
    "$bin" stats "$model" --tokens-file "$work/tokens.txt" --seq-len 8 --shard 1/2 --weights bf16 --compute bf16 \
        --json "$work/shard1_bf16_stored.json" > /dev/null 2>&1
    check "stats --weights bf16 records the storage" grep -q '"storage": "bf16"' "$work/shard1_bf16_stored.json"
    "$bin" merge "$work/shard0.json" "$work/shard1_bf16_stored.json" > "$work/bf16_stored_merge.log" 2>&1
    check "merge of a float32 and a BF16-weight shard exits 2" test $? -eq 2
fi
# stats with the linear maps in their file types and int8 products (SmolLM2 Q4_1: the shared model is all
# F32, which loads as float32 whatever --weights says): the settings say so, and a shard computed that way
# does not merge with one computed in float32.
smol="$(dirname "$0")/../../models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ -f $smol ]]; then
    for w in float32 file; do
        "$bin" stats "$smol" --tokens-file "$work/tokens.txt" --seq-len 8 --shard 0/2 --weights $w --compute int8 \
            --json "$work/smol_$w.json" > "$work/smol_$w.log" 2>&1
        check "stats SmolLM2 --weights $w --compute int8 exits 0" test $? -eq 0
    done
    check "its settings record the arithmetic" grep -q '"compute": "int8"' "$work/smol_file.json"
    check "float32 weights record none (as before)" lacks '"compute"' "$work/smol_float32.json"
    "$bin" merge "$work/smol_float32.json" "$work/smol_file.json" > "$work/int8_merge.log" 2>&1
    check "merge of a float32 and an int8 shard exits 2 naming the setting" grep -q "setting 'weights'" "$work/int8_merge.log"
else
    echo "cli: SmolLM2 not fetched (scripts/fetch_model.sh): the --weights file checks of stats are skipped"
fi
check_summary "cli: "
