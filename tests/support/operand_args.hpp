// Operator arguments as plain, nullable descriptors (operators.hpp: PermuteArgs, GradArgs),
// so that one table row can be driven through both APIs: the C++ plan functions
// (moeperm::Error) and the CANN first phase (status + aclGetRecentErrMsg). Written once for
// every operator over its traits; used by the SPEC §5 rule tables.
#pragma once

#include <moeperm/moeperm.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "acl_support.hpp"
#include "operators.hpp"

namespace moeperm::testing {

template <class Args>
using OpOf = typename Args::Op;

// Small valid problems: T=4, E=3, H=5 and K=2 (R=8) or C=2 (R=6); fp32 values and probs,
// (the unpermute pair: restoreShape {T, H}),
// an int8 routing map (each operand's valid dtype and shape in its traits), every optional
// tensor present, contiguous with known storage.
inline constexpr int64_t kT = 4, kE = 3, kH = 5;
inline int64_t rows_for(bool drop_and_pad) { return drop_and_pad ? 6 : 8; }

// A contiguous descriptor whose storage is exactly its elements (unknown when that
// overflows int64).
TensorDesc dense(DType dtype, std::vector<int64_t> shape);

template <class Op>
typename Op::Args valid_args(bool drop_and_pad) {
  const int64_t R = rows_for(drop_and_pad);
  typename Op::Args a;
  for (const auto &operand : Op::kOperands) {
    std::vector<int64_t> shape;
    for (Dim d : operand.dims)
      if (d != Dim::none)
        shape.push_back(d == Dim::T ? kT : d == Dim::E ? kE : d == Dim::H ? kH : R);
    a.*operand.arg = dense(operand.valid_dtype, shape);
  }
  Op::set_valid_attributes(a, kT, kE, R, drop_and_pad, kH);
  return a;
}
inline GradArgs valid_grad_args(bool drop_and_pad) {
  return valid_args<PermuteGradOp>(drop_and_pad);
}
inline PermuteArgs valid_permute_args(bool drop_and_pad) {
  return valid_args<PermuteOp>(drop_and_pad);
}

// The result of one first phase: the status code (0 on success) and the message.
struct Outcome {
  int32_t code = 0;
  std::string message;
};

// Whether each API can express the arguments at all: the C++ descriptors cannot leave a
// required tensor out, and aclCreateTensor takes exactly one stride per dimension.
template <class Args>
bool expressible_in_cxx(const Args &a) {
  for (const auto &operand : OpOf<Args>::kOperands)
    if (operand.required && !(a.*operand.arg)) return false;
  return true;
}
template <class Args>
bool expressible_in_c(const Args &a) {
  for (const auto &operand : OpOf<Args>::kOperands) {
    const OptDesc &d = a.*operand.arg;
    if (d && !d->strides.empty() && d->strides.size() != d->shape.size()) return false;
  }
  return true;
}

// Storage behind every C-API tensor of the rule tables: large enough for their valid
// shapes; read-only in practice, since no executor made from it ever runs.
std::byte *dummy_storage();

// The C++ plan function; Outcome{0, ""} when a plan is made.
template <class Args>
Outcome plan_cxx(const Args &a) {
  try {
    (void)OpOf<Args>::plan(OpOf<Args>::to_desc(a), {});
  } catch (const Error &e) {
    return Outcome{static_cast<int32_t>(e.code()), e.what()};
  }
  return Outcome{};
}

// The CANN first phase over a dummy (zeroed, never written) buffer. An executor it creates is
// freed again without running.
template <class Args>
Outcome first_phase_c(const Args &a) {
  using Op = OpOf<Args>;
  const OperandTensors<Op> t =
      make_operand_tensors<Op>(a, [](const auto &) { return dummy_storage(); });
  uint64_t ws = 0;
  aclOpExecutor *exec = nullptr;
  const CStatus c = c_status(Op::first_phase(t.handles, a, &ws, &exec));
  discard_executor<Op>(exec);
  return Outcome{c.code, c.message};
}

}  // namespace moeperm::testing
