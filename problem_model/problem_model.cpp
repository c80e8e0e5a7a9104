#include "problem_model.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "backend/fp_conversion.hpp"

namespace moeperm::problem_model {

using detail::bf16_to_f32;
using detail::f16_to_f32;
using detail::f32_to_bf16;
using detail::f32_to_f16;

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : desc.shape) n *= d;
  return n;
}

int64_t HostTensor::at(int64_t i) const { return desc.offset + i * desc.strides.at(0); }
int64_t HostTensor::at(int64_t i, int64_t j) const {
  return desc.offset + i * desc.strides.at(0) + j * desc.strides.at(1);
}

double HostTensor::get(int64_t i, int64_t j) const {
  const int64_t off = desc.shape.size() == 1 ? at(i) : at(i, j);
  const std::byte *p = storage.data() + off * element_size(desc.dtype);
  switch (desc.dtype) {
    case DType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::bf16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16_to_f32(v);
    }
    case DType::f16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return f16_to_f32(v);
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::i8: return static_cast<int8_t>(*p);
    case DType::boolean:
    case DType::u8: return static_cast<uint8_t>(*p);
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DType::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
  return 0;
}

void HostTensor::set(int64_t i, int64_t j, double v) {
  const int64_t off = desc.shape.size() == 1 ? at(i) : at(i, j);
  std::byte *p = storage.data() + off * element_size(desc.dtype);
  switch (desc.dtype) {
    case DType::f32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::bf16: {
      uint16_t h = f32_to_bf16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::f16: {
      uint16_t h = f32_to_f16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::i32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::i8: *p = static_cast<std::byte>(static_cast<int8_t>(v)); break;
    case DType::boolean:
    case DType::u8: *p = static_cast<std::byte>(static_cast<uint8_t>(v)); break;
    case DType::i64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::f64: std::memcpy(p, &v, 8); break;
  }
}

HostTensor make_tensor(DType dtype, std::vector<int64_t> shape, const Layout &layout,
                       std::byte poison) {
  HostTensor t;
  t.desc.dtype = dtype;
  t.desc.shape = shape;
  t.desc.offset = layout.offset;
  int64_t extent = 0;  // highest element offset + 1, relative to the view start
  if (shape.size() == 1) {
    const int64_t stride = layout.col_step + layout.row_pad;
    t.desc.strides = {stride};
    extent = shape[0] > 0 ? (shape[0] - 1) * stride + 1 : 0;
  } else {
    const int64_t rows = shape.at(0), cols = shape.at(1);
    if (layout.column_major) {
      const int64_t col_stride = rows * layout.col_step + layout.row_pad;
      t.desc.strides = {layout.col_step, col_stride};
    } else {
      const int64_t row_stride = cols * layout.col_step + layout.row_pad;
      t.desc.strides = {row_stride, layout.col_step};
    }
    extent = (rows > 0 && cols > 0)
                 ? (rows - 1) * t.desc.strides[0] + (cols - 1) * t.desc.strides[1] + 1
                 : 0;
  }
  const int64_t elements = layout.offset + extent;
  t.desc.storage_elements = elements;
  t.storage.assign(static_cast<size_t>(std::max<int64_t>(elements, 1) * element_size(dtype)),
                   poison);
  return t;
}

namespace {

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class S, class Convert>
void fill_rows(HostTensor &t, uint64_t base, Convert convert) {
  const bool is2d = t.desc.shape.size() == 2;
  const int64_t rows = t.desc.shape[0], cols = is2d ? t.desc.shape[1] : 1;
  auto *data = reinterpret_cast<S *>(t.storage.data());
  // Each row has its own generator (seeded from base and the row), so rows fill in
  // parallel and the result depends on the seed only.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    uint64_t state = base ^ (static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ull);
    uint64_t bits = 0;
    int left = 0;
    for (int64_t j = 0; j < cols; ++j) {
      if (left == 0) bits = splitmix64(state), left = 7;
      const int v = static_cast<int>(bits & 511u) - 256;  // 9 bits: [-256, 255]
      bits >>= 9, --left;
      data[is2d ? t.at(i, j) : t.at(i)] = convert(static_cast<float>(v) / 64.0f);
    }
  }
}

}  // namespace

void fill_random(HostTensor &t, std::mt19937_64 &rng) {
  // Multiples of 2^-6 in [-4, 4): exact in bf16 (8 significant bits), fp16 and fp32, so
  // generated data is the same whatever the dtype; sums still round in bf16.
  const uint64_t base = rng();
  switch (t.desc.dtype) {
    case DType::bf16: fill_rows<uint16_t>(t, base, f32_to_bf16); break;
    case DType::f16: fill_rows<uint16_t>(t, base, f32_to_f16); break;
    case DType::f32: fill_rows<float>(t, base, [](float v) { return v; }); break;
    default: {
      const bool is2d = t.desc.shape.size() == 2;
      const int64_t rows = t.desc.shape[0], cols = is2d ? t.desc.shape[1] : 1;
      std::uniform_int_distribution<int> dist(-256, 255);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) t.set(i, j, dist(rng) / 64.0);
    }
  }
}

