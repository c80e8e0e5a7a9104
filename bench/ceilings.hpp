// The same-run ceilings moeperm bench compares each operator with. Both stream through one
// arena sized for the case's largest operator, so memory holds the sweep's largest case
// (T = 16384) once.
#pragma once

#include <cstddef>
#include <memory>

#include "problem_model.hpp"

namespace moeperm::bench {

double now_ms();

class Ceilings {
 public:
  explicit Ceilings(double max_bytes);

  // A multi-threaded memcpy moving `bytes` (reads bytes/2, writes bytes/2), each thread
  // copying one contiguous chunk with the C library's memcpy: the yardstick the README's
  // targets use.
  double memcpy_ms(double bytes, int threads);

  // The operator's own traffic, moved as plainly as it can be: of `t.reads` bytes read and
  // `t.writes` bytes written, the smaller amount is copied with memcpy and the rest of the
  // larger stream is written with non-temporal stores (where the ISA has them) or read,
  // each thread its share. The memcpy ratio assumes half reads and half writes; on a host
  // whose memory writes more slowly than it reads, a write-heavy operator (the permute
  // writes K times what it reads) sits above that ratio but near this one
  // (docs/cpu-performance.md).
  double traffic_ms(const problem_model::Traffic &t, int threads);

 private:
  size_t size_;
  std::unique_ptr<std::byte[], void (*)(std::byte *)> arena_;
  volatile uint64_t sink_ = 0;  // the reads' sum, so that they cannot be optimised away
};

}  // namespace moeperm::bench
