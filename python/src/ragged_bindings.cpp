// The ragged pair's bindings (docs/ragged.md), the same shape as the other families':
// describe the inputs, infer the outputs with the library's own rules, plan (every rule that
// needs no data is checked before anything is allocated), allocate the outputs through the
// caller's alloc(name, shape), run without the GIL.
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
enum PermuteOperand : unsigned { kX = 0, kM = 1, kP = 2 };
enum UnpermuteOperand : unsigned { kUX = 0, kUS = 1, kUM = 2, kUP = 3 };

bool bit(unsigned mask, unsigned i) { return (mask >> i) & 1u; }
const moeperm::TensorDesc *opt(const std::optional<moeperm::TensorDesc> &d) {
  return d ? &*d : nullptr;
}

// permuted_probs is an output exactly when probs are given (infer_outputs sizes it).
moeperm::RaggedPermuteDesc permute_desc(moeperm::RaggedPermuteDesc d) {
  if (d.probs) {
    d.permuted_probs = moeperm::TensorDesc{};
    d.permuted_probs->dtype = d.probs->dtype;
  }
  return moeperm::infer_outputs(d);
}

OutputList permute_outputs(const moeperm::RaggedPermuteDesc &d) {
  return output_list({{"permuted_tokens", &d.permuted_tokens},
                      {"permuted_probs", opt(d.permuted_probs)},
                      {"sorted_indices", &d.sorted_indices}});
}

std::string ragged_permute(const InArray &x, const InArray &m, const std::optional<InArray> &p,
                           int64_t num_out_tokens, bool drop_and_pad, const nb::callable &alloc,
                           unsigned bf16_views, uintptr_t stream) {
  constexpr const char *api = "ragged_permute";
  Device dev;
  note_device(api, dev, "tokens", x);
  note_device(api, dev, "routing_map", m);
  if (p) note_device(api, dev, "probs", *p);
  moeperm::RaggedPermuteDesc desc;
  desc.tokens = describe(api, "tokens", x, bit(bf16_views, kX));
  desc.routing_map = describe(api, "routing_map", m, bit(bf16_views, kM));
  if (p) desc.probs = describe(api, "probs", *p, bit(bf16_views, kP));
  desc.num_out_tokens = num_out_tokens;
  desc.drop_and_pad = drop_and_pad;
  desc = permute_desc(desc);
  const moeperm::Plan plan = moeperm::plan_ragged_permute(desc, plan_options(api, dev));

  Allocated y = allocate(api, alloc, "permuted_tokens", desc.permuted_tokens, dev);
  Allocated yp = desc.permuted_probs
                     ? allocate(api, alloc, "permuted_probs", *desc.permuted_probs, dev)
                     : Allocated{};
  Allocated s = allocate(api, alloc, "sorted_indices", desc.sorted_indices, dev);
  Workspace ws = make_workspace(api, plan, dev, alloc);
  const moeperm::RaggedPermuteData data{
      storage_base(x), storage_base(m), p ? storage_base(*p) : nullptr, y.data, yp.data, s.data};
  {
    nb::gil_scoped_release release;
    moeperm::run(plan, data, ws.span, reinterpret_cast<void *>(stream));
  }
  return plan.to_string();
}

OutputList infer_ragged_permute(const Spec &x, const Spec &m, const std::optional<Spec> &p,
                                int64_t num_out_tokens, bool drop_and_pad) {
  constexpr const char *api = "ragged_permute";
  moeperm::RaggedPermuteDesc desc;
  desc.tokens = describe_spec(api, "tokens", x);
  desc.routing_map = describe_spec(api, "routing_map", m);
  if (p) desc.probs = describe_spec(api, "probs", *p);
  desc.num_out_tokens = num_out_tokens;
  desc.drop_and_pad = drop_and_pad;
  return permute_outputs(permute_desc(desc));
}

std::string ragged_unpermute(const InArray &x, const InArray &s, const std::optional<InArray> &m,
                             const std::optional<InArray> &p, bool drop_and_pad,
                             const std::optional<std::vector<int64_t>> &restore_shape,
                             const nb::callable &alloc, unsigned bf16_views, uintptr_t stream) {
  constexpr const char *api = "ragged_unpermute";
  Device dev;
  note_device(api, dev, "permuted_tokens", x);
  note_device(api, dev, "sorted_indices", s);
  if (m) note_device(api, dev, "routing_map", *m);
  if (p) note_device(api, dev, "probs", *p);
  moeperm::RaggedUnpermuteDesc desc;
  desc.permuted_tokens = describe(api, "permuted_tokens", x, bit(bf16_views, kUX));
  desc.sorted_indices = describe(api, "sorted_indices", s, bit(bf16_views, kUS));
  if (m) desc.routing_map = describe(api, "routing_map", *m, bit(bf16_views, kUM));
  if (p) desc.probs = describe(api, "probs", *p, bit(bf16_views, kUP));
  desc.drop_and_pad = drop_and_pad;
  desc.restore_shape = restore_shape;
  desc = moeperm::infer_outputs(desc);
  const moeperm::Plan plan = moeperm::plan_ragged_unpermute(desc, plan_options(api, dev));

  Allocated out = allocate(api, alloc, "unpermuted_tokens", desc.unpermuted_tokens, dev);
  Workspace ws = make_workspace(api, plan, dev, alloc);
  const moeperm::RaggedUnpermuteData data{storage_base(x), storage_base(s),
                                          m ? storage_base(*m) : nullptr,
                                          p ? storage_base(*p) : nullptr, out.data};
  {
    nb::gil_scoped_release release;
    moeperm::run(plan, data, ws.span, reinterpret_cast<void *>(stream));
  }
  return plan.to_string();
}

