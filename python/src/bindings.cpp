// moeperm._moeperm: the nanobind bindings of the C++ API (include/moeperm/moeperm.hpp).
//
// Every tensor arrives as a DLPack / buffer-protocol array (nb::ndarray, no conversion and
// so no copy: any strides, any offset, as the producer laid it out). The binding
//   1. describes the inputs (dtype, shape, strides in elements; the data pointer is the
//      view's lowest-addressed element, so the offset is 0 unless a stride is negative),
//   2. derives the output shapes exactly as the operator does (SPEC §2, §3) and plans with
//      contiguous output descriptors: the plan validates every SPEC §5 rule that needs no
//      data BEFORE anything is allocated (a bad argument never costs an allocation),
//   3. asks the Python caller's `alloc(name, shape)` for each output (and, on a CUDA
//      device, the workspace), so outputs live in the input's framework and allocator,
//   4. runs without the GIL.
// Errors: moeperm::Error becomes moeperm.InvalidArgumentError (161001/161002, a
// ValueError) or moeperm.OperatorError (any other code, a RuntimeError); both derive from
// moeperm.Error, which carries the status in `.code`. The message is the operator's.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <moeperm/moeperm.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

using InArray = nb::ndarray<nb::ro>;  // inputs: read-only views are accepted
using OutArray = nb::ndarray<>;       // outputs: must be writable

// DLPack device types (dlpack.h DLDeviceType).
constexpr int kDLCPU = 1;
constexpr int kDLCUDA = 2;
constexpr int kDLCUDAHost = 3;  // pinned host memory: host-addressable

// Bit i of `bf16_views` marks operand i (in the order of each entry point's Operand enum)
// as a uint16 view of bfloat16 data: NumPy's bfloat16 (ml_dtypes) cannot be exported
// through DLPack or the buffer protocol, so the Python layer passes arr.view(uint16).
enum PermuteOperand : unsigned { kTokens = 0, kRoutingMap = 1, kProbs = 2 };
enum GradOperand : unsigned { kG = 0, kP = 1, kS = 2, kM = 3 };

[[noreturn]] void invalid(const std::string &message) {
  throw moeperm::Error(moeperm::Code::invalid_param, message);
}

std::string dlpack_dtype_name(nb::dlpack::dtype t) {
  const char *kind = "code";
  switch (static_cast<nb::dlpack::dtype_code>(t.code)) {
    case nb::dlpack::dtype_code::Int: kind = "int"; break;
    case nb::dlpack::dtype_code::UInt: kind = "uint"; break;
    case nb::dlpack::dtype_code::Float: kind = "float"; break;
    case nb::dlpack::dtype_code::Bfloat: kind = "bfloat"; break;
    case nb::dlpack::dtype_code::Complex: kind = "complex"; break;
    case nb::dlpack::dtype_code::Bool: kind = "bool"; break;
    default: break;
  }
  std::ostringstream s;
  s << kind << static_cast<int>(t.bits);
  if (static_cast<nb::dlpack::dtype_code>(t.code) > nb::dlpack::dtype_code::Bool)
    s << " (DLPack code " << static_cast<int>(t.code) << ")";
  if (t.lanes != 1) s << "x" << t.lanes;
  return s.str();
}

// The moeperm dtype of a DLPack dtype; nullopt when moeperm has no such element type.
std::optional<moeperm::DType> to_dtype(nb::dlpack::dtype t, bool bf16_view) {
  using moeperm::DType;
  using Code = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  const auto code = static_cast<Code>(t.code);
  if (bf16_view) {
    if (code == Code::UInt && t.bits == 16) return DType::bf16;
    return std::nullopt;
  }
  switch (code) {
    case Code::Float:
      if (t.bits == 32) return DType::f32;
      if (t.bits == 16) return DType::f16;
      if (t.bits == 64) return DType::f64;
      break;
    case Code::Bfloat:
      if (t.bits == 16) return DType::bf16;
      break;
    case Code::Int:
      if (t.bits == 8) return DType::i8;
      if (t.bits == 32) return DType::i32;
      if (t.bits == 64) return DType::i64;
      break;
    case Code::UInt:
      if (t.bits == 8) return DType::u8;
      break;
    case Code::Bool:
      if (t.bits == 8) return DType::boolean;
      break;
    default: break;
  }
  return std::nullopt;
}

// Where the operands of one call live. All must share one device.
struct Device {
  bool set = false;
  bool cuda = false;
  int type = 0;
  int id = 0;
  const char *first = nullptr;  // the operand that fixed the device, for messages
};

std::string device_string(int type, int id) {
  std::ostringstream s;
  if (type == kDLCPU || type == kDLCUDAHost)
    s << "cpu";
  else if (type == kDLCUDA)
    s << "cuda:" << id;
  else
    s << "DLPack device type " << type << ":" << id;
  return s.str();
}

