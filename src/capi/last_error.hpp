// The per-thread message behind aclGetRecentErrMsg(), and the one place where an internal
// Status becomes a C status code.
#pragma once

#include <aclnn/acl_meta.h>

#include <string>

#include "core/status.hpp"

namespace moeperm::capi {

void set_last_error(std::string message);
void clear_last_error();

// Records the message of a failed status and returns its code.
inline aclnnStatus report(const detail::Status &s) {
  if (!s.ok()) set_last_error(s.message);
  return static_cast<aclnnStatus>(s.code);
}

// Records `message` and returns `code` (for runtime functions returning aclError).
inline aclError report_acl(aclError code, std::string message) {
  set_last_error(std::move(message));
  return code;
}

}  // namespace moeperm::capi
