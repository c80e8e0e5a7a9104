#!/usr/bin/env bash
# Builds the release preset and runs `moeperm run` (forward + backward through the CANN C
# API on a DeepSeek-V3-like layer, verified bitwise against the reference). Arguments go to
# `moeperm run`, e.g.  bash scripts/run.sh --drop-and-pad -C 16 --dtype fp32
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
cmake --preset release
cmake --build --preset release --target moeperm_cli  # just the command: no tests
exec build/release/tools/moeperm run "$@"
