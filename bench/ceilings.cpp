#include "ceilings.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>

#include "problem_model.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace moeperm::bench {
namespace {

constexpr std::align_val_t kArenaAlign{64};

std::byte *allocate(size_t bytes) {
  auto *p = static_cast<std::byte *>(::operator new(std::max<size_t>(bytes, 64), kArenaAlign));
  // The same pages as the operators' buffers (--huge-pages), so the ratios compare like with like.
  problem_model::advise_huge_pages_within(p, bytes);
  std::memset(p, 1, std::max<size_t>(bytes, 64));  // touched once, so no run pays page faults
  return p;
}

void release(std::byte *p) { ::operator delete(p, kArenaAlign); }

// Reads n bytes as fast as a core can: four independent 16-byte accumulators (a single
// scalar chain reads about 20 GB/s per core on the Intel VM, less than its memory gives, which
// made the read-heavy operators' traffic ceiling lenient there).
uint64_t read_range(const std::byte *p, size_t n) {
  uint64_t sum = 0;
  size_t i = 0;
#if defined(__SSE2__)
  __m128i acc[4] = {_mm_setzero_si128(), _mm_setzero_si128(), _mm_setzero_si128(),
                    _mm_setzero_si128()};
  for (; i + 64 <= n; i += 64)
    for (int u = 0; u < 4; ++u)
      acc[u] = _mm_add_epi64(acc[u], _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + i) + u));
  alignas(16) uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i *>(lanes),
                  _mm_add_epi64(_mm_add_epi64(acc[0], acc[1]), _mm_add_epi64(acc[2], acc[3])));
  sum = lanes[0] + lanes[1];
#endif
  for (; i + sizeof(uint64_t) <= n; i += sizeof(uint64_t)) {
    uint64_t w;
    std::memcpy(&w, p + i, sizeof w);
    sum += w;
  }
  return sum;
}

void write_range(std::byte *p, size_t n) {
#if defined(__SSE2__)
  const size_t head = std::min(n, (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64);
  std::memset(p, 3, head);
  size_t i = head;
  const __m128i v = _mm_set1_epi8(3);
  for (; i + 16 <= n; i += 16) _mm_stream_si128(reinterpret_cast<__m128i *>(p + i), v);
  std::memset(p + i, 3, n - i);
  _mm_sfence();
#else
  std::memset(p, 3, n);
#endif
}

// Copies n bytes with non-temporal stores: the destination is written without being read
// first, in one pass. On the Zen 4 VM this moved 1.2x-1.8x the bytes per second of glibc
// 2.36's memcpy at every size the bench copies (docs/cpu-performance.md, experiment 19).
void stream_copy(std::byte *dst, const std::byte *src, size_t n) {
#if defined(__SSE2__)
  const size_t head = std::min(n, (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= n; i += 64)
    for (int u = 0; u < 4; ++u)
      _mm_stream_si128(reinterpret_cast<__m128i *>(dst + i) + u,
                       _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i) + u));
  std::memcpy(dst + i, src + i, n - i);
  _mm_sfence();
#else
  std::memcpy(dst, src, n);
#endif
}

// timed(kind) for both copy kinds, libc first on odd calls and stream first on even ones (two
// statements: the operands of one call are evaluated in no fixed order), the faster time.
template <class Timed>
double faster_copy(uint64_t &calls, Timed timed) {
  const bool libc_first = ++calls % 2 == 1;
  const double first = timed(libc_first ? CopyKind::libc : CopyKind::stream);
  const double second = timed(libc_first ? CopyKind::stream : CopyKind::libc);
  return std::min(first, second);
}

}  // namespace

void copy_bytes(CopyKind kind, std::byte *dst, const std::byte *src, size_t n) {
  if (kind == CopyKind::libc)
    std::memcpy(dst, src, n);
  else
    stream_copy(dst, src, n);
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

Ceilings::Ceilings(double max_bytes)
    : size_(static_cast<size_t>(max_bytes)), arena_(allocate(size_), release) {}

double Ceilings::memcpy_ms(double bytes, int threads) {
  return faster_copy(memcpy_calls_, [&](CopyKind k) { return copy_ms(k, bytes, threads); });
}

double Ceilings::copy_ms(CopyKind kind, double bytes, int threads) {
  const size_t n = std::min(size_ / 2, static_cast<size_t>(bytes / 2));
  std::byte *src = arena_.get(), *dst = arena_.get() + n;
  const double t0 = now_ms();
  const size_t chunk = (n + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int i = 0; i < threads; ++i) {
    const size_t begin = std::min(n, chunk * static_cast<size_t>(i));
    const size_t end = std::min(n, begin + chunk);
    copy_bytes(kind, dst + begin, src + begin, end - begin);
  }
  return now_ms() - t0;
}

double Ceilings::traffic_ms(const problem_model::Traffic &t, int threads) {
  return faster_copy(traffic_calls_, [&](CopyKind k) { return traffic_ms(k, t, threads); });
}

double Ceilings::traffic_ms(CopyKind kind, const problem_model::Traffic &t, int threads) {
  const size_t r = std::min(size_, static_cast<size_t>(t.reads));
  const size_t w = std::min(size_ - r, static_cast<size_t>(t.writes));
  const size_t both = std::min(r, w);  // bytes read and written alike: copied
  const std::byte *src = arena_.get();
  std::byte *dst = arena_.get() + r;
  uint64_t sum = 0;
  const double t0 = now_ms();
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : sum)
  for (int i = 0; i < threads; ++i) {
    const auto share = [&](size_t n, int k) {
      return n * static_cast<size_t>(k) / static_cast<size_t>(threads);
    };
    const size_t c0 = share(both, i), c1 = share(both, i + 1);
    copy_bytes(kind, dst + c0, src + c0, c1 - c0);
    // The rest of the larger stream: more writes (streamed) or more reads.
    const size_t x0 = both + share(std::max(r, w) - both, i);
    const size_t x1 = both + share(std::max(r, w) - both, i + 1);
    if (w > r)
      write_range(dst + x0, x1 - x0);
    else
      sum += read_range(src + x0, x1 - x0);
  }
  const double ms = now_ms() - t0;
  sink_ = sink_ + sum;
  return ms;
}

}  // namespace moeperm::bench
