# moeperm::warnings: the warning set for moeperm's own targets (linked PRIVATE; no global flags).
add_library(moeperm_warnings INTERFACE)
add_library(moeperm::warnings ALIAS moeperm_warnings)
target_compile_options(moeperm_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       $<$<BOOL:${MOEPERM_WERROR}>:-Werror>)
