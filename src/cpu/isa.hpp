// CPU instruction sets of the row kernels, chosen once at plan time (ATen's
// ATEN_CPU_CAPABILITY): the widest the CPU offers, or MOEPERM_CPU_ISA=scalar|avx2|avx512.
// The shipped library is built for the baseline ISA; only the per-ISA translation units
// row_kernels_<isa>.cpp are compiled with wider flags, and only called when the CPU has them.
#pragma once

#include <cstdint>

namespace moeperm::detail::cpu {

enum class Isa : uint8_t { scalar, avx2, avx512 };

const char *to_string(Isa isa);
bool isa_supported(Isa isa);  // by this CPU (and this build)
Isa best_isa();
// MOEPERM_CPU_ISA when set and supported (an unsupported request falls back to the best the
// CPU has, so a forced variant never crashes), else best_isa().
Isa selected_isa();

// Outputs of at least this many bytes are written with non-temporal stores (and smaller ones
// where the call moves twice as many: streams_output):
// streaming_threshold_for_cache of the level-3 cache cpu0 shares, or
// MOEPERM_CPU_STREAMING_BYTES when set to a byte count. Below it, an output can stay in the
// cache for whoever reads it next, and cached stores are faster; above it they only add a
// read of every destination line (docs/cpu-performance.md, experiments 8 and 9). Read at
// plan time.
int64_t streaming_store_bytes();
// Half the level-3 cache (l3_bytes, 0 where the host does not say: 16 MiB), within 4 MiB ..
// 32 MiB. The cap: a VM reports the whole socket's level-3 cache (300 MiB on the Intel host
// of experiment 9), shared with other guests and with whatever runs between two operators;
// there, an output of 7 MB and up whose lines are not already cached is written 10-55%
// faster streamed, and a cached one at most 15% faster when they are.
int64_t streaming_threshold_for_cache(int64_t l3_bytes);
// Whether a call writes its output of output_bytes with non-temporal stores, given the bytes
// it moves in all (reads + writes) and the threshold above: when the output reaches the
// threshold, or when the call moves twice the threshold (the whole level-3 cache): its own
// reads then evict the destination lines before anyone reads them again, so a cached store
// only adds a read of each line. A sum over K rows reads K times what it writes: at T = 512
// and 1024 of the DeepSeek-like layer (7 and 15 MB out, 59 and 117 MB read) streaming took
// the sums 5%-15% faster (docs/cpu-performance.md, experiment 22).
bool streams_output(int64_t output_bytes, int64_t moved_bytes, int64_t threshold);

// dst[0..n) = round(sum over k = 0..nsrc-1, ascending, of srcs[k][0..n)), fp32 accumulation
// starting from +0, one rounding (SPEC §4); nsrc == 0 writes +0. Rows are contiguous.
// With `stream`, dst is written with non-temporal stores where aligned.
using SumRowsFn = void (*)(void *dst, const void *const *srcs, int64_t nsrc, int64_t n,
                           bool stream);
// Copies n bytes; with `stream`, non-temporal stores where aligned.
using CopyFn = void (*)(void *dst, const void *src, int64_t bytes, bool stream);

// dst[0..n) = round(+0 + sum over k ascending of f32(srcs[k][h]) * weights[k]), each product
// rounded to fp32 (sum_scaled) or to the storage dtype (sum_scaled_rounded) before it is
// added (SPEC-unpermute U1).
using SumScaledFn = void (*)(void *dst, const void *const *srcs, const float *weights, int64_t nsrc,
                             int64_t n, bool stream);
// dst[0..n) = round(f32(src[h]) * w) (SPEC-unpermute U2's dX).
using ScaleRowFn = void (*)(void *dst, const void *src, float w, int64_t n, bool stream);
// SPEC-unpermute U3's dot product of two rows of n elements, in fp32.
using DotFn = float (*)(const void *a, const void *b, int64_t n);
// dst[0..n) = round(f32(g[h]) * w), returning U3's dot(x, g): both in one pass. x_next is
// the row of n elements the caller passes as x next (nullptr: none known): only prefetched.
using ScaleDotFn = float (*)(void *dst, const void *g, float w, const void *x, const void *x_next,
                             int64_t n, bool stream);

// The row kernels of one value type.
struct TypedRowKernels {
  SumRowsFn sum_rows;
  SumScaledFn sum_scaled;
  SumScaledFn sum_scaled_rounded;
  ScaleRowFn scale_row;
  DotFn dot;
  ScaleDotFn scale_dot;
};

struct RowKernels {
  TypedRowKernels bf16;
  TypedRowKernels f16;
  TypedRowKernels f32;
  CopyFn copy;
  void (*store_fence)();  // orders the non-temporal stores of the calling thread
};

const RowKernels &row_kernels(Isa isa);

// Per-ISA tables, defined in row_kernels_<isa>.cpp.
extern const RowKernels kRowKernelsScalar;
extern const RowKernels kRowKernelsAvx2;
extern const RowKernels kRowKernelsAvx512;

}  // namespace moeperm::detail::cpu