HostTensor make_routing_map(int64_t T, int64_t E, int64_t experts_per_token, DType dtype,
                            std::mt19937_64 &rng, bool ragged, const Layout &layout) {
  HostTensor m = make_tensor(dtype, {T, E}, layout, std::byte{0});
  std::vector<int64_t> experts(static_cast<size_t>(E));
  std::iota(experts.begin(), experts.end(), 0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) m.set(t, e, 0);
    int64_t k = std::min(experts_per_token, E);
    if (ragged && k > 0) k = std::uniform_int_distribution<int64_t>(0, k)(rng);
    // Partial Fisher-Yates: the first k entries become a uniform k-subset.
    for (int64_t i = 0; i < k; ++i) {
      const int64_t pick = std::uniform_int_distribution<int64_t>(i, E - 1)(rng);
      std::swap(experts[static_cast<size_t>(i)], experts[static_cast<size_t>(pick)]);
      m.set(t, experts[static_cast<size_t>(i)], 1);
    }
  }
  return m;
}

PermuteDesc ProblemSpec::forward_inputs() const {
  PermuteDesc d;
  d.tokens = TensorDesc::contiguous(dtype, {T, H});
  d.routing_map = TensorDesc::contiguous(map_dtype, {T, E});
  if (with_probs) d.probs = TensorDesc::contiguous(probs_dtype, {T, E});
  d.num_out_tokens = num_out_tokens();
  d.drop_and_pad = drop_and_pad;
  return d;
}

int64_t ProblemSpec::rows() const {
  return infer_outputs(forward_inputs()).permuted_tokens.shape.at(0);
}

namespace {

// A tensor of the shape and dtype `desc` gives, contiguous, poisoned.
HostTensor make_like(const TensorDesc &desc) { return make_tensor(desc.dtype, desc.shape); }

}  // namespace

// Only the forward's outputs are derived (R); the backward needs no derivation of its own:
// its inputs G, P, S are the forward's outputs and its outputs are the gradients of the
// forward's inputs, shaped like them. (A spec may be valid for the forward only, e.g. E = 0.)
Problem make_problem(const ProblemSpec &s) {
  const PermuteDesc forward = infer_outputs(s.forward_inputs());
  std::mt19937_64 rng(s.seed);
  Problem p;
  p.spec = s;
  p.tokens = make_like(forward.tokens);
  fill_random(p.tokens, rng);
  p.routing_map = make_routing_map(s.T, s.E, s.K, s.map_dtype, rng, s.ragged && !s.drop_and_pad);
  if (s.with_probs) {
    p.probs = make_like(*forward.probs);
    fill_random(p.probs, rng);
    p.permuted_probs = make_like(*forward.permuted_probs);
    p.probs_grad = make_like(*forward.permuted_probs);
    fill_random(p.probs_grad, rng);
    p.dense_probs_grad = make_like(*forward.probs);
  }
  p.permuted_tokens = make_like(forward.permuted_tokens);
  p.sorted_indices = make_like(forward.sorted_indices);
  p.grad = make_like(forward.permuted_tokens);
  fill_random(p.grad, rng);
  p.tokens_grad = make_like(forward.tokens);
  return p;
}