OutputList infer_ragged_unpermute(const Spec &x, const Spec &s, const std::optional<Spec> &m,
                                  const std::optional<Spec> &p, bool drop_and_pad,
                                  const std::optional<std::vector<int64_t>> &restore_shape) {
  constexpr const char *api = "ragged_unpermute";
  moeperm::RaggedUnpermuteDesc desc;
  desc.permuted_tokens = describe_spec(api, "permuted_tokens", x);
  desc.sorted_indices = describe_spec(api, "sorted_indices", s);
  if (m) desc.routing_map = describe_spec(api, "routing_map", *m);
  if (p) desc.probs = describe_spec(api, "probs", *p);
  desc.drop_and_pad = drop_and_pad;
  desc.restore_shape = restore_shape;
  desc = moeperm::infer_outputs(desc);
  return output_list({{"unpermuted_tokens", &desc.unpermuted_tokens}});
}

enum PermuteGradOperand : unsigned { kG = 0, kGP = 1, kGS = 2, kGM = 3 };
enum UnpermuteGradOperand : unsigned { kUG = 0, kUGS = 1, kUGM = 2, kUGX = 3, kUGP = 4 };

// probs_grad is an output when asked for and its inputs are there (else planning names what
// is missing); infer_outputs sizes it.
template <class Desc>
Desc with_probs_grad(Desc d, const std::optional<moeperm::TensorDesc> &source, bool want) {
  if (want && source) {
    d.probs_grad = moeperm::TensorDesc{};
    d.probs_grad->dtype = source->dtype;
  }
  return moeperm::infer_outputs(d);
}

std::string ragged_permute_grad(const InArray &g, const std::optional<InArray> &gp,
                                const InArray &s, const std::optional<InArray> &m,
                                int64_t num_tokens, bool drop_and_pad, bool probs_grad,
                                const nb::callable &alloc, unsigned bf16_views, uintptr_t stream) {
  constexpr const char *api = "ragged_permute_grad";
  Device dev;
  note_device(api, dev, "permuted_tokens_grad", g);
  if (gp) note_device(api, dev, "permuted_probs_grad", *gp);
  note_device(api, dev, "sorted_indices", s);
  if (m) note_device(api, dev, "routing_map", *m);
  moeperm::RaggedPermuteGradDesc desc;
  desc.permuted_tokens_grad = describe(api, "permuted_tokens_grad", g, bit(bf16_views, kG));
  if (gp)
    desc.permuted_probs_grad = describe(api, "permuted_probs_grad", *gp, bit(bf16_views, kGP));
  desc.sorted_indices = describe(api, "sorted_indices", s, bit(bf16_views, kGS));
  if (m) desc.routing_map = describe(api, "routing_map", *m, bit(bf16_views, kGM));
  desc.num_tokens = num_tokens;
  desc.drop_and_pad = drop_and_pad;
  desc = with_probs_grad(desc, desc.permuted_probs_grad, probs_grad);
  const moeperm::Plan plan = moeperm::plan_ragged_permute_grad(desc, plan_options(api, dev));
  Allocated tg = allocate(api, alloc, "tokens_grad", desc.tokens_grad, dev);
  Allocated pg =
      desc.probs_grad ? allocate(api, alloc, "probs_grad", *desc.probs_grad, dev) : Allocated{};
  Workspace ws = make_workspace(api, plan, dev, alloc);
  const moeperm::RaggedPermuteGradData data{storage_base(g), gp ? storage_base(*gp) : nullptr,
                                            storage_base(s), m ? storage_base(*m) : nullptr,
                                            tg.data,         pg.data};
  {
    nb::gil_scoped_release release;
    moeperm::run(plan, data, ws.span, reinterpret_cast<void *>(stream));
  }
  return plan.to_string();
}