template <class Array>
void note_device(const char *api, Device &dev, const char *name, const Array &a) {
  const int type = a.device_type();
  if (type != kDLCPU && type != kDLCUDAHost && type != kDLCUDA)
    invalid(std::string(api) + ": " + name + " is on " + device_string(type, a.device_id()) +
            ", expected a CPU or CUDA tensor");
  const bool cuda = type == kDLCUDA;
  const int id = cuda ? a.device_id() : 0;
  if (!dev.set) {
    dev = Device{true, cuda, type, id, name};
    return;
  }
  if (dev.cuda != cuda || dev.id != id)
    invalid(std::string(api) + ": " + name + " is on " + device_string(type, id) + " but " +
            dev.first + " is on " + device_string(dev.type, dev.id) +
            ", expected all tensors on one device");
}

// Elements between the lowest-addressed element of a view and its element [0, ..., 0]:
// positive only with negative strides (NumPy's a[::-1]). The C++ API addresses a view from
// the start of its storage, so the binding passes that lowest address as the data pointer
// and this count as the descriptor's offset.
int64_t elements_before(const InArray &a) {
  if (a.size() == 0) return 0;
  int64_t before = 0;
  for (size_t i = 0; i < a.ndim(); ++i)
    if (a.stride(i) < 0) before -= (static_cast<int64_t>(a.shape(i)) - 1) * a.stride(i);
  return before;
}

const void *storage_base(const InArray &a) {
  return static_cast<const std::byte *>(a.data()) -
         elements_before(a) * static_cast<int64_t>(a.itemsize());
}

// The descriptor of an input view. Strides come from the producer (nanobind fills in
// row-major strides when a producer leaves them out).
moeperm::TensorDesc describe(const char *api, const char *name, const InArray &a, bool bf16_view) {
  const auto dtype = to_dtype(a.dtype(), bf16_view);
  if (!dtype)
    invalid(std::string(api) + ": " + name + " has dtype " + dlpack_dtype_name(a.dtype()) +
            (bf16_view ? " (marked as a bfloat16 view, which must be uint16)" : "") +
            ", which is no moeperm element type (float32, float16, bfloat16, int8, bool, int32)");
  moeperm::TensorDesc d;
  d.dtype = *dtype;
  d.shape.resize(a.ndim());
  d.strides.resize(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) {
    d.shape[i] = static_cast<int64_t>(a.shape(i));
    d.strides[i] = a.stride(i);
  }
  d.offset = elements_before(a);
  return d;
}

// Dimension i of a descriptor, or 0 when it has no such dimension: output shapes derived
// from inputs of the wrong rank are placeholders, since the plan rejects the rank first.
int64_t dim(const moeperm::TensorDesc &d, size_t i) { return i < d.shape.size() ? d.shape[i] : 0; }

// An output the caller allocated through alloc(name, shape): checked against the contiguous
// descriptor the plan was made with (a mismatch is a bug in the Python layer).
struct Allocated {
  nb::object owner;  // keeps the array alive until the kernel is done
  void *data = nullptr;
};

Allocated allocate(const char *api, const nb::callable &alloc, const char *name,
                   const moeperm::TensorDesc &want, const Device &dev) {
  Allocated out;
  out.owner = alloc(name, want.shape);
  OutArray a;
  if (!nb::try_cast(out.owner, a, /*convert=*/false))
    throw moeperm::Error(moeperm::Code::tiling_error,
                         std::string(api) + ": internal error, please report: alloc(\"" + name +
                             "\") returned an object that is not a writable array");
  bool ok = a.ndim() == want.shape.size() &&
            static_cast<int64_t>(a.itemsize()) == moeperm::element_size(want.dtype) &&
            (a.device_type() == kDLCUDA) == dev.cuda && (!dev.cuda || a.device_id() == dev.id);
  // Strides of an array without elements do not matter (and frameworks pick any).
  const bool empty = a.size() == 0;
  int64_t expected_stride = 1;
  for (size_t i = a.ndim(); ok && i-- > 0;) {
    ok = static_cast<int64_t>(a.shape(i)) == want.shape[i] &&
         (empty || want.shape[i] <= 1 || a.stride(i) == expected_stride);
    expected_stride *= want.shape[i];
  }
  if (!ok)
    throw moeperm::Error(moeperm::Code::tiling_error,
                         std::string(api) + ": internal error, please report: alloc(\"" + name +
                             "\") did not return a contiguous array of the requested shape, "
                             "element size and device");
  out.data = a.data();
  return out;
}

// The workspace: host memory owned here for host plans; for CUDA plans device memory from
// the caller's allocator (e.g. PyTorch's caching allocator), as the CUDA backend requires.
struct Workspace {
  std::vector<std::byte> host;
  Allocated device;
  std::span<std::byte> span;
};

