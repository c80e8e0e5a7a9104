// moeperm: the modern C++ API.
//
// The CANN C functions (aclnnop/*.h) are a thin layer over this API. It separates the
// two things CANN's executor bundles together:
//   * a Plan, built from descriptors (dtype, shape, strides, offset) alone. Building it
//     validates every SPEC §5 rule that does not need tensor data and sizes the workspace.
//     A Plan never sees data pointers, is immutable, cheap to copy and reusable;
//   * run(plan, data, workspace): executes synchronously on the calling thread, after the
//     data-dependent checks (SPEC §5.7) that must read indices before anything is written.
// Every failure throws moeperm::Error carrying CANN's status code and a message that
// names the argument, what was expected and what was given.
#pragma once

#include <moeperm/export.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace moeperm {

// Element types. The values are CANN's aclDataType values.
enum class DType : int32_t {
  f32 = 0,
  f16 = 1,
  i8 = 2,
  i32 = 3,
  u8 = 4,
  i64 = 9,
  f64 = 11,
  boolean = 12,
  bf16 = 27,
};

// Status codes. The values are CANN's aclnnStatus values (SPEC §5).
enum class Code : int32_t {
  ok = 0,
  null_pointer = 161001,
  invalid_param = 161002,
  runtime_error = 361001,
  tiling_error = 561002,
  inner_nullptr = 561103,
};

MOEPERM_API const char *to_string(DType dtype) noexcept;
MOEPERM_API const char *to_string(Code code) noexcept;
// Bytes per element; 0 for a value that is not a DType.
MOEPERM_API int64_t element_size(DType dtype) noexcept;

class MOEPERM_API Error : public std::runtime_error {
 public:
  Error(Code code, const std::string &message);
  Code code() const noexcept { return code_; }

 private:
  Code code_;
};

// The geometry of a tensor view, in elements.
struct TensorDesc {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty: row-major contiguous
  int64_t offset = 0;            // storage offset of element [0, ..., 0]
  // Number of elements of the allocation the view lives in; when given, every element of
  // the view must lie inside [0, storage_elements).
  std::optional<int64_t> storage_elements;

  MOEPERM_API static TensorDesc contiguous(DType dtype, std::vector<int64_t> shape);
};

// MoeTokenPermuteWithRoutingMap (SPEC §2). Names follow CANN's parameters.
struct PermuteDesc {
  TensorDesc tokens;                // [T, H]
  TensorDesc routing_map;           // [T, E] int8 or bool
  std::optional<TensorDesc> probs;  // [T, E]
  int64_t num_out_tokens = 0;       // T*K (drop-less) or E*C (drop-and-pad)
  bool drop_and_pad = false;
  TensorDesc permuted_tokens;                // [R, H] out
  std::optional<TensorDesc> permuted_probs;  // [R] out
  TensorDesc sorted_indices;                 // [R] int32 out
};

// Storage base pointers (element 0 of each allocation; the descriptor's offset applies).
struct PermuteData {
  const void *tokens = nullptr;
  const void *routing_map = nullptr;
  const void *probs = nullptr;
  void *permuted_tokens = nullptr;
  void *permuted_probs = nullptr;
  void *sorted_indices = nullptr;
};

// MoeTokenPermuteWithRoutingMapGrad (SPEC §3).
struct PermuteGradDesc {
  TensorDesc permuted_token_output_grad;                 // G [R, H]
  std::optional<TensorDesc> permuted_probs_output_grad;  // P [R]
  TensorDesc sorted_indices;                             // S [R] int32
  std::optional<TensorDesc> routing_map;                 // M [T, E]
  int64_t num_experts = 0;
  int64_t tokens_num = 0;
  bool drop_and_pad = false;
  TensorDesc tokens_grad_out;                // [T, H] out
  std::optional<TensorDesc> probs_grad_out;  // [T, E] out
};

struct PermuteGradData {
  const void *permuted_token_output_grad = nullptr;
  const void *permuted_probs_output_grad = nullptr;
  const void *sorted_indices = nullptr;
  const void *routing_map = nullptr;
  void *tokens_grad_out = nullptr;
  void *probs_grad_out = nullptr;
};

// MoeTokenUnpermuteWithRoutingMap (SPEC-unpermute U1): the permuted rows back to their tokens,
// summed (weighted by probs when given).
struct UnpermuteDesc {
  TensorDesc permuted_tokens;                         // X [R, H]
  TensorDesc sorted_indices;                          // S [R] int32, as the permute wrote it
  std::optional<TensorDesc> routing_map;              // M [T, E] int8 or bool
  std::optional<TensorDesc> probs;                    // P [T, E]
  bool padded_mode = false;                           // drop-and-pad
  std::optional<std::vector<int64_t>> restore_shape;  // {T, H}; required without probs
  TensorDesc unpermuted_tokens;                       // [T, H] out
  std::optional<TensorDesc> out_index;                // [R] int32 out
  std::optional<TensorDesc> permute_token_id;         // [R] int32 out
  std::optional<TensorDesc> permute_probs;            // [R] out
};

