// Thread count of the CPU backend, and the token blocks the row loops share out. Results
// never depend on either (Note [Determinism]): every output element is owned by exactly one
// token, and a token's work does not depend on which thread does it.
#pragma once

#include <cstdint>

namespace moeperm::detail::cpu {

// MOEPERM_NUM_THREADS, else the value set through moeperm::set_num_threads(), else the
// hardware threads.
int num_threads();

// Contiguous blocks of tokens, about kBlocksPerThread per thread, cut so that each holds
// about the same work: a token's rows plus its own output row (Note [Token blocks]).
// Handed out one at a time (for_each_token), so a slow or busy core takes fewer.
class TokenBlocks {
 public:
  static constexpr int64_t kBlocksPerThread = 8;
  static constexpr int64_t kMinTokens = 16;  // no block is cut smaller than this many tokens

  // `rows_before[t]`: rows of tokens [0, t), for t in [0, T] (nondecreasing, from 0).
  TokenBlocks(int64_t T, const int64_t *rows_before) : TokenBlocks(T, rows_before, 0) {}
  // Every token has `rows_per_token` rows.
  TokenBlocks(int64_t T, int64_t rows_per_token) : TokenBlocks(T, nullptr, rows_per_token) {}

  int64_t size() const { return n_; }
  // Block i is tokens [begin(i), begin(i + 1)); begin(0) = 0, begin(size()) = T.
  int64_t begin(int64_t i) const;

 private:
  TokenBlocks(int64_t T, const int64_t *rows_before, int64_t rows_per_token);
  // Strictly increasing in t: every token has at least its output row.
  int64_t work_before(int64_t t) const {
    return t + (rows_before_ ? rows_before_[t] : t * rows_per_token_);
  }

  int64_t T_;
  const int64_t *rows_before_;
  int64_t rows_per_token_;
  int64_t n_;
};

// fn(t) for every token, block by block (ascending t inside a block), inside a parallel
// region: an orphaned worksharing loop, with its barrier at the end.
template <class Fn>
void for_each_token(const TokenBlocks &blocks, Fn &&fn) {
#pragma omp for schedule(dynamic, 1)
  for (int64_t i = 0; i < blocks.size(); ++i)
    for (int64_t t = blocks.begin(i), end = blocks.begin(i + 1); t < end; ++t) fn(t);
}

}  // namespace moeperm::detail::cpu
