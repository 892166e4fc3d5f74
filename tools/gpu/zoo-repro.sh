#!/usr/bin/env bash
# Session 26: the rest of the inductor step of zoo batch 3/3 in the background, and beside it the
# zoo's failures brought back for a local look: small models whole (.pt2 unpacked with its .npy
# files), larger ones as the stages our CLI dumps before it fails. One tarball: $OUT/repro.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
SECONDS=0
( OUT=$O ZOO_LIMIT=${INDUCTOR_LIMIT:-560} ZOO_TRACE_MB=8 tools/zoo/gpu_batch.sh inductor 3/3 > "$O/inductor3.txt" 2>&1 ) &
R=/tmp/zoo_rep; mkdir -p $R /tmp/rep
WHOLE="hf_codegen hf_gptj hf_swin hf_bart hf_hubert"
STAGES="timm_levit_128s timm_eva02_tiny_patch14_224 timm_hrnet_w18_small"
for k in 1 2 3; do
  OMP_NUM_THREADS=2 python3 tools/zoo/zoo.py export --out $R --only "$(echo $WHOLE $STAGES | tr ' ' ,)" --part $k/3 > $R/_exp_$k.txt 2>&1 &
done
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWERSCOPE_GUI=OFF -DLOWERSCOPE_TESTS=OFF \
  -DCMAKE_PREFIX_PATH=$PWD/.carry/onnx -DLOWERSCOPE_JSON_INCLUDE="$PWD/.carry/include" > /tmp/b.log 2>&1
cmake --build build-gpu --target lowerscope-cli lowerscope-runner >> /tmp/b.log 2>&1 || tail -20 /tmp/b.log
echo "built at ${SECONDS}s"
while pgrep -f "zoo.py export --out $R" > /dev/null; do sleep 2; done
echo "exported at ${SECONDS}s"; cat $R/_exp_*.txt | grep -v "^\[" | grep -v Warning | tail -20
CLI=$PWD/build-gpu/app/lowerscope-cli
for m in $WHOLE $STAGES; do
  u=$(python3 -c "import sys; sys.path.insert(0, 'tools/zoo'); import zoo; print(zoo.prepare('$R', '$m'))")
  mkdir -p /tmp/rep/$m
  timeout 120 $CLI compile $u/model.pt2 --device cpu --no-run --no-reference --dump /tmp/rep/$m/inference > /tmp/rep/$m/inference.txt 2>&1
  timeout 120 $CLI compile $u/model.pt2 --device cpu --train --no-run --no-reference --dump /tmp/rep/$m/train > /tmp/rep/$m/train.txt 2>&1
  [ -f $R/$m/model.onnx ] && timeout 120 $CLI compile $R/$m/model.onnx --device cuda --no-run --no-reference --dump /tmp/rep/$m/onnx > /tmp/rep/$m/onnx.txt 2>&1
  case " $WHOLE " in *" $m "*) mkdir -p /tmp/rep/$m/model && cp -r $u/* /tmp/rep/$m/model/ ;; esac
  # keep the stages up to the fused one (the asm/source stages are large)
  find /tmp/rep/$m -name '*.cu' -o -name '*.cpp' -o -name '*.ptx' -o -name '*.s' -o -name '*.o' -o -name '*.so' -o -name '*.cubin' -o -name 'report.html' | xargs rm -f
  echo "$m: $(tail -c 300 /tmp/rep/$m/train.txt | tr '\n' ' ')"
done
tar czf "$O/repro.tgz" -C /tmp rep; ls -la "$O/repro.tgz"
wait
echo "all done at ${SECONDS}s"; tail -c 600 "$O/inductor3.txt"
