#!/usr/bin/env bash
# One GPU call: build (tools/gpu/build.sh: the CLI, test_cuda, test_opinfo), then at once
#   test_cuda: every case, or with CASES only the cases whose names contain one of its
#     |-separated texts -> $OUT/test_cuda.txt
#   MODELS (paths under tests/data; default: the CI zoo's language models) compiled on CUDA with each
#     of ARGS' |-separated option sets (default: inference, then a training step) and checked
#     -> $OUT/models.txt
#   with OPINFO=1 the OpInfo corpus on CUDA (tools/gpu/opinfo-cuda.sh's run) -> $OUT/opinfo-results-cuda.md, cuda-results.tsv
#   OUT=... OPINFO=1 tools/gpu/check-call.sh                      (~280 s from a cold machine)
#   OUT=... CASES="half convolutions|index_put" MODELS="zoo/timm_resnet10t/model.pt2" \
#       ARGS="--dtype bfloat16|--dtype bfloat16 --train" tools/gpu/check-call.sh   (~80 s)
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
SECONDS=0
tools/gpu/build.sh > "$O/build.txt" 2>&1 || { tail -40 "$O/build.txt"; exit 2; }
echo "built at ${SECONDS}s"
(
  export LS_TEST_DATA=$PWD/build-gpu/data
  if [ -z "${CASES:-}" ]; then
    timeout 420 build-gpu/tests/cuda/test_cuda
  else
    IFS='|' read -ra cases <<< "$CASES"
    for c in "${cases[@]}"; do timeout 200 build-gpu/tests/cuda/test_cuda "$c"; done
  fi > "$O/test_cuda.txt" 2>&1
  echo "test_cuda exit $? at ${SECONDS}s" >> "$O/test_cuda.txt"
) &
if [ "${OPINFO:-0}" = 1 ]; then
  ( timeout 420 ./build-gpu/tests/cuda/test_opinfo --device cuda --data tests/data/opinfo \
      --table "$O/opinfo-results-cuda.md" --tsv "$O/cuda-results.tsv" > "$O/opinfo.txt" 2>&1
    echo "test_opinfo exit $? at ${SECONDS}s" >> "$O/opinfo.txt" ) &
fi
models=${MODELS:-}
if [ -z "$models" ]; then
  for m in hf_roberta hf_bert hf_gpt2 hf_llama hf_bart hf_t5_encoder; do models="$models zoo/$m/model.pt2"; done
fi
IFS='|' read -ra argsets <<< "${ARGS:-|--train}"
for m in $models; do
  [ -e "build-gpu/data/$m" ] || continue
  for a in "${argsets[@]}"; do
    timeout 120 build-gpu/app/lowerscope-cli compile "build-gpu/data/$m" --device cuda $a --report "$O/r.json" > "$O/one.txt" 2>&1
    echo "$m ${a:-(inference)}: exit $? $(grep -E '^check|^compile:' "$O/one.txt" | tr '\n' ' ' | cut -c1-200)"
    grep -iE "fail|error|differ" "$O/one.txt" | head -5
    # where the library calls ran that used to run on the host (index_put, cumsum, scatter, half convolutions)
    python3 -c "import json; r=json.load(open('$O/r.json')); print('   ', sorted({k.get('how','') for k in r.get('kernels',[]) if k.get('kind') != 'generated'}))" 2>/dev/null
  done
done > "$O/models.txt" 2>&1
cat "$O/models.txt"
wait
grep -E "^FAIL|Totals|exit" "$O/test_cuda.txt" | head -20
[ -f "$O/opinfo.txt" ] && tail -5 "$O/opinfo.txt"
rm -f "$O/r.json" "$O/one.txt"
echo "all done at ${SECONDS}s"
