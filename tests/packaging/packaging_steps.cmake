# run_step() and expect_in(), shared by the packaging scripts (cmake -P).
# Runs a command; fails with its output unless it exits 0. The output is returned in
# <out_var> when given.
function(run_step name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUTPUT_VARIABLE" "COMMAND")
  message(STATUS "packaging: ${name}")
  execute_process(COMMAND ${arg_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "packaging: ${name} failed (exit ${rc}):\n  ${arg_COMMAND}\n${out}")
  endif()
  if(arg_OUTPUT_VARIABLE)
    set(${arg_OUTPUT_VARIABLE} "${out}" PARENT_SCOPE)
  endif()
endfunction()

function(expect_in text what step)
  string(FIND "${text}" "${what}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "packaging: ${step}: expected '${what}' in its output:\n${text}")
  endif()
endfunction()
