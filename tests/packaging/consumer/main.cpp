// An outside program built against an installed moeperm: the forward through the CANN C
// API (headers acl/, aclnn/, aclnnop/), the backward through the C++ API (moeperm/), on
// SPEC §2's worked example. Prints "consumer: ok" and exits 0 when both results are right.
#include <acl/acl.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>
#include <moeperm/moeperm.hpp>

#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

namespace {

constexpr int64_t T = 3, E = 2, H = 2, R = 6;

int fail(const char *what, int status) {
  std::printf("consumer: %s failed with %d: %s\n", what, status, aclGetRecentErrMsg());
  return 1;
}

moeperm::TensorDesc contiguous(moeperm::DType dtype, std::vector<int64_t> shape) {
  moeperm::TensorDesc d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  return d;
}

// aclrtMalloc + copy + a contiguous ND aclTensor over it.
aclTensor *device_tensor(const void *host, size_t bytes, std::vector<int64_t> shape,
                         aclDataType dtype, void **device) {
  if (aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
  if (aclrtMemcpy(*device, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS)
    return nullptr;
  return aclCreateTensor(shape.data(), shape.size(), dtype, nullptr, 0, ACL_FORMAT_ND, shape.data(),
                         shape.size(), *device);
}

}  // namespace

int main() {
  const std::vector<float> tokens = {0, 0, 1, 1, 2, 2};
  const std::vector<int8_t> routing_map(T * E, 1);
  std::vector<float> permuted(R * H, -1);
  std::vector<int32_t> sorted_indices(R, -7);

  if (int rc = aclInit(nullptr)) return fail("aclInit", rc);
  if (int rc = aclrtSetDevice(0)) return fail("aclrtSetDevice", rc);
  void *d_tokens = nullptr, *d_map = nullptr, *d_permuted = nullptr, *d_indices = nullptr;
  aclTensor *t_tokens =
      device_tensor(tokens.data(), tokens.size() * 4, {T, H}, ACL_FLOAT, &d_tokens);
  aclTensor *t_map =
      device_tensor(routing_map.data(), routing_map.size(), {T, E}, ACL_INT8, &d_map);
  aclTensor *t_permuted =
      device_tensor(permuted.data(), permuted.size() * 4, {R, H}, ACL_FLOAT, &d_permuted);
  aclTensor *t_indices =
      device_tensor(sorted_indices.data(), sorted_indices.size() * 4, {R}, ACL_INT32, &d_indices);
  if (!t_tokens || !t_map || !t_permuted || !t_indices) return fail("aclCreateTensor", -1);

  uint64_t workspace_size = 0;
  aclOpExecutor *executor = nullptr;
  if (int rc = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
          t_tokens, t_map, nullptr, R, false, t_permuted, nullptr, t_indices, &workspace_size,
          &executor))
    return fail("aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize", rc);
  void *workspace = nullptr;
  if (workspace_size > 0 && aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST))
    return fail("aclrtMalloc", -1);
  // The default stream (nullptr) is synchronous: the result is ready on return.
  if (int rc = aclnnMoeTokenPermuteWithRoutingMap(workspace, workspace_size, executor, nullptr))
    return fail("aclnnMoeTokenPermuteWithRoutingMap", rc);
  aclrtMemcpy(permuted.data(), permuted.size() * 4, d_permuted, permuted.size() * 4,
              ACL_MEMCPY_DEVICE_TO_HOST);
  aclrtMemcpy(sorted_indices.data(), sorted_indices.size() * 4, d_indices,
              sorted_indices.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
  for (aclTensor *t : {t_tokens, t_map, t_permuted, t_indices}) aclDestroyTensor(t);
  for (void *p : {d_tokens, d_map, d_permuted, d_indices, workspace})
    if (p) aclrtFree(p);
  aclrtResetDevice(0);
  if (int rc = aclFinalize()) return fail("aclFinalize", rc);

  // Backward through the C++ API: G = the permuted tokens, so tokensGrad[t] = 2 * tokens[t].
  std::vector<float> tokens_grad(T * H, -1);
  moeperm::PermuteGradDesc desc;
  desc.permuted_token_output_grad = contiguous(moeperm::DType::f32, {R, H});
  desc.sorted_indices = contiguous(moeperm::DType::i32, {R});
  desc.num_experts = E;
  desc.tokens_num = T;
  desc.tokens_grad_out = contiguous(moeperm::DType::f32, {T, H});
  moeperm::PermuteGradData data;
  data.permuted_token_output_grad = permuted.data();
  data.sorted_indices = sorted_indices.data();
  data.tokens_grad_out = tokens_grad.data();
  try {
    moeperm::permute_grad(desc, data);
  } catch (const moeperm::Error &e) {
    std::printf("consumer: moeperm::permute_grad threw %d: %s\n", static_cast<int>(e.code()),
                e.what());
    return 1;
  }

  const std::vector<int32_t> want_indices = {0, 3, 1, 4, 2, 5};  // SPEC §2
  bool ok = sorted_indices == want_indices;
  for (int64_t i = 0; i < T * H; ++i) ok = ok && tokens_grad[i] == 2 * tokens[i];
  std::printf("consumer: %s (sortedIndices [%d %d %d %d %d %d])\n", ok ? "ok" : "WRONG RESULTS",
              sorted_indices[0], sorted_indices[1], sorted_indices[2], sorted_indices[3],
              sorted_indices[4], sorted_indices[5]);
  return ok ? 0 : 1;
}
