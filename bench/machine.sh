#!/usr/bin/env bash
# Prints one line naming this host for a benchmark's record: cores, CPU model, the family/model numbers
# and cache sizes that tell host types apart when the model name does not (these machines come as several
# Xeon generations and AMD EPYCs, all "Intel(R) Xeon(R) Processor" or alike under KVM), the bf16/int8
# instruction sets the products can use, and the load. Usage: bench/machine.sh ["extra words"]
set -euo pipefail
field() { lscpu 2>/dev/null | awk -F: -v k="$1" '$1 == k { gsub(/^[ \t]+/, "", $2); print $2; exit }'; }
isa=$(grep -m1 '^flags' /proc/cpuinfo | grep -o -w -E 'amx_bf16|avx512_bf16|avx512_vnni' | sort -u | xargs || true)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" \
     "(family $(field 'CPU family'), model $(field 'Model'); L2 $(field 'L2 cache'), L3 $(field 'L3 cache');" \
     "${isa:-no bf16/VNNI instructions}), load $(cut -d' ' -f1-3 /proc/loadavg)${1:+; $1}"
