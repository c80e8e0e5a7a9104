#include <algorithm>
#include <vector>

#include "bench.hpp"

namespace moeperm::bench {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void finish(OpResult &r, const std::vector<double> &op, const std::vector<double> &copy) {
  r.median_ms = median(op);
  r.min_ms = *std::min_element(op.begin(), op.end());
  r.memcpy_ms = median(copy);
  r.gbps = r.bytes / (r.median_ms * 1e6);
  r.ratio = r.median_ms / r.memcpy_ms;
  r.measured = true;
}

}  // namespace moeperm::bench
