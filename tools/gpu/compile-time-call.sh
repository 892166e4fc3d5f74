#!/usr/bin/env bash
# One GPU call of session 27: the model zoo's batch B exported, then
#   1. every .pt2 on CUDA one compile at a time (zoo.py run --jobs 1: the CLI's own thread defaults,
#      as a user's compile runs, nothing else on the machine): compile time against Inductor's
#      first call, kernel count and run time -> $OUT/alone_B.json
#   2. every .pt2 on the CPU, 4 at once -> $OUT/cpu_B.json, with TEST_CUDA=1 test_cuda beside it.
#   OUT=... TEST_CUDA=1 ZOO_LIMIT=560 tools/gpu/compile-time-call.sh 1/3
# ALONE_KINDS (default pt2/cuda) and CPU_KINDS (default pt2/cpu) choose the columns of the two parts,
# e.g. ALONE_KINDS=pt2/cuda,train/cuda CPU_KINDS=onnx/cpu,train/cpu.
# Builds build-gpu/ first where it is missing (a warm machine keeps it, and the exports in /tmp/zoo).
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:?usage: tools/gpu/compile-time-call.sh I/N}
tag=${B/\//_of_}
O=${OUT:-/tmp/out}; mkdir -p "$O"
limit=${ZOO_LIMIT:-560}
dir=${ZOO_DIR:-/tmp/zoo}; mkdir -p "$dir"
cli=build-gpu/app/lowerscope-cli
SECONDS=0
export PYTHONUNBUFFERED=1
ej=4
for k in $(seq 1 $ej); do
  OMP_NUM_THREADS=4 python3 tools/zoo/zoo.py export --out "$dir" --batch "$B" --part "$k/$ej" --budget $((limit / 3)) \
    > "$dir/_export_${tag}_$k.txt" 2>&1 &
done
if [ ! -x build-gpu/tests/cuda/test_cuda ] || [ ! -x $cli ]; then
  tools/gpu/build.sh > "$O/build_$tag.txt" 2>&1 || { tail -40 "$O/build_$tag.txt"; }
fi
echo "built at ${SECONDS}s"
wait
echo "exported at ${SECONDS}s"; cat "$dir"/_export_"${tag}"_*.txt | grep -v "^\[" | grep -iE "fail|error" | tail -n 20
left() { local s=$((limit - SECONDS - 20)); echo $((s > 1 ? s : 1)); }
# 1. Alone: the compile-time measurement (nothing else runs).
python3 tools/zoo/zoo.py run --models "$dir" --cli $cli --batch "$B" --export --kinds "${ALONE_KINDS:-pt2/cuda}" --jobs 1 \
  --budget $(( $(left) * 45 / 100 )) --min-job-s 10 --out-json "$O/alone_$tag.json" > "$O/alone_$tag.txt" 2>&1
echo "alone done at ${SECONDS}s: $(grep -c "'ok': True" "$O/alone_$tag.txt") ok of $(grep -c "/cuda {" "$O/alone_$tag.txt")"
# 2. The CPU column, with test_cuda beside it.
if [ "${TEST_CUDA:-0}" = 1 ]; then
  ( LS_TEST_DATA=$PWD/build-gpu/data timeout $(( $(left) - 10 )) build-gpu/tests/cuda/test_cuda > "$O/test_cuda.txt" 2>&1
    echo "test_cuda exit $? at ${SECONDS}s" >> "$O/test_cuda.txt" ) &
fi
python3 tools/zoo/zoo.py run --models "$dir" --cli $cli --batch "$B" --export --kinds "${CPU_KINDS:-pt2/cpu}" --jobs 4 \
  --budget "$(left)" --min-job-s 15 --out-json "$O/cpu_$tag.json" > "$O/cpu_$tag.txt" 2>&1
echo "cpu done at ${SECONDS}s: $(grep -c "'ok': True" "$O/cpu_$tag.txt") ok of $(grep -c "/cpu {" "$O/cpu_$tag.txt")"
wait
[ -f "$O/test_cuda.txt" ] && { grep -E "^FAIL|Totals|exit" "$O/test_cuda.txt" | head -20; }
grep -h "'ok': False" "$O/alone_$tag.txt" "$O/cpu_$tag.txt" | cut -c1-300 | head -20
echo "all done at ${SECONDS}s"
