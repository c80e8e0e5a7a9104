// The array side of the bindings: DLPack arrays to moeperm descriptors and data pointers,
// the devices they live on, outputs from the Python caller's allocator, the workspace.
#include "arrays.hpp"

#include <moeperm/moeperm.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

namespace moeperm_py {

[[noreturn]] void invalid(const std::string &message) {
  throw moeperm::Error(moeperm::Code::invalid_param, message);
}

namespace {

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

}  // namespace

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

// Elements between the lowest-addressed element of a view and its element [0, ..., 0]:
// positive only with negative strides (NumPy's a[::-1]). The C++ API addresses a view from
// the start of its storage, so the binding passes that lowest address as the data pointer
// and this count as the descriptor's offset.
namespace {
int64_t elements_before(const InArray &a) {
  if (a.size() == 0) return 0;
  int64_t before = 0;
  for (size_t i = 0; i < a.ndim(); ++i)
    if (a.stride(i) < 0) before -= (static_cast<int64_t>(a.shape(i)) - 1) * a.stride(i);
  return before;
}
}  // namespace

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

std::optional<moeperm::DType> dtype_from_name(const std::string &name) {
  using moeperm::DType;
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::i8, DType::boolean, DType::i32,
                  DType::u8, DType::i64, DType::f64})
    if (name == moeperm::to_string(d)) return d;
  return std::nullopt;
}

moeperm::TensorDesc describe_spec(const char *api, const char *name, const Spec &spec) {
  const auto dtype = dtype_from_name(spec.first);
  if (!dtype)
    invalid(std::string(api) + ": " + name + " has dtype " + spec.first +
            ", which is no moeperm element type (float32, float16, bfloat16, int8, bool, int32)");
  return moeperm::TensorDesc::contiguous(*dtype, spec.second);
}

OutputList output_list(std::initializer_list<NamedOutput> outputs) {
  OutputList list;
  for (const NamedOutput &o : outputs)
    if (o.desc) list.emplace_back(o.name, o.desc->shape, moeperm::to_string(o.desc->dtype));
  return list;
}

}  // namespace moeperm_py
