#include "operand_args.hpp"

#include <array>
#include <initializer_list>

#include "acl_support.hpp"

namespace moeperm::testing {
namespace {

// Storage behind every C-API tensor of the rule tables: large enough for their valid
// shapes; read-only in practice, since no executor made from it ever runs.
std::byte *dummy_storage() {
  alignas(256) static std::array<std::byte, 1 << 20> buffer{};
  return buffer.data();
}

AclTensorPtr c_tensor(const OptDesc &d) {
  return d ? make_acl_tensor(*d, dummy_storage()) : nullptr;
}

bool strides_match(std::initializer_list<const OptDesc *> descs) {
  for (const OptDesc *d : descs)
    if (*d && !(*d)->strides.empty() && (*d)->strides.size() != (*d)->shape.size()) return false;
  return true;
}

template <class F>
Outcome catch_error(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return Outcome{static_cast<int32_t>(e.code()), e.what()};
  }
  return Outcome{};
}

}  // namespace

TensorDesc dense(DType dtype, std::vector<int64_t> shape) {
  // Not TensorDesc::contiguous: it is not exported from libmoeperm (see
  // unit/public_symbols_test.cpp), so a test using it would not link.
  TensorDesc d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t s : d.shape)
    if (s < 0 || __builtin_mul_overflow(n, s, &n)) return d;  // storage left unknown
  d.storage_elements = n;
  return d;
}

GradArgs valid_grad_args(bool drop_and_pad) {
  const int64_t R = rows_for(drop_and_pad);
  GradArgs a;
  a.G = dense(DType::f32, {R, kH});
  a.P = dense(DType::f32, {R});
  a.S = dense(DType::i32, {R});
  a.M = dense(DType::i8, {kT, kE});
  a.TG = dense(DType::f32, {kT, kH});
  a.PG = dense(DType::f32, {kT, kE});
  a.num_experts = kE;
  a.tokens_num = kT;
  a.drop_and_pad = drop_and_pad;
  return a;
}

PermuteArgs valid_permute_args(bool drop_and_pad) {
  const int64_t R = rows_for(drop_and_pad);
  PermuteArgs a;
  a.X = dense(DType::f32, {kT, kH});
  a.M = dense(DType::i8, {kT, kE});
  a.PR = dense(DType::f32, {kT, kE});
  a.Y = dense(DType::f32, {R, kH});
  a.YP = dense(DType::f32, {R});
  a.S = dense(DType::i32, {R});
  a.num_out_tokens = R;
  a.drop_and_pad = drop_and_pad;
  return a;
}

bool expressible_in_cxx(const GradArgs &a) { return a.G && a.S && a.TG; }
bool expressible_in_cxx(const PermuteArgs &a) { return a.X && a.M && a.Y && a.S; }
bool expressible_in_c(const GradArgs &a) {
  return strides_match({&a.G, &a.P, &a.S, &a.M, &a.TG, &a.PG});
}
bool expressible_in_c(const PermuteArgs &a) {
  return strides_match({&a.X, &a.M, &a.PR, &a.Y, &a.YP, &a.S});
}

Outcome plan_cxx(const GradArgs &a) {
  PermuteGradDesc d;
  d.permuted_token_output_grad = *a.G;
  d.permuted_probs_output_grad = a.P;
  d.sorted_indices = *a.S;
  d.routing_map = a.M;
  d.num_experts = a.num_experts;
  d.tokens_num = a.tokens_num;
  d.drop_and_pad = a.drop_and_pad;
  d.tokens_grad_out = *a.TG;
  d.probs_grad_out = a.PG;
  return catch_error([&] { (void)plan_permute_grad(d); });
}

Outcome plan_cxx(const PermuteArgs &a) {
  PermuteDesc d;
  d.tokens = *a.X;
  d.routing_map = *a.M;
  d.probs = a.PR;
  d.num_out_tokens = a.num_out_tokens;
  d.drop_and_pad = a.drop_and_pad;
  d.permuted_tokens = *a.Y;
  d.permuted_probs = a.YP;
  d.sorted_indices = *a.S;
  return catch_error([&] { (void)plan_permute(d); });
}

Outcome first_phase_c(const GradArgs &a) {
  auto g = c_tensor(a.G), p = c_tensor(a.P), s = c_tensor(a.S), m = c_tensor(a.M);
  auto tg = c_tensor(a.TG), pg = c_tensor(a.PG);
  uint64_t ws = 0;
  aclOpExecutor *exec = nullptr;
  const int32_t st = aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
      g.get(), p.get(), s.get(), m.get(), a.num_experts, a.tokens_num, a.drop_and_pad, tg.get(),
      pg.get(), &ws, &exec);
  const CStatus c = c_status(st);
  discard_executor(exec, true);
  return Outcome{c.code, c.message};
}

Outcome first_phase_c(const PermuteArgs &a) {
  auto x = c_tensor(a.X), m = c_tensor(a.M), pr = c_tensor(a.PR), y = c_tensor(a.Y);
  auto yp = c_tensor(a.YP), s = c_tensor(a.S);
  uint64_t ws = 0;
  aclOpExecutor *exec = nullptr;
  const int32_t st = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
      x.get(), m.get(), pr.get(), a.num_out_tokens, a.drop_and_pad, y.get(), yp.get(), s.get(), &ws,
      &exec);
  const CStatus c = c_status(st);
  discard_executor(exec, false);
  return Outcome{c.code, c.message};
}

}  // namespace moeperm::testing
