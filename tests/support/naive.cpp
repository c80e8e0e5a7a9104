#include "naive.hpp"

#include <cmath>

#include "fp_reference.hpp"

namespace moeperm::testing {
namespace {

double value_at(const HostTensor &t, int64_t i, int64_t j = 0) {
  return decode(t.desc.dtype, static_cast<uint32_t>(bits_at(t, i, j)));
}

size_t sz(int64_t v) { return static_cast<size_t>(v); }

}  // namespace

Routing read_routing(const HostTensor &m) {
  Routing r;
  r.T = m.desc.shape[0];
  r.E = m.desc.shape[1];
  r.bits.resize(sz(r.T * r.E));
  for (int64_t t = 0; t < r.T; ++t)
    for (int64_t e = 0; e < r.E; ++e) r.bits[sz(t * r.E + e)] = bits_at(m, t, e) != 0;
  return r;
}

ForwardExpect expected_forward(const Routing &m, int64_t num_out_tokens, bool drop_and_pad) {
  ForwardExpect x;
  if (!drop_and_pad) {
    const int64_t K = m.T > 0 ? num_out_tokens / m.T : 0, R = m.T * K;
    x.sorted_indices.assign(sz(R), -1);
    x.row_token.assign(sz(R), -1);
    x.row_expert.assign(sz(R), -1);
    // Row of (t, e) in the expert-major list f: pairs of lower experts, then lower tokens
    // of the same expert.
    std::vector<int64_t> base(sz(m.E + 1), 0);
    for (int64_t e = 0; e < m.E; ++e) {
      base[sz(e + 1)] = base[sz(e)];
      for (int64_t t = 0; t < m.T; ++t) base[sz(e + 1)] += m.routed(t, e);
    }
    std::vector<int64_t> seen(sz(m.E), 0);  // tokens below t routed to e
    for (int64_t t = 0; t < m.T; ++t) {
      int64_t r = 0;
      for (int64_t e = 0; e < m.E; ++e) {
        if (!m.routed(t, e)) continue;
        const int64_t row = base[sz(e)] + seen[sz(e)]++;
        if (r < K) x.sorted_indices[sz(t * K + r)] = static_cast<int32_t>(row);
        if (row < R) x.row_token[sz(row)] = t, x.row_expert[sz(row)] = e;
        ++r;
      }
    }
    return x;
  }
  const int64_t C = m.E > 0 ? num_out_tokens / m.E : 0;
  for (int64_t e = 0; e < m.E; ++e) {
    std::vector<int64_t> list;
    for (int pass = 0; pass < 2; ++pass)  // routed tokens first, then the others
      for (int64_t t = 0; t < m.T; ++t)
        if (m.routed(t, e) == (pass == 0)) list.push_back(t);
    for (int64_t c = 0; c < C; ++c) {
      x.sorted_indices.push_back(static_cast<int32_t>(list.at(sz(c))));
      x.row_token.push_back(list.at(sz(c)));
      x.row_expert.push_back(e);
    }
  }
  return x;
}

::testing::AssertionResult ForwardMatchesSpec(const Problem &p) {
  const ProblemSpec &s = p.spec;
  const ForwardExpect x =
      expected_forward(read_routing(p.routing_map), s.num_out_tokens(), s.drop_and_pad);
  const std::vector<int32_t> got = read_indices(p.sorted_indices);
  if (got != x.sorted_indices) {
    auto f = ::testing::AssertionFailure() << "sortedIndicesOut differs:";
    for (size_t j = 0; j < got.size(); ++j)
      if (got[j] != x.sorted_indices[j]) {
        f << " [" << j << "] got " << got[j] << " want " << x.sorted_indices[j];
        break;
      }
    return f;
  }
  for (size_t j = 0; j < x.row_token.size(); ++j) {
    const int64_t t = x.row_token[j], row = static_cast<int64_t>(j);
    for (int64_t h = 0; h < s.H; ++h) {
      const uint64_t want = t < 0 ? 0 : bits_at(p.tokens, t, h);
      if (bits_at(p.permuted_tokens, row, h) != want)
        return ::testing::AssertionFailure()
               << "permuteTokensOut[" << j << ", " << h << "] = 0x" << std::hex
               << bits_at(p.permuted_tokens, row, h) << ", want 0x" << want << std::dec
               << " (token " << t << ")";
    }
    if (s.with_probs) {
      const uint64_t want = t < 0 ? 0 : bits_at(p.probs, t, x.row_expert[j]);
      if (bits_at(p.permuted_probs, row) != want)
        return ::testing::AssertionFailure()
               << "permuteProbsOut[" << j << "] = 0x" << std::hex << bits_at(p.permuted_probs, row)
               << ", want 0x" << want;
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult BackwardMatchesSpec(const Problem &p) {
  const ProblemSpec &s = p.spec;
  const std::vector<int32_t> S = read_indices(p.sorted_indices);
  const int64_t R = static_cast<int64_t>(S.size());
  // Slots j contributing to token t (SPEC §3): S[t*K + k] != -1, or S[j] == t.
  std::vector<std::vector<int64_t>> slots(sz(s.T));
  if (!s.drop_and_pad) {
    const int64_t K = R / s.T;
    for (int64_t t = 0; t < s.T; ++t)
      for (int64_t k = 0; k < K; ++k)
        if (S[sz(t * K + k)] != -1) slots[sz(t)].push_back(S[sz(t * K + k)]);
  } else {
    for (int64_t j = 0; j < R; ++j) slots[sz(S[sz(j)])].push_back(j);
  }
  const DType vt = p.grad.desc.dtype;
  for (int64_t t = 0; t < s.T; ++t)
    for (int64_t h = 0; h < s.H; ++h) {
      double sum = 0, magnitude = 0;
      for (int64_t j : slots[sz(t)]) {
        const double g = value_at(p.grad, j, h);
        if (g * 64 != std::floor(g * 64))
          return ::testing::AssertionFailure() << "precondition: G[" << j << ", " << h
                                               << "] = " << g << " is not a multiple of 2^-6";
        sum += g, magnitude += std::fabs(g);
      }
      if (magnitude >= 0x1p18)
        return ::testing::AssertionFailure() << "precondition: fp32 sums may be inexact";
      const uint64_t want = encode(vt, sum);
      if (bits_at(p.tokens_grad, t, h) != want)
        return ::testing::AssertionFailure()
               << "tokensGradOut[" << t << ", " << h << "] = " << p.tokens_grad.get(t, h) << " (0x"
               << std::hex << bits_at(p.tokens_grad, t, h) << "), want " << std::dec << sum
               << " (0x" << std::hex << want << ")";
    }
  if (!s.with_probs) return ::testing::AssertionSuccess();

  // probsGrad: zeros, then the masked scatter / the assignment.
  std::vector<uint64_t> want(sz(s.T * s.E), 0);
  if (!s.drop_and_pad) {
    const Routing m = read_routing(p.routing_map);
    int64_t j = 0;
    for (int64_t e = 0; e < s.E; ++e)
      for (int64_t t = 0; t < s.T; ++t)
        if (m.routed(t, e)) want[sz(t * s.E + e)] = bits_at(p.probs_grad, j++);
  } else {
    const int64_t C = R / s.E;
    for (int64_t j = 0; j < R; ++j) want[sz(S[sz(j)] * s.E + j / C)] = bits_at(p.probs_grad, j);
  }
  for (int64_t t = 0; t < s.T; ++t)
    for (int64_t e = 0; e < s.E; ++e)
      if (bits_at(p.dense_probs_grad, t, e) != want[sz(t * s.E + e)])
        return ::testing::AssertionFailure()
               << "probsGradOut[" << t << ", " << e << "] = 0x" << std::hex
               << bits_at(p.dense_probs_grad, t, e) << ", want 0x" << want[sz(t * s.E + e)];
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ProbsGradMatchesSlotFormula(const Problem &p) {
  const ProblemSpec &s = p.spec;
  if (s.drop_and_pad || !s.with_probs) return ::testing::AssertionSuccess();
  const std::vector<int32_t> S = read_indices(p.sorted_indices);
  const Routing m = read_routing(p.routing_map);
  const int64_t K = static_cast<int64_t>(S.size()) / s.T;
  for (int64_t t = 0; t < s.T; ++t) {
    int64_t r = 0;
    for (int64_t e = 0; e < s.E; ++e) {
      uint64_t want = 0;
      if (m.routed(t, e)) {
        const int32_t j = S[sz(t * K + r++)];
        if (j < 0) return ::testing::AssertionFailure() << "token " << t << " lost a slot";
        want = bits_at(p.probs_grad, j);
      }
      if (bits_at(p.dense_probs_grad, t, e) != want)
        return ::testing::AssertionFailure()
               << "probsGradOut[" << t << ", " << e << "] = 0x" << std::hex
               << bits_at(p.dense_probs_grad, t, e) << ", want P[S[" << std::dec << t << "*K + "
               << r - 1 << "]] = 0x" << std::hex << want;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace moeperm::testing