struct UnpermuteData {
  const void *permuted_tokens = nullptr;
  const void *sorted_indices = nullptr;
  const void *routing_map = nullptr;
  const void *probs = nullptr;
  void *unpermuted_tokens = nullptr;
  void *out_index = nullptr;
  void *permute_token_id = nullptr;
  void *permute_probs = nullptr;
};

// MoeTokenUnpermuteWithRoutingMapGrad (SPEC-unpermute U2).
struct UnpermuteGradDesc {
  TensorDesc unpermuted_tokens_grad;          // G [T, H]
  TensorDesc out_index;                       // O [R] int32
  TensorDesc permute_token_id;                // I [R] int32
  std::optional<TensorDesc> routing_map;      // M [T, E]
  std::optional<TensorDesc> permuted_tokens;  // X [R, H]: needed for probs_grad_out
  std::optional<TensorDesc> probs;            // P [T, E]
  bool drop_and_pad = false;
  std::optional<std::vector<int64_t>> restore_shape;  // not read (U2)
  TensorDesc permuted_tokens_grad_out;                // dX [R, H] out
  std::optional<TensorDesc> probs_grad_out;           // dP [T, E] out
};

struct UnpermuteGradData {
  const void *unpermuted_tokens_grad = nullptr;
  const void *out_index = nullptr;
  const void *permute_token_id = nullptr;
  const void *routing_map = nullptr;
  const void *permuted_tokens = nullptr;
  const void *probs = nullptr;
  void *permuted_tokens_grad_out = nullptr;
  void *probs_grad_out = nullptr;
};

// Which implementation runs a plan. `automatic` takes the first host backend that supports
// the plan from the ordered list (fastest first, the naive reference last). The environment
// variable MOEPERM_BACKEND=cpu|reference overrides `automatic`. `cuda` is the only backend
// whose data pointers and workspace are CUDA device memory; it is never chosen
// automatically, since a plan does not see pointers (the C API picks it through
// aclrtSetDevice; see README "Devices").
enum class Backend { automatic, cpu, reference, cuda };

struct PlanOptions {
  Backend backend = Backend::automatic;
};

// The sizes a plan resolved (SPEC notation).
struct Sizes {
  int64_t tokens = 0;    // T
  int64_t experts = 0;   // E
  int64_t hidden = 0;    // H
  int64_t top_k = 0;     // K (drop-less)
  int64_t capacity = 0;  // C (drop-and-pad)
  int64_t rows = 0;      // R
  int64_t chunks = 0;    // S (sort_chunks)
};

// The operators: one per CANN operator API (to_string gives its name, e.g.
// "aclnnMoeTokenPermuteWithRoutingMapGrad"), then the ragged pair ("moeperm::ragged_permute").
enum class Operator {
  permute,
  permute_grad,
  unpermute,
  unpermute_grad,
  ragged_permute,
  ragged_unpermute,
  ragged_permute_grad,
  ragged_unpermute_grad,
  sort_chunks,  // "moeperm::sort_chunks" (<moeperm/sort_chunks.hpp>)
  sort_chunks_grad
};
MOEPERM_API const char *to_string(Operator op) noexcept;
// Whether `op` is the backward of another operator.
MOEPERM_API bool is_backward(Operator op) noexcept;

// One entry of the backend registry (backends(), in selection order: fastest first, the
// naive reference last, device backends after it since they are chosen only by name).
struct BackendInfo {
  Backend backend;
  const char *name;  // "cpu", "reference", "cuda"
  bool device;       // its data pointers and workspace are memory of a device, not the host
  bool available;    // it can run here (a device backend: built in and a device is present)
};
MOEPERM_API std::vector<BackendInfo> backends();

namespace detail {
struct Plan;
}

class MOEPERM_API Plan {
 public:
  // Bytes of workspace run() needs; 0 when it needs none.
  uint64_t workspace_bytes() const noexcept;
  Sizes sizes() const noexcept;
  bool drop_and_pad() const noexcept;
  Operator op() const noexcept;
  bool is_grad() const noexcept;  // is_backward(op()); kept for source compatibility
  const char *backend_name() const noexcept;
  // The backend's kernel variant chosen at plan time: the CPU backend's instruction set
  // ("avx512", "avx2", "scalar"), the CUDA backend's "sm_80+"; "" where a backend has one.
  const char *variant() const noexcept;
  // A one-line, human-readable description (op, mode, sizes, dtypes, backend, workspace).
  std::string to_string() const;

  explicit Plan(std::shared_ptr<const detail::Plan> impl) : impl_(std::move(impl)) {}
  const detail::Plan &impl() const noexcept { return *impl_; }

 private:
  std::shared_ptr<const detail::Plan> impl_;
};

