// The C++ API's shared path (moeperm_api.cpp), for the files that bind an operator family:
// errors as exceptions, inferred outputs, planning, and the one run path.
#pragma once

#include <moeperm/moeperm.hpp>

#include <optional>
#include <span>

#include "core/op_desc.hpp"

namespace moeperm::cxxapi {

void throw_if_failed(const detail::Status &s);

template <class T>
const T *opt(const std::optional<T> &o) {
  return o ? &*o : nullptr;
}

// An integer-array argument as the core takes it.
inline std::optional<std::span<const int64_t>> int_array(
    const std::optional<std::vector<int64_t>> &v) {
  if (!v) return std::nullopt;
  return std::span<const int64_t>(*v);
}

// The outputs the core infers, in the description's order (core/op_desc.hpp).
detail::InferredOutputs inferred(const detail::OperandSet &set);

Plan plan_of(const detail::OperandSet &set, const PlanOptions &options);

// A call's data: the operator it is for, and its pointers at their roles (buffers_of over
// the data in description order).
struct Bound {
  detail::Op op;
  const char *data_name;
  detail::Buffers buffers;
};

// The one run path: synchronous on the host, or enqueued on a device stream; with
// `on_done`, a device run reports its outcome to the callback instead of waiting.
void run_bound(const Plan &plan, const Bound &b, std::span<std::byte> ws, void *stream, bool async,
               RunCallback on_done, void *context);

}  // namespace moeperm::cxxapi
