/* The six CANN headers compile as C11 (strict, no extensions) and a C program runs the four
 * operators through them: SPEC §2's worked example (T=3, E=2, all routed, numOutTokens=6),
 * its backward, the unpermute of its rows (a round trip: 2x the tokens, SPEC-unpermute U5)
 * and the unpermute's backward (the permute of the gradient), plus error paths. The operator
 * headers come first, so each must pull in what it needs by itself. Exit status 0 means every check
 * passed. */
#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map.h"
#include "aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                                \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, \
              aclGetRecentErrMsg());                                               \
      ++failures;                                                                  \
    }                                                                              \
  } while (0)

/* A contiguous device tensor initialised from host data. */
static aclTensor *device_tensor(const int64_t *dims, uint64_t rank, aclDataType dtype,
                                const void *host, size_t bytes, void **dev) {
  int64_t strides[2] = {1, 1};
  int64_t elements = 1;
  uint64_t i;
  for (i = 0; i < rank; ++i) elements *= dims[i];
  if (rank == 2) strides[0] = dims[1];
  CHECK(aclrtMalloc(dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
  CHECK(aclrtMemcpy(*dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS);
  return aclCreateTensor(dims, rank, dtype, strides, 0, ACL_FORMAT_ND, &elements, 1, *dev);
}

int main(void) {
  const int64_t T = 3, E = 2, H = 2, R = 6;
  const int64_t x_dims[2] = {3, 2}, m_dims[2] = {3, 2}, y_dims[2] = {6, 2}, r_dims[1] = {6};
  const float x[6] = {1, 2, 11, 12, 21, 22};
  const int8_t m[6] = {1, 1, 1, 1, 1, 1};
  float y[12], g[12], tg[6], tg_out[6];
  int32_t s[6];
  void *dx, *dm, *dy, *ds, *dg, *dtg;
  aclTensor *tx, *tm, *ty, *ts, *tgr, *ttg;
  aclOpExecutor *exec = NULL;
  uint64_t ws = 0;
  aclrtStream stream = NULL;
  const int32_t want_s[6] = {0, 3, 1, 4, 2, 5};
  int64_t j;

  memset(y, 0xA5, sizeof y);
  memset(s, 0xA5, sizeof s);
  memset(tg, 0xA5, sizeof tg);
  for (j = 0; j < R * H; ++j) g[j] = (float)j;

  CHECK(aclInit(NULL) == ACL_SUCCESS);
  CHECK(aclrtSetDevice(0) == ACL_SUCCESS);
  CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS);
  tx = device_tensor(x_dims, 2, ACL_FLOAT, x, sizeof x, &dx);
  tm = device_tensor(m_dims, 2, ACL_INT8, m, sizeof m, &dm);
  ty = device_tensor(y_dims, 2, ACL_FLOAT, y, sizeof y, &dy);
  ts = device_tensor(r_dims, 1, ACL_INT32, s, sizeof s, &ds);
  tgr = device_tensor(y_dims, 2, ACL_FLOAT, g, sizeof g, &dg);
  ttg = device_tensor(x_dims, 2, ACL_FLOAT, tg, sizeof tg, &dtg);
  CHECK(tx && tm && ty && ts && tgr && ttg);

  /* Forward; the drop-less CPU plan needs a workspace. */
  CHECK(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(tx, tm, NULL, T * E, false, ty, NULL, ts,
                                                           &ws, &exec) == ACLNN_SUCCESS);
  {
    void *work = NULL;
    if (ws > 0) CHECK(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    CHECK(aclnnMoeTokenPermuteWithRoutingMap(work, ws, exec, stream) == ACLNN_SUCCESS);
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS);
    if (work) CHECK(aclrtFree(work) == ACL_SUCCESS);
  }
  CHECK(aclrtMemcpy(s, sizeof s, ds, sizeof s, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS);
  CHECK(aclrtMemcpy(y, sizeof y, dy, sizeof y, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS);
  CHECK(memcmp(s, want_s, sizeof s) == 0);
  for (j = 0; j < R * H; ++j) CHECK(y[j] == x[j % (T * H)]); /* [x0, x1, x2, x0, x1, x2] */

  /* Backward on the default stream: tokensGrad[t] = G[t] + G[t + 3]. */
  CHECK(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
            tgr, NULL, ts, NULL, E, T, false, ttg, NULL, &ws, &exec) == ACLNN_SUCCESS);
  CHECK(ws == 0);
  CHECK(aclnnMoeTokenPermuteWithRoutingMapGrad(NULL, 0, exec, NULL) == ACLNN_SUCCESS);
  CHECK(aclrtMemcpy(tg_out, sizeof tg_out, dtg, sizeof tg_out, ACL_MEMCPY_DEVICE_TO_HOST) ==
        ACL_SUCCESS);
  for (j = 0; j < T * H; ++j) CHECK(tg_out[j] == g[j] + g[j + T * H]);

  /* An error path: a null executor, reported with a message. */
  CHECK(aclnnMoeTokenPermuteWithRoutingMapGrad(NULL, 0, NULL, NULL) == ACLNN_ERR_PARAM_NULLPTR);
  CHECK(strstr(aclGetRecentErrMsg(), "executor must not be null") != NULL);

  /* Unpermute the forward's rows, restoreShape {T, H}, no probs: out[t] = y[S[2t]] +
   * y[S[2t + 1]] = 2 x[t]. Then its Grad with (S, S): dX[S[i]] = G[i / 2], the permute of G.
   * Outputs are poisoned first, so an unwritten element shows. */
  {
    int64_t shape[2] = {T, H};
    aclIntArray *restore = aclCreateIntArray(shape, 2);
    float u[6], dxp[12];
    void *du, *ddx;
    aclTensor *tu, *tdx;
    CHECK(restore != NULL);
    memset(u, 0xA5, sizeof u);
    memset(dxp, 0xA5, sizeof dxp);
    tu = device_tensor(x_dims, 2, ACL_FLOAT, u, sizeof u, &du);
    tdx = device_tensor(y_dims, 2, ACL_FLOAT, dxp, sizeof dxp, &ddx);
    CHECK(aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(ty, ts, NULL, NULL, false, restore,
                                                               tu, NULL, NULL, NULL, &ws,
                                                               &exec) == ACLNN_SUCCESS);
    CHECK(ws == 0);
    CHECK(aclnnMoeTokenUnpermuteWithRoutingMap(NULL, 0, exec, stream) == ACLNN_SUCCESS);
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS);
    CHECK(aclrtMemcpy(u, sizeof u, du, sizeof u, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS);
    for (j = 0; j < T * H; ++j) CHECK(u[j] == 2 * x[j]);

    /* The Grad, G = the x tensor read as [T, H]: dX = [x0, x1, x2, x0, x1, x2]. */
    CHECK(aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(tx, ts, ts, NULL, NULL, NULL,
                                                                   false, restore, tdx, NULL, &ws,
                                                                   &exec) == ACLNN_SUCCESS);
    { /* the Grad checks that outIndex names no row twice: it needs a workspace */
      void *work = NULL;
      if (ws > 0) CHECK(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
      CHECK(aclnnMoeTokenUnpermuteWithRoutingMapGrad(work, ws, exec, stream) == ACLNN_SUCCESS);
      CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS);
      if (work) CHECK(aclrtFree(work) == ACL_SUCCESS);
    }
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS);
    CHECK(aclrtMemcpy(dxp, sizeof dxp, ddx, sizeof dxp, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS);
    for (j = 0; j < R * H; ++j) CHECK(dxp[j] == x[j % (T * H)]);

    /* Errors: neither probs nor restoreShape (161001); a restoreShape of the wrong size. */
    exec = NULL;
    CHECK(aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(ty, ts, NULL, NULL, false, NULL, tu,
                                                               NULL, NULL, NULL, &ws,
                                                               &exec) == ACLNN_ERR_PARAM_NULLPTR);
    CHECK(exec == NULL);
    CHECK(strstr(aclGetRecentErrMsg(), "aclnnMoeTokenUnpermuteWithRoutingMap: probsOptional") !=
          NULL);
    {
      int64_t wrong[2] = {T, H + 1};
      aclIntArray *bad = aclCreateIntArray(wrong, 2);
      CHECK(aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(ty, ts, NULL, NULL, false, bad, tu,
                                                                 NULL, NULL, NULL, &ws,
                                                                 &exec) == ACLNN_ERR_PARAM_INVALID);
      CHECK(strstr(aclGetRecentErrMsg(), "restoreShape") != NULL);
      CHECK(aclDestroyIntArray(bad) == ACLNN_SUCCESS);
    }

    CHECK(aclCreateIntArray(NULL, 2) == NULL);
    CHECK(strstr(aclGetRecentErrMsg(), "value must not be null") != NULL);
    CHECK(aclDestroyIntArray(restore) == ACLNN_SUCCESS);
    CHECK(aclDestroyTensor(tu) == ACLNN_SUCCESS && aclDestroyTensor(tdx) == ACLNN_SUCCESS);
    CHECK(aclrtFree(du) == ACL_SUCCESS && aclrtFree(ddx) == ACL_SUCCESS);
  }

  CHECK(aclDestroyTensor(tx) == ACLNN_SUCCESS && aclDestroyTensor(tm) == ACLNN_SUCCESS);
  CHECK(aclDestroyTensor(ty) == ACLNN_SUCCESS && aclDestroyTensor(ts) == ACLNN_SUCCESS);
  CHECK(aclDestroyTensor(tgr) == ACLNN_SUCCESS && aclDestroyTensor(ttg) == ACLNN_SUCCESS);
  CHECK(aclrtFree(dx) == ACL_SUCCESS && aclrtFree(dm) == ACL_SUCCESS);
  CHECK(aclrtFree(dy) == ACL_SUCCESS && aclrtFree(ds) == ACL_SUCCESS);
  CHECK(aclrtFree(dg) == ACL_SUCCESS && aclrtFree(dtg) == ACL_SUCCESS);
  CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS);
  CHECK(aclrtResetDevice(0) == ACL_SUCCESS);
  CHECK(aclFinalize() == ACL_SUCCESS);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
