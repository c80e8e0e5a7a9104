// The C++ API's enums carry CANN's values (moeperm.hpp says so): the C ABI converts between
// them by value, so any drift between the two sets of headers must fail the build.
#include <acl/acl.h>
#include <aclnn/acl_meta.h>
#include <moeperm/moeperm.hpp>

namespace moeperm::capi {
namespace {

constexpr bool same(Code c, int v) { return static_cast<int>(c) == v; }
constexpr bool same(DType d, int v) { return static_cast<int>(d) == v; }

static_assert(same(Code::ok, ACLNN_SUCCESS));
static_assert(same(Code::null_pointer, ACLNN_ERR_PARAM_NULLPTR));
static_assert(same(Code::invalid_param, ACLNN_ERR_PARAM_INVALID));
static_assert(same(Code::runtime_error, ACLNN_ERR_RUNTIME_ERROR));
static_assert(same(Code::tiling_error, ACLNN_ERR_INNER_TILING_ERROR));
static_assert(same(Code::inner_nullptr, ACLNN_ERR_INNER_NULLPTR));

static_assert(same(DType::f32, ACL_FLOAT));
static_assert(same(DType::f16, ACL_FLOAT16));
static_assert(same(DType::i8, ACL_INT8));
static_assert(same(DType::i32, ACL_INT32));
static_assert(same(DType::u8, ACL_UINT8));
static_assert(same(DType::i64, ACL_INT64));
static_assert(same(DType::f64, ACL_DOUBLE));
static_assert(same(DType::boolean, ACL_BOOL));
static_assert(same(DType::bf16, ACL_BF16));

}  // namespace
}  // namespace moeperm::capi
