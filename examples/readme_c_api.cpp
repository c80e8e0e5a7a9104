// README.md's C API example (kept in sync by the readme_examples test).
#include <acl/acl.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>

#include <cstdio>
#include <vector>

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

// Copies host data to aclrtMalloc'd memory and wraps it in a contiguous ND aclTensor.
template <typename T>
aclTensor *CreateAclTensor(const std::vector<T> &host, std::vector<int64_t> shape,
                           aclDataType dtype, void **device) {
  size_t bytes = host.size() * sizeof(T);
  if (aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
  aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; i--)
    strides[i] = shape[i + 1] * strides[i + 1];
  return aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND,
                         shape.data(), shape.size(), *device);
}

int main() {
  // Drop-less backward: T=2 tokens, each routed to K=2 of E=2 experts, so R=4 rows; H=2.
  const int64_t T = 2, E = 2, H = 2, R = 4;
  std::vector<float> G = {1, 1, 2, 2, 3, 3, 4, 4};  // permutedTokenOutputGrad [R, H]
  std::vector<int32_t> S = {0, 2, 1, 3};            // sortedIndices [R], as the forward wrote it
  std::vector<float> tokensGrad(T * H, 0);          // tokensGradOut [T, H]

  CHECK_RET(aclInit(nullptr) == ACL_SUCCESS, return 1);
  CHECK_RET(aclrtSetDevice(0) == ACL_SUCCESS, return 1);
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream) == ACL_SUCCESS, return 1);
  void *gDev = nullptr, *sDev = nullptr, *outDev = nullptr;
  aclTensor *g = CreateAclTensor(G, {R, H}, ACL_FLOAT, &gDev);
  aclTensor *s = CreateAclTensor(S, {R}, ACL_INT32, &sDev);
  aclTensor *out = CreateAclTensor(tokensGrad, {T, H}, ACL_FLOAT, &outDev);

  // Phase 1 validates and sizes the workspace; phase 2 enqueues on the stream.
  uint64_t workspaceSize = 0;
  aclOpExecutor *executor = nullptr;
  aclnnStatus ret = aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
      g, nullptr, s, nullptr, /*numExperts=*/E, /*tokensNum=*/T, /*dropAndPad=*/false, out, nullptr,
      &workspaceSize, &executor);
  CHECK_RET(ret == ACLNN_SUCCESS, printf("%d: %s\n", ret, aclGetRecentErrMsg()); return 1);
  void *workspace = nullptr;
  if (workspaceSize > 0) aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
  ret = aclnnMoeTokenPermuteWithRoutingMapGrad(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACLNN_SUCCESS, printf("%d: %s\n", ret, aclGetRecentErrMsg()); return 1);
  ret = aclrtSynchronizeStream(stream);  // data errors (a bad index) surface here
  CHECK_RET(ret == ACL_SUCCESS, printf("%d: %s\n", ret, aclGetRecentErrMsg()); return 1);

  aclrtMemcpy(tokensGrad.data(), T * H * sizeof(float), outDev, T * H * sizeof(float),
              ACL_MEMCPY_DEVICE_TO_HOST);
  printf("tokensGrad = [%g %g] [%g %g]\n", tokensGrad[0], tokensGrad[1], tokensGrad[2],
         tokensGrad[3]);  // [4 4] [6 6]: token 0 = rows 0 + 2, token 1 = rows 1 + 3

  aclDestroyTensor(g);
  aclDestroyTensor(s);
  aclDestroyTensor(out);
  for (void *p : {gDev, sDev, outDev, workspace})
    if (p) aclrtFree(p);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  const bool right = tokensGrad == std::vector<float>{4, 4, 6, 6};
  return aclFinalize() == ACL_SUCCESS && right ? 0 : 1;
}
