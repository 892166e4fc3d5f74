#!/usr/bin/env bash
# Issue 36: the CPU kernels' times in the worker process (the default) against the in-process path
# (--in-process), one build, alternating runs of each case; prints per case the median over the
# rounds of the whole-model time (run_ms: the executor's median of repeated runs, taken inside
# whichever process ran the kernels) and of the run stage's wall time (spawn, load, run, benchmark
# and read back for the worker).
#   tools/bench/isolation-ab.sh [CLI] [ROUNDS] [extra lowerscope-cli options, e.g. --external-compiler]
set -euo pipefail
cd "$(dirname "$0")/../.."
CLI=${1:-build/app/lowerscope-cli}; ROUNDS=${2:-5}; shift $(( $# > 2 ? 2 : $# )) || true
EXTRA=("$@")
CASES=${CASES:-"sincos softmax layernorm_gelu mlp attn_block res_block cifar_net mobilenet_v3_small"}
TMP=$(mktemp -d)
printf "%-26s %12s %12s %8s %14s %14s\n" case "in-process" worker ratio "stage in-proc" "stage worker"
for c in $CASES; do for t in "" "--train"; do
  [ "$c" = mobilenet_v3_small ] && [ -n "$t" ] && continue
  rm -f "$TMP"/*.json
  for r in $(seq "$ROUNDS"); do
    for side in in worker; do
      flag=""; [ $side = in ] && flag=--in-process
      $CLI $flag compile "tests/data/stages/$c/3_core_aten.txt" $t --quiet --no-reference "${EXTRA[@]}" --report "$TMP/$side.$r.json" > /dev/null 2> "$TMP/err" || { echo "$c $t $side failed:" >&2; head -3 "$TMP/err" >&2; }
    done
  done
  python3 - "$c${t:+ train}" "$TMP" "$ROUNDS" <<'PY'
import json, statistics, sys
name, tmp, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def med(side, key):
    vals = []
    for r in range(1, rounds + 1):
        try:
            j = json.load(open(f"{tmp}/{side}.{r}.json"))
        except Exception:
            continue
        if key == "run_ms":
            vals.append(j["run_ms"])
        else:
            vals += [s["ms"] for s in j["stages"] if s["name"] == "run"]
    return statistics.median(vals) if vals else float("nan")
a, b = med("in", "run_ms"), med("worker", "run_ms")
print("%-26s %12.4f %12.4f %8.3f %14.1f %14.1f" % (name, a, b, b / a if a else float("nan"), med("in", "stage"), med("worker", "stage")))
PY
done; done
rm -rf "$TMP"
