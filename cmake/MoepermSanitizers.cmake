# moeperm::sanitizers: -fsanitize=<MOEPERM_SANITIZE> for compile and link.
add_library(moeperm_sanitizers INTERFACE)
add_library(moeperm::sanitizers ALIAS moeperm_sanitizers)
if(MOEPERM_SANITIZE)
  list(JOIN MOEPERM_SANITIZE "," _moeperm_san)
  # C and C++ only: nvcc takes no -fsanitize (sanitizer builds configure MOEPERM_CUDA=OFF).
  target_compile_options(moeperm_sanitizers INTERFACE
    $<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${_moeperm_san} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  target_link_options(moeperm_sanitizers INTERFACE -fsanitize=${_moeperm_san})
endif()
# The fuzz build: every moeperm target gets libFuzzer's coverage instrumentation; only the
# harness links libFuzzer itself (tests/fuzz).
if(MOEPERM_FUZZ)
  target_compile_options(moeperm_sanitizers INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)
  target_link_options(moeperm_sanitizers INTERFACE -fsanitize=fuzzer-no-link)
endif()
