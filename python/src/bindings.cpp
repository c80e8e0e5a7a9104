// moeperm._moeperm: the nanobind bindings of the C++ API (include/moeperm/moeperm.hpp).
//
// Every tensor arrives as a DLPack / buffer-protocol array (nb::ndarray, no conversion and
// so no copy: any strides, any offset, as the producer laid it out). The binding
//   1. describes the inputs (dtype, shape, strides in elements; the data pointer is the
//      view's lowest-addressed element, so the offset is 0 unless a stride is negative;
//      arrays.hpp),
//   2. asks the library for the output descriptors (moeperm::infer_outputs: the operator's
//      own shape rules, SPEC §2, §3; invalid inputs fail there with the plan's status and
//      message) and plans with them: every SPEC §5 rule that needs no data is checked
//      BEFORE anything is allocated (a bad argument never costs an allocation),
//   3. asks the Python caller's `alloc(name, shape)` for each output (and, on a CUDA
//      device, the workspace), so outputs live in the input's framework and allocator,
//   4. runs without the GIL.
// infer_permute / infer_permute_grad give Python the same output descriptors from dtype
// names and shapes alone (moeperm.infer_outputs, and the fake implementations of
// moeperm.torch's custom operators).
// Errors: moeperm::Error becomes moeperm.InvalidArgumentError (161001/161002, a
// ValueError) or moeperm.OperatorError (any other code, a RuntimeError); both derive from
// moeperm.Error, which carries the status in `.code`. The message is the operator's.
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

namespace nb = nanobind;