// The outputs an operator derives from its inputs and attributes: `desc` with each output
// descriptor replaced by a contiguous one of the shape and dtype that planning expects.
// Optional outputs are present when their input is given (permuted_probs with probs,
// probs_grad_out with permuted_probs_output_grad) or when `desc` already has them (then
// only their shape is inferred). Throws Error where the inputs and attributes alone are
// invalid, with the same status and message as planning. So plan_permute(infer_outputs(d))
// plans whatever inputs are valid, and bindings need no shape algebra of their own.
MOEPERM_API PermuteDesc infer_outputs(const PermuteDesc &desc);
MOEPERM_API PermuteGradDesc infer_outputs(const PermuteGradDesc &desc);
MOEPERM_API UnpermuteDesc infer_outputs(const UnpermuteDesc &desc);
MOEPERM_API UnpermuteGradDesc infer_outputs(const UnpermuteGradDesc &desc);

MOEPERM_API Plan plan_permute(const PermuteDesc &desc, const PlanOptions &options = {});
MOEPERM_API Plan plan_permute_grad(const PermuteGradDesc &desc, const PlanOptions &options = {});
MOEPERM_API Plan plan_unpermute(const UnpermuteDesc &desc, const PlanOptions &options = {});
MOEPERM_API Plan plan_unpermute_grad(const UnpermuteGradDesc &desc,
                                     const PlanOptions &options = {});

// Runs a plan synchronously. The workspace must hold at least plan.workspace_bytes()
// bytes (no alignment requirement). Throws Error; on a data error nothing is written.
MOEPERM_API void run(const Plan &plan, const PermuteData &data, std::span<std::byte> workspace);
MOEPERM_API void run(const Plan &plan, const PermuteGradData &data, std::span<std::byte> workspace);
MOEPERM_API void run(const Plan &plan, const UnpermuteData &data, std::span<std::byte> workspace);
MOEPERM_API void run(const Plan &plan, const UnpermuteGradData &data,
                     std::span<std::byte> workspace);

// Runs a plan on a CUDA stream (`cuda_stream` is a cudaStream_t; null is the legacy default
// stream). For a Backend::cuda plan the work is enqueued on that stream, then the call waits
// for it and throws if a data-dependent check failed on the device (SPEC §5.7: nothing was
// written). For a host plan the stream is ignored and this is run() above.
MOEPERM_API void run(const Plan &plan, const PermuteData &data, std::span<std::byte> workspace,
                     void *cuda_stream);
MOEPERM_API void run(const Plan &plan, const PermuteGradData &data, std::span<std::byte> workspace,
                     void *cuda_stream);
MOEPERM_API void run(const Plan &plan, const UnpermuteData &data, std::span<std::byte> workspace,
                     void *cuda_stream);
MOEPERM_API void run(const Plan &plan, const UnpermuteGradData &data,
                     std::span<std::byte> workspace, void *cuda_stream);

// Enqueues a Backend::cuda plan on `cuda_stream` and returns at once (what a training loop
// wants: no host round trip). The outcome reaches `on_done` exactly once, from a CUDA
// callback thread, when the stream gets there: code 0 on success, else the status and the
// message of a data error (nothing was written then). `on_done` must not call CUDA; it may be
// null, and then a data error goes unreported. A host plan runs synchronously and throws.
using RunCallback = void (*)(void *context, Code code, const char *message);
MOEPERM_API void run_async(const Plan &plan, const PermuteData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);
MOEPERM_API void run_async(const Plan &plan, const PermuteGradData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);
MOEPERM_API void run_async(const Plan &plan, const UnpermuteData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);
MOEPERM_API void run_async(const Plan &plan, const UnpermuteGradData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);

// Whether this build contains the CUDA backend, and how many GPUs the driver reports (0
// when not built with CUDA, without a driver, or without a GPU).
MOEPERM_API bool cuda_built() noexcept;
MOEPERM_API int cuda_device_count() noexcept;

// One-shot conveniences: plan, allocate the workspace, run.
MOEPERM_API void permute(const PermuteDesc &desc, const PermuteData &data,
                         const PlanOptions &options = {});
MOEPERM_API void permute_grad(const PermuteGradDesc &desc, const PermuteGradData &data,
                              const PlanOptions &options = {});
MOEPERM_API void unpermute(const UnpermuteDesc &desc, const UnpermuteData &data,
                           const PlanOptions &options = {});
MOEPERM_API void unpermute_grad(const UnpermuteGradDesc &desc, const UnpermuteGradData &data,
                                const PlanOptions &options = {});

// Threads used by the CPU backend: MOEPERM_NUM_THREADS when set, else the value given
// here (n <= 0 restores the default), else the hardware threads. Results are bitwise the
// same for every thread count.
MOEPERM_API void set_num_threads(int n);
MOEPERM_API int get_num_threads();

}  // namespace moeperm

// The ragged pair (Megatron-LM's and TransformerEngine's semantics) is declared here too.
#include <moeperm/ragged.hpp>
// So is the chunk sort of expert parallelism (Megatron-LM's sort_chunks_by_idxs).
#include <moeperm/sort_chunks.hpp>
