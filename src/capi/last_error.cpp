#include "capi/last_error.hpp"

namespace moeperm::capi {

// CANN's error message is per thread: a failure on one thread never shows on another.
thread_local std::string t_last_error;

void set_last_error(std::string message) { t_last_error = std::move(message); }
void clear_last_error() { t_last_error.clear(); }

}  // namespace moeperm::capi

extern "C" ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void) {
  return moeperm::capi::t_last_error.c_str();
}
