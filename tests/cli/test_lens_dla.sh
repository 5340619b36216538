#!/usr/bin/env bash
# `sinkscope lens`, `sinkscope dla` and `sinkscope atp` on the shared stories260K checkpoint (seconds): the files
# they promise, the lens's last point against the logits `capture` writes, the DLA parts against the logit,
# attribution patching's unreached sites, bad input.
# Usage: test_lens_dla.sh SINKSCOPE_BINARY SHARED_DIR
set -u
bin=$1; model=$2/models/stories260K.gguf
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/check_lib.sh"
tokens=1,50,60,70,80
"$bin" lens "$model" --tokens $tokens --target 60 --top 3 --out "$work/lens" > "$work/lens.log" 2>&1
check "lens exits 0" test $? -eq 0
check "lens prints each readout point" grep -q "blocks.4.hook_resid_post" "$work/lens.log"
check "top_tokens is int32 (6 points, 5 positions, 3)" grep -qa "'descr': '<i4'.*'shape': (6, 5, 3)" "$work/lens/top_tokens.npy"
check "target_rank is int32 (6, 5)" grep -qa "'descr': '<i4'.*'shape': (6, 5)" "$work/lens/target_rank.npy"
check "summary.json names the points and the target" grep -q '"target": 60' "$work/lens/summary.json"
"$bin" capture "$model" --tokens $tokens --hooks logits --out "$work/cap" > /dev/null 2>&1
"$bin" dla "$model" --tokens $tokens --target 60 --contrast 70 --position 3 --out "$work/dla" > "$work/dla.log" 2>&1
check "dla exits 0" test $? -eq 0
check "heads.npy is (5 layers, 8 heads)" grep -qa "'shape': (5, 8)" "$work/dla/heads.npy"
check "by_source.npy is (5, 8, 5 sources)" grep -qa "'shape': (5, 8, 5)" "$work/dla/by_source.npy"
# The numbers, read without NumPy: the lens's last point ranks the logits as capture's logits do, and the
# DLA parts sum to the logit difference of capture's logits (no soft cap in this model).
python3 - "$work" "$(dirname "$0")" > "$work/numbers.log" 2>&1 <<'PY'
import json, struct, sys
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from npy_stdlib import npy
(T, V), logits = npy(work + "/cap/logits.npy")
(R, T2, K), top = npy(work + "/lens/top_tokens.npy")
_, rank = npy(work + "/lens/target_rank.npy")
ok = T == T2
for t in range(T):
    row = logits[t * V:(t + 1) * V]
    ok &= top[((R - 1) * T + t) * K] == max(range(V), key=lambda v: (row[v], -v))
    ok &= rank[(R - 1) * T + t] == sum(1 for v in range(V) if row[v] > row[60])
s = json.load(open(work + "/dla/summary.json"))
ref = logits[3 * V + 60] - logits[3 * V + 70]
ok &= abs(s["parts_sum"] - s["logit"]) <= 1e-5 * max(abs(s["logit"]), 1.0)
ok &= abs(s["logit"] - ref) <= 1e-5 * max(abs(ref), 1.0)
ok &= abs(s["model_logit"] - ref) <= 1e-5 * max(abs(ref), 1.0)  # dla's forward materialises the pattern: rounding
print("numbers", "agree" if ok else "DISAGREE", s["logit"], ref)
PY
check "lens and dla numbers agree with capture's logits" grep -q "numbers agree" "$work/numbers.log"
"$bin" dla "$model" --tokens $tokens --target 99999 --out "$work/bad" > "$work/bad.log" 2>&1
check "an out-of-vocabulary target exits 2" test $? -eq 2
check "and is named" grep -q "token id 99999 is outside the vocabulary" "$work/bad.log"
"$bin" dla "$model" --tokens $tokens --target 60 --position 7 --out "$work/bad2" > "$work/bad2.log" 2>&1
check "a position past the tokens exits 2" test $? -eq 2
# --bos as in capture and stats: a bare --bos means on (BOS id 1 first), --bos off and --no-bos none; the
# decision is recorded in summary.json.
"$bin" lens "$model" --text "Once upon" --bos --out "$work/bos_on" > "$work/bos_on.log" 2>&1
check "lens --bos (bare) exits 0" test $? -eq 0
check "and records BOS used" python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["bos"]; sys.exit(0 if b["use"] and b["id"] == 1 else 1)' "$work/bos_on/summary.json"
"$bin" dla "$model" --text "Once upon" --bos off --target 60 --out "$work/bos_off" > /dev/null 2>&1
check "dla --bos off records no BOS" python3 -c 'import json,sys; sys.exit(0 if not json.load(open(sys.argv[1]))["bos"]["use"] else 1)' "$work/bos_off/summary.json"
"$bin" lens "$model" --text "Once upon" --no-bos --out "$work/no_bos" > /dev/null 2>&1
check "lens --no-bos records no BOS" python3 -c 'import json,sys; sys.exit(0 if not json.load(open(sys.argv[1]))["bos"]["use"] else 1)' "$work/no_bos/summary.json"
# atp: attribution patching with token 60 substituted at position 2; the residual at earlier positions
# is untouched, so there every estimate and every exact patch is exactly 0.
"$bin" atp "$model" --tokens 1,50,60,70,80,90 --corrupted-tokens 1,50,61,70,80,90 --target 60 --contrast 70 --exact 8 \
    --out "$work/atp" > "$work/atp.log" 2>&1
