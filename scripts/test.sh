#!/usr/bin/env bash
# Builds and runs the whole CTest suite twice: the ci preset (Release, warnings are errors)
# and the asan preset (AddressSanitizer + UndefinedBehaviorSanitizer, LeakSanitizer on);
# then the fuzz preset (clang, libFuzzer + ASan + UBSan) builds the fuzz harness and runs the
# label `fuzz`: the corpus replay and fuzz_bounded, libFuzzer on 6000 inputs seeded by the commit.
# Labels: unit, errors, conformance, capi, robustness, fuzz, python, gpu, example, packaging,
# structure (the source-tree rules of docs/design.md; ci preset only), slow. Ends with CTest's
# summaries and, last, one plain line "ctest: P passed, F failed, S skipped" over both runs
# (CTest prints its list of skipped tests after its own summary, e.g. AVX-512 variants on a
# CPU without AVX-512). MOEPERM_SKIP_ASAN=1 leaves out the asan preset, MOEPERM_SKIP_FUZZ=1
# the fuzz preset. (The tsan preset is not run here, for time: README "Robustness".)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
# The Python package (label python) builds and runs in the ci preset, with .venv's Python;
# MOEPERM_SKIP_PYTHON=1 leaves it out (no .venv, no download).
python_args=(-DMOEPERM_PYTHON=OFF)
if [[ "${MOEPERM_SKIP_PYTHON:-0}" != 1 ]]; then
  bash scripts/install-python-deps.sh
  python_args=(-DMOEPERM_PYTHON=ON "-DPython_EXECUTABLE=$PWD/.venv/bin/python")
fi

presets=(ci)
[[ "${MOEPERM_SKIP_ASAN:-0}" == 1 ]] || presets+=(asan)
[[ "${MOEPERM_SKIP_FUZZ:-0}" == 1 ]] || presets+=(fuzz)

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for preset in "${presets[@]}"; do
  echo "=== preset ${preset}: configure, build, test"
  if [[ "$preset" == ci ]]; then
    cmake --preset "$preset" "${python_args[@]}"
  else  # a sanitized extension would need the sanitizer runtimes preloaded into Python
    cmake --preset "$preset" -DMOEPERM_PYTHON=OFF
  fi
  cmake --build --preset "$preset"
  set +e
  ctest --preset "$preset" --output-on-failure --no-label-summary 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  set -e
  ((rc == 0)) || status=$rc
done

total=0 failed=0
while read -r f n; do
  failed=$((failed + f)) total=$((total + n))
done < <(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" |
         sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1 \2/')
skipped=$(grep -c '(Skipped)' "$log" || true)
gpu_skipped=$(grep -cE ' - gpu[._][^ ]* \(Skipped\)' "$log" || true)
if ((gpu_skipped > 0)); then
  echo "note: ${gpu_skipped} gpu tests skipped: no CUDA GPU here (label gpu; scripts/gpu-check.sh runs them on a GPU)"
fi
echo "ctest: $((total - failed - skipped)) passed, ${failed} failed, ${skipped} skipped"
exit "$status"
