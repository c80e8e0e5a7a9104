#pragma once

#include <aclnn/acl_meta.h>
#include <moeperm/moeperm.hpp>

// The object behind CANN's opaque aclTensor handle.
struct aclTensor {
  moeperm::TensorDesc desc;        // view dims, strides and offset in elements; storage size
  void *data = nullptr;            // storage base (element 0 of the allocation)
  int32_t format = ACL_FORMAT_ND;  // as passed (C callers may pass any int; see enum_value.hpp)
};

namespace moeperm::capi {

inline const TensorDesc *desc_of(const aclTensor *t) { return t ? &t->desc : nullptr; }
inline void *data_of(const aclTensor *t) { return t ? t->data : nullptr; }
int64_t live_tensors();

}  // namespace moeperm::capi
