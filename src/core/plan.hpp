// The Plan: everything the second phase needs, derived from descriptors alone.
//
// Both operators act on the same six tensors, seen from opposite sides, so the plan names
// them by role rather than by operator:
//   role            forward (SPEC §2)            backward (SPEC §3)
//   tokens          tokens [T, H]        (in)    tokensGradOut [T, H]          (out)
//   permuted        permuteTokensOut [R, H](out) permutedTokenOutputGrad G [R,H] (in)
//   routing_map     routingMap [T, E]    (in)    routingMapOptional M [T, E]   (in)
//   probs           probsOptional [T, E] (in)    probsGradOutOptional [T, E]   (out)
//   permuted_probs  permuteProbsOut [R]  (out)   permutedProbsOutputGrad P [R] (in)
//   sorted_indices  sortedIndicesOut [R] (out)   sortedIndices S [R]           (in)
#pragma once

#include <moeperm/moeperm.hpp>

#include <string>

#include "core/workspace_layout.hpp"

namespace moeperm::detail {

// The operators; each has its description (core/op_desc.hpp, core/ops/).
enum class Op : uint8_t { permute, permute_grad };
inline constexpr int kOpCount = 2;
inline constexpr int op_index(Op op) { return static_cast<int>(op); }

// The six tensors by role (table above); an operator's description binds each of its
// operands to one.
enum class Role : uint8_t {
  tokens,
  permuted,
  routing_map,
  dense_probs,
  permuted_probs,
  sorted_indices,
};
inline constexpr int kRoleCount = 6;

// What happens to the probabilities path.
enum class ProbsWork : uint8_t {
  none,       // no probs output
  compute,    // input and output given
  zero_fill,  // output given without its input: filled with zeros (SPEC §3)
};

struct BackendOps;  // backend/backend.hpp: the core never looks inside

// A 2-D strided view, in elements. Shape [rows, cols].
struct MatrixGeom {
  int64_t rows = 0, cols = 0;
  int64_t row_stride = 0, col_stride = 0;
  int64_t offset = 0;
  bool contiguous_rows() const { return col_stride == 1; }
  int64_t at(int64_t r, int64_t c) const { return offset + r * row_stride + c * col_stride; }
};

// A 1-D strided view, in elements.
struct VectorGeom {
  int64_t len = 0, stride = 0, offset = 0;
  int64_t at(int64_t i) const { return offset + i * stride; }
};

struct Plan {
  Op op{};
  bool drop_and_pad = false;
  int64_t T = 0, E = 0, H = 0, K = 0, C = 0, R = 0;

  DType value_dtype = DType::f32;           // tokens / G
  DType probs_dtype = DType::f32;           // the dense [T, E] probs tensor
  DType permuted_probs_dtype = DType::f32;  // the [R] probs tensor
  DType routing_map_dtype = DType::boolean;
  bool has_routing_map = false;
  ProbsWork probs = ProbsWork::none;

  MatrixGeom tokens, permuted, routing_map, dense_probs;
  VectorGeom permuted_probs, sorted_indices;

  // Bit i: operand i of the operator's description is given and used (SPEC §3: a probs
  // input without its output is accepted and ignored), so its data pointer is checked.
  uint32_t used_operands = 0;

  const BackendOps *backend = nullptr;  // set by the backend layer (select_backend)
  uint8_t variant = 0;                  // backend-defined kernel variant (the CPU backend: its ISA)
  const char *variant_name = "";        // static string naming it, for to_string()
  bool stream_stores = false;           // large outputs: write with non-temporal stores
  WorkspaceLayout workspace;
  // The backend allocates `workspace` itself and the caller provides none (SPEC §5: empty
  // problems have a workspace of 0; the CUDA backend still needs its status word there).
  bool internal_workspace = false;
  SlotIds ws_slot = no_slots();  // indexed by the backend's slot enum

  const char *api() const;  // the operator's CANN API name (its description)
};

// Bytes the caller must provide: the layout plus slack to realign any base address.
inline uint64_t workspace_bytes(const Plan &plan) {
  return plan.internal_workspace ? 0 : plan.workspace.required_with_slack();
}

// Base pointers of the six role tensors (storage element 0; the geometry's offset applies).
struct Buffers {
  void *tokens = nullptr;
  void *permuted = nullptr;
  const void *routing_map = nullptr;
  void *dense_probs = nullptr;
  void *permuted_probs = nullptr;
  void *sorted_indices = nullptr;
};

// Elements of a role's view (0 when the plan has none).
inline int64_t role_elements(const Plan &p, Role role) {
  switch (role) {
    case Role::tokens: return p.tokens.rows * p.tokens.cols;
    case Role::permuted: return p.permuted.rows * p.permuted.cols;
    case Role::routing_map: return p.routing_map.rows * p.routing_map.cols;
    case Role::dense_probs: return p.dense_probs.rows * p.dense_probs.cols;
    case Role::permuted_probs: return p.permuted_probs.len;
    case Role::sorted_indices: return p.sorted_indices.len;
  }
  return 0;
}

// The base pointer of a role (read-only view, for checks).
inline const void *buffer_of(const Buffers &b, Role role) {
  switch (role) {
    case Role::tokens: return b.tokens;
    case Role::permuted: return b.permuted;
    case Role::routing_map: return b.routing_map;
    case Role::dense_probs: return b.dense_probs;
    case Role::permuted_probs: return b.permuted_probs;
    case Role::sorted_indices: return b.sorted_indices;
  }
  return nullptr;
}

}  // namespace moeperm::detail
