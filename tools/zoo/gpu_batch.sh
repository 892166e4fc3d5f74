#!/usr/bin/env bash
# One batch of the model zoo on the GPU machine, as one command that fits its time limit:
#   run I/N        exports the batch's models into $ZOO_DIR (.pt2, .onnx with ONNX Runtime's output,
#                  PyTorch's gradients) and compiles each with our CLI: pt2/onnx on CPU and CUDA, and
#                  training steps (tools/zoo/zoo.py run; builds lowerscope-cli into build-gpu/ first
#                  where it is missing)
#   inductor I/N   eager and torch.compile on CUDA for the same models (tools/zoo/zoo.py inductor),
#                  under TORCH_TRACE; then each model's records of that log, trimmed, appended to one
#                  corpus log (tools/zoo/zoo.py trace), and, where the CLI is already built (a warm
#                  machine after `run`), our compile of its Dynamo graphs in what time is left
#   trace I/N      our compile of the corpus's graphs (lowerscope-cli trace per model), resumed from
#                  the corpus and JSON copied into tools/zoo/runs/; builds the CLI where missing
#   both I/N       run, then inductor in what time is left
# Results in $OUT: run_I_of_N.json, inductor_I_of_N.json, zoo_trace_I_of_N.log (the corpus, under
# ZOO_TRACE_MB, default 19) and zoo_trace_I_of_N.json (its spans per model, our compiles), each
# rewritten as it goes, so a command cut by the machine keeps what finished. Copy them into
# tools/zoo/runs/: the same command again skips what they hold (a cut batch resumes). Then make the
# table here:
#   python3 tools/zoo/zoo.py table --runs 'tools/zoo/runs/run_*.json' --inductor 'tools/zoo/runs/inductor_*.json' \
#       --traces 'tools/zoo/runs/zoo_trace_*.json' --results tools/zoo/results.md
# ZOO_LIMIT: the machine's limit for one command in seconds (300); every step stops starting work
# 30 s before it. ZOO_JOBS: compiles at once (6). ZOO_DIR: where models are exported (/tmp/zoo).
# ZOO_KINDS: what `run` compiles (default all: pt2/cuda,pt2/cpu,onnx/cuda,onnx/cpu,train/cuda,train/cpu,
# queued in that order). ZOO_ONLY: sources or model names (--only; e.g. a smoke test of a few models
# with batch 1/1, whose files are then named *_1_of_1.*). ZOO_TRACE=0: the inductor step without TORCH_TRACE (its compile times
# then carry no logging).
# Needs the nlohmann headers in .carry/include (cp -r /usr/include/nlohmann .carry/include/).
set -uo pipefail
cd "$(dirname "$0")/../.."
usage="usage: tools/zoo/gpu_batch.sh run|inductor|trace|both I/N"
what=${1:?$usage}
batch=${2:?$usage}
limit=${ZOO_LIMIT:-300}
jobs=${ZOO_JOBS:-6}
dir=${ZOO_DIR:-/tmp/zoo}
kinds=${ZOO_KINDS:-pt2/cuda,pt2/cpu,onnx/cuda,onnx/cpu,train/cuda,train/cpu}
out=${OUT:-tools/zoo/runs}
tag=${batch/\//_of_}
cli=build-gpu/app/lowerscope-cli
mkdir -p "$out" "$dir"
# A batch cut earlier resumes from its results copied into tools/zoo/runs/ ($OUT starts empty).
for f in "run_$tag.json" "inductor_$tag.json" "zoo_trace_$tag.json" "zoo_trace_$tag.log"; do
  if [ -f "tools/zoo/runs/$f" ] && [ ! -f "$out/$f" ]; then cp "tools/zoo/runs/$f" "$out/"; fi
done
export PYTHONUNBUFFERED=1
left() { local s=$((limit - SECONDS - 30)); echo $((s > 1 ? s : 1)); }
built() { [ -x $cli ] && [ -x build-gpu/app/lowerscope-runner ]; }
build() {
  built && return 0
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWERSCOPE_GUI=OFF -DLOWERSCOPE_TESTS=OFF \
    $( [ -d .carry/onnx ] && echo "-DCMAKE_PREFIX_PATH=$PWD/.carry/onnx" ) -DLOWERSCOPE_JSON_INCLUDE="$PWD/.carry/include" > build-gpu.log 2>&1 || { tail -30 build-gpu.log; exit 2; }
  cmake --build build-gpu --target lowerscope-cli lowerscope-runner >> build-gpu.log 2>&1 || { tail -40 build-gpu.log; exit 2; }
  echo "built in ${SECONDS} s"
}
trace_step() {  # $1: the CLI, or "" for the corpus alone
  python3 tools/zoo/zoo.py trace --models "$dir" --inductor "$out/inductor_$tag.json" --out-log "$out/zoo_trace_$tag.log" \
    --out-json "$out/zoo_trace_$tag.json" --cli "$1" --device "${ZOO_TRACE_DEVICE:-cuda}" --jobs "$jobs" --budget "$(left)" --max-mb "${ZOO_TRACE_MB:-19}"
}

case "$what" in run|inductor|trace|both) ;; *) echo "$usage" >&2; exit 2 ;; esac
# Exports run first, ZOO_EXPORT_JOBS processes at once (4), beside the build: each model's export
# (torch.export, the ONNX export, ONNX Runtime, gradients) is single-threaded Python for the most part.
if [ "$what" != trace ] && [ "${ZOO_EXPORT_JOBS:-4}" -gt 0 ]; then
  ej=${ZOO_EXPORT_JOBS:-4}
  for k in $(seq 1 "$ej"); do
    OMP_NUM_THREADS=$(( $(nproc) / ej > 0 ? $(nproc) / ej : 1 )) python3 tools/zoo/zoo.py export --out "$dir" --batch "$batch" \
      --only "${ZOO_ONLY:-}" --part "$k/$ej" --budget "$(( limit / 2 ))" > "$dir/_export_${tag}_$k.txt" 2>&1 &
  done
