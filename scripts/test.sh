#!/usr/bin/env bash
# Builds the ci preset (Release, warnings are errors) and runs the whole CTest suite:
# unit, errors, conformance, capi, examples, packaging and slow. Ends with CTest's summary
# and, last, one plain line "ctest: P passed, F failed, S skipped" (CTest prints its list of
# skipped tests after its own summary, e.g. AVX-512 variants on a CPU without AVX-512).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
cmake --preset ci
cmake --build --preset ci

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
ctest --preset ci --output-on-failure --no-label-summary 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

summary=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n1 || true)
if [[ -n "$summary" ]]; then
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")
  total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$summary")
  skipped=$(grep -c '(Skipped)' "$log" || true)
  echo "ctest: $((total - failed - skipped)) passed, ${failed} failed, ${skipped} skipped"
fi
exit "$status"
