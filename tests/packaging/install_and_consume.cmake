# cmake -P script run by the packaging test. Inputs (-D): BUILD_DIR (the moeperm build
# tree), WORK_DIR (scratch, wiped), CONSUMER_DIR, GENERATOR, CXX_COMPILER, BUILD_TYPE,
# SANITIZE (MOEPERM_SANITIZE of the build: a sanitized libmoeperm needs a sanitized
# consumer). Steps, each failing the test with its output:
#   1. cmake --install BUILD_DIR --prefix WORK_DIR/prefix
#   2. configure + build CONSUMER_DIR against that prefix only (CMAKE_PREFIX_PATH)
#   3. run the consumer
#   4. run the installed `moeperm --help` and a tiny `moeperm run`
cmake_minimum_required(VERSION 3.25)

foreach(var BUILD_DIR WORK_DIR CONSUMER_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "install_and_consume.cmake: -D${var}=... is required")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/packaging_steps.cmake)

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run_step("install into ${prefix}"
         COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

set(configure_args -S ${CONSUMER_DIR} -B ${consumer_build} -G ${GENERATOR}
                   -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
                   -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(BUILD_TYPE)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
endif()
if(SANITIZE)
  string(REPLACE ";" "," san "${SANITIZE}")
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=-fsanitize=${san}"
       "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${san}")
endif()
run_step("configure the consumer" COMMAND ${CMAKE_COMMAND} ${configure_args}
         OUTPUT_VARIABLE out)
expect_in("${out}" "found moeperm" "configure the consumer")
run_step("build the consumer" COMMAND ${CMAKE_COMMAND} --build ${consumer_build})

run_step("run the consumer" COMMAND ${consumer_build}/app OUTPUT_VARIABLE out)
expect_in("${out}" "consumer: ok" "run the consumer")

run_step("run the installed moeperm --help" COMMAND ${prefix}/bin/moeperm --help
         OUTPUT_VARIABLE out)
expect_in("${out}" "usage: moeperm" "moeperm --help")
run_step("run the installed moeperm run (tiny)"
         COMMAND ${prefix}/bin/moeperm run -T 64 -H 32 -E 8 -K 2 OUTPUT_VARIABLE out)
expect_in("${out}" "verified: bitwise identical to the reference" "moeperm run")
message(STATUS "packaging: all steps passed")