std::string ragged_unpermute_grad(const InArray &g, const InArray &s,
                                  const std::optional<InArray> &m, const std::optional<InArray> &x,
                                  const std::optional<InArray> &p, bool drop_and_pad,
                                  bool probs_grad, const nb::callable &alloc, unsigned bf16_views,
                                  uintptr_t stream) {
  constexpr const char *api = "ragged_unpermute_grad";
  Device dev;
  note_device(api, dev, "unpermuted_tokens_grad", g);
  note_device(api, dev, "sorted_indices", s);
  if (m) note_device(api, dev, "routing_map", *m);
  if (x) note_device(api, dev, "permuted_tokens", *x);
  if (p) note_device(api, dev, "probs", *p);
  moeperm::RaggedUnpermuteGradDesc desc;
  desc.unpermuted_tokens_grad = describe(api, "unpermuted_tokens_grad", g, bit(bf16_views, kUG));
  desc.sorted_indices = describe(api, "sorted_indices", s, bit(bf16_views, kUGS));
  if (m) desc.routing_map = describe(api, "routing_map", *m, bit(bf16_views, kUGM));
  if (x) desc.permuted_tokens = describe(api, "permuted_tokens", *x, bit(bf16_views, kUGX));
  if (p) desc.probs = describe(api, "probs", *p, bit(bf16_views, kUGP));
  desc.drop_and_pad = drop_and_pad;
  desc = with_probs_grad(desc, desc.probs, probs_grad);
  const moeperm::Plan plan = moeperm::plan_ragged_unpermute_grad(desc, plan_options(api, dev));
  Allocated dx = allocate(api, alloc, "permuted_tokens_grad", desc.permuted_tokens_grad, dev);
  Allocated dp =
      desc.probs_grad ? allocate(api, alloc, "probs_grad", *desc.probs_grad, dev) : Allocated{};
  Workspace ws = make_workspace(api, plan, dev, alloc);
  const moeperm::RaggedUnpermuteGradData data{storage_base(g),
                                              storage_base(s),
                                              m ? storage_base(*m) : nullptr,
                                              x ? storage_base(*x) : nullptr,
                                              p ? storage_base(*p) : nullptr,
                                              dx.data,
                                              dp.data};
  {
    nb::gil_scoped_release release;
    moeperm::run(plan, data, ws.span, reinterpret_cast<void *>(stream));
  }
  return plan.to_string();
}

}  // namespace

void bind_ragged(nb::module_ &m) {
  m.def("ragged_permute", &ragged_permute, nb::arg("tokens").noconvert(),
        nb::arg("routing_map").noconvert(), nb::arg("probs").noconvert().none(),
        nb::arg("num_out_tokens"), nb::arg("drop_and_pad"), nb::arg("alloc"),
        nb::arg("bf16_views") = 0u, nb::arg("stream") = 0,
        "Runs moeperm::ragged_permute; outputs come from alloc(name, shape) (permuted_probs "
        "with probs). Returns the plan's description.");
  m.def("infer_ragged_permute", &infer_ragged_permute, nb::arg("tokens"), nb::arg("routing_map"),
        nb::arg("probs").none(), nb::arg("num_out_tokens"), nb::arg("drop_and_pad"),
        "The ragged permute's outputs for inputs given as (dtype name, shape).");
  m.def("ragged_unpermute", &ragged_unpermute, nb::arg("permuted_tokens").noconvert(),
        nb::arg("sorted_indices").noconvert(), nb::arg("routing_map").noconvert().none(),
        nb::arg("probs").noconvert().none(), nb::arg("drop_and_pad"),
        nb::arg("restore_shape").none(), nb::arg("alloc"), nb::arg("bf16_views") = 0u,
        nb::arg("stream") = 0,
        "Runs moeperm::ragged_unpermute; the output comes from alloc(name, shape). Returns "
        "the plan's description.");
  m.def("infer_ragged_unpermute", &infer_ragged_unpermute, nb::arg("permuted_tokens"),
        nb::arg("sorted_indices"), nb::arg("routing_map").none(), nb::arg("probs").none(),
        nb::arg("drop_and_pad"), nb::arg("restore_shape").none(),
        "The ragged unpermute's output for inputs given as (dtype name, shape).");
  m.def("ragged_permute_grad", &ragged_permute_grad, nb::arg("permuted_tokens_grad").noconvert(),
        nb::arg("permuted_probs_grad").noconvert().none(), nb::arg("sorted_indices").noconvert(),
        nb::arg("routing_map").noconvert().none(), nb::arg("num_tokens"), nb::arg("drop_and_pad"),
        nb::arg("probs_grad"), nb::arg("alloc"), nb::arg("bf16_views") = 0u, nb::arg("stream") = 0,
        "Runs moeperm::ragged_permute_grad; outputs come from alloc(name, shape) (probs_grad "
        "when asked for). Returns the plan's description.");
  m.def("ragged_unpermute_grad", &ragged_unpermute_grad,
        nb::arg("unpermuted_tokens_grad").noconvert(), nb::arg("sorted_indices").noconvert(),
        nb::arg("routing_map").noconvert().none(), nb::arg("permuted_tokens").noconvert().none(),
        nb::arg("probs").noconvert().none(), nb::arg("drop_and_pad"), nb::arg("probs_grad"),
        nb::arg("alloc"), nb::arg("bf16_views") = 0u, nb::arg("stream") = 0,
        "Runs moeperm::ragged_unpermute_grad; outputs come from alloc(name, shape) "
        "(probs_grad when asked for). Returns the plan's description.");
}

}  // namespace moeperm_py
