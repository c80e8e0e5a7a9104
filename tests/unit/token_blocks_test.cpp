// The CPU row loops' token blocks (cpu/threading.hpp, Note [Token blocks]): contiguous, in
// order, covering every token once, balanced by work (rows plus the token's own row), and
// for_each_token visits every token exactly once, ascending inside a block.
#include <gtest/gtest.h>

#include <moeperm/moeperm.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {
namespace {

class TokenBlocksTest : public ::testing::Test {
 protected:
  void SetUp() override { moeperm::set_num_threads(3); }
  void TearDown() override { moeperm::set_num_threads(0); }
};

// rows_before as TokenBlocks takes it, from rows per token.
std::vector<int64_t> prefix(const std::vector<int64_t> &rows) {
  std::vector<int64_t> before(rows.size() + 1, 0);
  for (size_t t = 0; t < rows.size(); ++t) before[t + 1] = before[t] + rows[t];
  return before;
}

// Blocks cover [0, T) in order; each block's work (rows + tokens) is at most an even share
// plus one token's work (a block cannot split a token).
void expect_cover_and_balance(const TokenBlocks &blocks, const std::vector<int64_t> &rows) {
  const auto T = static_cast<int64_t>(rows.size());
  ASSERT_EQ(blocks.begin(0), 0);
  ASSERT_EQ(blocks.begin(blocks.size()), T);
  int64_t total = T, heaviest = 0;
  for (int64_t r : rows) {
    total += r;
    heaviest = std::max(heaviest, r + 1);
  }
  for (int64_t i = 0; i < blocks.size(); ++i) {
    ASSERT_LE(blocks.begin(i), blocks.begin(i + 1)) << "block " << i;
    int64_t work = 0;
    for (int64_t t = blocks.begin(i); t < blocks.begin(i + 1); ++t) work += rows[t] + 1;
    EXPECT_LE(work, total / blocks.size() + heaviest) << "block " << i;
  }
}

TEST_F(TokenBlocksTest, UniformRowsGiveEqualTokenRanges) {
  const int64_t T = 1001, K = 8;
  const TokenBlocks blocks(T, K);
  EXPECT_EQ(blocks.size(), 3 * TokenBlocks::kBlocksPerThread);  // 3 threads, T large enough
  expect_cover_and_balance(blocks, std::vector<int64_t>(T, K));
  for (int64_t i = 0; i < blocks.size(); ++i) {
    const int64_t n = blocks.begin(i + 1) - blocks.begin(i);
    EXPECT_TRUE(n == T / blocks.size() || n == T / blocks.size() + 1) << "block " << i << ": " << n;
  }
}

TEST_F(TokenBlocksTest, SmallProblemsGetFewerBlocks) {
  EXPECT_EQ(TokenBlocks(0, 8).size(), 0);
  EXPECT_EQ(TokenBlocks(0, 8).begin(0), 0);
  const TokenBlocks one(1, 2);
  ASSERT_EQ(one.size(), 1);
  EXPECT_EQ(one.begin(0), 0);
  EXPECT_EQ(one.begin(1), 1);
  EXPECT_EQ(TokenBlocks(2 * TokenBlocks::kMinTokens + 1, 4).size(), 3);
}

TEST_F(TokenBlocksTest, SkewedRowsAreBalancedByWork) {
  // Drop-and-pad's shape: the first tokens own all the slots, the rest none.
  std::vector<int64_t> rows(4096, 0);
  for (int t = 0; t < 300; ++t) rows[t] = 14;
  const std::vector<int64_t> before = prefix(rows);
  const TokenBlocks blocks(4096, before.data());
  expect_cover_and_balance(blocks, rows);
  EXPECT_LT(blocks.begin(blocks.size() / 2), 600) << "half the work lies in the first tokens";

  // Ragged: any number of rows per token, zero included.
  std::mt19937 rng(7);
  std::vector<int64_t> ragged(777);
  for (int64_t &r : ragged) r = rng() % 3 == 0 ? 0 : rng() % 40;
  const std::vector<int64_t> rb = prefix(ragged);
  expect_cover_and_balance(TokenBlocks(777, rb.data()), ragged);

  // No rows at all: the tokens' own rows still balance.
  const std::vector<int64_t> none(100, 0), nb = prefix(none);
  expect_cover_and_balance(TokenBlocks(100, nb.data()), none);
}

TEST_F(TokenBlocksTest, ForEachTokenVisitsEveryTokenOnceInBlockOrder) {
  const int64_t T = 999;
  std::vector<int64_t> rows(T);
  for (int64_t t = 0; t < T; ++t) rows[t] = (t * 7) % 11;
  const std::vector<int64_t> before = prefix(rows);
  const TokenBlocks blocks(T, before.data());
  std::vector<int> visits(T, 0);
  std::vector<int64_t> previous(T, -2);  // the token the same thread visited just before
#pragma omp parallel num_threads(3)
  {
    int64_t last = -1;
    for_each_token(blocks, [&](int64_t t) {
      ++visits[t];
      previous[t] = last;
      last = t;
    });
  }
  for (int64_t t = 0; t < T; ++t) EXPECT_EQ(visits[t], 1) << "token " << t;
  // Inside a block a thread goes token by token, ascending.
  for (int64_t i = 0; i < blocks.size(); ++i)
    for (int64_t t = blocks.begin(i) + 1; t < blocks.begin(i + 1); ++t)
      EXPECT_EQ(previous[t], t - 1) << "token " << t;
}

}  // namespace
}  // namespace moeperm::detail::cpu
