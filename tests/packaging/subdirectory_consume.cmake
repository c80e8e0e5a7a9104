# cmake -P script run by the packaging.add_subdirectory test. Inputs (-D): SOURCE_DIR (the
# moeperm source tree), WORK_DIR (scratch, wiped), CONSUMER_DIR, GENERATOR, C_COMPILER,
# CXX_COMPILER, BUILD_TYPE, CUDA (MOEPERM_CUDA for the subproject: the build's own choice),
# SHARED (BUILD_SHARED_LIBS), SANITIZE (MOEPERM_SANITIZE of the build, applied to the whole
# consumer build). Steps, each failing the test with its output:
#   1. configure CONSUMER_DIR, which add_subdirectory()s SOURCE_DIR and sets no moeperm option
#   2. build it (the library and the consumer only)
#   3. run the consumer
cmake_minimum_required(VERSION 3.25)

foreach(var SOURCE_DIR WORK_DIR CONSUMER_DIR GENERATOR C_COMPILER CXX_COMPILER CUDA SHARED)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "subdirectory_consume.cmake: -D${var}=... is required")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/packaging_steps.cmake)

set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(configure_args -S ${CONSUMER_DIR} -B ${consumer_build} -G ${GENERATOR}
                   -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
                   -DMOEPERM_SOURCE_DIR=${SOURCE_DIR} -DMOEPERM_CUDA=${CUDA}
                   -DBUILD_SHARED_LIBS=${SHARED})
if(BUILD_TYPE)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
endif()
if(SANITIZE)
  string(REPLACE ";" "," san "${SANITIZE}")
  list(APPEND configure_args "-DCMAKE_C_FLAGS=-fsanitize=${san}" "-DCMAKE_CXX_FLAGS=-fsanitize=${san}"
       "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${san}" "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=${san}")
endif()
run_step("configure the add_subdirectory consumer" COMMAND ${CMAKE_COMMAND} ${configure_args}
         OUTPUT_VARIABLE out)
expect_in("${out}" "moeperm added as a subdirectory: the library only"
          "configure the add_subdirectory consumer")
expect_in("${out}" "tools OFF" "configure the add_subdirectory consumer")
run_step("build the add_subdirectory consumer" COMMAND ${CMAKE_COMMAND} --build ${consumer_build})

# Under ThreadSanitizer the consumer has no Archer (only MOEPERM_SANITIZE=thread links it, and
# this project sets no moeperm option), so TSan cannot see OpenMP's synchronisation and
# reports false races: one thread, as moeperm's configure warning advises.
set(run_env)
if(SANITIZE MATCHES "thread")
  set(run_env ${CMAKE_COMMAND} -E env MOEPERM_NUM_THREADS=1)
endif()
run_step("run the add_subdirectory consumer" COMMAND ${run_env} ${consumer_build}/app
         OUTPUT_VARIABLE out)
expect_in("${out}" "consumer: ok" "run the add_subdirectory consumer")
message(STATUS "packaging: all steps passed")
