#!/usr/bin/env bash
# Builds the ci preset (Release, warnings are errors) and runs the whole CTest suite:
# unit, errors, conformance, capi, examples and packaging. Ends with CTest's summary
# ("100% tests passed, 0 tests failed out of N") and the total time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
cmake --preset ci
cmake --build --preset ci
ctest --preset ci --output-on-failure --no-label-summary
