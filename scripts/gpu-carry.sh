#!/usr/bin/env bash
# Prepares .gpu-carry/ here, for a GPU machine that reaches no network (the device tool's
# machines): GoogleTest in its /usr layout (headers, static libraries and CMake package:
# relocatable, so GTEST_ROOT=.gpu-carry/gtest/usr finds it) for the gpu tests, and
# megatron-core's wheel for Python 3.12 (the machine's) for the Megatron dispatcher test on
# the GPU. About 5 MB.
# scripts/gpu-check.sh uses .gpu-carry/ when it is there. The folder is ignored by git: name
# it in the device run's `carry`, e.g.
#   run(command="MOEPERM_GPU_OUT=$OUT bash scripts/gpu-check.sh", carry=[".gpu-carry"])
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dst=.gpu-carry
rm -rf "$dst"
mkdir -p "$dst/gtest" "$dst/wheels"
lib=usr/lib/$(gcc -print-multiarch)
(cd / && tar -cf - usr/include/gtest usr/include/gmock "$lib"/libgtest*.a "$lib"/libgmock*.a \
  "$lib/cmake/GTest") | tar -C "$dst/gtest" -xf -
python=${PYTHON:-.venv/bin/python}
[[ -x $python ]] || python=python3
# The machine's Python is 3.12; megatron-core's own requirements (torch, numpy, packaging)
# are there already.
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
  -d "$dst/wheels" "megatron-core==0.16.1"
du -sh "$dst" | sed 's/^/gpu-carry: /'
