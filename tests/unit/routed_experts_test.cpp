// for_each_routed (cpu/row_ops.hpp): the experts of a routing-map row, ascending, for every
// map dtype (1 or 4 bytes), contiguous and strided rows, E on and off the 8-byte words it
// skips, and values whose nonzero bits lie outside the low byte (int32 256) or are not 1
// (bool storage holding 2). Against a plain loop over the elements.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/plan.hpp"
#include "cpu/row_ops.hpp"

namespace moeperm::detail::cpu {
namespace {

struct MapCase {
  DType dtype;
  int64_t E, col_stride;
};

// T rows of E columns, row stride E * col_stride + 5 elements, offset 3: random values with
// about `density` of them routed, each routed value one of a few nonzero patterns.
class RandomMap {
 public:
  RandomMap(const MapCase &c, int64_t T, double density, uint32_t seed)
      : c_(c), es_(element_size(c.dtype)) {
    geom_.rows = T, geom_.cols = c.E, geom_.col_stride = c.col_stride;
    geom_.row_stride = c.E * c.col_stride + 5, geom_.offset = 3;
    bytes_.assign(static_cast<size_t>((3 + T * geom_.row_stride) * es_), 0xEE);  // poison gaps
    std::mt19937 rng(seed);
    std::bernoulli_distribution routed(density);
    const int32_t patterns[] = {1, 2, 255, 256, 1 << 24, -1};
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < c.E; ++e) {
        const bool on = routed(rng);
        int32_t v = on ? patterns[rng() % (es_ == 4 ? 6 : 3)] : 0;
        std::memcpy(bytes_.data() + geom_.at(t, e) * es_, &v, static_cast<size_t>(es_));
      }
  }
  Plan plan() const {
    Plan p;
    p.E = c_.E, p.routing_map_dtype = c_.dtype;
    p.views[role_index(Role::routing_map)] = geom_;
    return p;
  }
  std::vector<int64_t> naive(int64_t t) const {
    std::vector<int64_t> out;
    for (int64_t e = 0; e < c_.E; ++e) {
      int32_t v = 0;
      std::memcpy(&v, bytes_.data() + geom_.at(t, e) * es_, static_cast<size_t>(es_));
      if (es_ == 1 ? (v & 0xFF) != 0 : v != 0) out.push_back(e);
    }
    return out;
  }
  const void *data() const { return bytes_.data(); }

 private:
  MapCase c_;
  int64_t es_;
  MatrixGeom geom_;
  std::vector<unsigned char> bytes_;
};

TEST(ForEachRouted, MatchesAPlainLoopOverEveryColumn) {
  const DType dtypes[] = {DType::boolean, DType::i8, DType::u8, DType::i32};
  const int64_t experts[] = {1, 5, 7, 8, 9, 16, 63, 256, 257};
  int cases = 0;
  for (DType dt : dtypes)
    for (int64_t E : experts)
      for (int64_t cs : {1, 3})
        for (double density : {0.03, 0.5, 1.0}) {
          const RandomMap map({dt, E, cs}, 17, density, static_cast<uint32_t>(++cases));
          const Plan p = map.plan();
          for (int64_t t = 0; t < 17; ++t) {
            std::vector<int64_t> got;
            for_each_routed(p, map.data(), t, [&](int64_t e) { got.push_back(e); });
            ASSERT_EQ(got, map.naive(t))
                << "dtype " << static_cast<int>(dt) << " E=" << E << " col_stride=" << cs
                << " density=" << density << " row " << t;
          }
        }
}

TEST(ForEachRouted, NoExpertsAndANullMapVisitNothing) {
  Plan p;
  p.E = 0, p.routing_map_dtype = DType::boolean;
  int calls = 0;
  for_each_routed(p, nullptr, 0, [&](int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace moeperm::detail::cpu