PermuteDesc Problem::permute_desc() const {
  PermuteDesc d;
  d.tokens = tokens.desc;
  d.routing_map = routing_map.desc;
  if (spec.with_probs) d.probs = probs.desc, d.permuted_probs = permuted_probs.desc;
  d.num_out_tokens = spec.num_out_tokens();
  d.drop_and_pad = spec.drop_and_pad;
  d.permuted_tokens = permuted_tokens.desc;
  d.sorted_indices = sorted_indices.desc;
  return d;
}

PermuteData Problem::permute_data() {
  PermuteData d;
  d.tokens = tokens.data();
  d.routing_map = routing_map.data();
  d.permuted_tokens = permuted_tokens.data();
  d.sorted_indices = sorted_indices.data();
  if (spec.with_probs) d.probs = probs.data(), d.permuted_probs = permuted_probs.data();
  return d;
}

PermuteGradDesc Problem::grad_desc() const {
  PermuteGradDesc d;
  d.permuted_token_output_grad = grad.desc;
  d.sorted_indices = sorted_indices.desc;
  d.routing_map = routing_map.desc;
  d.num_experts = spec.E;
  d.tokens_num = spec.T;
  d.drop_and_pad = spec.drop_and_pad;
  d.tokens_grad_out = tokens_grad.desc;
  if (spec.with_probs)
    d.permuted_probs_output_grad = probs_grad.desc, d.probs_grad_out = dense_probs_grad.desc;
  return d;
}

PermuteGradData Problem::grad_data() {
  PermuteGradData d;
  d.permuted_token_output_grad = grad.data();
  d.sorted_indices = sorted_indices.data();
  d.routing_map = routing_map.data();
  d.tokens_grad_out = tokens_grad.data();
  if (spec.with_probs)
    d.permuted_probs_output_grad = probs_grad.data(), d.probs_grad_out = dense_probs_grad.data();
  return d;
}

Traffic permute_traffic(const ProblemSpec &s) {
  const int64_t b = element_size(s.dtype), bp = element_size(s.probs_dtype), R = s.rows();
  const int64_t rows_read = s.drop_and_pad ? R : s.T;  // drop-less reads each token once
  Traffic t{rows_read * s.H * b + s.T * s.E, R * s.H * b + R * 4};
  if (s.with_probs) t.reads += R * bp, t.writes += R * bp;
  return t;
}

Traffic permute_grad_traffic(const ProblemSpec &s) {
  const int64_t b = element_size(s.dtype), bp = element_size(s.probs_dtype), R = s.rows();
  Traffic t{R * s.H * b + R * 4, s.T * s.H * b};
  if (s.with_probs) t.reads += R * bp + s.T * s.E, t.writes += s.T * s.E * bp;
  return t;
}

// Unpermute: reads X [R, H] (rows named by no slot included, as for the permute Grad) and S;
// with probs the map and P; writes [T, H] and the three [R] side outputs.
Traffic unpermute_traffic(const ProblemSpec &s) {
  const int64_t b = element_size(s.dtype), bp = element_size(s.probs_dtype), R = s.rows();
  Traffic t{R * s.H * b + R * 4, s.T * s.H * b + R * 4 * 2};
  if (s.with_probs) t.reads += s.T * s.E * (bp + 1), t.writes += R * bp;
  return t;
}

// Unpermute Grad: reads G [T, H] and (O, I), writes dX [R, H]; with probs reads the map, P
// and X (for dP) and writes dP.
Traffic unpermute_grad_traffic(const ProblemSpec &s) {
  const int64_t b = element_size(s.dtype), bp = element_size(s.probs_dtype), R = s.rows();
  Traffic t{s.T * s.H * b + R * 4 * 2, R * s.H * b};
  if (s.with_probs) t.reads += s.T * s.E * (bp + 1) + R * s.H * b, t.writes += s.T * s.E * bp;
  return t;
}

