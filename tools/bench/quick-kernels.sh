#!/usr/bin/env bash
# A quick look at where CPU time goes, kernel by kernel, for a few fixture graphs (the GPU
# machine's 16 cores; external compiler path): tools/bench/quick-kernels.sh [TOP=N]
set -e
cd "$(dirname "$0")/../.."
[ -d build-bench ] || cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWERSCOPE_GUI=OFF -DLOWERSCOPE_TESTS=OFF \
  -DLOWERSCOPE_JSON_INCLUDE="$PWD/.carry/include" > /dev/null
cmake --build build-bench --target lowerscope-cli > /dev/null
for M in mobilenet_v3_small cifar_net softmax attn_block layernorm_gelu; do
  G=tests/data/stages/$M/3_core_aten.txt
  build-bench/app/lowerscope-cli compile $G --external-compiler --no-reference > /tmp/o.txt 2>&1
  echo "== $M $(grep whole /tmp/o.txt)"
  grep -E "^(extern|cpp)" /tmp/o.txt | sed -E 's/(generated|library)/ \1/' | awk '{ if ($1 ~ /^extern_conv/) e+=$3; else if ($1 ~ /^extern/) x+=$3; else g+=$3; n+=1 } END {print "  conv", e, "other library", x, "generated", g, "kernels", n}'
  grep -E "^(extern|cpp)" /tmp/o.txt | sed -E 's/(generated|library)/ \1/' | sort -k3 -g -r | head -${TOP:-4} | cut -c1-110
done