namespace {

using namespace moeperm_py;

// Bit i of `bf16_views` marks operand i (in the order of each entry point's Operand enum)
// as a uint16 view of bfloat16 data: NumPy's bfloat16 (ml_dtypes) cannot be exported
// through DLPack or the buffer protocol, so the Python layer passes arr.view(uint16).
enum PermuteOperand : unsigned { kTokens = 0, kRoutingMap = 1, kProbs = 2 };
enum GradOperand : unsigned { kG = 0, kP = 1, kS = 2, kM = 3 };

bool bit(unsigned mask, unsigned i) { return (mask >> i) & 1u; }

const moeperm::TensorDesc *opt(const std::optional<moeperm::TensorDesc> &d) {
  return d ? &*d : nullptr;
}

OutputList permute_outputs(const moeperm::PermuteDesc &d) {
  return output_list({{"permuted_tokens", &d.permuted_tokens},
                      {"permuted_probs", opt(d.permuted_probs)},
                      {"sorted_indices", &d.sorted_indices}});
}

OutputList permute_grad_outputs(const moeperm::PermuteGradDesc &d) {
  return output_list({{"tokens_grad", &d.tokens_grad_out}, {"probs_grad", opt(d.probs_grad_out)}});
}

// A probs-grad output without P (the operator fills it with zeros, SPEC §3): its dtype is
// named by the caller; infer_outputs gives it its shape [T, E].
void request_probs_grad(const char *api, moeperm::PermuteGradDesc &desc,
                        const std::optional<std::string> &probs_grad_dtype) {
  if (desc.permuted_probs_output_grad || !probs_grad_dtype) return;
  desc.probs_grad_out = describe_spec(api, "probs_grad", Spec{*probs_grad_dtype, {}});
}

// permute(tokens, routing_map, probs, num_out_tokens, drop_and_pad, alloc, bf16_views, stream)
// -> plan description. Outputs: alloc("permuted_tokens" [R, H]), alloc("permuted_probs" [R])
// when probs is given, alloc("sorted_indices" [R]); the caller keeps the arrays it returned.
std::string permute(const InArray &tokens, const InArray &routing_map,
                    const std::optional<InArray> &probs, int64_t num_out_tokens, bool drop_and_pad,
                    const nb::callable &alloc, unsigned bf16_views, uintptr_t stream) {
  constexpr const char *api = "permute_with_routing_map";
  Device dev;
  note_device(api, dev, "tokens", tokens);
  note_device(api, dev, "routing_map", routing_map);
  if (probs) note_device(api, dev, "probs", *probs);

  moeperm::PermuteDesc desc;
  desc.tokens = describe(api, "tokens", tokens, bit(bf16_views, kTokens));
  desc.routing_map = describe(api, "routing_map", routing_map, bit(bf16_views, kRoutingMap));
  if (probs) desc.probs = describe(api, "probs", *probs, bit(bf16_views, kProbs));
  desc.num_out_tokens = num_out_tokens;
  desc.drop_and_pad = drop_and_pad;
  desc = moeperm::infer_outputs(desc);
  const moeperm::Plan plan = moeperm::plan_permute(desc, plan_options(api, dev));

  Allocated out_tokens = allocate(api, alloc, "permuted_tokens", desc.permuted_tokens, dev);
  Allocated out_probs;
  if (desc.permuted_probs)
    out_probs = allocate(api, alloc, "permuted_probs", *desc.permuted_probs, dev);
  Allocated out_indices = allocate(api, alloc, "sorted_indices", desc.sorted_indices, dev);
  Workspace ws = make_workspace(api, plan, dev, alloc);

  moeperm::PermuteData data;
  data.tokens = storage_base(tokens);
  data.routing_map = storage_base(routing_map);
  data.probs = probs ? storage_base(*probs) : nullptr;
  data.permuted_tokens = out_tokens.data;
  data.permuted_probs = out_probs.data;
  data.sorted_indices = out_indices.data;
  {
    nb::gil_scoped_release release;
    moeperm::run(plan, data, ws.span, reinterpret_cast<void *>(stream));
  }
  return plan.to_string();
}

OutputList infer_permute(const Spec &tokens, const Spec &routing_map,
                         const std::optional<Spec> &probs, int64_t num_out_tokens,
                         bool drop_and_pad) {
  constexpr const char *api = "permute_with_routing_map";
  moeperm::PermuteDesc desc;
  desc.tokens = describe_spec(api, "tokens", tokens);
  desc.routing_map = describe_spec(api, "routing_map", routing_map);
  if (probs) desc.probs = describe_spec(api, "probs", *probs);
  desc.num_out_tokens = num_out_tokens;
  desc.drop_and_pad = drop_and_pad;
  return permute_outputs(moeperm::infer_outputs(desc));
}

// permute_grad(G, P, S, M, num_experts, tokens_num, drop_and_pad, alloc, probs_grad_dtype,
// bf16_views, stream) -> plan description. Outputs: alloc("tokens_grad" [T, H]) and, when P
// is given or probs_grad_dtype names one, alloc("probs_grad" [T, E]).
std::string permute_grad(const InArray &grad, const std::optional<InArray> &probs_grad,
                         const InArray &sorted_indices, const std::optional<InArray> &routing_map,
                         int64_t num_experts, int64_t tokens_num, bool drop_and_pad,
                         const nb::callable &alloc,
                         const std::optional<std::string> &probs_grad_dtype, unsigned bf16_views,
                         uintptr_t stream) {
  constexpr const char *api = "permute_with_routing_map_grad";
  Device dev;
  note_device(api, dev, "permuted_tokens_grad", grad);
  if (probs_grad) note_device(api, dev, "permuted_probs_grad", *probs_grad);
  note_device(api, dev, "sorted_indices", sorted_indices);
  if (routing_map) note_device(api, dev, "routing_map", *routing_map);

  moeperm::PermuteGradDesc desc;
  desc.permuted_token_output_grad =
      describe(api, "permuted_tokens_grad", grad, bit(bf16_views, kG));
  if (probs_grad)
    desc.permuted_probs_output_grad =
        describe(api, "permuted_probs_grad", *probs_grad, bit(bf16_views, kP));
  desc.sorted_indices = describe(api, "sorted_indices", sorted_indices, bit(bf16_views, kS));
  if (routing_map)
    desc.routing_map = describe(api, "routing_map", *routing_map, bit(bf16_views, kM));
  desc.num_experts = num_experts;
  desc.tokens_num = tokens_num;
  desc.drop_and_pad = drop_and_pad;
  request_probs_grad(api, desc, probs_grad_dtype);
  desc = moeperm::infer_outputs(desc);
  const moeperm::Plan plan = moeperm::plan_permute_grad(desc, plan_options(api, dev));

  Allocated out_tokens = allocate(api, alloc, "tokens_grad", desc.tokens_grad_out, dev);
  Allocated out_probs;
  if (desc.probs_grad_out)
    out_probs = allocate(api, alloc, "probs_grad", *desc.probs_grad_out, dev);
  Workspace ws = make_workspace(api, plan, dev, alloc);

  moeperm::PermuteGradData data;
  data.permuted_token_output_grad = storage_base(grad);
  data.permuted_probs_output_grad = probs_grad ? storage_base(*probs_grad) : nullptr;
  data.sorted_indices = storage_base(sorted_indices);
  data.routing_map = routing_map ? storage_base(*routing_map) : nullptr;
  data.tokens_grad_out = out_tokens.data;
  data.probs_grad_out = out_probs.data;
  {
    nb::gil_scoped_release release;
    moeperm::run(plan, data, ws.span, reinterpret_cast<void *>(stream));
  }
  return plan.to_string();
}

OutputList infer_permute_grad(const Spec &grad, const std::optional<Spec> &probs_grad,
                              const Spec &sorted_indices, const std::optional<Spec> &routing_map,
                              int64_t num_experts, int64_t tokens_num, bool drop_and_pad,
                              const std::optional<std::string> &probs_grad_dtype) {
  constexpr const char *api = "permute_with_routing_map_grad";
  moeperm::PermuteGradDesc desc;
  desc.permuted_token_output_grad = describe_spec(api, "permuted_tokens_grad", grad);
  if (probs_grad)
    desc.permuted_probs_output_grad = describe_spec(api, "permuted_probs_grad", *probs_grad);
  desc.sorted_indices = describe_spec(api, "sorted_indices", sorted_indices);
  if (routing_map) desc.routing_map = describe_spec(api, "routing_map", *routing_map);
  desc.num_experts = num_experts;
  desc.tokens_num = tokens_num;
  desc.drop_and_pad = drop_and_pad;
  request_probs_grad(api, desc, probs_grad_dtype);
  return permute_grad_outputs(moeperm::infer_outputs(desc));
}

// The exception classes, created once at import (module state lives as long as the module).
PyObject *g_error = nullptr;
PyObject *g_invalid_argument = nullptr;
PyObject *g_operator_error = nullptr;

void raise_moeperm_error(const moeperm::Error &e) {
  const auto code = e.code();
  PyObject *type = (code == moeperm::Code::null_pointer || code == moeperm::Code::invalid_param)
                       ? g_invalid_argument
                       : g_operator_error;
  nb::object exc = nb::steal(PyObject_CallFunction(type, "s", e.what()));
  if (!exc.is_valid()) return;  // the call raised; that exception stays set
  if (PyObject_SetAttrString(exc.ptr(), "code", nb::int_(static_cast<int>(code)).ptr()) != 0)
    return;  // the failure to set it stays set
  PyErr_SetObject(type, exc.ptr());
}

}  // namespace