UnpermuteTensors make_unpermute_tensors(const Problem &p) {
  const ProblemSpec &s = p.spec;
  std::mt19937_64 rng(s.seed ^ 0x756e7065726d75ULL);  // independent of the permute's draws
  const int64_t R = p.permuted_tokens.desc.shape.at(0);
  UnpermuteTensors u;
  u.out_grad = make_like(p.tokens.desc);
  fill_random(u.out_grad, rng);
  u.unpermuted = make_like(p.tokens.desc);
  u.out_index = make_tensor(DType::i32, {R});
  u.token_id = make_tensor(DType::i32, {R});
  u.permute_probs = make_tensor(s.with_probs ? s.probs_dtype : DType::f32, {R});
  u.permuted_tokens_grad = make_like(p.permuted_tokens.desc);
  if (s.with_probs) u.probs_grad = make_like(p.probs.desc);
  return u;
}

UnpermuteDesc unpermute_desc(const Problem &p, const UnpermuteTensors &u) {
  UnpermuteDesc d;
  d.permuted_tokens = p.permuted_tokens.desc;
  d.sorted_indices = p.sorted_indices.desc;
  if (p.spec.with_probs) d.routing_map = p.routing_map.desc, d.probs = p.probs.desc;
  d.padded_mode = p.spec.drop_and_pad;
  d.restore_shape = std::vector<int64_t>{p.spec.T, p.spec.H};
  d.unpermuted_tokens = u.unpermuted.desc;
  d.out_index = u.out_index.desc;
  d.permute_token_id = u.token_id.desc;
  d.permute_probs = u.permute_probs.desc;
  return d;
}

UnpermuteData unpermute_data(Problem &p, UnpermuteTensors &u) {
  const bool probs = p.spec.with_probs;
  return {.permuted_tokens = p.permuted_tokens.data(),
          .sorted_indices = p.sorted_indices.data(),
          .routing_map = probs ? p.routing_map.data() : nullptr,
          .probs = probs ? p.probs.data() : nullptr,
          .unpermuted_tokens = u.unpermuted.data(),
          .out_index = u.out_index.data(),
          .permute_token_id = u.token_id.data(),
          .permute_probs = u.permute_probs.data()};
}

UnpermuteGradDesc unpermute_grad_desc(const Problem &p, const UnpermuteTensors &u) {
  UnpermuteGradDesc d;
  d.unpermuted_tokens_grad = u.out_grad.desc;
  d.out_index = u.out_index.desc;
  d.permute_token_id = u.token_id.desc;
  d.drop_and_pad = p.spec.drop_and_pad;
  d.permuted_tokens_grad_out = u.permuted_tokens_grad.desc;
  if (p.spec.with_probs) {
    d.routing_map = p.routing_map.desc, d.probs = p.probs.desc;
    d.permuted_tokens = p.permuted_tokens.desc, d.probs_grad_out = u.probs_grad.desc;
  }
  return d;
}

UnpermuteGradData unpermute_grad_data(Problem &p, UnpermuteTensors &u) {
  const bool probs = p.spec.with_probs;
  return {.unpermuted_tokens_grad = u.out_grad.data(),
          .out_index = u.out_index.data(),
          .permute_token_id = u.token_id.data(),
          .routing_map = probs ? p.routing_map.data() : nullptr,
          .permuted_tokens = probs ? p.permuted_tokens.data() : nullptr,
          .probs = probs ? p.probs.data() : nullptr,
          .permuted_tokens_grad_out = u.permuted_tokens_grad.data(),
          .probs_grad_out = probs ? u.probs_grad.data() : nullptr};
}

int64_t count_bit_differences(const HostTensor &a, const HostTensor &b) {
  const int64_t es = element_size(a.desc.dtype);
  const bool is2d = a.desc.shape.size() == 2;
  const int64_t cols = is2d ? a.desc.shape[1] : 1;
  const int64_t rows = cols == 0 ? 0 : a.desc.shape[0];  // [T, 0]: T may be anything
  int64_t diff = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t oa = is2d ? a.at(i, j) : a.at(i), ob = is2d ? b.at(i, j) : b.at(i);
      diff += std::memcmp(a.storage.data() + oa * es, b.storage.data() + ob * es,
                          static_cast<size_t>(es)) != 0;
    }
  return diff;
}

}  // namespace moeperm::problem_model
