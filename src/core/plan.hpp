// The Plan: everything the second phase needs, derived from descriptors alone.
//
// The permute pair acts on the same six tensors, seen from opposite sides, so the plan names
// them by role rather than by operator (the unpermute pair adds four roles, below):
//   role            forward (SPEC §2)            backward (SPEC §3)
//   tokens          tokens [T, H]        (in)    tokensGradOut [T, H]          (out)
//   permuted        permuteTokensOut [R, H](out) permutedTokenOutputGrad G [R,H] (in)
//   routing_map     routingMap [T, E]    (in)    routingMapOptional M [T, E]   (in)
//   probs           probsOptional [T, E] (in)    probsGradOutOptional [T, E]   (out)
//   permuted_probs  permuteProbsOut [R]  (out)   permutedProbsOutputGrad P [R] (in)
//   sorted_indices  sortedIndicesOut [R] (out)   sortedIndices S [R]           (in)
#pragma once

#include <moeperm/moeperm.hpp>

#include <array>
#include <cstddef>
#include <string>

#include "core/workspace_layout.hpp"

namespace moeperm::detail {

// The operators; each has its description (core/op_desc.hpp, core/ops/).
// The ragged pair takes Megatron-LM's / TransformerEngine's semantics (any number of experts
// per token, a row->token index): core/ops/ragged_*.cpp.
enum class Op : uint8_t {
  permute,
  permute_grad,
  unpermute,
  unpermute_grad,
  ragged_permute,
  ragged_unpermute,
  ragged_permute_grad,
  ragged_unpermute_grad,
  sort_chunks,      // core/ops/sort_chunks.cpp: Megatron's sort_chunks_by_idxs
  sort_chunks_grad  // its backward: the chunks put back in their first order
};
inline constexpr int kOpCount = 10;
inline constexpr int op_index(Op op) { return static_cast<int>(op); }

// The tensors by role (table above); an operator's description binds each of its operands
// to one. The plan's views and the run's buffers are arrays indexed by role, so a new role
// is one enumerator here (and a named accessor, for kernels that read it by name).
enum class Role : uint8_t {
  tokens,
  permuted,
  routing_map,
  dense_probs,
  permuted_probs,
  sorted_indices,
  out_index,         // the unpermute pair's outIndex [R]
  token_id,          // the unpermute pair's permuteTokenId [R]
  saved_permuted,    // the unpermute Grad's permutedTokensOptional [R, H] (the forward's input)
  dense_probs_grad,  // the unpermute Grad's probsGradOutOptional [T, E]
  split_sizes,       // sort_chunks' split_sizes [S]: chunk c holds split_sizes[c] rows
  chunk_order,       // sort_chunks' sorted_index [S]: output chunk j is input chunk order[j]
  row_probs,         // sort_chunks' probs [T]: one per row of tokens (its Grad: probs_grad)
};
inline constexpr int kRoleCount = 13;
inline constexpr size_t role_index(Role r) { return static_cast<size_t>(r); }

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
  int64_t S = 0;  // chunks (sort_chunks)

  DType value_dtype = DType::f32;           // tokens / G
  DType probs_dtype = DType::f32;           // the dense [T, E] probs tensor
  DType permuted_probs_dtype = DType::f32;  // the [R] probs tensor
  DType routing_map_dtype = DType::boolean;
  bool has_routing_map = false;
  ProbsWork probs = ProbsWork::none;

  // The view of each role's tensor (all zero where the call has none). A 1-D view is kept
  // as [len, 1] with row_stride = its stride; vector() reads it back as a VectorGeom.
  std::array<MatrixGeom, kRoleCount> views{};
  const MatrixGeom &matrix(Role r) const { return views[role_index(r)]; }
  VectorGeom vector(Role r) const {
    const MatrixGeom &m = views[role_index(r)];
    return {m.rows, m.row_stride, m.offset};
  }
  const MatrixGeom &tokens() const { return matrix(Role::tokens); }
  const MatrixGeom &permuted() const { return matrix(Role::permuted); }
  const MatrixGeom &routing_map() const { return matrix(Role::routing_map); }
  const MatrixGeom &dense_probs() const { return matrix(Role::dense_probs); }
  VectorGeom permuted_probs() const { return vector(Role::permuted_probs); }
  VectorGeom sorted_indices() const { return vector(Role::sorted_indices); }
  VectorGeom out_index() const { return vector(Role::out_index); }
  VectorGeom token_id() const { return vector(Role::token_id); }
  const MatrixGeom &saved_permuted() const { return matrix(Role::saved_permuted); }
  const MatrixGeom &dense_probs_grad() const { return matrix(Role::dense_probs_grad); }
  VectorGeom split_sizes() const { return vector(Role::split_sizes); }
  VectorGeom chunk_order() const { return vector(Role::chunk_order); }
  VectorGeom row_probs() const { return vector(Role::row_probs); }

  // Bit i: operand i of the operator's description is given and used (SPEC §3: a probs
  // input without its output is accepted and ignored), so its data pointer is checked.
  uint32_t used_operands = 0;
  // Bit role_index(r): the call has a tensor in role r. Its dtype is role_dtypes[r].
  uint32_t roles_given = 0;
  std::array<DType, kRoleCount> role_dtypes{};
  bool has(Role r) const { return (roles_given >> role_index(r)) & 1u; }
  DType dtype(Role r) const { return role_dtypes[role_index(r)]; }

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

// Base pointers of the role tensors (storage element 0; the geometry's offset applies),
// indexed by role; inputs are never written through them. The API layers fill them from an
// operator's arguments in description order (buffers_of in core/op_desc.hpp).
struct Buffers {
  std::array<void *, kRoleCount> data{};
  void *operator[](Role r) const { return data[role_index(r)]; }
  void *tokens() const { return (*this)[Role::tokens]; }
  void *permuted() const { return (*this)[Role::permuted]; }
  const void *routing_map() const { return (*this)[Role::routing_map]; }
  void *dense_probs() const { return (*this)[Role::dense_probs]; }
  void *permuted_probs() const { return (*this)[Role::permuted_probs]; }
  void *sorted_indices() const { return (*this)[Role::sorted_indices]; }
  void *out_index() const { return (*this)[Role::out_index]; }
  void *token_id() const { return (*this)[Role::token_id]; }
  const void *saved_permuted() const { return (*this)[Role::saved_permuted]; }
  void *dense_probs_grad() const { return (*this)[Role::dense_probs_grad]; }
  const void *split_sizes() const { return (*this)[Role::split_sizes]; }
  const void *chunk_order() const { return (*this)[Role::chunk_order]; }
  void *row_probs() const { return (*this)[Role::row_probs]; }
};

// Elements of a role's view (0 when the plan has none).
inline int64_t role_elements(const Plan &p, Role role) {
  return p.matrix(role).rows * p.matrix(role).cols;
}

// The base pointer of a role (read-only view, for checks).
inline const void *buffer_of(const Buffers &b, Role role) { return b[role]; }

}  // namespace moeperm::detail
