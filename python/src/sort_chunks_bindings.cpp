// The chunk sort pair's bindings (docs/sort_chunks.md), the same shape as the other
// families': describe the inputs, infer the outputs with the library's own rules, plan,
// allocate the outputs through the caller's alloc(name, shape), run without the GIL. One
// entry runs either direction (grad=False: sort_chunks, True: sort_chunks_grad): the two
// operators take the same operands in the same order.
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

#include "arrays.hpp"

namespace moeperm_py {
namespace {

// Operand positions for bf16_views (bit i: operand i is a uint16 view of bfloat16 data).
enum Operand : unsigned { kX = 0, kSZ = 1, kIX = 2, kP = 3 };

bool bit(unsigned mask, unsigned i) { return (mask >> i) & 1u; }

// The operands by position, whichever direction; probs' output exactly when probs are given.
struct Names {
  const char *api, *x, *probs, *y, *probs_out;
};
constexpr Names kForward{"sort_chunks", "tokens", "probs", "sorted_tokens", "sorted_probs"};
constexpr Names kBackward{"sort_chunks_grad", "sorted_tokens_grad", "sorted_probs_grad",
                          "tokens_grad", "probs_grad"};

// The forward's descriptor; the backward's has the same tensors in the same places.
moeperm::SortChunksDesc inferred(moeperm::SortChunksDesc d) {
  if (d.probs) {
    d.sorted_probs = moeperm::TensorDesc{};
    d.sorted_probs->dtype = d.probs->dtype;
  }
  return moeperm::infer_outputs(d);
}

moeperm::SortChunksGradDesc as_grad(const moeperm::SortChunksDesc &d) {
  return {d.tokens, d.split_sizes, d.sorted_index, d.probs, d.sorted_tokens, d.sorted_probs};
}

std::string sort_chunks(const InArray &x, const InArray &sizes, const InArray &order,
                        const std::optional<InArray> &p, bool grad, const nb::callable &alloc,
                        unsigned bf16_views, uintptr_t stream) {
  const Names &n = grad ? kBackward : kForward;
  Device dev;
  note_device(n.api, dev, n.x, x);
  note_device(n.api, dev, "split_sizes", sizes);
  note_device(n.api, dev, "sorted_index", order);
  if (p) note_device(n.api, dev, n.probs, *p);
  moeperm::SortChunksDesc desc;
  desc.tokens = describe(n.api, n.x, x, bit(bf16_views, kX));
  desc.split_sizes = describe(n.api, "split_sizes", sizes, bit(bf16_views, kSZ));
  desc.sorted_index = describe(n.api, "sorted_index", order, bit(bf16_views, kIX));
  if (p) desc.probs = describe(n.api, n.probs, *p, bit(bf16_views, kP));
  desc = inferred(desc);  // the backward's outputs have the same shapes and dtypes
  const moeperm::Plan plan =
      grad ? moeperm::plan_sort_chunks_grad(as_grad(desc), plan_options(n.api, dev))
           : moeperm::plan_sort_chunks(desc, plan_options(n.api, dev));
  Allocated y = allocate(n.api, alloc, n.y, desc.sorted_tokens, dev);
  Allocated yp = desc.sorted_probs ? allocate(n.api, alloc, n.probs_out, *desc.sorted_probs, dev)
                                   : Allocated{};
  Workspace ws = make_workspace(n.api, plan, dev, alloc);
  const void *pp = p ? storage_base(*p) : nullptr;
  {
    nb::gil_scoped_release release;
    void *s = reinterpret_cast<void *>(stream);
    if (grad)
      moeperm::run(plan,
                   moeperm::SortChunksGradData{storage_base(x), storage_base(sizes),
                                               storage_base(order), pp, y.data, yp.data},
                   ws.span, s);
    else
      moeperm::run(plan,
                   moeperm::SortChunksData{storage_base(x), storage_base(sizes),
                                           storage_base(order), pp, y.data, yp.data},
                   ws.span, s);
  }
  return plan.to_string();
}

OutputList infer_sort_chunks(const Spec &x, const Spec &sizes, const Spec &order,
                             const std::optional<Spec> &p, bool grad) {
  const Names &n = grad ? kBackward : kForward;
  moeperm::SortChunksDesc desc;
  desc.tokens = describe_spec(n.api, n.x, x);
  desc.split_sizes = describe_spec(n.api, "split_sizes", sizes);
  desc.sorted_index = describe_spec(n.api, "sorted_index", order);
  if (p) desc.probs = describe_spec(n.api, n.probs, *p);
  if (grad) {
    moeperm::SortChunksGradDesc g = as_grad(desc);
    if (g.sorted_probs_grad) {
      g.probs_grad = moeperm::TensorDesc{};
      g.probs_grad->dtype = g.sorted_probs_grad->dtype;
    }
    g = moeperm::infer_outputs(g);
    return output_list(
        {{n.y, &g.tokens_grad}, {n.probs_out, g.probs_grad ? &*g.probs_grad : nullptr}});
  }
  desc = inferred(desc);
  return output_list({{n.y, &desc.sorted_tokens},
                      {n.probs_out, desc.sorted_probs ? &*desc.sorted_probs : nullptr}});
}

}  // namespace

void bind_sort_chunks(nb::module_ &m) {
  m.def("sort_chunks", &sort_chunks, nb::arg("tokens").noconvert(),
        nb::arg("split_sizes").noconvert(), nb::arg("sorted_index").noconvert(),
        nb::arg("probs").noconvert().none(), nb::arg("grad"), nb::arg("alloc"),
        nb::arg("bf16_views") = 0u, nb::arg("stream") = 0,
        "Runs moeperm::sort_chunks (grad=False) or moeperm::sort_chunks_grad (grad=True); "
        "outputs come from alloc(name, shape). Returns the plan's description.");
  m.def("infer_sort_chunks", &infer_sort_chunks, nb::arg("tokens"), nb::arg("split_sizes"),
        nb::arg("sorted_index"), nb::arg("probs").none(), nb::arg("grad"),
        "The chunk sort's outputs for inputs given as (dtype name, shape).");
}

}  // namespace moeperm_py
