#!/usr/bin/env bash
# Where the host's time goes when a CUDA run is launched kernel by kernel (no graph): the floors
# (tools/gpu/launch_floor.cpp: a driver launch, a cuBLAS product, a cuBLASLt product with its bias,
# built against an exported package's runtime), then each fixture's run table, whose "host us"
# column is the host's median time to issue each kernel.
#   tools/gpu/host-cost.sh FIXTURES_DIR [CASE...]     (after tools/gpu/build.sh)
set -uo pipefail
cd "$(dirname "$0")/../.."
FIX=${1:?usage: tools/gpu/host-cost.sh FIXTURES_DIR [CASE...]}
shift
CLI=build-gpu/app/lowerscope-cli
work=$(mktemp -d)
cp -r "$FIX" "$work/fixtures"
for f in "$work"/fixtures/*/model.pt2; do
  python3 -c "import sys, zipfile, os; f=sys.argv[1]; os.rename(f, f + '.zip'); zipfile.ZipFile(f + '.zip').extractall(f); os.remove(f + '.zip')" "$f"
done
$CLI export "$work/fixtures/mlp" --device cuda --out "$work/pkg" > /dev/null || exit 2
g++ -O2 -std=c++17 -I "$work/pkg" -I /usr/local/cuda/include tools/gpu/launch_floor.cpp -L /usr/local/cuda/lib64 \
  -lcuda -lcublas -lcublasLt -o "$work/launch_floor" || exit 2
echo "== floors"
"$work/launch_floor" "$work/pkg"
for c in "${@:-mlp res_block cifar_net attn_block}"; do
  for m in $c; do
    echo "== $m"
    $CLI compile "$work/fixtures/$m" --device cuda 2>&1 | sed -n '/^kernel /,/whole model/p'
  done
done
rm -rf "$work"
