#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds moeperm with its CUDA backend (for this GPU only,
# to build fast), runs the `gpu` tests (the conformance suite on the GPU, bitwise against the
# reference; some suites twice, the second time with every launch capped at 3 blocks so that
# each grid-stride loop takes many steps), a CANN program unchanged on the GPU, the Python tests with CUDA tensors when
# the extension can be built, then `moeperm bench --device cuda` and PyTorch's eager
# composition of the same operators, and prints a short table last. About 3-4 minutes on a
# 16-core H200 machine. Results also go to ${MOEPERM_GPU_OUT:-build/gpu-check}/.
#
# MOEPERM_GPU_SANITIZE=1 (opt-in: it multiplies the tests' time) also runs every gtest-based
# `gpu` test under compute-sanitizer's memcheck and racecheck (logs in the output folder);
# any report fails the script.
#
# GoogleTest is needed for the gpu tests; where it is not installed (no network), give its
# prefix as GTEST_ROOT, or carry .gpu-carry/ (scripts/gpu-carry.sh: GoogleTest and the
# megatron-core wheel, used from there automatically); without it the script says so and
# runs the rest.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${MOEPERM_GPU_OUT:-build/gpu-check}
mkdir -p "$out"
build=build/gpu
status=0
note() { echo "gpu-check: $*"; }

# .gpu-carry/ (scripts/gpu-carry.sh makes it where there is a network): GoogleTest and the
# megatron-core wheel, for a machine that reaches none.
if [[ -z ${GTEST_ROOT:-} && -d .gpu-carry/gtest/usr ]]; then
  GTEST_ROOT=$PWD/.gpu-carry/gtest/usr
fi
if compgen -G ".gpu-carry/wheels/*.whl" >/dev/null && ! python3 -c "import megatron.core" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile .gpu-carry/wheels/*.whl &&
    note "megatron-core installed from .gpu-carry/wheels"
fi

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
arch=${MOEPERM_CUDA_ARCH:-native}
tests=ON
if ! { [[ -n "${GTEST_ROOT:-}" ]] || ls /usr/lib/*/libgtest.a /usr/lib/libgtest.a /usr/local/lib*/libgtest.a >/dev/null 2>&1; }; then
  tests=OFF
  note "GoogleTest not found (set GTEST_ROOT): the gtest-based gpu tests are not built"
fi
python=OFF
python3 -c "import nanobind, torch" 2>/dev/null && python=ON
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEPERM_CUDA=ON \
  -DMOEPERM_CUDA_ARCHITECTURES="$arch" -DMOEPERM_BUILD_TESTS=$tests -DMOEPERM_PYTHON=$python \
  -DPython_EXECUTABLE="$(command -v python3)" ${GTEST_ROOT:+-DGTest_ROOT=$GTEST_ROOT} \
  >"$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
