/**
 * MoeTokenPermuteWithRoutingMapGrad, called the way CANN's aclnn sample programs call it.
 *
 * This file uses only the CANN headers and the CANN API (aclInit ... aclFinalize): the same
 * source builds against CANN on an Ascend NPU and against moeperm on a CPU.
 *
 * CANN's own sample problem (SPEC §7): T = 4096 tokens, H = 7168, E = 256 experts,
 * capacity C = 16, fp32, drop-and-pad, with probs. The forward
 * (aclnnMoeTokenPermuteWithRoutingMap) produces sortedIndices; the Grad operator consumes
 * it. The program then checks properties it can compute on its own, in plain loops, and
 * exits non-zero on any mismatch:
 *   - every sortedIndices value is a token id in [0, T);
 *   - probsGrad[S[j], j / C] == P[j] for every slot j, and every other entry is 0;
 *   - tokensGrad[t] == the fp32 sum, in ascending j, of G[j] over the slots j with S[j] == t
 *     (bitwise: the summation order is fixed, SPEC §4), for a handful of tokens.
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h"

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

int64_t GetShapeSize(const std::vector<int64_t> &shape) {
  int64_t shapeSize = 1;
  for (auto i : shape) {
    shapeSize *= i;
  }
  return shapeSize;
}

int Init(int32_t deviceId, aclrtStream *stream) {
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
  ret = aclrtCreateStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret);
            return ret);
  return 0;
}

// Copies hostData to new device memory and wraps it in a contiguous ND aclTensor.
template <typename T>
int CreateAclTensor(const std::vector<T> &hostData, const std::vector<int64_t> &shape,
                    void **deviceAddr, aclDataType dataType, aclTensor **tensor) {
  auto size = GetShapeSize(shape) * sizeof(T);
  auto ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);

  // Contiguous strides, computed from the shape.
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) {
    strides[i] = shape[i + 1] * strides[i + 1];
  }
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0,
                            aclFormat::ACL_FORMAT_ND, shape.data(), shape.size(), *deviceAddr);
  CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg());
            return 1);
  return 0;
}

template <typename T>
int CopyToHost(std::vector<T> &hostData, const void *deviceAddr) {
  auto size = hostData.size() * sizeof(T);
  auto ret = aclrtMemcpy(hostData.data(), size, deviceAddr, size, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret);
            return ret);
  return 0;
}

// Deterministic inputs: token t routes to K = 8 distinct experts (base + 32 k) mod 256;
// values are small multiples of 1/64, so they are exact in fp32.
constexpr int64_t kTokens = 4096, kHidden = 7168, kExperts = 256, kCapacity = 16, kTopK = 8;

float Value(int64_t i, int64_t salt) {
  return static_cast<float>((i * 2654435761LL + salt) % 257 - 128) / 64.0f;
}

// The program's own checks on the Grad outputs; returns the number of mismatches.
int64_t CheckGrad(const std::vector<int32_t> &S, const std::vector<float> &G,
                  const std::vector<float> &P, const std::vector<float> &tokensGrad,
                  const std::vector<float> &probsGrad) {
  const int64_t R = static_cast<int64_t>(S.size());
  int64_t bad = 0;
  for (int64_t j = 0; j < R; j++) {
    if (S[j] < 0 || S[j] >= kTokens) {
      LOG_PRINT("sortedIndices[%lld] = %d is not a token id\n", (long long)j, S[j]);
      return 1;
    }
  }
  // probsGrad: exactly the R assigned entries, every other entry 0.
  std::vector<uint8_t> assigned(kTokens * kExperts, 0);
  for (int64_t j = 0; j < R; j++) {
    const int64_t at = S[j] * kExperts + j / kCapacity;
    assigned[at] = 1;
    if (probsGrad[at] != P[j]) bad++;
  }
  for (int64_t i = 0; i < kTokens * kExperts; i++) {
    if (!assigned[i] && probsGrad[i] != 0.0f) bad++;
  }
  // tokensGrad: the sum over the slots naming the token, ascending j, for a few tokens;
  // include one token no slot names (its gradient must be 0).
  std::vector<int64_t> tokens = {0, 1, S[0], S[R / 2], S[R - 1], kTokens - 1};
  std::vector<uint8_t> named(kTokens, 0);
  for (int64_t j = 0; j < R; j++) named[S[j]] = 1;
  for (int64_t t = 0; t < kTokens; t++) {
    if (!named[t]) {
      tokens.push_back(t);
      break;
    }
  }
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  std::vector<float> sum(kHidden);
  for (int64_t t : tokens) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int64_t j = 0; j < R; j++) {
      if (S[j] != t) continue;
      for (int64_t h = 0; h < kHidden; h++) sum[h] += G[j * kHidden + h];
    }
    if (std::memcmp(sum.data(), &tokensGrad[t * kHidden], kHidden * sizeof(float)) != 0) {
      LOG_PRINT("tokensGrad[%lld] differs from the sum of its slots\n", (long long)t);
      bad++;
    }
  }
  return bad;
}

int main() {
  // 1. Device and stream.
  int32_t deviceId = 0;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  // 2. Inputs and outputs.
  const int64_t R = kExperts * kCapacity;  // drop-and-pad: numOutTokens = E * C
  std::vector<int64_t> tokensShape = {kTokens, kHidden};
  std::vector<int64_t> mapShape = {kTokens, kExperts};
  std::vector<int64_t> permutedShape = {R, kHidden};
  std::vector<int64_t> slotShape = {R};

  std::vector<float> tokensHost(kTokens * kHidden);
  for (int64_t i = 0; i < kTokens * kHidden; i++) tokensHost[i] = Value(i, 1);
  std::vector<uint8_t> routingMapHost(kTokens * kExperts, 0);
  for (int64_t t = 0; t < kTokens; t++) {
    const int64_t base = (t * 37 + t / 7) % kExperts;
    for (int64_t k = 0; k < kTopK; k++)
      routingMapHost[t * kExperts + (base + 32 * k) % kExperts] = 1;
  }
  std::vector<float> probsHost(kTokens * kExperts);
  for (int64_t i = 0; i < kTokens * kExperts; i++) probsHost[i] = Value(i, 2);
  std::vector<float> permuteTokensHost(R * kHidden, 0);
  std::vector<float> permuteProbsHost(R, 0);
  std::vector<int32_t> sortedIndicesHost(R, 0);
  std::vector<float> gradHost(R * kHidden);
  for (int64_t i = 0; i < R * kHidden; i++) gradHost[i] = Value(i, 3);
  std::vector<float> probsGradInHost(R);
  for (int64_t i = 0; i < R; i++) probsGradInHost[i] = Value(i, 4);
  std::vector<float> tokensGradHost(kTokens * kHidden, 0);
  std::vector<float> probsGradHost(kTokens * kExperts, 0);

  void *tokensAddr = nullptr, *routingMapAddr = nullptr, *probsAddr = nullptr;
  void *permuteTokensAddr = nullptr, *permuteProbsAddr = nullptr, *sortedIndicesAddr = nullptr;
  void *gradAddr = nullptr, *probsGradInAddr = nullptr, *tokensGradAddr = nullptr;
  void *probsGradAddr = nullptr;
  aclTensor *tokens = nullptr, *routingMap = nullptr, *probs = nullptr;
  aclTensor *permuteTokensOut = nullptr, *permuteProbsOut = nullptr, *sortedIndicesOut = nullptr;
  aclTensor *permutedTokenOutputGrad = nullptr, *permutedProbsOutputGrad = nullptr;
  aclTensor *tokensGradOut = nullptr, *probsGradOut = nullptr;

  ret = CreateAclTensor(tokensHost, tokensShape, &tokensAddr, aclDataType::ACL_FLOAT, &tokens);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(routingMapHost, mapShape, &routingMapAddr, aclDataType::ACL_BOOL,
                        &routingMap);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(probsHost, mapShape, &probsAddr, aclDataType::ACL_FLOAT, &probs);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(permuteTokensHost, permutedShape, &permuteTokensAddr,
                        aclDataType::ACL_FLOAT, &permuteTokensOut);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(permuteProbsHost, slotShape, &permuteProbsAddr, aclDataType::ACL_FLOAT,
                        &permuteProbsOut);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(sortedIndicesHost, slotShape, &sortedIndicesAddr, aclDataType::ACL_INT32,
                        &sortedIndicesOut);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(gradHost, permutedShape, &gradAddr, aclDataType::ACL_FLOAT,
                        &permutedTokenOutputGrad);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(probsGradInHost, slotShape, &probsGradInAddr, aclDataType::ACL_FLOAT,
                        &permutedProbsOutputGrad);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(tokensGradHost, tokensShape, &tokensGradAddr, aclDataType::ACL_FLOAT,
                        &tokensGradOut);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CreateAclTensor(probsGradHost, mapShape, &probsGradAddr, aclDataType::ACL_FLOAT,
                        &probsGradOut);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // 3. The forward, for sortedIndices: GetWorkspaceSize, workspace, execute, synchronize.
  int64_t numOutTokens = R;
  bool dropAndPad = true;
  uint64_t workspaceSize = 0;
  aclOpExecutor *executor = nullptr;
  ret = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
      tokens, routingMap, probs, numOutTokens, dropAndPad, permuteTokensOut, permuteProbsOut,
      sortedIndicesOut, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize failed. ERROR: %d, %s\n",
                      ret, aclGetRecentErrMsg());
            return ret);
  void *workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return ret);
  }
  ret = aclnnMoeTokenPermuteWithRoutingMap(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMoeTokenPermuteWithRoutingMap failed. ERROR: %d, %s\n", ret,
                      aclGetRecentErrMsg());
            return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d, %s\n", ret, aclGetRecentErrMsg());
            return ret);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);

  // 4. The Grad operator: same two phases.
  int64_t numExperts = kExperts;
  int64_t tokensNum = kTokens;
  workspaceSize = 0;
  executor = nullptr;
  ret = aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
      permutedTokenOutputGrad, permutedProbsOutputGrad, sortedIndicesOut, routingMap, numExperts,
      tokensNum, dropAndPad, tokensGradOut, probsGradOut, &workspaceSize, &executor);
  CHECK_RET(
      ret == ACL_SUCCESS,
      LOG_PRINT("aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize failed. ERROR: %d, %s\n",
                ret, aclGetRecentErrMsg());
      return ret);
  workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret);
              return ret);
  }
  ret = aclnnMoeTokenPermuteWithRoutingMapGrad(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMoeTokenPermuteWithRoutingMapGrad failed. ERROR: %d, %s\n", ret,
                      aclGetRecentErrMsg());
            return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d, %s\n", ret, aclGetRecentErrMsg());
            return ret);

  // 5. Copy the results back and print the first ones.
  ret = CopyToHost(sortedIndicesHost, sortedIndicesAddr);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CopyToHost(tokensGradHost, tokensGradAddr);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = CopyToHost(probsGradHost, probsGradAddr);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  for (int64_t i = 0; i < 8; i++) {
    LOG_PRINT("sortedIndices[%lld] is: %d\n", (long long)i, sortedIndicesHost[i]);
  }
  for (int64_t i = 0; i < 8; i++) {
    LOG_PRINT("tokensGradOut[%lld] is: %f\n", (long long)i, tokensGradHost[i]);
  }
  const int64_t t0 = sortedIndicesHost[0];
  LOG_PRINT("probsGradOut[%lld, 0] is: %f (permutedProbsOutputGrad[0] is %f)\n", (long long)t0,
            probsGradHost[t0 * kExperts], probsGradInHost[0]);

  // 6. The program's own checks.
  const int64_t bad =
      CheckGrad(sortedIndicesHost, gradHost, probsGradInHost, tokensGradHost, probsGradHost);
  if (bad == 0) {
    LOG_PRINT("check passed: probsGrad[S[j], j/C] == P[j], tokensGrad == sums of slot rows\n");
  } else {
    LOG_PRINT("check FAILED: %lld mismatches\n", (long long)bad);
  }

  // 7. Release tensors, device memory, stream, device, runtime.
  aclDestroyTensor(tokens);
  aclDestroyTensor(routingMap);
  aclDestroyTensor(probs);
  aclDestroyTensor(permuteTokensOut);
  aclDestroyTensor(permuteProbsOut);
  aclDestroyTensor(sortedIndicesOut);
  aclDestroyTensor(permutedTokenOutputGrad);
  aclDestroyTensor(permutedProbsOutputGrad);
  aclDestroyTensor(tokensGradOut);
  aclDestroyTensor(probsGradOut);
  aclrtFree(tokensAddr);
  aclrtFree(routingMapAddr);
  aclrtFree(probsAddr);
  aclrtFree(permuteTokensAddr);
  aclrtFree(permuteProbsAddr);
  aclrtFree(sortedIndicesAddr);
  aclrtFree(gradAddr);
  aclrtFree(probsGradInAddr);
  aclrtFree(tokensGradAddr);
  aclrtFree(probsGradAddr);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  ret = aclFinalize();
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclFinalize failed. ERROR: %d, %s\n", ret, aclGetRecentErrMsg());
            return ret);
  return bad == 0 ? 0 : 1;
}
