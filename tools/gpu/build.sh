#!/usr/bin/env bash
# Builds lowerscope-cli and tests/cuda's test_cuda on the GPU machine (no Qt, LLVM headers, libzip
# or nlohmann-json there) into build-gpu/, and copies tests/data to build-gpu/data with every
# model.pt2 unpacked into a folder of the same name (the build may lack libzip). Then
#   LS_TEST_DATA=$PWD/build-gpu/data build-gpu/tests/cuda/test_cuda [CASE TEXT]
# Needs the nlohmann headers in .carry/include (cp -r /usr/include/nlohmann .carry/include/).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWERSCOPE_GUI=OFF -DLOWERSCOPE_TESTS=OFF \
  -DLOWERSCOPE_CUDA_TESTS=ON $( [ -d .carry/onnx ] && echo "-DCMAKE_PREFIX_PATH=$PWD/.carry/onnx" ) -DLOWERSCOPE_JSON_INCLUDE="$ROOT/.carry/include" > build-gpu.log 2>&1 || { cat build-gpu.log; exit 2; }
cmake --build build-gpu >> build-gpu.log 2>&1 || { tail -40 build-gpu.log; exit 2; }
rm -rf build-gpu/data && cp -r tests/data build-gpu/data
find build-gpu/data -name '*.pt2' -type f -not -path '*/bad/*' | while read -r f; do
  python3 -c "import sys, zipfile, os; f=sys.argv[1]; os.rename(f, f + '.zip'); zipfile.ZipFile(f + '.zip').extractall(f); os.remove(f + '.zip')" "$f"
done
