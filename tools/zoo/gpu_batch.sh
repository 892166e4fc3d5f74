#!/usr/bin/env bash
# One batch of the model zoo on the GPU machine, as one command that fits its time limit:
# builds lowerscope-cli and its kernel worker into build-gpu/ where they are missing, then
#   run I/N        exports the batch's models into $ZOO_DIR and compiles each with our CLI on CPU
#                  and CUDA (tools/zoo/zoo.py run)
#   inductor I/N   eager and torch.compile on CUDA for the same models (tools/zoo/zoo.py inductor)
#   both I/N       run, then inductor in what time is left
# Results: $OUT/run_I_of_N.json, $OUT/inductor_I_of_N.json (rewritten after every model, so a
# command cut by the machine keeps what finished). Copy them into tools/zoo/runs/: the same command
# again skips what they hold (a cut batch resumes). Then make the table here:
#   python3 tools/zoo/zoo.py table --runs 'tools/zoo/runs/run_*.json' --inductor 'tools/zoo/runs/inductor_*.json' \
#       --results tools/zoo/results.md
# ZOO_LIMIT: the machine's limit for one command in seconds (300); every step stops starting work
# 30 s before it. ZOO_JOBS: compiles at once (6). ZOO_DIR: where models are exported (/tmp/zoo).
# Needs the nlohmann headers in .carry/include (cp -r /usr/include/nlohmann .carry/include/).
set -uo pipefail
cd "$(dirname "$0")/../.."
what=${1:?usage: tools/zoo/gpu_batch.sh run|inductor|both I/N}
batch=${2:?usage: tools/zoo/gpu_batch.sh run|inductor|both I/N}
limit=${ZOO_LIMIT:-300}
jobs=${ZOO_JOBS:-6}
dir=${ZOO_DIR:-/tmp/zoo}
out=${OUT:-tools/zoo/runs}
tag=${batch/\//_of_}
mkdir -p "$out" "$dir"
# A batch cut earlier resumes from its results copied into tools/zoo/runs/ ($OUT starts empty).
for f in run inductor; do
  if [ -f "tools/zoo/runs/${f}_$tag.json" ] && [ ! -f "$out/${f}_$tag.json" ]; then cp "tools/zoo/runs/${f}_$tag.json" "$out/"; fi
done
export PYTHONUNBUFFERED=1
left() { echo $((limit - SECONDS - 30)); }

if [ "$what" != inductor ] && [ ! -x build-gpu/app/lowerscope-cli -o ! -x build-gpu/app/lowerscope-runner ]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWERSCOPE_GUI=OFF -DLOWERSCOPE_TESTS=OFF \
    -DLOWERSCOPE_JSON_INCLUDE="$PWD/.carry/include" > build-gpu.log 2>&1 || { tail -30 build-gpu.log; exit 2; }
  cmake --build build-gpu --target lowerscope-cli lowerscope-runner >> build-gpu.log 2>&1 || { tail -40 build-gpu.log; exit 2; }
  echo "built in ${SECONDS} s"
fi

if [ "$what" = run ] || [ "$what" = both ]; then
  budget=$(left)
  [ "$what" = both ] && budget=$((budget * 2 / 3))
  python3 tools/zoo/zoo.py run --models "$dir" --cli build-gpu/app/lowerscope-cli --export --batch "$batch" \
    --jobs "$jobs" --budget "$budget" --out-json "$out/run_$tag.json"
fi
if [ "$what" = inductor ] || [ "$what" = both ]; then
  python3 tools/zoo/zoo.py inductor --models "$dir" --export --batch "$batch" --budget "$(left)" \
    --out-json "$out/inductor_$tag.json"
fi
