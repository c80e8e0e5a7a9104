// moeperm: symbol visibility. The library is built with hidden visibility; only what is
// marked MOEPERM_API (the C++ API) and ACL_FUNC_VISIBILITY (the CANN C API) is exported.
#pragma once

#if defined(_WIN32)
#define MOEPERM_API
#else
#define MOEPERM_API __attribute__((visibility("default")))
#endif
