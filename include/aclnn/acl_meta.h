/* moeperm: the aclnn tensor and executor types and the aclnn status codes (SPEC §5, §6). */
#ifndef MOEPERM_ACLNN_ACL_META_H_
#define MOEPERM_ACLNN_ACL_META_H_

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclIntArray aclIntArray;
typedef int32_t aclnnStatus;

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER_TILING_ERROR 561002
#define ACLNN_ERR_INNER_NULLPTR 561103

/* viewDims/stride/offset describe the view in elements; storageDims the allocation the
 * view lives in (moeperm checks that the view stays inside it). stride may be null for a
 * row-major contiguous view. Returns null (and sets aclGetRecentErrMsg) on bad arguments. */
ACL_FUNC_VISIBILITY aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
                                               aclDataType dataType, const int64_t *stride,
                                               int64_t offset, aclFormat format,
                                               const int64_t *storageDims, uint64_t storageDimsNum,
                                               void *tensorData);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyTensor(const aclTensor *tensor);

/* An array of `size` int64 values, copied (`value` may be null when size is 0), as operators
 * take integer-list attributes (e.g. restoreShapeOptional). Returns null (and sets
 * aclGetRecentErrMsg) on bad arguments. */
ACL_FUNC_VISIBILITY aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
ACL_FUNC_VISIBILITY aclnnStatus aclDestroyIntArray(const aclIntArray *array);

#ifdef __cplusplus
}
#endif

#endif /* MOEPERM_ACLNN_ACL_META_H_ */
