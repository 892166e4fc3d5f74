#!/usr/bin/env bash
# A/B of default mode's GEMM templates on the GPU machine: each case with and without
# --no-gemm-templates, alternating, fresh caches; then the layernorm_gelu rows of cpu_bench.py
# (results in results-cpu-max-autotune.md). Needs the nlohmann headers in .carry/include.
#   tools/bench/ab-templates.sh
set -e
cd "$(dirname "$0")/../.."
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWERSCOPE_GUI=OFF -DLOWERSCOPE_TESTS=OFF -DLOWERSCOPE_JSON_INCLUDE="$PWD/.carry/include" > /dev/null
cmake --build build-bench --target lowerscope-cli > /dev/null
CLI=build-bench/app/lowerscope-cli
for m in layernorm_gelu attn_block mlp; do for t in "" "--train"; do for rep in 1 2 3; do for v in "" "--no-gemm-templates"; do
  d=$(mktemp -d); LOWERSCOPE_CACHE_DIR=$d $CLI compile tests/data/stages/$m/3_core_aten.txt --quiet --no-reference --report $d/r.json $t $v >/dev/null 2>&1 || true
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%-15s %-8s %-20s run %.3f ms  compile %.0f ms' % (sys.argv[2], sys.argv[3], sys.argv[4], r['run_ms'], r['compile_ms']))" $d/r.json $m "${t:-infer}" "${v:-templates}"
done; done; done; done
python3 tools/bench/cpu_bench.py --cli $CLI --only layernorm_gelu 2>&1 | tail -4