check "atp exits 0" test $? -eq 0
check "estimate.npy is (5 layers, 6 positions)" grep -qa "'shape': (5, 6)" "$work/atp/estimate.npy"
check "exact.npy is (5, 6)" grep -qa "'shape': (5, 6)" "$work/atp/exact.npy"
python3 - "$work" "$(dirname "$0")" > "$work/atp_numbers.log" 2>&1 <<'PY'
import json, math, sys
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from npy_stdlib import npy
(L, n), est = npy(work + "/atp/estimate.npy")
_, exact = npy(work + "/atp/exact.npy")
s = json.load(open(work + "/atp/summary.json"))
ran = [i for i in range(L * n) if not math.isnan(exact[i])]
ok = s["exact_k"] == 8 and len(ran) == 16 and "spearman_top" in s and s["corrupted_tokens"][2] == 61
ok &= all(est[l * n + t] == 0 for l in range(L) for t in range(2))
ok &= all(exact[i] == 0 for i in ran if i % n < 2)
print("atp", "consistent" if ok else "INCONSISTENT", len(ran))
PY
check "atp: 16 sites patched for real, and the unreached ones are exactly 0" grep -q "atp consistent" "$work/atp_numbers.log"
# Every kind of site: block inputs, attention and FFN outputs, z per head, a channel group; the same unreached
# positions are exactly 0 at every kind, and every file has its documented shape.
"$bin" atp "$model" --tokens 1,50,60,70,80,90 --corrupted-tokens 1,50,61,70,80,90 --target 60 --contrast 70 --exact 6 \
    --sites resid_pre,attn_out,z,mlp_out --channels 3,7 --out "$work/atp_all" > "$work/atp_all.log" 2>&1
check "atp --sites (every kind) --channels exits 0" test $? -eq 0
python3 - "$work" "$(dirname "$0")" > "$work/atp_all_numbers.log" 2>&1 <<'PY'
import csv, json, math, sys
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from npy_stdlib import npy
s = json.load(open(work + "/atp_all/summary.json"))
shapes = {k["estimate"]: tuple(k["shape"]) for k in s["sites"]}
ok = shapes == {"estimate.npy": (5, 6), "estimate_group_channels.npy": (5, 6), "estimate_attn_out.npy": (5, 6),
                "estimate_z.npy": (5, 6, 8), "estimate_mlp_out.npy": (5, 6)}
ok &= s["channel_groups"] == {"channels": [3, 7]}
for f, shape in shapes.items():
    got, _ = npy(work + "/atp_all/" + f)
    ok &= tuple(got) == shape
rows = list(csv.DictReader(open(work + "/atp_all/sites.csv")))
ok &= len(rows) == 5 * 6 * (4 + 8)
ok &= {r["site"] for r in rows} == {"resid_pre", "resid_pre[channels]", "attn_out", "z", "mlp_out"}
ok &= all(float(r["estimate"]) == 0 for r in rows if int(r["position"]) < 2)
ran = [r for r in rows if not math.isnan(float(r["exact"]))]
ok &= len(ran) == 12 and all(float(r["exact"]) == 0 for r in ran if int(r["position"]) < 2)
ok &= all((r["head"] != "-1") == (r["site"] == "z") for r in rows)
print("atp all", "consistent" if ok else "INCONSISTENT", shapes, len(rows), len(ran))
PY
check "atp every kind: the files' shapes, 12 sites patched for real, unreached sites 0" grep -q "atp all consistent" "$work/atp_all_numbers.log"
"$bin" atp "$model" --tokens 1,50,60 --corrupted-tokens 1,50,61 --target 60 --sites resid_pre,heads --out "$work/atp_bad_site" \
    > "$work/atp_bad_site.log" 2>&1
check "atp with an unknown site kind fails" test $? -ne 0
check "and names it" grep -q "heads" "$work/atp_bad_site.log"
"$bin" atp "$model" --tokens 1,50,60 --corrupted-tokens 1,50,61 --target 60 --channels 64 --out "$work/atp_bad_channel" \
    > "$work/atp_bad_channel.log" 2>&1
check "atp with a channel outside d_model exits 2" test $? -eq 2
check "and names it" grep -q "channel 64 of the group 'channels' lies outside d_model = 64" "$work/atp_bad_channel.log"
"$bin" atp "$model" --tokens 1,50,60,70,80,90 --corrupted-tokens 1,50,61,70,80,90 --metric loss --exact 2 --out "$work/atp_loss" \
    > "$work/atp_loss.log" 2>&1
check "atp --metric loss exits 0" test $? -eq 0
check "and records the metric" grep -q '"metric": "loss"' "$work/atp_loss/summary.json"
"$bin" atp "$model" --tokens 1,50,60 --corrupted-tokens 1,50,61 --metric loss --target 60 --out "$work/atp_loss_bad" \
    > "$work/atp_loss_bad.log" 2>&1
check "atp --metric loss with --target fails and says why" grep -q "takes no --target" "$work/atp_loss_bad.log"
"$bin" atp "$model" --tokens 1,50,60 --corrupted-tokens 1,50 --target 60 --out "$work/atp_bad" > "$work/atp_bad.log" 2>&1
check "atp with inputs of different lengths exits 2" test $? -eq 2
check "and says so" grep -q "needs the same length" "$work/atp_bad.log"
[[ $fails -eq 0 ]] || cat "$work/numbers.log" "$work/atp_numbers.log" "$work/atp_all_numbers.log"
check_summary "lens/dla/atp cli: "
