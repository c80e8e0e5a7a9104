#pragma once

#include <aclnn/acl_meta.h>
#include <moeperm/moeperm.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

// The object behind CANN's opaque aclTensor handle.
struct aclTensor {
  moeperm::TensorDesc desc;        // view dims, strides and offset in elements; storage size
  void *data = nullptr;            // storage base (element 0 of the allocation)
  int32_t format = ACL_FORMAT_ND;  // as passed (C callers may pass any int; see enum_value.hpp)
};

// The object behind CANN's opaque aclIntArray handle.
struct aclIntArray {
  std::vector<int64_t> values;
};

namespace moeperm::capi {

inline const TensorDesc *desc_of(const aclTensor *t) { return t ? &t->desc : nullptr; }
inline void *data_of(const aclTensor *t) { return t ? t->data : nullptr; }
int64_t live_tensors();
int64_t live_int_arrays();
// An integer-array argument as the core sees it (nullopt: not given).
inline std::optional<std::span<const int64_t>> int_array_of(const aclIntArray *a) {
  if (!a) return std::nullopt;
  return std::span<const int64_t>(a->values);
}

}  // namespace moeperm::capi
