#pragma once

#include <aclnn/acl_meta.h>
#include <moeperm/moeperm.hpp>

// The object behind CANN's opaque aclTensor handle.
struct aclTensor {
  moeperm::TensorDesc desc;  // view dims, strides and offset in elements; storage size
  void *data = nullptr;      // storage base (element 0 of the allocation)
  aclFormat format = ACL_FORMAT_ND;
};

namespace moeperm::capi {

inline const TensorDesc *desc_of(const aclTensor *t) { return t ? &t->desc : nullptr; }
inline void *data_of(const aclTensor *t) { return t ? t->data : nullptr; }
int64_t live_tensors();

}  // namespace moeperm::capi