Workspace make_workspace(const char *api, const moeperm::Plan &plan, const Device &dev,
                         const nb::callable &alloc) {
  Workspace w;
  const uint64_t bytes = plan.workspace_bytes();
  if (bytes == 0) return w;
  if (!dev.cuda) {
    w.host.resize(bytes);
    w.span = std::span<std::byte>(w.host);
    return w;
  }
  moeperm::TensorDesc d =
      moeperm::TensorDesc::contiguous(moeperm::DType::u8, {static_cast<int64_t>(bytes)});
  w.device = allocate(api, alloc, "workspace", d, dev);
  w.span = std::span<std::byte>(static_cast<std::byte *>(w.device.data), bytes);
  return w;
}

moeperm::PlanOptions plan_options(const char *api, const Device &dev) {
  if (!dev.cuda) return {};
  if (!moeperm::cuda_built())
    throw moeperm::Error(moeperm::Code::runtime_error,
                         std::string(api) + ": the tensors are on " +
                             device_string(dev.type, dev.id) +
                             " but this moeperm was built without CUDA (configure with "
                             "MOEPERM_CUDA=ON), expected CPU tensors");
  return moeperm::PlanOptions{moeperm::Backend::cuda};
}

bool bit(unsigned mask, unsigned i) { return (mask >> i) & 1u; }

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

  // SPEC §2: R = T * (numOutTokens / T) drop-less, E * (numOutTokens / E) drop-and-pad. The
  // plan re-derives R and rejects these descriptors if they disagree, so a slip here cannot
  // go unnoticed; a negative numOutTokens is rejected by the plan before anything else.
  const int64_t T = dim(desc.tokens, 0), H = dim(desc.tokens, 1), E = dim(desc.routing_map, 1);
  const int64_t n = num_out_tokens > 0 ? num_out_tokens : 0;
  int64_t R = 0;
  if (!drop_and_pad && T > 0) R = T * (n / T);
  if (drop_and_pad && E > 0) R = E * (n / E);
  desc.permuted_tokens = moeperm::TensorDesc::contiguous(desc.tokens.dtype, {R, H});
  if (probs) desc.permuted_probs = moeperm::TensorDesc::contiguous(desc.probs->dtype, {R});
  desc.sorted_indices = moeperm::TensorDesc::contiguous(moeperm::DType::i32, {R});

  const moeperm::Plan plan = moeperm::plan_permute(desc, plan_options(api, dev));

  Allocated out_tokens = allocate(api, alloc, "permuted_tokens", desc.permuted_tokens, dev);
  Allocated out_probs;
  if (probs) out_probs = allocate(api, alloc, "permuted_probs", *desc.permuted_probs, dev);
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

// permute_grad(G, P, S, M, num_experts, tokens_num, drop_and_pad, alloc, bf16_views, stream)
// -> plan description. Outputs: alloc("tokens_grad" [T, H]) and, when P is given,
// alloc("probs_grad" [T, E]).
std::string permute_grad(const InArray &grad, const std::optional<InArray> &probs_grad,
                         const InArray &sorted_indices, const std::optional<InArray> &routing_map,
                         int64_t num_experts, int64_t tokens_num, bool drop_and_pad,
                         const nb::callable &alloc, unsigned bf16_views, uintptr_t stream) {
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

  // SPEC §3: tokensGradOut [T, H] in dtype(G); probsGradOut [T, E] in dtype(P). Negative
  // sizes are rejected by the plan (rule 1) before anything is allocated.
  const int64_t H = dim(desc.permuted_token_output_grad, 1);
  desc.tokens_grad_out =
      moeperm::TensorDesc::contiguous(desc.permuted_token_output_grad.dtype, {tokens_num, H});
  if (probs_grad)
    desc.probs_grad_out = moeperm::TensorDesc::contiguous(desc.permuted_probs_output_grad->dtype,
                                                          {tokens_num, num_experts});

  const moeperm::Plan plan = moeperm::plan_permute_grad(desc, plan_options(api, dev));

  Allocated out_tokens = allocate(api, alloc, "tokens_grad", desc.tokens_grad_out, dev);
  Allocated out_probs;
  if (probs_grad) out_probs = allocate(api, alloc, "probs_grad", *desc.probs_grad_out, dev);
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
        nb::arg("drop_and_pad"), nb::arg("alloc"), nb::arg("bf16_views") = 0u,
        nb::arg("stream") = 0,
        "Runs aclnnMoeTokenPermuteWithRoutingMapGrad; outputs come from alloc(name, shape). "
        "Returns the plan's description.");
  m.attr("__version__") = MOEPERM_VERSION;
  m.def("cuda_built", &moeperm::cuda_built, "Whether this moeperm contains the CUDA backend");
  m.def("cuda_device_count", &moeperm::cuda_device_count,
        "GPUs the CUDA driver reports (0 without CUDA support, driver or GPU)");
  m.def("set_num_threads", &moeperm::set_num_threads, nb::arg("n"),
        "Threads of the CPU backend (n <= 0: the default); MOEPERM_NUM_THREADS overrides");
  m.def("get_num_threads", &moeperm::get_num_threads, "Threads the CPU backend uses");
}
