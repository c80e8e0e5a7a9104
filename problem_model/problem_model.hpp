// The random-problem model (library moeperm_problem_model, internal, not installed): realistic
// random problems for the moeperm command, the benchmarks and the tests. Owning host tensors
// with any strides and storage offset, random routing maps with K distinct experts per token,
// and the forward/backward descriptors that tie them together. Output shapes are the ones the
// library derives (moeperm::infer_outputs), never re-derived here.
#pragma once

#include <moeperm/moeperm.hpp>

#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace moeperm::problem_model {

// Transparent huge pages for Storage and the bench's other buffers: off by default (what
// malloc, NumPy and PyTorch give unless told otherwise); `moeperm bench --huge-pages` turns
// the advice on, as aclrtMalloc gives it (Note [Huge pages], docs/cpu-performance.md
// experiment 16). Set it before allocating: it applies to blocks allocated afterwards.
void set_huge_page_advice(bool on);
bool huge_page_advice();
// The kernel's transparent-huge-page mode: the bracketed word of
// /sys/kernel/mm/transparent_hugepage/enabled (always, madvise or never), "" where absent.
std::string thp_mode();
// With the advice on and n >= 4 MiB: madvise(MADV_HUGEPAGE) over the 2 MiB-aligned part of
// [p, p + n) (where the kernel's THP mode allows it; nothing otherwise). The block's own
// alignment stays as it was, so turning the advice on changes the pages and nothing else.
void advise_huge_pages_within(void *p, size_t n);

// Storage aligned as PyTorch's CPU allocator and CANN's device allocator align theirs (64
// bytes and more), not as malloc does (16): the kernels' non-temporal stores write whole
// cache lines only where rows start on one, so a 16-byte-aligned buffer measures a
// slower path than users run (docs/cpu-performance.md). Tests that want misaligned rows
// ask for them with Layout::offset.
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U> &) noexcept {}
  T *allocate(size_t n) {
    T *p = static_cast<T *>(::operator new(n * sizeof(T), kAlign));
    advise_huge_pages_within(p, n * sizeof(T));
    return p;
  }
  void deallocate(T *p, size_t) noexcept { ::operator delete(p, kAlign); }
  friend bool operator==(CacheLineAllocator, CacheLineAllocator) { return true; }
};
using Storage = std::vector<std::byte, CacheLineAllocator<std::byte>>;

// A host tensor that owns its storage. The view is desc; storage covers every element the
// view reaches (desc.storage_elements is set).
struct HostTensor {
  TensorDesc desc;
  Storage storage;

  void *data() { return storage.data(); }
  const void *data() const { return storage.data(); }
  int64_t numel() const;
  // Storage element offset of view element (i) / (i, j).
  int64_t at(int64_t i) const;
  int64_t at(int64_t i, int64_t j) const;

  // Element access through the view, as fp32/int64 (bf16 and fp16 converted).
  double get(int64_t i, int64_t j = 0) const;
  void set(int64_t i, int64_t j, double v);  // rounds to nearest even for bf16/fp16
  void set(int64_t i, double v) { set(i, 0, v); }
};

// Layout of a tensor made by make_tensor: contiguous, or strided with padding between
// rows and elements (col_step > 1), optionally transposed storage, plus a storage offset.
struct Layout {
  int64_t row_pad = 0;        // extra elements after each row (2-D) or between elements (1-D)
  int64_t col_step = 1;       // distance between consecutive elements of a row
  int64_t offset = 0;         // storage offset in elements
  bool column_major = false;  // 2-D: store columns contiguously (strides [1, rows])
  static Layout contiguous() { return {}; }
};

// A tensor of the given shape and layout whose whole storage is filled with `poison` bytes.
HostTensor make_tensor(DType dtype, std::vector<int64_t> shape, const Layout &layout = {},
                       std::byte poison = std::byte{0xA5});

// Fills the view with random values exactly representable in dtype, in [-4, 4).
void fill_random(HostTensor &t, std::mt19937_64 &rng);

// A [T, E] routing map (int8 or bool): each token picks `experts_per_token` distinct
// experts uniformly (fewer when E is smaller). With `ragged`, a token picks a random count
// in [0, experts_per_token] instead.
HostTensor make_routing_map(int64_t T, int64_t E, int64_t experts_per_token, DType dtype,
                            std::mt19937_64 &rng, bool ragged = false, const Layout &layout = {});

