// The same-run ceilings moeperm bench compares each operator with. Both stream through one
// arena sized for the case's largest operator, so memory holds the sweep's largest case
// (T = 16384) once.
#pragma once

#include <cstddef>
#include <memory>

#include "problem_model.hpp"

namespace moeperm::bench {

double now_ms();

// How a ceiling copies: the C library's memcpy, or non-temporal stores (stream_copy).
enum class CopyKind { libc, stream };

// Copies n bytes from src to dst (not overlapping) the way `kind` says; both give memcpy's
// result, and the stream kind's non-temporal stores are fenced before it returns.
void copy_bytes(CopyKind kind, std::byte *dst, const std::byte *src, size_t n);

class Ceilings {
 public:
  explicit Ceilings(double max_bytes);

  // A multi-threaded copy moving `bytes` (reads bytes/2, writes bytes/2), each thread
  // copying one contiguous chunk: the faster of the C library's memcpy and a streaming copy,
  // timed back to back (which goes first alternates from call to call). The yardstick of
  // the README's targets. Both, because neither is the faster everywhere: where the copy
  // fits in the cache, cached stores can win (experiment 8 in docs/cpu-performance.md);
  // beyond it, glibc 2.36's memcpy on the Zen 4 VM was 1.2x-1.8x slower than the streaming
  // copy at every size the named and sweep suites copy, whichever method it took
  // (experiment 19), and with it alone the ratios jumped where it changed method.
  double memcpy_ms(double bytes, int threads);

  // The operator's own traffic, moved as plainly as it can be: of `t.reads` bytes read and
  // `t.writes` bytes written, the smaller amount is copied (the faster of the two copies, as
  // above) and the rest of the larger stream is written with non-temporal stores (where the
  // ISA has them) or read, each thread its share. The memcpy ratio assumes half reads and
  // half writes; on a host where a one-way stream is slower than a copy, an operator that
  // mostly writes (the permute writes K times what it reads) or mostly reads (the sums) sits
  // above that ratio but near this one (docs/cpu-performance.md).
  double traffic_ms(const problem_model::Traffic &t, int threads);

 private:
  double copy_ms(CopyKind kind, double bytes, int threads);
  double traffic_ms(CopyKind kind, const problem_model::Traffic &t, int threads);
  uint64_t memcpy_calls_ = 0, traffic_calls_ = 0;  // which copy goes first alternates
  size_t size_;
  std::unique_ptr<std::byte[], void (*)(std::byte *)> arena_;
  volatile uint64_t sink_ = 0;  // the reads' sum, so that they cannot be optimised away
};

}  // namespace moeperm::bench
