#!/usr/bin/env bash
# Creates the repository's Python environment .venv (ignored by git) and installs into it
# what building and testing the Python package needs, and nothing that is already there: a
# second run installs nothing and does not touch the network.
#   nanobind, scikit-build-core (build); torch, numpy, ml_dtypes, pytest, megatron-core
#   (tests: moeperm.megatron is checked against Megatron-LM's own functions).
# scripts/test.sh runs this, then builds the extension in the ci preset with
# -DPython_EXECUTABLE=.venv/bin/python. PYTHON picks the interpreter the venv is made from
# (default python3, >= 3.9). PyPI's torch wheel for Linux is the CUDA build (with its
# nvidia-* dependencies the .venv is about 5.4 GB); it runs on machines without a GPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv=.venv
python=${PYTHON:-python3}
# pip requirement -> module to import to check for it.
requirements=("torch>=2.4" "numpy" "ml_dtypes" "pytest" "nanobind>=2.0" "scikit-build-core>=0.10"
  "megatron-core==0.16.1")
modules=(torch numpy ml_dtypes pytest nanobind scikit_build_core megatron.core)

apt_install() {
  echo "install-python-deps: installing $*"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || {
      echo "install-python-deps: need $*; run as root (or install sudo)" >&2
      exit 1
    }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "$@"
}

if [[ ! -x $venv/bin/python ]]; then
  echo "install-python-deps: creating $venv from $(command -v "$python")"
  if ! "$python" -m venv "$venv" 2>/dev/null; then
    rm -rf "$venv"
    apt_install python3-venv  # Debian's python3 ships venv's ensurepip separately
    "$python" -m venv "$venv"
  fi
fi

# The extension compiles against Python.h (Debian's system python3: python3-dev).
if ! "$venv/bin/python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  apt_install python3-dev
fi

missing=()
for i in "${!modules[@]}"; do
  # find_spec of a dotted name imports its parent, which raises when the parent is missing.
  "$venv/bin/python" -c "import importlib.util, sys
try:
    sys.exit(importlib.util.find_spec('${modules[$i]}') is None)
except ModuleNotFoundError:
    sys.exit(1)" || missing+=("${requirements[$i]}")
done
if ((${#missing[@]} == 0)); then
  echo "install-python-deps: all Python dependencies present in $venv (${modules[*]})"
else
  echo "install-python-deps: pip installing ${missing[*]} into $venv"
  "$venv/bin/python" -m pip install --disable-pip-version-check -q "${missing[@]}"
fi
