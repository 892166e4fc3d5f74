#!/usr/bin/env bash
# Installs what is needed, builds, and opens the app on samples/sincos. Without a display it runs
# the CLI on the same sample and prints the stage table, the kernels and their times.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
MODEL="${1:-samples/sincos}"
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  exec build/app/lowerscope "$MODEL"
fi
build/app/lowerscope-cli compile "$MODEL"
cat <<MSG

No display found, so this ran the command-line tool. To open the window:
  build/app/lowerscope $MODEL                      (on a desktop session)
  xvfb-run -a build/app/lowerscope $MODEL --stage fused --screenshot shot.png   (headless picture)
MSG
