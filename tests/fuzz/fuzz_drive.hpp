// The part of the fuzz harness every operator shares (fuzz_operators.cpp has the invariants
// and the input layout): one call's operands, and the two phases driven with the workspace,
// stream and re-execution choices of the input, checking the invariants as they go.
#pragma once

#include <aclnn/acl_meta.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_input.hpp"

namespace moeperm::fuzz {

// One call: its operands in CANN's parameter order, which of them are outputs, and the
// storage of every operand as it was before the first phase (inputs must keep it; a failed
// run must leave outputs so; the oracle starts its outputs from it).
struct Case {
  bool grad = false, dp = false, probs_in = false, probs_out = false, map = true;
  bool stream = false;
  bool tiling_rejections = false;  // the operator may return 561002 for CANN's tiling limits
  std::vector<Operand> ops;
  std::vector<bool> is_output;
  std::vector<problem_model::Storage> before;
  aclTensor *tensor(size_t i) const { return ops[i].acl; }
};

// Flags bit 7: the input drives the unpermute pair.
constexpr uint8_t kFlagUnpermute = 128;

// The header every input starts with (fuzz_operators.cpp's layout), decoded.
struct Header {
  uint8_t flags = 0;
  bool reexecute = false;
  int64_t T = 0, E = 0, H = 0, K = 0, C = 0;
  int64_t R = 0;  // T * K drop-less, E * C drop-and-pad (0 when that overflows)
  uint8_t attr = 0, attr2 = 0;
  DType vt = DType::f32, pt = DType::f32, mt = DType::boolean;
  uint8_t ws_mode = 0, extra = 0;
  Case base_case() const;  // the flags' choices, no operands yet
};
Header read_header(Reader &r, uint8_t flags);

// What the C++ API's infer_outputs made of a call's inputs: its status and message, and each
// output's inferred shape, indexed like Case::ops (nullopt: not an output, or not inferred).
struct Inferred {
  aclnnStatus status = 0;
  std::string message;
  std::vector<std::optional<std::vector<int64_t>>> shapes;
};

// Calls `infer` (which returns the shapes) and catches its moeperm::Error.
template <class F>
Inferred inferred_by(F &&infer) {
  try {
    return {0, "", infer()};
  } catch (const moeperm::Error &e) {
    return {static_cast<aclnnStatus>(e.code()), e.what(), {}};
  }
}

// The output shapes of a descriptor, placed at their operand indices among n operands.
inline std::vector<std::optional<std::vector<int64_t>>> shapes_at(
    size_t n, std::initializer_list<std::pair<size_t, std::optional<TensorDesc>>> outputs) {
  std::vector<std::optional<std::vector<int64_t>>> v(n);
  for (const auto &[i, d] : outputs)
    if (d) v[i] = d->shape;
  return v;
}

// The phases of one operator: phase1(workspace_size*, executor**) (either may be null),
// execute(workspace, size, executor, stream), and the oracle of a successful run.
struct Phases {
  std::function<aclnnStatus(uint64_t *, aclOpExecutor **)> phase1;
  std::function<aclnnStatus(void *, uint64_t, aclOpExecutor *, aclrtStream)> execute;
  std::function<void(Case &)> oracle;
  // The message of the last failure; null: aclGetRecentErrMsg() (the C API's).
  std::function<std::string()> message;
  // false for the C++ API: a Plan is reusable and owns nothing to consume, so the checks of
  // a single-use executor (discarded unrun, re-executed) do not apply.
  bool executor = true;
  // Tokens and experts the oracle walks: past kMaxOracleTokens the outputs must be empty.
  int64_t oracle_tokens = 0, oracle_experts = 0;
  // infer_outputs on the same inputs; nullopt when the C++ API cannot express the call (a
  // required tensor null). It must not reject what the first phase accepts, and then gives
  // exactly the output shapes the first phase accepted. Null: not checked.
  std::function<std::optional<Inferred>()> infer;
};

// Dimension i of an operand's shape, 0 when it has fewer (the sizes the oracle walks are
// taken before the first phase has checked the ranks).
inline int64_t dim_of(const Operand &op, size_t i) {
  return i < op.host.desc.shape.size() ? op.host.desc.shape[i] : 0;
}

// Drives both phases on `c` (its operands made and filled) and checks every invariant;
// ws_mode, extra and reexecute are the input's choices (fuzz_operators.cpp). Destroys the
// tensors at the end.
void drive(Case &c, const Phases &phases, uint8_t ws_mode, uint8_t extra, bool reexecute);

// The unpermute pair's inputs (fuzz_unpermute.cpp): flags bit 7 selects it.
void run_unpermute(Reader &r, uint8_t flags);

// Extra bit 5 with flags bit 7: the ragged pair through the C++ API (fuzz_ragged.cpp);
// with attribute2 bits 4 and 5 as well, the chunk sort (fuzz_sort_chunks.cpp).
constexpr uint8_t kExtraRagged = 32, kAttr2SortChunks = 48;
void run_ragged(Reader &r, const Header &hd);
void run_sort_chunks(Reader &r, const Header &hd);

// An operator of the C++ API: its plan on a backend, its run, and its infer_outputs, over the
// operands' descriptors and data pointers.
struct CxxOp {
  std::function<Plan(const std::vector<Operand> &, const PlanOptions &)> plan;
  std::function<void(const Plan &, const std::vector<void *> &, std::span<std::byte>)> run;
  std::function<std::vector<std::optional<std::vector<int64_t>>>(const std::vector<Operand> &)>
      infer;
};

// A CxxOp from the operator's descriptor (made from the operands), plan function, data (made
// from the data pointers) and its descriptor's output shapes.
template <class Desc, class DescOf, class DataOf, class OutputsOf>
CxxOp cxx_op(DescOf desc_of, Plan (*plan)(const Desc &, const PlanOptions &), DataOf data_of,
             OutputsOf outputs_of) {
  return {
      [=](const std::vector<Operand> &o, const PlanOptions &opt) { return plan(desc_of(o), opt); },
      [=](const Plan &p, const std::vector<void *> &d, std::span<std::byte> ws) {
        run(p, data_of(d), ws);
      },
      [=](const std::vector<Operand> &o) {
        return outputs_of(o.size(), infer_outputs(desc_of(o)));
      }};
}

// The descriptor of operand i when it is present.
inline std::optional<TensorDesc> opt_desc(const std::vector<Operand> &ops, size_t i) {
  return ops[i].present ? std::optional<TensorDesc>(ops[i].host.desc) : std::nullopt;
}

// Storage element of view element (i, j) of a 1-D or 2-D operand when it lies inside the
// storage (wrapping, never overflowing, on absurd strides), else -1.
int64_t element_at(const Operand &op, int64_t i, int64_t j);
// Writes values[i] to element i of a 1-D int32 operand, up to the first element outside.
void write_int32s(Operand &op, const std::vector<int32_t> &values);

// drive() for a C++ API operator on the CPU backend (a failure is a moeperm::Error), its
// oracle the reference backend bit for bit (fuzz_ragged.cpp).
void drive_cxx(Case &c, const CxxOp &op, const Header &hd);

}  // namespace moeperm::fuzz
