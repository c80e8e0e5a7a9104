#include "core/tensor_geometry.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "core/checked_math.hpp"
#include "core/messages.hpp"

namespace moeperm::detail {
namespace {

std::vector<int64_t> effective_strides(const TensorDesc &desc) {
  if (!desc.strides.empty()) return desc.strides;
  std::vector<int64_t> s(desc.shape.size());
  int64_t running = 1;
  for (size_t i = desc.shape.size(); i-- > 0;) {
    s[i] = running;
    running = checked_mul(running, std::max<int64_t>(desc.shape[i], 1)).value_or(0);
  }
  return s;
}

}  // namespace

Status check_rank(std::string_view api, std::string_view arg, const TensorDesc &desc, int64_t rank,
                  Code code) {
  if (static_cast<int64_t>(desc.shape.size()) != rank)
    return expected_rank(api, arg, rank, desc.shape, code);
  if (!desc.strides.empty() && desc.strides.size() != desc.shape.size())
    return inconsistent(api, cat(arg, ": strides has ", desc.strides.size(), " entries for a ",
                                 rank, "-D shape ", shape_string(desc.shape)));
  return Status::success();
}

Status check_view(std::string_view api, std::string_view arg, const TensorDesc &desc,
                  bool is_output) {
  for (int64_t d : desc.shape)
    if (d < 0)
      return inconsistent(api,
                          cat(arg, ": dimensions must be >= 0, got ", shape_string(desc.shape)));
  if (desc.offset < 0)
    return invalid_attribute(api, cat(arg, " storage offset"), ">= 0", desc.offset);

  const std::vector<int64_t> strides = effective_strides(desc);
  int64_t count = 1;
  for (int64_t d : desc.shape) {
    auto c = checked_mul(count, d);
    if (!c)
      return inconsistent(
          api, cat(arg, ": element count of ", shape_string(desc.shape), " overflows int64"));
    count = *c;
  }
  if (count == 0) return Status::success();

  // Lowest and highest element offsets the view touches.
  int64_t lo = desc.offset, hi = desc.offset;
  for (size_t i = 0; i < desc.shape.size(); ++i) {
    auto span = checked_mul(desc.shape[i] - 1, strides[i]);
    auto next = span ? (*span < 0 ? checked_add(lo, *span) : checked_add(hi, *span)) : std::nullopt;
    if (!next)
      return inconsistent(api, cat(arg, ": the extent of shape ", shape_string(desc.shape),
                                   " with strides ", shape_string(strides), " overflows int64"));
    (*span < 0 ? lo : hi) = *next;
  }
  // Kernels address elements by byte offset (element offset * element size).
  const std::optional<int64_t> elements = checked_add(hi, 1);
  if (!elements || !checked_mul(*elements, std::max<int64_t>(element_size(desc.dtype), 1)))
    return inconsistent(
        api, cat(arg, ": the extent of shape ", shape_string(desc.shape), " with strides ",
                 shape_string(strides), " and offset ", desc.offset, " overflows int64 in bytes"));
  if (lo < 0)
    return inconsistent(api, cat(arg, ": shape ", shape_string(desc.shape), " with strides ",
                                 shape_string(strides), " and offset ", desc.offset,
                                 " reaches element ", lo, ", before the start of its storage"));
  if (desc.storage_elements && hi >= *desc.storage_elements)
    return inconsistent(
        api, cat(arg, ": shape ", shape_string(desc.shape), " with strides ", shape_string(strides),
                 " and offset ", desc.offset, " reaches element ", hi, ", outside its storage of ",
                 *desc.storage_elements, " elements"));
  if (is_output) {
    // Sufficient for no aliasing (the test PyTorch uses): ordering dims by |stride|, each
    // stride is larger than the span of the dims inside it. Dims of size 1 never alias.
    std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, size)
    for (size_t i = 0; i < desc.shape.size(); ++i)
      if (desc.shape[i] > 1) dims.emplace_back(std::llabs(strides[i]), desc.shape[i]);
    std::sort(dims.begin(), dims.end());
    int64_t inner_span = 1;  // 1 + highest offset reached by the inner dims
    for (auto [stride, size] : dims) {
      if (stride < inner_span)
        return inconsistent(
            api, cat(arg, ": output with shape ", shape_string(desc.shape), " and strides ",
                     shape_string(strides), " writes some elements more than once"));
      inner_span += stride * (size - 1);  // cannot overflow: bounded by hi - lo above
    }
  }
  return Status::success();
}

int64_t element_count(const TensorDesc &desc) {
  int64_t n = 1;
  for (int64_t d : desc.shape) n *= d;
  return n;
}

MatrixGeom matrix_geom(const TensorDesc &desc) {
  const auto s = effective_strides(desc);
  return MatrixGeom{desc.shape[0], desc.shape[1], s[0], s[1], desc.offset};
}

VectorGeom vector_geom(const TensorDesc &desc) {
  const auto s = effective_strides(desc);
  return VectorGeom{desc.shape[0], s[0], desc.offset};
}

}  // namespace moeperm::detail
