#!/usr/bin/env bash
# Installs what building and testing moeperm needs on Debian/Ubuntu, and nothing that is
# already there: a second run installs nothing and does not touch the network.
#   cmake (>= 3.25), ninja-build, g++ (GCC ships OpenMP as libgomp, a dependency of gcc),
#   libgtest-dev + libgmock-dev (tests), libbenchmark-dev (bench), clang-format (style),
#   clang-tidy (structure.checks: function sizes);
#   clang + libclang-rt-dev (libFuzzer, the fuzz preset's sanitizers) and libomp-dev (LLVM
#   OpenMP with Archer, for clang builds: the fuzz and tsan presets).
set -euo pipefail

packages=(cmake ninja-build g++ libgtest-dev libgmock-dev libbenchmark-dev clang-format
          clang-tidy clang libclang-rt-dev libomp-dev)

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all dependencies present (${packages[*]})"
else
  echo "install-deps: installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "install-deps: missing ${missing[*]}; run this script as root (or install sudo)" >&2
    exit 1
  fi
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
fi

# CMakePresets.json (workflow presets) needs CMake 3.25.
cmake_version=$(cmake --version | head -n1 | awk '{print $3}')
if ! printf '3.25.0\n%s\n' "$cmake_version" | sort -V -C; then
  echo "install-deps: CMake ${cmake_version} is too old; moeperm needs 3.25 or newer" >&2
  exit 1
fi
