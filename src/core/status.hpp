// Internal status: CANN's code plus the message aclGetRecentErrMsg() returns.
// Internals return Status (no exceptions cross threads or the C ABI); the C++ facade
// turns a failed Status into moeperm::Error.
#pragma once

#include <moeperm/moeperm.hpp>

#include <sstream>
#include <string>
#include <utility>

namespace moeperm::detail {

struct [[nodiscard]] Status {
  Code code = Code::ok;
  std::string message;

  bool ok() const noexcept { return code == Code::ok; }
  static Status success() { return {}; }
};

// Concatenates its arguments with operator<< (the one formatting helper of the catalog).
template <class... Args>
std::string cat(const Args &...args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

inline Status fail(Code code, std::string message) { return Status{code, std::move(message)}; }

// Propagates a failed Status out of the enclosing function.
#define MOEPERM_TRY(expr)                  \
  do {                                     \
    ::moeperm::detail::Status s_ = (expr); \
    if (!s_.ok()) return s_;               \
  } while (0)

}  // namespace moeperm::detail
