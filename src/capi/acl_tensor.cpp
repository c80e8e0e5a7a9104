#include "capi/acl_tensor.hpp"

#include <atomic>
#include <new>

#include "capi/enum_value.hpp"
#include "capi/fault_injection.hpp"
#include "capi/last_error.hpp"
#include "core/checked_math.hpp"
#include "core/status.hpp"

namespace moeperm::capi {
namespace {
std::atomic<int64_t> g_live_tensors{0};
std::atomic<int64_t> g_live_int_arrays{0};
constexpr uint64_t kMaxDims = 64;
// Integer arrays are attribute lists (a shape, a few sizes): anything longer is a caller's
// bug (a garbage size), refused before it allocates.
constexpr uint64_t kMaxIntArrayValues = 1 << 20;
}  // namespace

int64_t live_tensors() { return g_live_tensors.load(); }
int64_t live_int_arrays() { return g_live_int_arrays.load(); }

}  // namespace moeperm::capi

using moeperm::capi::set_last_error;
using moeperm::detail::cat;

extern "C" ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(
    const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
    int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
    void *tensorData) {
  // Shape errors are left to the operators, which report them against the argument's
  // name; here only what cannot be represented at all is refused.
  if (viewDimsNum > moeperm::capi::kMaxDims || storageDimsNum > moeperm::capi::kMaxDims) {
    set_last_error(cat("aclCreateTensor: at most ", moeperm::capi::kMaxDims,
                       " dimensions are supported, got viewDimsNum=", viewDimsNum,
                       ", storageDimsNum=", storageDimsNum));
    return nullptr;
  }
  if ((viewDimsNum > 0 && !viewDims) || (storageDimsNum > 0 && !storageDims)) {
    set_last_error(
        "aclCreateTensor: viewDims and storageDims must not be null when their count is > 0");
    return nullptr;
  }
  auto *t = moeperm::capi::fault_fires(MOEPERM_FAULT_CREATE_TENSOR) ? nullptr
                                                                    : new (std::nothrow) aclTensor;
  if (!t) {
    set_last_error("aclCreateTensor: out of host memory");
    return nullptr;
  }
  // Any int a C caller passed: the operators reject the dtypes they do not take.
  t->desc.dtype = static_cast<moeperm::DType>(moeperm::capi::enum_value(dataType));
  t->desc.shape.assign(viewDims, viewDims + viewDimsNum);
  if (stride) t->desc.strides.assign(stride, stride + viewDimsNum);
  t->desc.offset = offset;
  if (storageDimsNum > 0) {
    int64_t n = 1;
    for (uint64_t i = 0; i < storageDimsNum; ++i) {
      auto m = storageDims[i] < 0 ? std::nullopt : moeperm::detail::checked_mul(n, storageDims[i]);
      if (!m) {
        set_last_error(cat("aclCreateTensor: storageDims[", i, "] = ", storageDims[i],
                           " is negative or makes the storage size overflow int64"));
        delete t;
        return nullptr;
      }
      n = *m;
    }
    t->desc.storage_elements = n;
  }
  t->data = tensorData;
  t->format = moeperm::capi::enum_value(format);
  ++moeperm::capi::g_live_tensors;
  return t;
}

extern "C" ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
  if (!tensor) return ACLNN_SUCCESS;
  delete tensor;
  --moeperm::capi::g_live_tensors;
  return ACLNN_SUCCESS;
}

extern "C" ACL_FUNC_VISIBILITY aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
  if (size > 0 && !value) {
    set_last_error(
        cat("aclCreateIntArray: value must not be null when size is > 0, got size ", size));
    return nullptr;
  }
  if (size > moeperm::capi::kMaxIntArrayValues) {
    set_last_error(cat("aclCreateIntArray: size must be at most ",
                       moeperm::capi::kMaxIntArrayValues, ", got ", size));
    return nullptr;
  }
  auto *a = new (std::nothrow) aclIntArray;
  if (!a) {
    set_last_error("aclCreateIntArray: out of host memory");
    return nullptr;
  }
  try {
    a->values.assign(value, value + size);
  } catch (const std::bad_alloc &) {
    delete a;
    set_last_error("aclCreateIntArray: out of host memory");
    return nullptr;
  }
  ++moeperm::capi::g_live_int_arrays;
  return a;
}

extern "C" ACL_FUNC_VISIBILITY aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
  if (!array) return ACLNN_SUCCESS;
  delete array;
  --moeperm::capi::g_live_int_arrays;
  return ACLNN_SUCCESS;
}