# Only what the checks below run (device time is short): the moeperm command, the Python
# package, and the gpu tests' binaries (gpu.<binary> tests, and gpu_device, whose cases are
# discovered once it is built).
targets=(moeperm_cli)
[[ $python == ON ]] && targets+=(_moeperm moeperm_py_sources)
if [[ $tests == ON ]]; then
  targets+=(gpu_device $(ctest --test-dir "$build" -L gpu --show-only=json-v1 | python3 -c '
import json, sys
names = [t["name"] for t in json.load(sys.stdin)["tests"] if t["name"].startswith("gpu.")]
print(" ".join(sorted({n[4:].removesuffix(".small_grids") for n in names})))'))
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 1; }
note "built ($(grep -c 'Building CUDA' "$out/build.log") CUDA files, arch $arch)"

if [[ $tests == ON ]]; then
  ctest --test-dir "$build" -L gpu -LE python --output-on-failure -j4 2>&1 | tee "$out/ctest-gpu.log" | tail -5
  ((${PIPESTATUS[0]} == 0)) || status=1
fi
# Opt-in: the gtest-based gpu tests (their commands and environment from CTest) under
# compute-sanitizer, memcheck then racecheck. Each line of gpu-tests.cmds is
# "<binary><TAB>env <VAR=value>... @SANITIZER@ <command>".
if [[ ${MOEPERM_GPU_SANITIZE:-0} == 1 && $tests == ON ]]; then
  if command -v compute-sanitizer >/dev/null; then
    ctest --test-dir "$build" -L gpu --show-only=json-v1 >"$out/gpu-tests.json"
    python3 - "$out/gpu-tests.json" >"$out/gpu-tests.cmds" <<'PY'
import json, os, shlex, sys
for t in json.load(open(sys.argv[1]))["tests"]:
    cmd = t.get("command", [])
    if not cmd or "python" in os.path.basename(cmd[0]):
        continue  # the Python tests run below, with their own interpreter
    if t["name"].endswith(".small_grids"):
        continue  # the same kernels as gpu.<binary>, with smaller grids
    env = next((p["value"] for p in t.get("properties", []) if p["name"] == "ENVIRONMENT"), [])
    line = " ".join(shlex.quote(x) for x in ["env", *env]) + " @SANITIZER@ "
    print(os.path.basename(cmd[0]) + "\t" + line + " ".join(shlex.quote(x) for x in cmd))
PY
    for tool in memcheck racecheck; do
      while IFS=$'\t' read -r binary cmd; do
        if ! eval "${cmd/@SANITIZER@/compute-sanitizer --tool $tool --error-exitcode 99}" \
          </dev/null >>"$out/sanitizer-$tool.log" 2>&1; then
          status=1; note "compute-sanitizer $tool: $binary reports errors or fails"
        fi
      done <"$out/gpu-tests.cmds"
      note "compute-sanitizer $tool: done (log: $out/sanitizer-$tool.log)"
    done
  else
    status=1; note "MOEPERM_GPU_SANITIZE=1 but compute-sanitizer is not on PATH"
  fi
fi
if [[ $python == ON ]]; then
  ctest --test-dir "$build" -L python --output-on-failure 2>&1 | tee "$out/ctest-python.log" | tail -3
  ((${PIPESTATUS[0]} == 0)) || status=1
fi
# A CANN program, unchanged, on the GPU (aclrtSetDevice picks it).
if MOEPERM_DEVICE=cuda "$build/tools/moeperm" run --repeat 3 >"$out/run.log" 2>&1; then
  note "moeperm run on the GPU: $(grep '^verified' "$out/run.log" | tail -1)"
else
  status=1; note "moeperm run on the GPU FAILED"; tail -5 "$out/run.log"
fi

"$build/tools/moeperm" bench --device cuda --suite named --runs 30 --json "$out/bench-cuda.json" \
  >"$out/bench-cuda.txt" 2>&1 || { status=1; tail -5 "$out/bench-cuda.txt"; }
torch_json=""
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  python3 scripts/torch_grad_baseline.py >"$out/torch.json" 2>"$out/torch.log" && torch_json="$out/torch.json"
fi

[[ -s $out/bench-cuda.json ]] || exit 1  # the bench failed (its tail is above): no table
python3 - "$out/bench-cuda.json" "$torch_json" <<'PY'
import json, sys
bench = json.load(open(sys.argv[1]))
torch = json.load(open(sys.argv[2])) if sys.argv[2] else {}
print("\n| case | op | moeperm ms | GB/s | D2D copy ms | % of copy bandwidth | bits vs CPU | PyTorch eager ms | speedup |")
print("|---|---|---:|---:|---:|---:|---|---:|---:|")
ops = ("forward", "backward", "unpermute", "unpermute_grad", "ragged_permute",
       "ragged_permute_grad", "ragged_unpermute", "ragged_unpermute_grad", "sort_chunks",
       "sort_chunks_grad")
for c in bench["cases"]:
    for op in (o for o in ops if o in c):
        r = c[op]
        t = torch.get(c["name"], {}).get(op + "_ms")
        diff = r.get("bit_differences_vs_cpu")
        eager = "-" if t is None else "%.3f" % t
        speedup = "-" if t is None else "%.1fx" % (t / r["median_ms"])
        bits = "equal" if diff == 0 else str(diff)
        print("| %s | %s | %.3f | %.0f | %.3f | %.0f%% | %s | %s | %s |" % (
            c["name"], op, r["median_ms"], r["gbps"], r["memcpy_ms"],
            100 / r["ratio_to_memcpy"], bits, eager, speedup))
PY
exit $status
