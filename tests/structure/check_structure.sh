#!/usr/bin/env bash
# The structure rules of docs/design.md, checked on the source tree (issue 11's checks):
# each prints what breaks it, and the script fails if any does.
#   check_structure.sh <source dir> [<build dir with compile_commands.json>]
# Without a build dir the function-size check (clang-tidy) is left out.
set -uo pipefail
src=${1:?source dir}
build=${2:-}
cd "$src"
failed=0
check() {  # check <name> <violations...>: no output means the rule holds
  local name=$1 out=$2
  if [[ -n "$out" ]]; then
    echo "FAIL $name:"
    sed 's/^/  /' <<<"$out"
    failed=1
  else
    echo "ok   $name"
  fi
}

# 1. The operator is data: Op::* and is_grad() appear only in the operator descriptions
#    (src/core/ops), the kernels (src/*/permute_*), the entries of the backends' kernel
#    tables, and Plan::is_grad(), kept for source compatibility (its declaration and
#    definition; nothing calls it inside the library).
check "operators are named only by their descriptions, kernels and kernel tables" "$(
  grep -rn 'Op::permute\|is_grad()' src include |
    grep -v '^src/core/ops/' |
    grep -v '^src/[a-z]*/permute_[a-z_]*\.\(cpp\|cu\|hpp\|cuh\):' |
    grep -Ev '^src/[a-z]*/[a-z_]*_backend\.(cpp|cu):[0-9]+:\s*\{(detail::)?Op::[a-z_]+,' |
    grep -v 'is_grad() const noexcept')"

# 2. Layering: the core includes no backend header; bench includes no tools header; the
#    C ABI shim and the core never name CUDA (the device interface does, in src/cuda).
check "core includes no backend header" "$(grep -rn '#include "backend/' src/core)"
check "bench does not include the problem model of tools" "$(grep -n 'problem.hpp' bench/*)"
check "src/capi and src/core do not name cuda" "$(
  grep -rn --include='*.cpp' --include='*.hpp' --include='*.h' 'cuda' src/capi src/core)"

# 2b. Devices sit behind the device interface: outside src/cuda only the registry's line
#     names CUDA (and the public C++ API's cuda_built() / cuda_device_count(), kept for
#     source compatibility).
check "outside src/cuda only the registry names cuda" "$(
  grep -rn --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.cu' 'cuda' src |
    grep -v '^src/cuda/' | grep -v '^src/backend/registry.cpp:' |
    grep -v '^src/cxxapi/moeperm_api.cpp:[0-9]*:\(bool cuda_built\|int cuda_device_count\)')"

# 3. Tests reach backends as parameters, not by name.
check "conformance tests do not pin Backend::cpu" "$(grep -rn 'Backend::cpu' tests/conformance)"

# 4. Sizes: no code file over 400 lines.
check "no code file over 400 lines" "$(
  find src include tools bench python tests examples -type f \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \
       -o -name '*.c' -o -name '*.py' \) -not -path '*/corpus/*' -not -path '*/regressions/*' \
    -print0 | xargs -0 wc -l | awk '$2 != "total" && $1 > 400 { print $2 ": " $1 " lines" }')"

# 5. No library function over 80 lines (clang-tidy's readability-function-size; host C++
#    sources of src/, as compiled in the build's compile_commands.json).
if [[ -n "$build" ]]; then
  if ! command -v clang-tidy >/dev/null || [[ ! -f "$build/compile_commands.json" ]]; then
    check "no library function over 80 lines" "clang-tidy or $build/compile_commands.json missing"
  else
    config=$(mktemp)
    trap 'rm -f "$config"' EXIT
    printf "Checks: '-*,readability-function-size'\nCheckOptions:\n  - key: readability-function-size.LineThreshold\n    value: '80'\n" >"$config"
    check "no library function over 80 lines" "$(
      find src -name '*.cpp' -print0 |
        xargs -0 -n 4 -P "$(nproc)" clang-tidy -p "$build" --config-file="$config" --quiet 2>/dev/null |
        grep -A1 'readability-function-size' | grep -E 'warning|note')"
  fi
fi

# 6. Every Note is defined once, in src/core/notes.md, and every Note that code names is
#    defined there.
check "every Note is defined once in src/core/notes.md" "$(
  grep -o '^## Note \[[^]]*\]' src/core/notes.md | sort | uniq -d | sed 's/^/defined twice: /'
  grep -rhoI 'Note \[[^]]*\]' src include tools bench tests python examples docs |
    sort -u | while read -r note; do
      grep -qF "## $note" src/core/notes.md || echo "not defined in notes.md: $note"
    done
  grep -rnIE '// *Note \[[^]]*\]:' src include tools bench tests python examples |
    sed 's/^/defined in code: /')"

exit $failed
