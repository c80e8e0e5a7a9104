/**
 * An MoE layer's token path through CANN's aclnn operators, called the way CANN's aclnn sample
 * programs call them: MoeTokenPermuteWithRoutingMap (tokens -> expert-major rows), then, after
 * the experts, MoeTokenUnpermuteWithRoutingMap (rows -> tokens, weighted by the router
 * probabilities) and its Grad (SPEC-unpermute U1, U2).
 *
 * This file uses only the CANN headers and the CANN API (aclInit ... aclFinalize): the same
 * source builds against CANN on an Ascend NPU and against moeperm on a CPU.
 *
 * Problem: T = 1024 tokens, H = 2048, E = 64 experts, topK = 6, fp32, drop-less, with probs
 * (MindSpeed's fused path). The "experts" are the identity, so the layer computes
 * out[t] = tokens[t] * sum_k probs[t, e_k(t)]. Values are small multiples of 1/64 and probs
 * multiples of 1/8, so every product and sum is exact in fp32 and the program can check
 * the outputs bitwise in plain loops; the probs gradient (a dot product over H) is checked
 * against float64 within SPEC-unpermute U3's bound. Exits non-zero on any mismatch.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

#define LOG_PRINT(...)   \
  do {                   \
    printf(__VA_ARGS__); \
  } while (0)

constexpr int64_t kTokens = 1024, kHidden = 2048, kExperts = 64, kTopK = 6;
constexpr int64_t kRows = kTokens * kTopK;

// One device tensor and its host copy.
template <typename T>
struct Tensor {
  std::vector<T> host;
  std::vector<int64_t> shape;
  void *deviceAddr = nullptr;
  aclTensor *tensor = nullptr;
};

// Copies t.host to new device memory and wraps it in a contiguous ND aclTensor.
template <typename T>
int CreateAclTensor(Tensor<T> &t, aclDataType dataType) {
  const size_t size = t.host.size() * sizeof(T);
  auto ret = aclrtMalloc(&t.deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(t.deviceAddr, size, t.host.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(t.shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(t.shape.size()) - 2; i >= 0; i--) {
    strides[i] = t.shape[i + 1] * strides[i + 1];
  }
  t.tensor =
      aclCreateTensor(t.shape.data(), t.shape.size(), dataType, strides.data(), 0,
                      aclFormat::ACL_FORMAT_ND, t.shape.data(), t.shape.size(), t.deviceAddr);
  CHECK_RET(t.tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
            return 1);
  return 0;
}

template <typename T>
int CopyToHost(Tensor<T> &t) {
  const size_t size = t.host.size() * sizeof(T);
  auto ret = aclrtMemcpy(t.host.data(), size, t.deviceAddr, size, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy to host failed. ERROR: %d\n", ret); return ret);
  return 0;
}

template <typename T>
void Release(Tensor<T> &t) {
  aclDestroyTensor(t.tensor);
  aclrtFree(t.deviceAddr);
}

// Runs the second phase of an operator with a workspace of the size the first phase asked for.
template <typename Launch>
int Execute(const char *name, uint64_t workspaceSize, aclrtStream stream, Launch launch) {
  void *workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    auto ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return ret);
  }
  auto ret = launch(workspaceAddr, workspaceSize, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("%s failed. ERROR: %d, %s\n", name, ret, aclGetRecentErrMsg());
            return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d, %s\n", ret, aclGetRecentErrMsg());
            return ret);
  if (workspaceAddr != nullptr) aclrtFree(workspaceAddr);
  return 0;
}

float Value(int64_t i, int64_t salt) {
  return static_cast<float>((i * 2654435761LL + salt) % 257 - 128) / 64.0f;
}

// Token t routes to kTopK distinct experts (base + 10 k) mod kExperts.
bool Routed(int64_t t, int64_t e) {
  const int64_t base = (t * 37 + t / 7) % kExperts;
  return (e - base + kExperts) % kExperts % 10 == 0 &&
         (e - base + kExperts) % kExperts < 10 * kTopK;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream = nullptr;
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret);
            return ret);

  // Inputs and outputs, with their host data. Outputs start as NaN, so an unwritten
  // element fails the checks.
  const float nan = std::nanf("");
  Tensor<float> tokens{std::vector<float>(kTokens * kHidden), {kTokens, kHidden}};
  Tensor<uint8_t> routingMap{std::vector<uint8_t>(kTokens * kExperts), {kTokens, kExperts}};
  Tensor<float> probs{std::vector<float>(kTokens * kExperts), {kTokens, kExperts}};
  Tensor<float> permuted{std::vector<float>(kRows * kHidden, nan), {kRows, kHidden}};
  Tensor<float> permutedProbs{std::vector<float>(kRows, nan), {kRows}};
  Tensor<int32_t> sortedIndices{std::vector<int32_t>(kRows, -7), {kRows}};
  Tensor<float> unpermuted{std::vector<float>(kTokens * kHidden, nan), {kTokens, kHidden}};
  Tensor<float> outGrad{std::vector<float>(kTokens * kHidden), {kTokens, kHidden}};
  Tensor<float> permutedGrad{std::vector<float>(kRows * kHidden, nan), {kRows, kHidden}};
  Tensor<float> probsGrad{std::vector<float>(kTokens * kExperts, nan), {kTokens, kExperts}};
  for (int64_t i = 0; i < kTokens * kHidden; i++) tokens.host[i] = Value(i, 1);
  for (int64_t i = 0; i < kTokens * kHidden; i++) outGrad.host[i] = Value(i, 3);
  for (int64_t t = 0; t < kTokens; t++) {
    for (int64_t e = 0; e < kExperts; e++) {
      routingMap.host[t * kExperts + e] = Routed(t, e) ? 1 : 0;
      probs.host[t * kExperts + e] = static_cast<float>((t + 3 * e) % 9) / 8.0f;
    }
  }
  CHECK_RET(CreateAclTensor(tokens, ACL_FLOAT) == 0, return 1);
  CHECK_RET(CreateAclTensor(routingMap, ACL_BOOL) == 0, return 1);
  CHECK_RET(CreateAclTensor(probs, ACL_FLOAT) == 0, return 1);
  CHECK_RET(CreateAclTensor(permuted, ACL_FLOAT) == 0, return 1);
  CHECK_RET(CreateAclTensor(permutedProbs, ACL_FLOAT) == 0, return 1);
  CHECK_RET(CreateAclTensor(sortedIndices, ACL_INT32) == 0, return 1);
  CHECK_RET(CreateAclTensor(unpermuted, ACL_FLOAT) == 0, return 1);
  CHECK_RET(CreateAclTensor(outGrad, ACL_FLOAT) == 0, return 1);
  CHECK_RET(CreateAclTensor(permutedGrad, ACL_FLOAT) == 0, return 1);
  CHECK_RET(CreateAclTensor(probsGrad, ACL_FLOAT) == 0, return 1);
  std::vector<int64_t> restoreShapeValues = {kTokens, kHidden};
  aclIntArray *restoreShape = aclCreateIntArray(restoreShapeValues.data(), 2);
  CHECK_RET(restoreShape != nullptr, LOG_PRINT("aclCreateIntArray failed\n"); return 1);

  // 1. Permute: tokens -> kRows expert-major rows.
  bool dropAndPad = false;
  uint64_t workspaceSize = 0;
  aclOpExecutor *executor = nullptr;
  ret = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
      tokens.tensor, routingMap.tensor, probs.tensor, kRows, dropAndPad, permuted.tensor,
      permutedProbs.tensor, sortedIndices.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize failed. ERROR: %d, %s\n",
                      ret, aclGetRecentErrMsg());
            return ret);
  ret = Execute("aclnnMoeTokenPermuteWithRoutingMap", workspaceSize, stream,
                [&](void *ws, uint64_t size, aclrtStream s) {
                  return aclnnMoeTokenPermuteWithRoutingMap(ws, size, executor, s);
                });
  CHECK_RET(ret == 0, return ret);

  // 2. The experts would run on `permuted` here. 3. Unpermute: rows -> tokens, weighted.
  ret = aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(
      permuted.tensor, sortedIndices.tensor, routingMap.tensor, probs.tensor, dropAndPad,
      restoreShape, unpermuted.tensor, nullptr, nullptr, nullptr, &workspaceSize, &executor);
  CHECK_RET(
      ret == ACL_SUCCESS,
      LOG_PRINT("aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize failed. ERROR: %d, %s\n", ret,
                aclGetRecentErrMsg());
      return ret);
  ret = Execute("aclnnMoeTokenUnpermuteWithRoutingMap", workspaceSize, stream,
                [&](void *ws, uint64_t size, aclrtStream s) {
                  return aclnnMoeTokenUnpermuteWithRoutingMap(ws, size, executor, s);
                });
  CHECK_RET(ret == 0, return ret);

  // 4. The backward: drop-less callers pass (sortedIndices, sortedIndices) as
  //    (outIndex, permuteTokenId), and the forward's rows for the probs gradient.
  ret = aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(
      outGrad.tensor, sortedIndices.tensor, sortedIndices.tensor, routingMap.tensor,
      permuted.tensor, probs.tensor, dropAndPad, restoreShape, permutedGrad.tensor,
      probsGrad.tensor, &workspaceSize, &executor);
  CHECK_RET(
      ret == ACL_SUCCESS,
      LOG_PRINT("aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize failed. ERROR: %d, %s\n",
                ret, aclGetRecentErrMsg());
      return ret);
  ret = Execute("aclnnMoeTokenUnpermuteWithRoutingMapGrad", workspaceSize, stream,
                [&](void *ws, uint64_t size, aclrtStream s) {
                  return aclnnMoeTokenUnpermuteWithRoutingMapGrad(ws, size, executor, s);
                });
  CHECK_RET(ret == 0, return ret);

  CHECK_RET(CopyToHost(sortedIndices) == 0 && CopyToHost(unpermuted) == 0 &&
                CopyToHost(permutedGrad) == 0 && CopyToHost(probsGrad) == 0,
            return 1);
  for (int64_t i = 0; i < 4; i++) {
    LOG_PRINT("unpermutedTokens[%lld] is: %f\n", (long long)i, unpermuted.host[i]);
  }
  LOG_PRINT("probsGradOut[0, 0..3] is: %f %f %f %f\n", probsGrad.host[0], probsGrad.host[1],
            probsGrad.host[2], probsGrad.host[3]);

  // 5. The program's own checks, per token t and its k-th expert e (slot t * kTopK + k).
  int64_t bad = 0;
  for (int64_t t = 0; t < kTokens; t++) {
    float probsSum = 0.0f;
    int64_t k = 0;
    for (int64_t e = 0; e < kExperts; e++) {
      const float p = probs.host[t * kExperts + e];
      if (!Routed(t, e)) {
        if (probsGrad.host[t * kExperts + e] != 0.0f) bad++;  // unrouted: 0
        continue;
      }
      probsSum += p;
      const int64_t row = sortedIndices.host[t * kTopK + k++];
      if (row < 0 || row >= kRows) {
        LOG_PRINT("sortedIndices[%lld] = %lld is not a row\n", (long long)(t * kTopK + k - 1),
                  (long long)row);
        return 1;
      }
      // dX[row] = G[t] * p (exact); dP[t, e] = <X[row], G[t]> = <tokens[t], G[t]>.
      double dot = 0.0, dotAbs = 0.0;
      for (int64_t h = 0; h < kHidden; h++) {
        const double prod = static_cast<double>(tokens.host[t * kHidden + h]) *
                            static_cast<double>(outGrad.host[t * kHidden + h]);
        dot += prod;
        dotAbs += std::fabs(prod);
        if (permutedGrad.host[row * kHidden + h] != outGrad.host[t * kHidden + h] * p) bad++;
      }
      const double bound =
          1e-6 * std::fabs(dot) + 1e-6 + (kHidden / 32.0 + 5.0) * std::ldexp(1.0, -24) * dotAbs;
      if (!(std::fabs(probsGrad.host[t * kExperts + e] - dot) <= bound)) bad++;
    }
    // out[t] = tokens[t] * (sum of its probs), exact.
    for (int64_t h = 0; h < kHidden; h++) {
      if (unpermuted.host[t * kHidden + h] != tokens.host[t * kHidden + h] * probsSum) bad++;
    }
  }
  if (bad == 0) {
    LOG_PRINT("check passed: unpermute(permute(x)) == x * sum(probs); dX == G * p; dP == <X, G>\n");
  } else {
    LOG_PRINT("check FAILED: %lld mismatches\n", (long long)bad);
  }

  // 6. Release tensors, device memory, stream, device, runtime.
  aclDestroyIntArray(restoreShape);
  Release(tokens);
  Release(routingMap);
  Release(probs);
  Release(permuted);
  Release(permutedProbs);
  Release(sortedIndices);
  Release(unpermuted);
  Release(outGrad);
  Release(permutedGrad);
  Release(probsGrad);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  ret = aclFinalize();
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclFinalize failed. ERROR: %d, %s\n", ret, aclGetRecentErrMsg());
            return ret);
  return bad == 0 ? 0 : 1;
}
