#!/usr/bin/env bash
# The structure rules of docs/design.md, checked on the source tree (CTest: structure.checks,
# label structure):
# each prints what breaks it, and the script fails if any does.
#   check_structure.sh <source dir> [<build dir with compile_commands.json>]
# Without a build dir the function-size check (clang-tidy) is left out.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
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

# 1. The operator is data: an Op::<name> appears only in that operator's own files (its
#    descriptions in src/core/ops/, its kernels and reference kernels: any file of src/ whose
#    name starts with the operator's family, the name less "_grad": permute_*, unpermute_*,
#    ...) and on the lines of the backends' kernel tables ({Op::<name>, ...} in
#    src/*/*_backend.*). is_grad() appears only as Plan::is_grad(), kept for source
#    compatibility (its declaration and definition; nothing calls it inside the library).
op_outside_its_files() {
  grep -rnoE '\bOp::[a-z_]+' src include | while IFS=: read -r file line match; do
    name=${match#Op::}
    family=${name%_grad}
    base=$(basename "$file")
    case "$base" in "$family".* | "$family"_*) [[ $file == src/* ]] && continue ;; esac
    if [[ $file =~ ^src/[a-z]+/[a-z_]+_backend\.(cpp|cu)$ ]] &&
       sed -n "${line}p" "$file" | grep -qE '^\s*\{(detail::)?Op::[a-z_]+,'; then
      continue
    fi
    echo "$file:$line: $match"
  done
  grep -rn 'is_grad()' src include | grep -v 'is_grad() const noexcept'
}
check "operators are named only by their descriptions, kernels and kernel tables" \
  "$(op_outside_its_files)"

# 2. Layering: the core includes no backend header; bench includes no header of tools/
#    (the command is built on bench, not the other way round); the C ABI shim and the core
#    never name CUDA (the device interface does, in src/cuda).
check "core includes no backend header" "$(grep -rn '#include "backend/' src/core)"
check "bench includes no header of tools/" "$(
  for h in tools/*.hpp; do grep -n "#include \"$(basename "$h")\"" bench/* /dev/null; done)"
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

# 5. No function over 80 lines. C++ sources of src/ by clang-tidy's
#    readability-function-size (as compiled in the build's compile_commands.json); headers,
#    CUDA sources and Python everywhere by structure_rules.py (brace matching for C++ and
#    CUDA, the syntax tree for Python).
check "no function over 80 lines in headers, CUDA sources and Python" "$(
  find src include tools bench python tests examples problem_model -type f \
    \( -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.py' \) \
    -not -path '*/corpus/*' -print0 |
    xargs -0 python3 "$here/structure_rules.py" functions 80)"
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

# 7. The Python package's modules import each other in one direction only (no cycle, lazy
#    imports inside functions included).
check "no import cycle among the modules of python/moeperm" "$(
  python3 "$here/structure_rules.py" imports python/moeperm)"

# 8. A CUDA kernel launched with a capped grid (grid_of and the helpers over it) covers its
#    items with a grid- or warp-stride loop: the cap must drop no work (src/cuda/grid_cap.hpp;
#    the GPU tests' small_grids runs check the same at run time, where a GPU is lent).
check "every CUDA kernel given a capped grid loops over it" "$(
  python3 "$here/structure_rules.py" stride_loops src/cuda/*.cu src/cuda/*.cuh)"

exit $failed