// One forward + backward problem in SPEC notation, with every tensor allocated.
struct ProblemSpec {
  int64_t T = 4096, H = 7168, E = 256, K = 8, capacity = 16;
  bool drop_and_pad = false;
  DType dtype = DType::bf16;        // tokens and gradients
  DType probs_dtype = DType::bf16;  // bf16 allows float32 here
  bool with_probs = true;
  DType map_dtype = DType::boolean;
  bool ragged = false;  // drop-less: tokens with fewer than K experts (-1 sentinels)
  uint64_t seed = 42;

  // The numOutTokens attribute the spec passes: T*K drop-less, E*C drop-and-pad.
  int64_t num_out_tokens() const { return drop_and_pad ? E * capacity : T * K; }
  // R, the rows of the permuted outputs, as the library derives it from the inputs and
  // attributes (infer_outputs); throws moeperm::Error where they are invalid.
  int64_t rows() const;
  // The forward's input descriptors and attributes (contiguous; outputs left empty).
  PermuteDesc forward_inputs() const;
};

struct Problem {
  ProblemSpec spec;
  HostTensor tokens, routing_map, probs;                       // forward inputs
  HostTensor permuted_tokens, permuted_probs, sorted_indices;  // forward outputs
  HostTensor grad, probs_grad;                                 // backward inputs (G, P)
  HostTensor tokens_grad, dense_probs_grad;                    // backward outputs

  PermuteDesc permute_desc() const;
  PermuteData permute_data();
  // Backward descriptors: S is the forward's sorted_indices output.
  PermuteGradDesc grad_desc() const;
  PermuteGradData grad_data();
};

// The unpermute pair's tensors on top of a permute problem: the token path of one MoE layer
// (permute -> experts -> unpermute, then the two Grads) with identity experts, so the
// unpermute reads the permute's rows and sortedIndices (SPEC-unpermute U1, U2).
struct UnpermuteTensors {
  HostTensor out_grad;                                        // Grad input G [T, H], random
  HostTensor unpermuted, out_index, token_id, permute_probs;  // forward outputs
  HostTensor permuted_tokens_grad, probs_grad;                // Grad outputs dX [R, H], dP [T, E]
};
// Allocates them (outputs poisoned, G random from the problem's seed).
UnpermuteTensors make_unpermute_tensors(const Problem &p);
// X = the permute's rows, S = its sortedIndices, probs and map when the problem has probs,
// restoreShape {T, H}; every optional output given.
UnpermuteDesc unpermute_desc(const Problem &p, const UnpermuteTensors &u);
UnpermuteData unpermute_data(Problem &p, UnpermuteTensors &u);
// (O, I) = the forward's outIndex and permuteTokenId (valid in both modes); with probs, the
// map, X = the permute's rows and dP.
UnpermuteGradDesc unpermute_grad_desc(const Problem &p, const UnpermuteTensors &u);
UnpermuteGradData unpermute_grad_data(Problem &p, UnpermuteTensors &u);

// Allocates every tensor contiguously and fills the inputs at random (outputs poisoned). The
// forward's outputs, and the backward's inputs shaped like them, take the shapes
// infer_outputs gives; throws moeperm::Error where the forward's inputs are invalid.
Problem make_problem(const ProblemSpec &spec);

// Bytes one call must read and write at least; their total is the figure GB/s is computed
// from, the split what a same-traffic ceiling streams (moeperm bench).
struct Traffic {
  int64_t reads = 0, writes = 0;
  int64_t total() const { return reads + writes; }
};
Traffic permute_traffic(const ProblemSpec &spec);
Traffic permute_grad_traffic(const ProblemSpec &spec);
Traffic unpermute_traffic(const ProblemSpec &spec);
Traffic unpermute_grad_traffic(const ProblemSpec &spec);
inline int64_t permute_bytes(const ProblemSpec &spec) { return permute_traffic(spec).total(); }
inline int64_t permute_grad_bytes(const ProblemSpec &spec) {
  return permute_grad_traffic(spec).total();
}
inline int64_t unpermute_bytes(const ProblemSpec &spec) { return unpermute_traffic(spec).total(); }
inline int64_t unpermute_grad_bytes(const ProblemSpec &spec) {
  return unpermute_grad_traffic(spec).total();
}

// Number of elements whose bytes differ between two views of the same shape and dtype.
int64_t count_bit_differences(const HostTensor &a, const HostTensor &b);

}  // namespace moeperm::problem_model

namespace moeperm {
// The model's former name, while test files still spell it tools:: (drop when none does).
namespace tools = problem_model;
}  // namespace moeperm
