# Runs libFuzzer on a fresh scratch copy of the hand-written seeds (seed-*) and the
# regression reproducers (the repository's corpus is never written), then prints libFuzzer's
# final statistics. Not the found-* inputs: fuzz_replay runs those in every build, and loading
# all 3245 took libFuzzer 63 s here, which left no time to fuzz. Any crash, leak,
# timeout or invariant failure makes libFuzzer exit non-zero and fails the test; the
# reproducer (crash-*, leak-*, timeout-*) is left in WORK for tests/fuzz/regressions/.
#
# Reproducible: RUNS inputs from a seed taken from the source tree's commit (the first 7 hex
# digits of HEAD; SEED overrides it, 1 without git), so a clean clone of a commit fuzzes
# exactly the inputs CI fuzzes for it, and each commit explores others. SECONDS only caps the
# time on a slow machine (then the run stops early, at a point that depends on the machine).
foreach(v FUZZER CORPUS REGRESSIONS WORK SECONDS RUNS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzzer.cmake: -D${v}= is required")
  endif()
endforeach()
if(NOT DEFINED SEED OR SEED STREQUAL "")
  set(SEED 1)
  execute_process(COMMAND git rev-parse --short=7 HEAD WORKING_DIRECTORY "${CORPUS}"
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE git_rc
                  ERROR_QUIET)
  if(git_rc EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
    math(EXPR SEED "0x${head} + 1")  # 28 bits: fits libFuzzer's unsigned seed; never 0
  endif()
endif()
message(STATUS "fuzz_bounded: -seed=${SEED}, ${RUNS} runs (at most ${SECONDS} s)")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus")
file(GLOB seeds "${CORPUS}/seed-*" "${REGRESSIONS}/crash-*" "${REGRESSIONS}/timeout-*")
file(COPY ${seeds} DESTINATION "${WORK}/corpus")
execute_process(
  COMMAND "${FUZZER}" -seed=${SEED} -runs=${RUNS} -max_total_time=${SECONDS} -timeout=20
          -rss_limit_mb=3072
          -print_final_stats=1 -artifact_prefix=${WORK}/ "${WORK}/corpus"
  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "libFuzzer exited with ${rc}: see the reproducer in ${WORK}")
endif()
