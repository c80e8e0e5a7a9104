# moeperm::sanitizers: -fsanitize=<MOEPERM_SANITIZE> for compile and link.
add_library(moeperm_sanitizers INTERFACE)
add_library(moeperm::sanitizers ALIAS moeperm_sanitizers)
if(MOEPERM_SANITIZE)
  list(JOIN MOEPERM_SANITIZE "," _moeperm_san)
  target_compile_options(moeperm_sanitizers INTERFACE -fsanitize=${_moeperm_san} -fno-omit-frame-pointer
                         -fno-sanitize-recover=all)
  target_link_options(moeperm_sanitizers INTERFACE -fsanitize=${_moeperm_san})
endif()
