#!/usr/bin/env bash
# Runs the commands the docs show, as written: every fenced block opened with "```sh test" in
# README.md and docs/*.md (other blocks are only shown), each with bash -euo pipefail from the
# repository root, the build's app/ folder first on PATH so that `lowerscope-cli` is the one just
# built. Prints FILE:LINE and PASS or FAIL per block (a failing block's output after it), and
# ends with "N passed, N failed"; exits 1 if any failed.
#   tools/check-docs.sh [BUILD_DIR]     (default: build; ctest's `docs` test passes its build folder)
set -uo pipefail
build=${1:-build}
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
cd "$(dirname "$0")/.."
if [ ! -x "$build/app/lowerscope-cli" ]; then
  echo "check-docs: $build/app/lowerscope-cli not found: build first (tools/build.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi
export PATH="$build/app:$PATH"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Each tested block into $work/N.sh; $work/list gets "N FILE:LINE" (the line of its opening fence).
n=0
for f in README.md docs/*.md; do
  [ -f "$f" ] || continue
  n=$(awk -v file="$f" -v dir="$work" -v n="$n" '
    !inside && /^```/ {
      inside = 1
      info = substr($0, 4); gsub(/^[ \t]+|[ \t]+$/, "", info)
      tested = (info == "sh test")
      if (tested) { n++; out = dir "/" n ".sh"; printf "" > out; print n, file ":" FNR >> (dir "/list") }
      next
    }
    inside && /^```[ \t]*$/ { inside = 0; if (tested) close(out); tested = 0; next }
    inside && tested { print >> out }
    END { print n }
  ' "$f")
done

passed=0 failed=0
if [ "$n" -eq 0 ]; then
  echo "check-docs: no \`\`\`sh test blocks found"
  failed=1
fi
while read -r i where; do
  start=$EPOCHREALTIME
  if timeout 300 bash -euo pipefail "$work/$i.sh" </dev/null >"$work/$i.log" 2>&1; then
    passed=$((passed + 1))
    echo "$where PASS ($(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s)"
  else
    rc=$?
    failed=$((failed + 1))
    echo "$where FAIL (exit $rc)"
    sed 's/^/    | /' "$work/$i.sh"
    echo "    output:"
    tail -n 40 "$work/$i.log" | sed 's/^/    > /'
  fi
done < <([ -f "$work/list" ] && cat "$work/list")

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
