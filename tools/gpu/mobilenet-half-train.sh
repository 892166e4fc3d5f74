#!/usr/bin/env bash
# Session 30: why mobilenet_v3_small's bf16 training step fails its check on CUDA (passes on the CPU,
# and in f32). One GPU call: build, then the training step under variants -> $OUT/mb.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
SECONDS=0
[ -x build-gpu/app/lowerscope-cli ] || { tools/gpu/build.sh > "$O/build.txt" 2>&1 || { tail -40 "$O/build.txt"; exit 2; }; }
echo "built at ${SECONDS}s"
CLI=build-gpu/app/lowerscope-cli
G=${G:-build-gpu/data/stages/mobilenet_v3_small/3_export_aten.txt}
IFS=',' read -ra variants <<< "${VARIANTS:-cuda|,cuda|LS_CUDNN=0,cuda|--no-fusion,cpu|,cuda|--dtype float16}"
for v in "${variants[@]}"; do
  dev=${v%%|*}; rest=${v#*|}; envs=""; args=""
  for w in $rest; do case $w in LS_*) envs="$envs $w";; *) args="$args $w";; esac; done
  echo "== $dev $rest"
  env $envs timeout 200 $CLI compile $G --device $dev --dtype bfloat16 $args --train > "$O/one.txt" 2>&1
  echo "exit $?"; grep -E "FAIL|^check|^compile" "$O/one.txt" | cut -c1-400 | head -12
done
echo "all done at ${SECONDS}s"
