#!/usr/bin/env bash
# Runs each parser's libFuzzer target of a sanitizer build with coverage (build-fuzz-cov/, built
# here: AddressSanitizer, UBSan and libFuzzer's coverage on the layers the parsers go through;
# tools/test.sh's build-fuzz/ leaves the coverage out, as it only replays the corpus) until it
# has run a million inputs or for 10 minutes, whichever comes first, one target at a time at the
# lowest CPU priority, and prints a table per target: executions, seconds, crashes. New inputs go
# to a scratch folder (build-fuzz-cov/fuzz/scratch/T), read beside the committed corpus
# (tests/fuzz/corpus/T, never written) and the test data that seeds it; a crashing input is kept
# in build-fuzz-cov/fuzz/crashes/T/ (add it to tests/fuzz/corpus/T with the fix).
#
#   tools/fuzz.sh [-t SECONDS] [-r RUNS] [TARGET...]    TARGET: fx_text torch_trace pt2 onnx npy
#
# -t: the time limit a target (default 600), -r: the executions a target (default 1000000).
# The table is also written to build-fuzz-cov/fuzz/results.md. Exit status 1 when a target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=600
runs=1000000
while getopts "t:r:" opt; do
  case $opt in
    t) seconds=$OPTARG ;;
    r) runs=$OPTARG ;;
    *) sed -n 2,12p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fx_text torch_trace pt2 onnx npy)

B=build-fuzz-cov
D=tests/data
cmake -S . -B $B -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DLOWERSCOPE_FUZZ=ON -DLOWERSCOPE_FUZZ_COVERAGE=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build $B --target $(printf 'fuzz_%s ' "${targets[@]}")
# The seeds beside the corpus: the same as the corpus replay's (tests/fuzz/CMakeLists.txt).
seeds() {
  case $1 in
    fx_text) echo "$D/stages/sincos $D/stages/attn_block $D/stages/cifar_net $D/stages/mobilenet_v3_small" ;;
    torch_trace) echo "$D/trace" ;;
    pt2) echo "$D/bad $D/models/softmax" ;;
    onnx) echo "$D/bad $D/models/softmax $D/models/res_block" ;;
    npy) echo "$D/sincos $D/mse_loss" ;;
    *) echo "fuzz.sh: unknown target $1" >&2; exit 2 ;;
  esac
}

out=$B/fuzz
mkdir -p $out
results=$out/results.md
{
  echo "| target | executions | seconds | crashes | exec/s |"
  echo "|---|---:|---:|---:|---:|"
} > $results
status=0
for t in "${targets[@]}"; do
  scratch=$out/scratch/$t
  crashes=$out/crashes/$t
  log=$out/$t.log
  mkdir -p $scratch $crashes
  before=$(ls $crashes | wc -l)
  start=$(date +%s)
  # shellcheck disable=SC2046
  nice -n 19 $B/tests/fuzz/fuzz_$t -runs=$runs -max_total_time=$seconds -timeout=20 -print_final_stats=1 \
    -artifact_prefix=$crashes/ $scratch tests/fuzz/corpus/$t $(seeds $t) > $log 2>&1 || true
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' $log | tail -1 | grep -o '[0-9]*$' || echo 0)
  found=$(( $(ls $crashes | wc -l) - before ))
  [ "$found" -gt 0 ] && status=1
  rate=$(( secs > 0 ? execs / secs : execs ))
  echo "| $t | $execs | $secs | $found | $rate |" >> $results
  echo "fuzz_$t: $execs executions in $secs s, $found crash(es)$([ "$found" -gt 0 ] && echo ": $(ls -t $crashes | head -1) (log $log)")"
done
echo
cat $results
exit $status
