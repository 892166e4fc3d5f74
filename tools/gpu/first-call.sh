#!/usr/bin/env bash
# Session 25's first GPU call: CUDA tests and fixtures, conformance under PyTorch, model traces.
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$O/device.txt"
SECONDS=0
( for w in resnet18 gpt2; do
    rm -rf /tmp/tr_$w; TORCH_TRACE=/tmp/tr_$w python3 tests/data/trace/make_model_traces.py $w > "$O/trace_$w.out" 2>&1
    cat /tmp/tr_$w/*.log > "$O/trace_$w.raw.log" 2>/dev/null
    python3 tests/data/trace/trim_trace.py "$O/trace_$w.raw.log" "$O/trace_$w.log" "$PWD/tests/data/trace" >> "$O/trace_$w.out" 2>&1
  done; echo "traces done at ${SECONDS}s" ) > "$O/traces.txt" 2>&1 &
tools/gpu/test-cuda.sh .carry/fixtures > "$O/test-cuda.txt" 2>&1
echo "test-cuda exit $? after ${SECONDS}s" | tee -a "$O/test-cuda.txt"
grep -E "FAIL|PASS.*Totals|Totals|exit [1-9]|FAILED" "$O/test-cuda.txt" | head -40
tools/gpu/conformance.sh "$O" > "$O/conformance.txt" 2>&1; echo "conformance exit $? after ${SECONDS}s"
head -60 "$O/conformance.txt"
wait
cat "$O/traces.txt"; ls -la "$O"