NB_MODULE(_moeperm, m) {
  m.doc() = "moeperm's C++ API bound with nanobind (use the moeperm package, not this module)";

  g_error = PyErr_NewExceptionWithDoc(
      "moeperm.Error",
      "An error reported by moeperm. `code` is CANN's aclnnStatus value (SPEC §5); the "
      "message names the argument, what was expected and what was given.",
      PyExc_Exception, nullptr);
  nb::object invalid_bases = nb::make_tuple(nb::handle(g_error), nb::handle(PyExc_ValueError));
  g_invalid_argument = PyErr_NewExceptionWithDoc(
      "moeperm.InvalidArgumentError",
      "A bad argument: code 161001 (a required tensor missing) or 161002 (an invalid dtype, "
      "rank, shape, attribute or index). Also a ValueError.",
      invalid_bases.ptr(), nullptr);
  nb::object operator_bases = nb::make_tuple(nb::handle(g_error), nb::handle(PyExc_RuntimeError));
  g_operator_error = PyErr_NewExceptionWithDoc(
      "moeperm.OperatorError",
      "Any other moeperm failure: 561103 (drop-less topK above CANN's limit of 512), 561002 "
      "(an internal error), 361001 (no CUDA in this build). Also a RuntimeError.",
      operator_bases.ptr(), nullptr);
  if (!g_error || !g_invalid_argument || !g_operator_error) throw nb::python_error();
  m.attr("Error") = nb::handle(g_error);
  m.attr("InvalidArgumentError") = nb::handle(g_invalid_argument);
  m.attr("OperatorError") = nb::handle(g_operator_error);

  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const moeperm::Error &e) {
      raise_moeperm_error(e);
    }
  });

  m.def("permute", &permute, nb::arg("tokens").noconvert(), nb::arg("routing_map").noconvert(),
        nb::arg("probs").noconvert().none(), nb::arg("num_out_tokens"), nb::arg("drop_and_pad"),
        nb::arg("alloc"), nb::arg("bf16_views") = 0u, nb::arg("stream") = 0,
        "Runs aclnnMoeTokenPermuteWithRoutingMap; outputs come from alloc(name, shape). "
        "Returns the plan's description.");
  m.def("permute_grad", &permute_grad, nb::arg("permuted_tokens_grad").noconvert(),
        nb::arg("permuted_probs_grad").noconvert().none(), nb::arg("sorted_indices").noconvert(),
        nb::arg("routing_map").noconvert().none(), nb::arg("num_experts"), nb::arg("tokens_num"),
        nb::arg("drop_and_pad"), nb::arg("alloc"), nb::arg("probs_grad_dtype").none() = nb::none(),
        nb::arg("bf16_views") = 0u, nb::arg("stream") = 0,
        "Runs aclnnMoeTokenPermuteWithRoutingMapGrad; outputs come from alloc(name, shape). "
        "Returns the plan's description.");
  m.def("infer_permute", &infer_permute, nb::arg("tokens"), nb::arg("routing_map"),
        nb::arg("probs").none(), nb::arg("num_out_tokens"), nb::arg("drop_and_pad"),
        "The forward's outputs for inputs given as (dtype name, shape): a list of (name, "
        "shape, dtype name), from moeperm::infer_outputs.");
  m.def("infer_permute_grad", &infer_permute_grad, nb::arg("permuted_tokens_grad"),
        nb::arg("permuted_probs_grad").none(), nb::arg("sorted_indices"),
        nb::arg("routing_map").none(), nb::arg("num_experts"), nb::arg("tokens_num"),
        nb::arg("drop_and_pad"), nb::arg("probs_grad_dtype").none() = nb::none(),
        "The Grad's outputs for inputs given as (dtype name, shape), as infer_permute.");
  moeperm_py::bind_unpermute(m);
  moeperm_py::bind_ragged(m);
  moeperm_py::bind_sort_chunks(m);
  m.attr("__version__") = MOEPERM_VERSION;
  m.def("cuda_built", &moeperm::cuda_built, "Whether this moeperm contains the CUDA backend");
  m.def("cuda_device_count", &moeperm::cuda_device_count,
        "GPUs the CUDA driver reports (0 without CUDA support, driver or GPU)");
  m.def("set_num_threads", &moeperm::set_num_threads, nb::arg("n"),
        "Threads of the CPU backend (n <= 0: the default); MOEPERM_NUM_THREADS overrides");
  m.def("get_num_threads", &moeperm::get_num_threads, "Threads the CPU backend uses");
}
