# Runs libFuzzer for SECONDS on a fresh scratch copy of the hand-written seeds (seed-*) and the
# regression reproducers (the repository's corpus is never written), then prints libFuzzer's
# final statistics. Not the found-* inputs: fuzz_replay runs those in every build, and loading
# all 3245 took libFuzzer 63 s here, which left no time to fuzz. Any crash, leak,
# timeout or invariant failure makes libFuzzer exit non-zero and fails the test; the
# reproducer (crash-*, leak-*, timeout-*) is left in WORK for tests/fuzz/regressions/.
foreach(v FUZZER CORPUS REGRESSIONS WORK SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzzer.cmake: -D${v}= is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus")
file(GLOB seeds "${CORPUS}/seed-*" "${REGRESSIONS}/crash-*" "${REGRESSIONS}/timeout-*")
file(COPY ${seeds} DESTINATION "${WORK}/corpus")
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=20 -rss_limit_mb=3072
          -print_final_stats=1 -artifact_prefix=${WORK}/ "${WORK}/corpus"
  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "libFuzzer exited with ${rc}: see the reproducer in ${WORK}")
endif()
