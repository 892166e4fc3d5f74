#!/usr/bin/env bash
# One GPU call of session 27: build (tools/gpu/build.sh: the CLI, test_cuda, test_opinfo), then at once
#   test_cuda (all cases) -> $OUT/test_cuda.txt
#   the CI zoo's language models' training steps on CUDA (their embedding backward's index_put and
#   position ids' cumsum now on the device) -> $OUT/zoo_train.txt
#   with OPINFO=1 the OpInfo corpus on CUDA (tools/gpu/opinfo-cuda.sh's run) -> $OUT/opinfo-results-cuda.md, cuda-results.tsv
#   OUT=... OPINFO=1 tools/gpu/check-call.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
SECONDS=0
tools/gpu/build.sh > "$O/build.txt" 2>&1 || { tail -40 "$O/build.txt"; exit 2; }
echo "built at ${SECONDS}s"
( LS_TEST_DATA=$PWD/build-gpu/data timeout 420 build-gpu/tests/cuda/test_cuda > "$O/test_cuda.txt" 2>&1
  echo "test_cuda exit $? at ${SECONDS}s" >> "$O/test_cuda.txt" ) &
if [ "${OPINFO:-0}" = 1 ]; then
  ( timeout 420 ./build-gpu/tests/cuda/test_opinfo --device cuda --data tests/data/opinfo \
      --table "$O/opinfo-results-cuda.md" --tsv "$O/cuda-results.tsv" > "$O/opinfo.txt" 2>&1
    echo "test_opinfo exit $? at ${SECONDS}s" >> "$O/opinfo.txt" ) &
fi
for m in ${ZOO_MODELS:-hf_roberta hf_bert hf_gpt2 hf_llama hf_bart hf_t5_encoder}; do
  f=build-gpu/data/zoo/$m/model.pt2
  [ -e "$f" ] || continue
  for t in "" "--train"; do
    timeout 120 build-gpu/app/lowerscope-cli compile "$f" --device cuda $t --report "$O/r.json" > "$O/one.txt" 2>&1
    echo "$m ${t:-infer}: exit $? $(grep -E '^check|^compile:' "$O/one.txt" | tr '\n' ' ' | cut -c1-200)"
    python3 -c "import json,sys; r=json.load(open('$O/r.json')); print('   ', sorted({k.get('how','') for k in r.get('kernels',[]) if 'index_put' in k['name'] or 'cumsum' in k['name']}))" 2>/dev/null
  done
done > "$O/zoo_train.txt" 2>&1
cat "$O/zoo_train.txt"
wait
grep -E "^FAIL|Totals|exit" "$O/test_cuda.txt" | head -20
[ -f "$O/opinfo.txt" ] && tail -5 "$O/opinfo.txt"
rm -f "$O/r.json" "$O/one.txt"
echo "all done at ${SECONDS}s"
