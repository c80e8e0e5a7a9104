# moeperm::warnings: the warning set for moeperm's own targets (linked PRIVATE; no global flags).
add_library(moeperm_warnings INTERFACE)
add_library(moeperm::warnings ALIAS moeperm_warnings)
target_compile_options(moeperm_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wpedantic -Wshadow $<$<BOOL:${MOEPERM_WERROR}>:-Werror>>
  # CUDA: the host compiler's warnings through nvcc (not -Wpedantic: nvcc's generated host
  # code uses GNU line directives), and nvcc's own warnings as errors too.
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wshadow
    $<$<BOOL:${MOEPERM_WERROR}>:-Werror=all-warnings -Xcompiler=-Werror>>)