fi
if [ "$what" = run ] || [ "$what" = both ] || [ "$what" = trace ]; then build; fi
wait
[ "$what" != trace ] && cat "$dir"/_export_"${tag}"_*.txt 2>/dev/null | grep -v "^\[" | tail -n 200
echo "exported by ${SECONDS} s"

if [ "$what" = run ] || [ "$what" = both ]; then
  budget=$(left)
  [ "$what" = both ] && budget=$((budget * 2 / 3))
  python3 tools/zoo/zoo.py run --models "$dir" --cli $cli --export --batch "$batch" --only "${ZOO_ONLY:-}" --kinds "$kinds" \
    --jobs "$jobs" --budget "$budget" --out-json "$out/run_$tag.json"
fi
if [ "$what" = inductor ] || [ "$what" = both ]; then
  if [ "${ZOO_TRACE:-1}" != 0 ]; then
    # TORCH_TRACE is read when torch is imported: set here, for the inductor process. The raw log
    # stays outside $OUT (it holds every record, hundreds of MB); the trimmed corpus goes there.
    export TORCH_TRACE="$dir/_torch_trace_$tag"
    mkdir -p "$TORCH_TRACE"
  fi
  python3 tools/zoo/zoo.py inductor --models "$dir" --export --batch "$batch" --only "${ZOO_ONLY:-}" --budget "$(( $(left) > 41 ? $(left) - 40 : 1 ))" \
    --out-json "$out/inductor_$tag.json"
  unset TORCH_TRACE
  if [ "${ZOO_TRACE:-1}" != 0 ]; then
    if built; then trace_step $cli; else trace_step ""; fi
  fi
fi
if [ "$what" = trace ]; then
  [ -f "$out/zoo_trace_$tag.json" ] || { echo "no zoo_trace_$tag.json in tools/zoo/runs/: run 'inductor $batch' first" >&2; exit 2; }
  trace_step $cli
fi
