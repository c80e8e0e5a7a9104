# Every option of the project, with its docstring; a summary is printed at configure end.
option(MOEPERM_BUILD_TESTS "Build the GoogleTest suite" ${PROJECT_IS_TOP_LEVEL})
option(MOEPERM_BUILD_TOOLS "Build the moeperm command (tools/) and its benchmark engine (bench/)"
       ${PROJECT_IS_TOP_LEVEL})
option(MOEPERM_BUILD_EXAMPLES "Build the CANN-style examples" ${PROJECT_IS_TOP_LEVEL})
string(COMPARE NOTEQUAL "${SKBUILD}" "" _moeperm_skbuild)  # pip install . (scikit-build-core)
option(MOEPERM_PYTHON "Build the Python package (nanobind extension, pytest under label python)" ${_moeperm_skbuild})
option(MOEPERM_INSTALL "Generate the install rules and the CMake package" ${PROJECT_IS_TOP_LEVEL})
option(MOEPERM_WERROR "Treat warnings in moeperm's own code as errors (CI presets)" OFF)
set(MOEPERM_SANITIZE "" CACHE STRING "Sanitizers for moeperm and its tests, e.g. address;undefined or thread")
option(MOEPERM_FUZZ "Build the libFuzzer harness (clang): coverage-instrument moeperm, add the fuzz_bounded test" OFF)
set(MOEPERM_FUZZ_RUNS 6000 CACHE STRING "Inputs the fuzz_bounded test runs (about 60 s on 2 cores)")
set(MOEPERM_FUZZ_SEED "" CACHE STRING "fuzz_bounded's libFuzzer seed (empty: from the commit)")
set(MOEPERM_FUZZ_SECONDS 150 CACHE STRING "The most seconds fuzz_bounded may take (a slow machine stops early)")
if(MOEPERM_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "MOEPERM_FUZZ=ON needs clang (libFuzzer); use the fuzz preset")
endif()
set(MOEPERM_CUDA AUTO CACHE STRING "The CUDA backend: AUTO (when nvcc is found), ON (required) or OFF")
set_property(CACHE MOEPERM_CUDA PROPERTY STRINGS AUTO ON OFF)
set(MOEPERM_CUDA_ARCHITECTURES "80-real;90-real;90-virtual" CACHE STRING
    "CUDA architectures of the CUDA backend (default: sm_80, sm_90 and PTX for newer GPUs)")
option(BUILD_SHARED_LIBS "Build libmoeperm as a shared library" ON)

if(PROJECT_IS_TOP_LEVEL AND NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

function(moeperm_print_summary)
  message(STATUS "moeperm ${PROJECT_VERSION}: build type ${CMAKE_BUILD_TYPE}, shared ${BUILD_SHARED_LIBS}, "
                 "tests ${MOEPERM_BUILD_TESTS}, tools ${MOEPERM_BUILD_TOOLS}, examples ${MOEPERM_BUILD_EXAMPLES}, "
                 "werror ${MOEPERM_WERROR}, sanitize '${MOEPERM_SANITIZE}', cuda ${MOEPERM_HAVE_CUDA}")
endfunction()
