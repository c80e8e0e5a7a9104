// The unpermute pair's bindings (SPEC-unpermute U1, U2), the same shape as bindings.cpp's
// permute pair: describe the inputs, infer the outputs with the library's own rules, plan
// (every rule that needs no data is checked before anything is allocated), allocate the
// outputs through the caller's alloc(name, shape), run without the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <moeperm/moeperm.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arrays.hpp"

namespace moeperm_py {
namespace {

// Operand positions for bf16_views (bit i: operand i is a uint16 view of bfloat16 data).
enum UnpermuteOperand : unsigned { kX = 0, kS = 1, kM = 2, kP = 3 };
enum UnpermuteGradOperand : unsigned { kG = 0, kO = 1, kI = 2, kGM = 3, kGX = 4, kGP = 5 };

bool bit(unsigned mask, unsigned i) { return (mask >> i) & 1u; }
const moeperm::TensorDesc *opt(const std::optional<moeperm::TensorDesc> &d) {
  return d ? &*d : nullptr;
}

// A requested output whose shape infer_outputs fills in.
moeperm::TensorDesc of_dtype(moeperm::DType dtype) {
  moeperm::TensorDesc d;
  d.dtype = dtype;
  return d;
}

// The optional outputs of unpermute_with_routing_map_all: outIndex, permuteTokenId (int32)
// and permuteProbs (the probs' dtype; without probs the tokens' dtype, filled with zeros).
void request_side_outputs(moeperm::UnpermuteDesc &d) {
  d.out_index = of_dtype(moeperm::DType::i32);
  d.permute_token_id = of_dtype(moeperm::DType::i32);
  d.permute_probs = of_dtype(d.probs ? d.probs->dtype : d.permuted_tokens.dtype);
}

OutputList unpermute_outputs(const moeperm::UnpermuteDesc &d) {
  return output_list({{"unpermuted_tokens", &d.unpermuted_tokens},
                      {"out_index", opt(d.out_index)},
                      {"permute_token_id", opt(d.permute_token_id)},
                      {"permute_probs", opt(d.permute_probs)}});
}

OutputList unpermute_grad_outputs(const moeperm::UnpermuteGradDesc &d) {
  return output_list({{"permuted_tokens_grad", &d.permuted_tokens_grad_out},
                      {"probs_grad", opt(d.probs_grad_out)}});
}

// The probs gradient is an output when probs are given and it is wanted (then X is needed).
void request_probs_grad(moeperm::UnpermuteGradDesc &d, bool probs_grad) {
  if (d.probs && probs_grad) d.probs_grad_out = of_dtype(d.probs->dtype);
}

Allocated allocate_opt(const char *api, const nb::callable &alloc, const char *name,
                       const std::optional<moeperm::TensorDesc> &d, const Device &dev) {
  return d ? allocate(api, alloc, name, *d, dev) : Allocated{};
}

std::string unpermute(const InArray &x, const InArray &s, const std::optional<InArray> &m,
                      const std::optional<InArray> &p, bool padded_mode,
                      const std::optional<std::vector<int64_t>> &restore_shape, bool all_outputs,
                      const nb::callable &alloc, unsigned bf16_views, uintptr_t stream) {
  constexpr const char *api = "unpermute_with_routing_map";
  Device dev;
  note_device(api, dev, "permuted_tokens", x);
  note_device(api, dev, "sorted_indices", s);
  if (m) note_device(api, dev, "routing_map", *m);
  if (p) note_device(api, dev, "probs", *p);

  moeperm::UnpermuteDesc desc;
  desc.permuted_tokens = describe(api, "permuted_tokens", x, bit(bf16_views, kX));
  desc.sorted_indices = describe(api, "sorted_indices", s, bit(bf16_views, kS));
  if (m) desc.routing_map = describe(api, "routing_map", *m, bit(bf16_views, kM));
  if (p) desc.probs = describe(api, "probs", *p, bit(bf16_views, kP));
  desc.padded_mode = padded_mode;
  desc.restore_shape = restore_shape;
  if (all_outputs) request_side_outputs(desc);
  desc = moeperm::infer_outputs(desc);
  if (!all_outputs) desc.permute_probs.reset();  // inferred with probs; not asked for
  const moeperm::Plan plan = moeperm::plan_unpermute(desc, plan_options(api, dev));

  Allocated out = allocate(api, alloc, "unpermuted_tokens", desc.unpermuted_tokens, dev);
  Allocated out_index = allocate_opt(api, alloc, "out_index", desc.out_index, dev);
  Allocated token_id = allocate_opt(api, alloc, "permute_token_id", desc.permute_token_id, dev);
  Allocated probs_out = allocate_opt(api, alloc, "permute_probs", desc.permute_probs, dev);
  Workspace ws = make_workspace(api, plan, dev, alloc);

  moeperm::UnpermuteData data;
  data.permuted_tokens = storage_base(x);
  data.sorted_indices = storage_base(s);
  data.routing_map = m ? storage_base(*m) : nullptr;
  data.probs = p ? storage_base(*p) : nullptr;
  data.unpermuted_tokens = out.data;
  data.out_index = out_index.data;
  data.permute_token_id = token_id.data;
  data.permute_probs = probs_out.data;
  {
    nb::gil_scoped_release release;
    moeperm::run(plan, data, ws.span, reinterpret_cast<void *>(stream));
  }
  return plan.to_string();
}

OutputList infer_unpermute(const Spec &x, const Spec &s, const std::optional<Spec> &m,
                           const std::optional<Spec> &p, bool padded_mode,
                           const std::optional<std::vector<int64_t>> &restore_shape,
                           bool all_outputs) {
  constexpr const char *api = "unpermute_with_routing_map";
  moeperm::UnpermuteDesc desc;
  desc.permuted_tokens = describe_spec(api, "permuted_tokens", x);
  desc.sorted_indices = describe_spec(api, "sorted_indices", s);
  if (m) desc.routing_map = describe_spec(api, "routing_map", *m);
  if (p) desc.probs = describe_spec(api, "probs", *p);
  desc.padded_mode = padded_mode;
  desc.restore_shape = restore_shape;
  if (all_outputs) request_side_outputs(desc);
  desc = moeperm::infer_outputs(desc);
  if (!all_outputs) desc.permute_probs.reset();
  return unpermute_outputs(desc);
}

std::string unpermute_grad(const InArray &g, const InArray &o, const InArray &i,
                           const std::optional<InArray> &m, const std::optional<InArray> &x,
                           const std::optional<InArray> &p, bool drop_and_pad, bool probs_grad,
                           const nb::callable &alloc, unsigned bf16_views, uintptr_t stream) {
  constexpr const char *api = "unpermute_with_routing_map_grad";
  Device dev;
  note_device(api, dev, "unpermuted_tokens_grad", g);
  note_device(api, dev, "out_index", o);
  note_device(api, dev, "permute_token_id", i);
  if (m) note_device(api, dev, "routing_map", *m);
  if (x) note_device(api, dev, "permuted_tokens", *x);
  if (p) note_device(api, dev, "probs", *p);

  moeperm::UnpermuteGradDesc desc;
  desc.unpermuted_tokens_grad = describe(api, "unpermuted_tokens_grad", g, bit(bf16_views, kG));
  desc.out_index = describe(api, "out_index", o, bit(bf16_views, kO));
  desc.permute_token_id = describe(api, "permute_token_id", i, bit(bf16_views, kI));
  if (m) desc.routing_map = describe(api, "routing_map", *m, bit(bf16_views, kGM));
  if (x) desc.permuted_tokens = describe(api, "permuted_tokens", *x, bit(bf16_views, kGX));
  if (p) desc.probs = describe(api, "probs", *p, bit(bf16_views, kGP));
  desc.drop_and_pad = drop_and_pad;
  request_probs_grad(desc, probs_grad);
  desc = moeperm::infer_outputs(desc);
  if (!probs_grad) desc.probs_grad_out.reset();  // inferred with probs; not asked for
  const moeperm::Plan plan = moeperm::plan_unpermute_grad(desc, plan_options(api, dev));

  Allocated dx = allocate(api, alloc, "permuted_tokens_grad", desc.permuted_tokens_grad_out, dev);
  Allocated dp = allocate_opt(api, alloc, "probs_grad", desc.probs_grad_out, dev);
  Workspace ws = make_workspace(api, plan, dev, alloc);

  moeperm::UnpermuteGradData data;
  data.unpermuted_tokens_grad = storage_base(g);
  data.out_index = storage_base(o);
  data.permute_token_id = storage_base(i);
  data.routing_map = m ? storage_base(*m) : nullptr;
  data.permuted_tokens = x ? storage_base(*x) : nullptr;
  data.probs = p ? storage_base(*p) : nullptr;
  data.permuted_tokens_grad_out = dx.data;
  data.probs_grad_out = dp.data;
  {
    nb::gil_scoped_release release;
    moeperm::run(plan, data, ws.span, reinterpret_cast<void *>(stream));
  }
  return plan.to_string();
}

OutputList infer_unpermute_grad(const Spec &g, const Spec &o, const Spec &i,
                                const std::optional<Spec> &m, const std::optional<Spec> &x,
                                const std::optional<Spec> &p, bool drop_and_pad, bool probs_grad) {
  constexpr const char *api = "unpermute_with_routing_map_grad";
  moeperm::UnpermuteGradDesc desc;
  desc.unpermuted_tokens_grad = describe_spec(api, "unpermuted_tokens_grad", g);
  desc.out_index = describe_spec(api, "out_index", o);
  desc.permute_token_id = describe_spec(api, "permute_token_id", i);
  if (m) desc.routing_map = describe_spec(api, "routing_map", *m);
  if (x) desc.permuted_tokens = describe_spec(api, "permuted_tokens", *x);
  if (p) desc.probs = describe_spec(api, "probs", *p);
  desc.drop_and_pad = drop_and_pad;
  request_probs_grad(desc, probs_grad);
  desc = moeperm::infer_outputs(desc);
  if (!probs_grad) desc.probs_grad_out.reset();
  return unpermute_grad_outputs(desc);
}

}  // namespace

void bind_unpermute(nb::module_ &m) {
  m.def("unpermute", &unpermute, nb::arg("permuted_tokens").noconvert(),
        nb::arg("sorted_indices").noconvert(), nb::arg("routing_map").noconvert().none(),
        nb::arg("probs").noconvert().none(), nb::arg("padded_mode"),
        nb::arg("restore_shape").none(), nb::arg("all_outputs"), nb::arg("alloc"),
        nb::arg("bf16_views") = 0u, nb::arg("stream") = 0,
        "Runs aclnnMoeTokenUnpermuteWithRoutingMap; outputs come from alloc(name, shape) "
        "(outIndex, permuteTokenId and permuteProbs only with all_outputs). Returns the "
        "plan's description.");
  m.def("infer_unpermute", &infer_unpermute, nb::arg("permuted_tokens"), nb::arg("sorted_indices"),
        nb::arg("routing_map").none(), nb::arg("probs").none(), nb::arg("padded_mode"),
        nb::arg("restore_shape").none(), nb::arg("all_outputs"),
        "The unpermute's outputs for inputs given as (dtype name, shape), as infer_permute.");
  m.def("unpermute_grad", &unpermute_grad, nb::arg("unpermuted_tokens_grad").noconvert(),
        nb::arg("out_index").noconvert(), nb::arg("permute_token_id").noconvert(),
        nb::arg("routing_map").noconvert().none(), nb::arg("permuted_tokens").noconvert().none(),
        nb::arg("probs").noconvert().none(), nb::arg("drop_and_pad"), nb::arg("probs_grad"),
        nb::arg("alloc"), nb::arg("bf16_views") = 0u, nb::arg("stream") = 0,
        "Runs aclnnMoeTokenUnpermuteWithRoutingMapGrad; outputs come from alloc(name, shape) "
        "(probs_grad with probs when asked for). Returns the plan's description.");
  m.def("infer_unpermute_grad", &infer_unpermute_grad, nb::arg("unpermuted_tokens_grad"),
        nb::arg("out_index"), nb::arg("permute_token_id"), nb::arg("routing_map").none(),
        nb::arg("permuted_tokens").none(), nb::arg("probs").none(), nb::arg("drop_and_pad"),
        nb::arg("probs_grad"),
        "The unpermute Grad's outputs for inputs given as (dtype name, shape).");
}

}  // namespace moeperm_py
