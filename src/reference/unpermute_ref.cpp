// Reference unpermute pair, SPEC-unpermute U1-U3 transcribed literally: fp32 sums in the
// order U1 gives, U3's dot product, every index checked before anything is written (Note
// [Index validation]). Token loops are skipped when their inner extent is 0 (Note [Work
// bounded by tensors]). Compiled with contraction off: every product is rounded to fp32
// before it is added, except in u3_dot() (common_ref.hpp), which fuses by definition.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "reference/common_ref.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail::ref {
namespace {

using Index = std::vector<int64_t>;

// The values of index rule `rule` (its role's int32 tensor), checked against the rule.
Status read_index(const Plan &p, const Buffers &b, int rule, Index *out) {
  const OpDesc &d = op_desc(p.op);
  const Role role = d.index_rules[static_cast<size_t>(rule)].role;
  const VectorGeom g = p.vector(role);
  const IndexRange range = index_range(d, p, rule);
  Index v(static_cast<size_t>(g.len));
  for (int64_t j = 0; j < g.len; ++j) {
    v[static_cast<size_t>(j)] = *elem<int32_t>(b[role], g.at(j));
    if (!range.contains(v[static_cast<size_t>(j)]))
      return bad_index(p, rule, j, v[static_cast<size_t>(j)]);
  }
  if (range.unique) {
    Index first(static_cast<size_t>(range.bound), -1);
    for (int64_t j = 0; j < g.len; ++j) {
      const int64_t x = v[static_cast<size_t>(j)];
      if (x < 0) continue;
      if (first[static_cast<size_t>(x)] >= 0)
        return repeated_index(p, rule, j, x, first[static_cast<size_t>(x)]);
      first[static_cast<size_t>(x)] = j;
    }
  }
  *out = std::move(v);
  return Status::success();
}

// Token t's routed experts, ascending.
Index experts_of(const Plan &p, const Buffers &b, int64_t t) {
  Index e;
  for (int64_t x = 0; x < p.E; ++x)
    if (routed(p, b.routing_map(), t, x)) e.push_back(x);
  return e;
}

float round_to(DType dtype, float v) {
  if (dtype == DType::bf16) return bf16_to_f32(f32_to_bf16(v));
  if (dtype == DType::f16) return f16_to_f32(f32_to_f16(v));
  return v;
}

void store_rows(DType dtype, void *base, const MatrixGeom &g, const std::vector<float> &v,
                int64_t cols) {
  for (int64_t r = 0; cols > 0 && r < g.rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      store_value(dtype, base, g.at(r, c), v[static_cast<size_t>(r * cols + c)]);
}

// permuteProbs (slot-indexed q, +0 where none) and the two index outputs.
void write_side_outputs(const Plan &p, const Buffers &b, const Index &S, const Index &q_src_t,
                        const Index &q_src_e) {
  const bool probs = p.has(Role::dense_probs);
  if (p.has(Role::permuted_probs))
    for (int64_t i = 0; i < p.R; ++i) {
      const auto k = static_cast<size_t>(i);
      if (probs && q_src_t[k] >= 0)
        copy_value(p.dtype(Role::permuted_probs), b.permuted_probs(), p.permuted_probs().at(i),
                   b.dense_probs(), p.dense_probs().at(q_src_t[k], q_src_e[k]));
      else
        store_zero(p.dtype(Role::permuted_probs), b.permuted_probs(), p.permuted_probs().at(i));
    }
  Index out_index(S), token_id(static_cast<size_t>(p.R));
  if (!p.drop_and_pad) {
    for (int64_t i = 0; i < p.R; ++i) token_id[static_cast<size_t>(i)] = i / p.K;
  } else {  // permuteTokenId = S sorted ascending; outIndex = its stable argsort
    std::iota(out_index.begin(), out_index.end(), 0);
    std::stable_sort(out_index.begin(), out_index.end(), [&](int64_t a, int64_t c) {
      return S[static_cast<size_t>(a)] < S[static_cast<size_t>(c)];
    });
    for (int64_t i = 0; i < p.R; ++i)
      token_id[static_cast<size_t>(i)] = S[static_cast<size_t>(out_index[static_cast<size_t>(i)])];
  }
  for (int64_t i = 0; i < p.R; ++i) {
    if (p.has(Role::out_index))
      *elem<int32_t>(b.out_index(), p.out_index().at(i)) =
          static_cast<int32_t>(out_index[static_cast<size_t>(i)]);
    if (p.has(Role::token_id))
      *elem<int32_t>(b.token_id(), p.token_id().at(i)) =
          static_cast<int32_t>(token_id[static_cast<size_t>(i)]);
  }
}

}  // namespace

Status unpermute(const Plan &p, const Buffers &b) {
  Index S;
  MOEPERM_TRY(read_index(p, b, 0, &S));
  const bool probs = p.has(Role::dense_probs);
  const DType vt = p.value_dtype, pt = p.dtype(Role::dense_probs);
  std::vector<float> acc(static_cast<size_t>(p.T * p.H), 0.0f);
  // The source (t, e) of each slot's prob q_i; t = -1: q_i = +0.
  Index q_t(static_cast<size_t>(p.R), -1), q_e(static_cast<size_t>(p.R), -1);
  auto x_at = [&](int64_t r, int64_t h) {
    return load_value(vt, b.permuted(), p.permuted().at(r, h));
  };
  auto add = [&](int64_t t, int64_t h, float v) { acc[static_cast<size_t>(t * p.H + h)] += v; };
  if (!p.drop_and_pad) {
    for (int64_t t = 0; p.K > 0 && t < p.T; ++t) {
      const Index ex = probs ? experts_of(p, b, t) : Index{};
      for (int64_t k = 0; k < p.K; ++k) {
        const int64_t i = t * p.K + k, s = S[static_cast<size_t>(i)];
        float q = 0.0f;
        if (probs && k < static_cast<int64_t>(ex.size())) {
          q_t[static_cast<size_t>(i)] = t, q_e[static_cast<size_t>(i)] = ex[static_cast<size_t>(k)];
          q = load_value(pt, b.dense_probs(), p.dense_probs().at(t, ex[static_cast<size_t>(k)]));
        }
        if (s == -1 || (probs && q == 0.0f)) continue;  // CANN skips a zero prob's slot
        for (int64_t h = 0; h < p.H; ++h) add(t, h, probs ? x_at(s, h) * q : x_at(s, h));
      }
    }
  } else {
    // Y_j rounds to the token dtype when probs have it (CANN multiplies in that dtype).
    const DType product_dtype = pt == vt ? vt : DType::f32;
    for (int64_t j = 0; j < p.R; ++j) {
      const int64_t t = S[static_cast<size_t>(j)];
      float q = 1.0f;
      if (probs) {
        q_t[static_cast<size_t>(j)] = t, q_e[static_cast<size_t>(j)] = j / p.C;
        q = load_value(pt, b.dense_probs(), p.dense_probs().at(t, j / p.C));
      }
      for (int64_t h = 0; h < p.H; ++h)
        add(t, h, probs ? round_to(product_dtype, x_at(j, h) * q) : x_at(j, h));
    }
  }
  store_rows(vt, b.tokens(), p.tokens(), acc, p.H);
  write_side_outputs(p, b, S, q_t, q_e);
  return Status::success();
}

Status unpermute_grad(const Plan &p, const Buffers &b) {
  Index O, I;
  MOEPERM_TRY(read_index(p, b, 0, &O));
  if (p.drop_and_pad) MOEPERM_TRY(read_index(p, b, 1, &I));
  const bool probs = p.has(Role::dense_probs), dp_out = p.probs == ProbsWork::compute;
  const DType vt = p.value_dtype, pt = p.dtype(Role::dense_probs);
  std::vector<float> dx(static_cast<size_t>(p.R * p.H), 0.0f);
  std::vector<float> dp(static_cast<size_t>(p.T * p.E), 0.0f);
  auto g_at = [&](int64_t t, int64_t h) { return load_value(vt, b.tokens(), p.tokens().at(t, h)); };
  // Without probs, dX[r] is G[t]'s row copied (U5: the permute forward's row copy, bit for
  // bit, so a signalling NaN stays signalling); rows no slot names stay +0.
  Index copied_from(static_cast<size_t>(p.R), -1);
  // dX[r] = G[t] (times p with probs); dP[t, e] = dot(X[r], G[t]) when e >= 0.
  auto scatter = [&](int64_t r, int64_t t, float pv, int64_t e) {
    if (!probs) {
      copied_from[static_cast<size_t>(r)] = t;
      return;
    }
    for (int64_t h = 0; h < p.H; ++h) dx[static_cast<size_t>(r * p.H + h)] = g_at(t, h) * pv;
    if (dp_out && e >= 0) dp[static_cast<size_t>(t * p.E + e)] = u3_dot(p, b, r, t);
  };
  if (!p.drop_and_pad) {
    for (int64_t t = 0; p.K > 0 && t < p.T; ++t) {
      const Index ex = probs ? experts_of(p, b, t) : Index{};
      for (int64_t k = 0; k < p.K; ++k) {
        const int64_t r = O[static_cast<size_t>(t * p.K + k)];
        if (r == -1) continue;
        const bool has_e = probs && k < static_cast<int64_t>(ex.size());
        const int64_t e = has_e ? ex[static_cast<size_t>(k)] : -1;
        scatter(r, t, has_e ? load_value(pt, b.dense_probs(), p.dense_probs().at(t, e)) : 0.0f, e);
      }
    }
  } else {
    for (int64_t i = 0; i < p.R; ++i) {
      const int64_t t = I[static_cast<size_t>(i)], r = O[static_cast<size_t>(i)];
      const int64_t e = probs ? r / p.C : -1;
      scatter(r, t, probs ? load_value(pt, b.dense_probs(), p.dense_probs().at(t, e)) : 0.0f, e);
    }
  }
  store_rows(vt, b.permuted(), p.permuted(), dx, p.H);
  for (int64_t r = 0; r < p.R; ++r)
    if (const int64_t t = copied_from[static_cast<size_t>(r)]; t >= 0)
      for (int64_t h = 0; h < p.H; ++h)
        copy_value(vt, b.permuted(), p.permuted().at(r, h), b.tokens(), p.tokens().at(t, h));
  if (p.probs != ProbsWork::none)
    store_rows(p.dtype(Role::dense_probs_grad), b.dense_probs_grad(), p.dense_probs_grad(), dp,
               p.E);
  return Status::success();
}

}  // namespace moeperm::detail::ref
